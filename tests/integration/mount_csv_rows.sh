#!/bin/bash
# mount_csv_rows.sh - rows.csv of arrays of two and three dimensions read
# back by pandas (Debian's python3-pandas) and by Python's csv module, and
# compared value by value with what xarray and zarr-python
# read from the store. xarray writes a CF-packed temperature (int16 with
# scale_factor, add_offset and _FillValue, NaN among the values), a count
# masked by its _FillValue (int16 decoded to float32) and times in hours
# since a date with NaT; zarr-python writes strings holding commas,
# quotes, CR and LF (2-D and 3-D), numpy S bytes, datetime64 with NaT and
# a 3-D int32 array with chunks never written. Each rows.csv must be the
# exact CSV the rules give (an independent formatter here), have one line
# per index of the leading dimensions, `stat` its exact size, `tail -c` and
# dd at odd offsets its bytes; pandas reads every column of a float array
# as floats (integral values keep `.0`, D.csv's rule) and of an integer
# array as integers; `awk -F,` sums a column of the int32 array;
# 1-D arrays have none; -o views=tree puts rows.csv under .text/ and
# views=none nowhere. Then every array of two or more dimensions of the
# shared fixtures (skipped when absent): its rows.csv is its values.txt as
# CSV, field by field. ZT_TIMEOUT defaults to 600 s here: the fixtures
# take some 700 `zarrfs cat` runs (two minutes on a loaded 2-core VM).
ZT_TIMEOUT=${ZT_TIMEOUT:-600}
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3 # Debian's: its xarray and zarr are python3-xarray/-zarr
"$PY" -c 'import xarray, zarr, numcodecs, numpy' 2>/dev/null ||
  zt_skip_or_fail "no xarray/zarr for $PY (Debian packages python3-xarray, python3-zarr)"

SRC="$ZT_TMP/rows.zarr"
cat >"$ZT_TMP/rows.py" <<'EOF'
import os
import sys

import numcodecs
import numpy as np
import pandas as pd
import xarray as xr
import zarr

# the reader: pandas (xarray's own dependency), or Python's csv module
# with ROWS_READER=csv
HAVE_PANDAS = os.environ.get("ROWS_READER") != "csv"

STRINGS = ["a,b", 'say "hi"', "l1\nl2", "cr\rlf\r\n", "", "plain",
           "caf\u00e9", '"', ",", "tab\tx", "  spaced  ", "last"]
XR = ("temp", "cnt", "when")          # CF-decoded by xarray
ZP = ("names", "names3", "raw", "stamps", "cube")  # zarr-python's own


