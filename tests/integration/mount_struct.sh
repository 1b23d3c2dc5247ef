#!/bin/bash
# mount_struct.sh - V2 structured dtypes written by zarr-python (Debian's
# python3-zarr 2.13): numpy record arrays with a fill value, big- and
# little-endian fields, S, U and V fields, a subarray field, a nested
# record, a repeated record, padding (numpy's f<index> fields), a 2-D
# array in F order. Each values.txt is compared line by line with the
# lines computed in Python from what zarr-python reads back (every field
# by its own type's text rule, tab-separated; subarray values
# space-separated); a missing chunk reads as the fill record; info.txt
# lists the fields; a hostile list is refused with its reason. In CSV:
# row.csv of a group holding a 1-D structured array along `row` has one
# column per leaf field (`obs.pos.x`), and rows.csv of 2-D structured
# arrays one field per leaf field per element; both are read back with
# Python's csv module and pandas and compared field by field with the
# fields computed from what zarr-python reads.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3 # Debian's: its zarr is python3-zarr
"$PY" -c 'import zarr, numcodecs, numpy' 2>/dev/null ||
  zt_skip_or_fail "no zarr-python for $PY (Debian package python3-zarr)"

SRC="$ZT_TMP/st.zarr"
cat >"$ZT_TMP/st.py" <<'PYEOF'
import json
import sys

import numcodecs
import numpy as np
import zarr


def float_text(x, width):
    """The text contract's float rule (as tests/writers/cf_expect.py)."""
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "-0" if np.signbit(x) else "0"
    s = np.format_float_scientific(np.dtype(width).type(x), unique=True)
    mant, exp = s.split("e")
    exp = int(exp)
    neg = mant.startswith("-")
    digits = mant.lstrip("-").replace(".", "").rstrip("0") or "0"
    if -4 <= exp < 16:
        if exp >= 0:
            ip = digits[: exp + 1].ljust(exp + 1, "0")
            fp = digits[exp + 1:]
        else:
            ip = "0"
            fp = "0" * (-exp - 1) + digits
        t = ip + ("." + fp if fp else "")
    else:
        t = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        t += "e%s%02d" % ("-" if exp < 0 else "+", abs(exp))
    return ("-" if neg else "") + t


REC = np.dtype([("id", "<i4"), ("score", ">f8"), ("tag", "S3"),
                ("name", "<U4"), ("vec", "<f4", (2,)),
                ("pos", [("x", ">i2"), ("y", "u1")]), ("ok", "?"),
                ("when", "<M8[s]"), ("pts", [("a", ">u2")], (2,)),
                ("big", ">U2")])
PADDED = np.dtype({"names": ["a", "b"], "formats": ["<i2", ">f4"],
                   "offsets": [0, 4], "itemsize": 12})
GRID = np.dtype([("t", ">f4"), ("c", ">u8"), ("m", "<i8", (2, 2))])