def write(d):
    t = np.arange(40)
    temp = 15 + 10 * np.sin(np.arange(40 * 6) / 7.0).reshape(40, 6)
    temp[::9, 2] = np.nan
    cnt = (np.arange(40 * 5, dtype="f8") % 77).reshape(40, 5)
    cnt[3::13, 1:3] = np.nan
    when = pd.date_range("2021-03-01", periods=12, freq="6H").values.reshape(4, 3)
    when[1, 2] = np.datetime64("NaT")
    ds = xr.Dataset(
        {"temp": (("t", "x"), temp, {"units": "degC"}),
         "cnt": (("t", "y"), cnt),
         "when": (("w", "z"), when)},
        coords={"t": t})
    enc = {"temp": {"dtype": "int16", "scale_factor": 0.01, "add_offset": 20.0,
                    "_FillValue": -32768, "chunks": (16, 4)},
           "cnt": {"dtype": "int16", "_FillValue": -1, "chunks": (16, 5)},
           "when": {"units": "hours since 2021-03-01", "chunks": (3, 2)}}
    ds.to_zarr(d, mode="w", encoding=enc)
    g = zarr.open_group(d, mode="a")
    s = g.create_dataset("names", shape=(3, 4), chunks=(2, 3), dtype=object,
                         object_codec=numcodecs.VLenUTF8())
    s[:] = np.array(STRINGS, dtype=object).reshape(3, 4)
    s3 = g.create_dataset("names3", shape=(2, 2, 3), chunks=(1, 2, 2),
                          dtype=object, object_codec=numcodecs.VLenUTF8(),
                          compressor=numcodecs.Zstd(level=1))
    s3[:] = np.array(STRINGS, dtype=object).reshape(2, 2, 3)
    r = g.create_dataset("raw", shape=(2, 3), chunks=(2, 2), dtype="S4")
    r[:] = np.array([b"ab", b"a,\"\n", b"\xff", b"", b"wxyz", b"0"]).reshape(2, 3)
    st = g.create_dataset("stamps", shape=(3, 2), chunks=(2, 2), dtype="M8[s]")
    v = np.array(["2020-01-01T00:00:00", "NaT", "1999-12-31T23:59:59",
                  "2020-02-29T12:00:00", "NaT", "1970-01-01T00:00:01"],
                 dtype="M8[s]")
    st[:] = v.reshape(3, 2)
    c = g.create_dataset("cube", shape=(5, 6, 7), chunks=(2, 4, 3),
                         dtype="i4", fill_value=-7,
                         compressor=numcodecs.Zstd(level=1))
    c[:2] = np.arange(2 * 6 * 7, dtype="i4").reshape(2, 6, 7) * 3 - 50
    c[4, 4:, 3:] = 1000


def values(d):
    """Each array's values as its reader gives them: xarray decoded for the
    variables it wrote, zarr-python for the others."""
    ds = xr.open_zarr(d).load()
    g = zarr.open_group(d, mode="r")
    out = {n: ds[n].values for n in XR}
    out.update({n: g[n][...] for n in ZP})
    return out


def field(v):
    """One element's CSV field, by the rules of rows.csv."""
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, str):
        if any(c in v for c in ',"\r\n'):
            return '"' + v.replace('"', '""') + '"'
        return v
    if isinstance(v, np.datetime64):
        return "" if np.isnat(v) else pd.Timestamp(v).isoformat()
    if isinstance(v, (np.floating, float)):
        if np.isnan(v):
            return ""  # every NaN here is a masked value
        # an integral float keeps its ".0" (D.csv's rule): pandas reads
        # the column back as floats
        return str(v) if isinstance(v, np.float32) else repr(float(v))
    return str(v)


def expect(d, out):
    for name, a in values(d).items():
        rows = a.reshape(-1, a.shape[-1])
        with open(os.path.join(out, name), "w", newline="", encoding="utf-8") as f:
            for row in rows:
                f.write(",".join(field(v) for v in row) + "\n")
        with open(os.path.join(out, name + ".shape"), "w") as f:
            f.write("%d %d\n" % rows.shape)


def read_rows(path, text):
    """rows.csv as a table: pandas (numbers parsed exactly, or every field
    as a string), else Python's csv module."""
    if HAVE_PANDAS:
        if text:
            return pd.read_csv(path, header=None, dtype=str,
                               keep_default_na=False).values
        return pd.read_csv(path, header=None,
                           float_precision="round_trip").values
    import csv
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if text:
        return np.array(rows, dtype=object)
    return np.array([[float(x) if x else np.nan for x in r] for r in rows])


def same(v, got):
    if isinstance(v, bytes):
        return v.hex() == got
    if isinstance(v, str):
        return v == got
    if isinstance(v, np.datetime64):
        return got == ("" if np.isnat(v) else pd.Timestamp(v).isoformat())
    if isinstance(v, (np.floating, float)) and np.isnan(v):
        return isinstance(got, float) and np.isnan(got)
    if isinstance(v, np.float32):
        return np.float32(got) == v
    return got == v