def write(d):
    g = zarr.open_group(d, mode="w")
    fill = np.array((-1, np.nan, b"zz", "fill", [0.5, 1.5], (3, 4), True,
                     "NaT", [(7,), (8,)], "\u00e9"), dtype=REC).tobytes()
    a = g.create_dataset("rec", shape=(7,), chunks=(3,), dtype=REC,
                         fill_value=fill, compressor=None)
    v = np.zeros(4, dtype=REC)
    v["id"] = [1, -2, 2147483647, 0]
    v["score"] = [0.1, -1e300, np.inf, 18.62]
    v["tag"] = [b"abc", b"a", b"", b"\x00x"]
    v["name"] = ["h\u00e9", "tab\t", "a\nb", ""]
    v["vec"] = [[1, 2.5], [np.nan, -0.0], [1e20, 3.4e38], [0.1, 0.2]]
    v["pos"] = [(1, 2), (-32768, 255), (0, 0), (7, 9)]
    v["ok"] = [True, False, True, False]
    v["when"] = ["2021-03-01T06:00:00", "1970-01-01", "NaT", "1900-12-31T23:59:59"]
    v["pts"] = [[(1,), (2,)], [(65535,), (0,)], [(3,), (4,)], [(5,), (6,)]]
    v["big"] = ["\u4e2d\u6587", "x", "", "\U0001f600"]
    a[:4] = v
    p = g.create_dataset("padded", shape=(3,), chunks=(2,), dtype=PADDED,
                         compressor=numcodecs.Zstd(level=1))
    w = np.zeros(3, dtype=p.dtype)  # numpy names the padding f1, f3
    w["a"] = [1, 2, 3]
    w["b"] = [0.5, -1.5, 1e-7]
    p[:] = w
    gr = g.create_dataset("grid", shape=(3, 4), chunks=(2, 3), dtype=GRID,
                          order="F", compressor=numcodecs.Zstd(level=1))
    x = np.zeros((3, 4), dtype=GRID)
    x["t"] = np.arange(12, dtype="f4").reshape(3, 4) / 4
    x["c"] = np.arange(12, dtype="u8").reshape(3, 4) * 2**60
    x["m"] = np.arange(48).reshape(3, 4, 2, 2) - 24
    gr[:] = x
    r2 = g.create_dataset("rec2", shape=(2, 3), chunks=(1, 2), dtype=REC,
                          fill_value=fill, compressor=None)
    r2[0, :] = v[:3]  # row 1 stays the fill record
    r2[1, 2] = v[3]
    tab = g.create_group("tab")
    row = tab.create_dataset("row", data=np.arange(7, dtype="i8"),
                             fill_value=None)  # 0 would mask as xarray
    row.attrs["_ARRAY_DIMENSIONS"] = ["row"]
    obs = tab.create_dataset("obs", shape=(7,), chunks=(3,), dtype=REC,
                             fill_value=fill, compressor=None)
    o = v.copy()
    o["name"] = ["h\u00e9", 'x,"y', "a\nb", ""]
    obs[:4] = o
    obs.attrs["_ARRAY_DIMENSIONS"] = ["row"]
    temp = tab.create_dataset("temp", data=np.array(
        [1.0, np.nan, 0.5, -0.0, 1e20, 2.0, 3.25]), fill_value=None)
    temp.attrs["_ARRAY_DIMENSIONS"] = ["row"]


def leaves(dt, prefix=""):
    """(name, path into a record, base dtype) per leaf, in field order."""
    out = []
    for i, n in enumerate(dt.names):
        sub = dt.fields[n][0]
        full = prefix + n
        if sub.subdtype is not None and sub.subdtype[0].names:
            base, shape = sub.subdtype
            for idx in np.ndindex(*shape):
                nm = "%s[%s]" % (full, ",".join(map(str, idx)))
                out += [(l[0], (n, idx) + l[1], l[2])
                        for l in leaves(base, nm + ".")]
        elif sub.names:
            out += [(l[0], (n,) + l[1], l[2]) for l in leaves(sub, full + ".")]
        else:
            out.append((full, (n,), sub))
    return out


def value_text(v, dt):
    if dt.kind == "b":
        return "true" if v else "false"
    if dt.kind in "iu":
        return str(int(v))
    if dt.kind == "f":
        return float_text(float(v), dt.newbyteorder("="))
    if dt.kind == "M":
        return "NaT" if np.isnat(v) else np.datetime_as_string(v)
    if dt.kind == "S":
        return bytes(v).hex()
    if dt.kind == "V":
        return bytes(v).hex()
    if dt.kind == "U":
        return str(v).replace("\t", " ").replace("\n", " ")
    raise ValueError(dt)


def field_text(rec, path, dt, raw=False):
    v = rec
    for p in path:
        v = v[p]
    base = dt.subdtype[0] if dt.subdtype else dt
    vals = np.asarray(v, dtype=base).ravel() if dt.subdtype else [v]
    if raw and base.kind == "U":  # CSV: the text as stored
        return " ".join(str(x) for x in vals)
    return " ".join(value_text(x, base) for x in vals)