def check(d, mnt):
    bad = 0
    for name, a in values(d).items():
        rows = a.reshape(-1, a.shape[-1])
        text = a.dtype.kind in "OSM"
        got = read_rows(os.path.join(mnt, name, "rows.csv"), text)
        if HAVE_PANDAS and not text:
            # the dtypes round-trip: floats read back as floats, integers
            # as integers, every column
            kinds = set(pd.read_csv(os.path.join(mnt, name, "rows.csv"),
                                    header=None).dtypes.map(lambda t: t.kind))
            if kinds != {a.dtype.kind}:
                print("%s: pandas reads columns of kinds %s, want %s"
                      % (name, sorted(kinds), a.dtype.kind))
                bad += 1
        if got.shape != rows.shape:
            print("%s: %s fields, want %s" % (name, got.shape, rows.shape))
            bad += 1
            continue
        for i, j in np.ndindex(*rows.shape):
            if not same(rows[i, j], got[i, j]):
                print("%s[%d,%d]: read %r, want %r" % (name, i, j, got[i, j],
                                                      rows[i, j]))
                bad += 1
    print("pandas" if HAVE_PANDAS else "csv module")
    sys.exit(1 if bad else 0)


{"write": write, "expect": expect, "check": check}[sys.argv[1]](*sys.argv[2:])
EOF
t "$PY" "$ZT_TMP/rows.py" write "$SRC" >"$ZT_TMP/write.log" 2>&1 ||
  zt_hard_error "xarray/zarr could not write the store: $(tail -3 "$ZT_TMP/write.log")"
mkdir -p "$ZT_TMP/want"
t "$PY" "$ZT_TMP/rows.py" expect "$SRC" "$ZT_TMP/want" >"$ZT_TMP/py.log" 2>&1 ||
  zt_hard_error "xarray/zarr could not read the store: $(tail -3 "$ZT_TMP/py.log")"
grep -q '"scale_factor"' "$SRC/temp/.zattrs" ||
  zt_hard_error "xarray did not pack temp (no scale_factor in .zattrs)"

M=$(zt_mkdir m)
zmount "$SRC" "$M" || finish
for reader in pandas csv; do
  if out=$(ROWS_READER=$reader t "$PY" "$ZT_TMP/rows.py" check "$SRC" "$M" 2>&1); then
    pass "every rows.csv read back by $(printf '%s' "$out" | tail -1) equals what xarray/zarr read"
  else
    fail "rows.csv read back by $reader differs from xarray/zarr:"
    printf '%s\n' "$out" | show
  fi
done
for name in temp cnt when names names3 raw stamps cube; do
  f="$M/$name/rows.csv" w="$ZT_TMP/want/$name"
  assert_file_eq "$name/rows.csv is the CSV of its values" "$w" "$f"
  size=$(wc -c <"$w")
  assert_eq "$name/rows.csv: stat gives its exact size" "$size" "$(stat -c %s "$f")"
  assert_eq "$name/rows.csv: stat size == wc -c" "$(t wc -c <"$f")" "$(stat -c %s "$f")"
  assert_eq "$name/rows.csv: tail -c 37" \
    "$(tail -c 37 "$w" | md5sum)" "$(t tail -c 37 "$f" | md5sum)"
  for at in 1 5 13 $((size / 2)) $((size - 3)); do
    assert_eq "$name/rows.csv: dd 11 bytes at $at" \
      "$(tail -c +$((at + 1)) "$w" | head -c 11 | md5sum)" \
      "$(t dd if="$f" iflag=skip_bytes,count_bytes skip=$at count=11 status=none | md5sum)"
  done
done
read -r nrows ncols <"$ZT_TMP/want/cube.shape"
assert_eq "cube/rows.csv: one line per index of the two leading dimensions, 7 fields each" \
  "$nrows 7" "$(t awk -F, '{ n++; if (NF != 7) bad++ } END { print n + bad * 1000, NF }' "$M/cube/rows.csv")"