def csv_field(rec, path, dt):
    """A record field as D.csv and rows.csv write it (one rule)."""
    t = field_text(rec, path, dt, raw=True)
    scalar = dt.subdtype is None
    if scalar and dt.kind == "M" and t == "NaT":
        return ""
    if scalar and dt.kind == "f":
        if t == "nan":
            return ""
        if t.lstrip("-").isdigit():
            return t + ".0"
    return t


def compare(path, want, what):
    import csv
    with open(path, newline="", encoding="utf-8") as f:
        got = list(csv.reader(f))
    if got != want:
        print("%s: %d rows read, %d expected" % (what, len(got), len(want)))
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w:
                print("row %d:\n  got  %r\n  want %r" % (i, g, w))
                break
        sys.exit(1)


def table(d, path):
    """row.csv of group tab, field by field, then as pandas reads it."""
    import pandas as pd
    g = zarr.open_group(d, mode="r")["tab"]
    obs, rows, temp = g["obs"], g["row"][...], g["temp"][...]
    ls = leaves(obs.dtype)
    want = [["row"] + ["obs." + n for n, _, _ in ls] + ["temp"]]
    for i, rec in enumerate(obs[...]):
        t = float_text(float(temp[i]), np.dtype("f8"))
        t = "" if t == "nan" else t + ".0" if t.lstrip("-").isdigit() else t
        want.append([str(int(rows[i]))] +
                    [csv_field(rec, p, dt) for _, p, dt in ls] + [t])
    compare(path, want, "row.csv")
    df = pd.read_csv(path, keep_default_na=True)
    assert list(df.columns) == want[0], list(df.columns)
    assert len(df) == 7
    assert list(df["obs.id"]) == [int(x) for x in obs["id"]]
    sc = obs["score"]
    assert all((np.isnan(a) and np.isnan(b)) or a == b
               for a, b in zip(df["obs.score"], sc)), list(df["obs.score"])
    assert list(df["obs.pos.x"]) == [int(x) for x in obs["pos"]["x"]]
    assert list(df["obs.name"].fillna("")) == list(obs["name"])
    print("ok")


def rows(d, name, path):
    """rows.csv of a 2-D structured array, field by field."""
    a = zarr.open_group(d, mode="r")[name]
    ls = leaves(a.dtype)
    x = a[...]
    want = [[csv_field(rec, p, dt) for rec in x[i] for _, p, dt in ls]
            for i in range(x.shape[0])]
    compare(path, want, name + "/rows.csv")
    print("ok")


def expect(d, name):
    a = zarr.open_group(d, mode="r")[name]
    ls = leaves(a.dtype)
    for rec in a[...].ravel():
        print("\t".join(field_text(rec, p, t) for _, p, t in ls))


def names(d, name):
    a = zarr.open_group(d, mode="r")[name]
    print("\n".join(l[0] for l in leaves(a.dtype)))


{"write": write, "expect": expect, "names": names, "table": table,
 "rows": rows}[sys.argv[1]](*sys.argv[2:])
PYEOF
t "$PY" "$ZT_TMP/st.py" write "$SRC" >"$ZT_TMP/write.log" 2>&1 ||
  zt_hard_error "zarr-python could not write the store: $(tail -3 "$ZT_TMP/write.log")"
# A list no reader should take: a field name used twice.
mkdir -p "$SRC/twice"
printf '%s' '{"zarr_format":2,"shape":[2],"chunks":[2],"dtype":[["a","<i4"],["a","<f8"]],"compressor":null,"filters":null,"fill_value":null,"order":"C"}' >"$SRC/twice/.zarray"