assert_eq "cube/rows.csv: awk -F, sums the fourth column as numpy does" \
  "$("$PY" -c 'import zarr,sys; print(int(zarr.open_group(sys.argv[1], mode="r")["cube"][:, :, 3].sum()))' "$SRC")" \
  "$(t awk -F, '{ s += $4 } END { print s }' "$M/cube/rows.csv")"
assert_eq "names/rows.csv: quoted fields keep their newlines (5 for 3 rows)" \
  "5" "$(t wc -l <"$M/names/rows.csv")"
assert_eq "names/values.txt keeps its own rule (a newline is a space)" \
  "l1 l2" "$(sed -n 3p "$M/names/values.txt")"
if [ -e "$M/t/rows.csv" ] || [ -e "$M/rows.csv" ]; then
  fail "a 1-D array (t) or the group has a rows.csv"
else
  pass "1-D arrays and groups have no rows.csv"
fi
assert_eq "temp lists rows.csv beside values.txt and values.cf.txt" \
  "rows.csv values.cf.txt values.txt" \
  "$(ls "$M/temp" | grep -E '^(rows|values)' | tr '\n' ' ' | sed 's/ $//')"
zumount "$M"

# a second mount reads the end first (the memo is empty: a jump)
zmount "$SRC" "$M" || finish
assert_eq "cube/rows.csv: tail -c 100 on a fresh mount" \
  "$(tail -c 100 "$ZT_TMP/want/cube" | md5sum)" "$(t tail -c 100 "$M/cube/rows.csv" | md5sum)"
assert_eq "names3/rows.csv: tail -c 20 on a fresh mount" \
  "$(tail -c 20 "$ZT_TMP/want/names3" | md5sum)" "$(t tail -c 20 "$M/names3/rows.csv" | md5sum)"
zumount "$M"

# Every array of two or more dimensions of the shared fixtures (each data
# type, codec and chunk grid the conformance stores hold: sharded, vlen,
# transposed, optional, edge chunks): rows.csv parsed by Python's csv
# module is values.txt field by field (strings with their newlines shown
# as values.txt shows them, missing values empty), with minimal quoting.
FIX=${ZARRFS_FIXTURES:-$ZARRFS_SRCDIR/../shared/fixtures}
if [ -d "$FIX/zarrs" ]; then
  cat >"$ZT_TMP/fx.py" <<'EOF'
"""rows.csv against values.txt (values.cf.txt where there is one) of every
array of two or more dimensions under ROOT, through `zarrfs cat`."""
import csv
import io
import json
import os
import re
import subprocess
import sys

ZARRFS, ROOT = sys.argv[1], sys.argv[2]


def cat(store, name):
    """Exit status and bytes of `zarrfs cat STORE NAME`."""
    p = subprocess.run([ZARRFS, "cat", store, name], capture_output=True)
    return p.returncode, p.stdout


def field(s, stringy):
    """A parsed field written again by the rules (minimal quoting)."""
    if stringy and any(c in s for c in ',"\r\n'):
        return '"' + s.replace('"', '""') + '"'
    return s


checked = bad = 0
for dirpath, dirs, files in os.walk(ROOT):
    meta = None
    if "zarr.json" in files:
        meta = json.load(open(os.path.join(dirpath, "zarr.json")))
        if meta.get("node_type") != "array":
            continue
        dt = meta["data_type"]
        dt = dt if isinstance(dt, str) else dt.get("name", "")
        shape = meta["shape"]
        optional = "optional" in dt
        stringy = dt in ("string",) or (optional and "string" in json.dumps(meta["data_type"]))
        attrs = meta.get("attributes", {})
    elif ".zarray" in files:
        meta = json.load(open(os.path.join(dirpath, ".zarray")))
        dt = meta["dtype"] if isinstance(meta["dtype"], str) else "struct"
        shape = meta["shape"]
        optional = False
        stringy = dt[1:2] in ("U", "O")
        try:
            attrs = json.load(open(os.path.join(dirpath, ".zattrs")))
        except OSError:
            attrs = {}
    else:
        continue
    if len(shape) < 2:
        continue
    rc, vals = cat(dirpath, "values.txt")
    rc2, rows = cat(dirpath, "rows.csv")
    if rc != 0:
        if rc2 == 0 and shape[-1] and all(shape):
            print("%s: values.txt fails but rows.csv reads" % dirpath)
            bad += 1
        continue
    if rc2 != 0:
        print("%s: rows.csv fails" % dirpath)
        bad += 1
        continue
    cfrc, cf = cat(dirpath, "values.cf.txt")
    if cfrc == 0:
        vals = cf
    # floats (as stored, or as CF decodes them: masked or scaled numbers)
    # write missing values empty and integral values with ".0"
    isf = dt in ("float16", "float32", "float64", "bfloat16") or dt[1:2] == "f"
    cfnum = ("scale_factor", "add_offset", "_FillValue", "missing_value")
    floating = isf or (cfrc == 0 and " since " not in str(attrs.get("units", ""))
                       and dt not in ("bool", "|b1")
                       and any(k in attrs for k in cfnum))
    lines = vals.decode("utf-8", "surrogateescape").split("\n")[:-1]
    text = rows.decode("utf-8", "surrogateescape")
    table = list(csv.reader(io.StringIO(text, newline="")))
    nrows = 1
    for n in shape[:-1]:
        nrows *= n
    if shape[-1] == 0:
        ok = text == ""
    else:
        ok = len(table) == nrows and all(len(r) == shape[-1] for r in table)
    if not ok:
        print("%s: %d rows, want %d of %d" % (dirpath, len(table), nrows, shape[-1]))
        bad += 1
        continue
    fields = [f for r in table for f in r]
    for i, (f, l) in enumerate(zip(fields, lines)):
        if l == "NaT" or (optional and re.fullmatch(r"\[*null\]*", l)) or (cfrc == 0 and l == "nan"):
            want = ""
        elif optional and stringy and l.startswith("\\"):
            want = l[1:]
        elif floating and l == "nan":
            want = ""
        elif floating and re.fullmatch(r"-?[0-9]+", l):
            want = l + ".0"
        else:
            want = l
        got = f.replace("\n", " ") if stringy else f
        if got != want:
            print("%s: element %d: %r, values.txt %r" % (dirpath, i, f, l))
            bad += 1
            break
    again = "".join(",".join(field(f, stringy) for f in r) + "\n" for r in table)
    if again != text:
        print("%s: not the minimal quoting" % dirpath)
        bad += 1
    checked += 1
print("checked %d arrays, %d bad" % (checked, bad))
sys.exit(1 if bad or not checked else 0)
EOF
  if out=$(timeout -k 5 500 "$PY" "$ZT_TMP/fx.py" "$ZARRFS_BIN" "$FIX/zarrs" 2>&1); then
    pass "fixtures: $(printf '%s' "$out" | tail -1): rows.csv is values.txt as CSV"
  else
    fail "fixtures: rows.csv differs from values.txt:"
    printf '%s\n' "$out" | show
  fi
else
  zt_skip_part "fixtures not found at $FIX"
fi

zmount "$SRC" "$M" -o views=tree || finish
assert_file_eq "views=tree: .text/names/rows.csv" "$ZT_TMP/want/names" "$M/.text/names/rows.csv"
if [ -e "$M/names/rows.csv" ]; then
  fail "views=tree: rows.csv beside the store's keys"
else
  pass "views=tree: no rows.csv beside the store's keys"
fi
zumount "$M"
zmount "$SRC" "$M" -o views=none || finish
if [ -e "$M/names/rows.csv" ] || [ -e "$M/.text" ]; then
  fail "views=none: a rows.csv"
else
  pass "views=none: no rows.csv"
fi
zumount "$M"
finish