for name in rec padded grid; do
  t "$PY" "$ZT_TMP/st.py" expect "$SRC" $name >"$ZT_TMP/$name.want" 2>"$ZT_TMP/py.err" ||
    zt_hard_error "zarr-python could not read $name: $(tail -3 "$ZT_TMP/py.err")"
done

M=$(zt_mkdir m)
zmount "$SRC" "$M" || finish
for name in rec padded grid; do
  if t cat "$M/$name/values.txt" >"$ZT_TMP/$name.got" 2>"$ZT_TMP/cat.err" &&
    cmp -s "$ZT_TMP/$name.want" "$ZT_TMP/$name.got"; then
    pass "$name/values.txt: every line equals zarr-python's record"
  else
    fail "$name/values.txt differs from zarr-python's records (< python, > mount):"
    { cat "$ZT_TMP/cat.err"; diff "$ZT_TMP/$name.want" "$ZT_TMP/$name.got"; } | show
  fi
done
assert_eq "rec: the unwritten chunk reads as the fill record" \
  "$(printf -- '-1\tnan\t7a7a\tfill\t0.5 1.5\t3\t4\ttrue\tNaT\t7\t8\t\xc3\xa9')" \
  "$(sed -n 7p "$M/rec/values.txt")"
assert_eq "rec/1.txt: the chunk's three records" \
  "$(sed -n 4,6p "$ZT_TMP/rec.want")" "$(cat "$M/rec/1.txt")"
assert_eq "rec/values.txt: tail reads the last line" \
  "$(tail -n 1 "$ZT_TMP/rec.want")" "$(tail -n 1 "$M/rec/values.txt")"
fields=$(sed -n '/^fields:/,/^chunk_shape:/p' "$M/rec/info.txt" | sed '1d;$d' | sed 's/^  \([^:]*\):.*/\1/' | tr '\n' ' ')
assert_eq "rec/info.txt: one line per field, in field order" \
  "$(t "$PY" "$ZT_TMP/st.py" names "$SRC" rec | tr '\n' ' ')" "$fields"
assert_eq "rec/info.txt: a subarray field with its shape and offset" \
  "  vec: <f4 shape [2] at 31" "$(grep '^  vec:' "$M/rec/info.txt")"
assert_eq "padded/info.txt: the item size with numpy's padding" \
  "item_size: 12" "$(grep '^item_size:' "$M/padded/info.txt")"
assert_eq "twice/info.txt: the refusal names the field" \
  "error: invalid metadata: structured dtype: field name 'a' appears twice" \
  "$(grep '^error:' "$M/twice/info.txt")"
assert_fails_with_eio "twice/values.txt: refused" "$M/twice/values.txt"
assert_eq "tab/row.csv: one column per field of obs, after the coordinate" \
  "row,obs.id,obs.score,obs.tag,obs.name,obs.vec,obs.pos.x,obs.pos.y,obs.ok,obs.when,obs.pts[0].a,obs.pts[1].a,obs.big,temp" \
  "$(head -n 1 "$M/tab/row.csv")"
assert_eq "tab/row.csv: a record's fields by their own rules" \
  '2,2147483647,inf,,"a' "$(sed -n 4p "$M/tab/row.csv")"
got=$(t "$PY" "$ZT_TMP/st.py" table "$SRC" "$M/tab/row.csv" 2>&1)
assert_eq "tab/row.csv: csv and pandas read every field as numpy holds it" \
  ok "$got"
for name in rec2 grid; do
  got=$(t "$PY" "$ZT_TMP/st.py" rows "$SRC" $name "$M/$name/rows.csv" 2>&1)
  assert_eq "$name/rows.csv: each element's fields as numpy holds them" \
    ok "$got"
done
assert_eq "rec2/rows.csv: the fill record's NaT and NaN are empty fields" \
  "$(printf -- '-1,,7a7a,fill,0.5 1.5,3,4,true,,7,8,\xc3\xa9')" \
  "$(tail -n 1 "$M/rec2/rows.csv" | cut -d, -f1-12)"
zumount "$M"
finish
