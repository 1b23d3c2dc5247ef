#!/bin/bash
# mount_csv_table.sh - D.csv, a group's table per dimension, against xarray
# and pandas themselves (Debian's python3-xarray, which brings pandas).
# xarray.Dataset.to_zarr writes a group with a time coordinate (hours
# since a date) and 1-D variables along it of several kinds: float64 with
# NaN and integral values, an int16 packed with scale_factor, add_offset
# and _FillValue (some NaN), another packed with scale_factor alone
# (xarray decodes it in float32), strings with commas, quotes, LF and
# CR LF, bools; a variable along a second dimension; and a pandas
# DataFrame written through to_xarray in a subgroup. pandas.read_csv of
# each D.csv on the mount (times with parse_dates) must give every value
# xarray loads, column by column (float32 columns compared at float32),
# and the DataFrame back as it was. Also: awk -F, sums a column, wc -l is
# rows+1, head -n, tail -c and dd reads at offsets agree with the whole
# file, stat gives the exact size (with sizes=lazy 0, read whole),
# listings show the tables, views=tree puts them under .text and
# views=none has none, a stored file named D.csv wins, and a table of
# 300,000 rows in 9 chunks read with cache_size=1M decodes each chunk once.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3 # Debian's: its xarray is python3-xarray
"$PY" -c 'import xarray, zarr, numpy, pandas' 2>/dev/null ||
  zt_skip_or_fail "no xarray/pandas for $PY (Debian package python3-xarray)"

SRC="$ZT_TMP/tab.zarr"
cat >"$ZT_TMP/tab.py" <<'EOF'
import os
import sys

import numpy as np
import pandas as pd
import xarray as xr

N = 1000


def frame():
    n = 257
    rng = np.random.default_rng(7)
    x = rng.normal(size=n) * 1e3
    x[::13] = np.nan
    x[5] = 3.0
    return pd.DataFrame(
        {"x": x, "n": np.arange(n, dtype="i8") * 3 - 100,
         "s": ["r%d" % i for i in range(n)]},
        index=pd.Index(np.arange(n) * 2, name="row"))


def write(d):
    time = pd.date_range("2021-03-01", periods=N, freq="6H")
    temp = 15 + 10 * np.sin(np.arange(N) / 17.0)
    temp[::37] = np.nan
    level = np.round(np.cos(np.arange(N) / 5.0) * 50, 1)
    level[3::41] = np.nan
    f64 = np.arange(N) / 8.0
    f64[::29] = np.nan
    label = np.array(["item %d" % i for i in range(N)], dtype=object)
    label[1::7] = "a, b"
    label[2::11] = 'say "hi", twice ""'
    label[3::13] = "two\nlines"
    label[4::17] = "crlf\r\nend"
    ds = xr.Dataset(
        {"temperature": ("time", temp, {"units": "degC"}),
         "level": ("time", level),
         "f64": ("time", f64),
         "label": ("time", label),
         "flag": ("time", (np.arange(N) % 3) == 0),
         "count": ("time", np.arange(N, dtype="i4") - 500),
         "other": ("x", np.arange(7, dtype="f8"))},
        coords={"time": time})
    enc = {"temperature": {"dtype": "int16", "scale_factor": 0.01,
                           "add_offset": 20.0, "_FillValue": -32768,
                           "chunks": (100,)},
           "level": {"dtype": "int16", "scale_factor": 0.1,
                     "_FillValue": -32768, "chunks": (64,)},
           "time": {"units": "hours since 2021-03-01", "chunks": (300,)},
           "label": {"chunks": (90,)},
           "f64": {"chunks": (128,)}}
    ds.to_zarr(d, mode="w", encoding=enc)
    frame().to_xarray().to_zarr(os.path.join(d, "df"), mode="w")


def same(name, got, want):
    """Every value of a column equal; a line per difference."""
    bad = []
    if want.dtype.kind == "M":
        g = pd.to_datetime(pd.Series(got)).values.astype("datetime64[ns]")
        ok = g == want.astype("datetime64[ns]")
    elif want.dtype.kind == "f":
        g = np.asarray(got, dtype="f8").astype(want.dtype)
        ok = (g == want) | (np.isnan(g) & np.isnan(want))
        if want.dtype == np.float32 and not str(got.dtype).startswith("float"):
            bad.append("%s: read as %s" % (name, got.dtype))
    elif want.dtype.kind == "b":
        ok = np.asarray(got) == want
        if got.dtype != np.bool_:
            bad.append("%s: read as %s, not bool" % (name, got.dtype))
    else:
        ok = np.asarray(got, dtype=want.dtype) == want
    for i in np.flatnonzero(~np.asarray(ok))[:5]:
        bad.append("%s[%d]: got %r want %r" % (name, i, got[i], want[i]))
    return bad


def check(d, mnt):
    ds = xr.open_zarr(d).load()
    bad = []
    got = pd.read_csv(os.path.join(mnt, "time.csv"), parse_dates=["time"])
    cols = ["time"] + sorted(v for v in ds.data_vars if ds[v].dims == ("time",))
    if list(got.columns) != cols:
        bad.append("time.csv columns %s, want %s" % (list(got.columns), cols))
    if len(got) != N:
        bad.append("time.csv has %d rows, want %d" % (len(got), N))
    for c in cols:
        if c in got.columns and len(got) == N:
            bad += same(c, got[c].values, ds[c].values)
    if ds["level"].dtype != np.float32:
        bad.append("xarray decoded level as %s, not float32" % ds["level"].dtype)
    got = pd.read_csv(os.path.join(mnt, "x.csv"))
    if list(got.columns) != ["other"] or len(got) != 7:
        bad.append("x.csv: %s" % got)
    else:
        bad += same("other", got["other"].values, ds["other"].values)
    # the DataFrame, back through xarray and the mount
    want = frame().reset_index()
    got = pd.read_csv(os.path.join(mnt, "df", "row.csv"))
    if list(got.columns) != ["row", "n", "s", "x"]:
        bad.append("df/row.csv columns %s" % list(got.columns))
    else:
        try:
            pd.testing.assert_frame_equal(got[list(want.columns)], want)
        except AssertionError as e:
            bad.append("df/row.csv differs from the DataFrame: %s" % e)
    print("\n".join(bad) if bad else "ok")


def long(d):
    # 300,000 rows of three int64 columns in chunks of 100,000 (800 KB
    # decoded each: three do not fit a 1 MiB cache)
    n, c = 300000, 100000
    r = np.arange(n, dtype="i8")
    ds = xr.Dataset({"a": ("r", r * 7 - 3), "b": ("r", r % 1000)},
                    coords={"r": r})
    enc = {v: {"chunks": (c,)} for v in ["r", "a", "b"]}
    ds.to_zarr(d, mode="w", encoding=enc, consolidated=True)


def awksum(mnt):
    print(int(frame()["n"].sum()))


{"write": write, "check": check, "awksum": awksum,
 "long": long}[sys.argv[1]](*sys.argv[2:])
EOF
t "$PY" "$ZT_TMP/tab.py" write "$SRC" >"$ZT_TMP/write.log" 2>&1 ||
  zt_hard_error "xarray could not write the store: $(tail -3 "$ZT_TMP/write.log")"

M=$(zt_mkdir m)
zmount "$SRC" "$M" || finish
assert_output_eq "pandas.read_csv of time.csv, x.csv and df/row.csv gives xarray's values" \
  $'ok\n' "$PY" "$ZT_TMP/tab.py" check "$SRC" "$M"
assert_eq "the root lists time.csv and x.csv" "time.csv x.csv" \
  "$(ls "$M" | grep '\.csv$' | tr '\n' ' ' | sed 's/ $//')"
assert_eq "df lists row.csv" "row.csv" "$(ls "$M/df" | grep '\.csv$')"
if ls "$M/time" | grep -q '\.csv$'; then
  fail "an array directory lists a table"
else
  pass "an array directory lists no table"
fi
R="$M/df/row.csv"
assert_eq "df/row.csv: wc -l is rows + 1" 258 "$(t wc -l <"$R")"
assert_eq "df/row.csv: head -n 1" "row,n,s,x" "$(t head -n 1 "$R")"
assert_eq "df/row.csv: awk -F, sums column n" \
  "$(t "$PY" "$ZT_TMP/tab.py" awksum "$M")" \
  "$(t awk -F, 'NR > 1 { s += $2 } END { print s }' "$R")"
for f in "$M/time.csv" "$R" "$M/x.csv"; do
  t cat "$f" >"$ZT_TMP/whole"
  cp "$ZT_TMP/whole" "$ZT_TMP/$(basename "$f")"
  size=$(wc -c <"$ZT_TMP/whole")
  assert_eq "$(basename "$f"): stat gives its exact size" "$size" "$(stat -c %s "$f")"
  assert_eq "$(basename "$f"): tail -c 3000" \
    "$(tail -c 3000 "$ZT_TMP/whole" | md5sum)" "$(t tail -c 3000 "$f" | md5sum)"
  for skip in 0 1 7 13; do
    assert_eq "$(basename "$f"): dd bs=997 skip=$skip count=3" \
      "$(dd if="$ZT_TMP/whole" bs=997 skip=$skip count=3 2>/dev/null | md5sum)" \
      "$(t dd if="$f" bs=997 skip=$skip count=3 2>/dev/null | md5sum)"
  done
done
assert_eq "time.csv: a label with CR LF keeps it inside quotes" 1 \
  "$(t grep -c $'^2021-03-02T00:00:00,.*"crlf\r$' "$M/time.csv")"
zumount "$M"

zmount "$SRC" "$M" -o sizes=lazy || finish
assert_eq "sizes=lazy: stat shows 0 before the table is read" 0 \
  "$(stat -c %s "$M/time.csv")"
assert_eq "sizes=lazy: the table reads whole" \
  "$(md5sum <"$ZT_TMP/x.csv")" "$(t cat "$M/x.csv" | md5sum)"
assert_file_eq "sizes=lazy: time.csv reads whole (direct I/O)" \
  "$ZT_TMP/time.csv" "$M/time.csv"
zumount "$M"

zmount "$SRC" "$M" -o views=tree || finish
assert_file_eq "views=tree: .text/df/row.csv" "$ZT_TMP/row.csv" \
  "$M/.text/df/row.csv"
if [ -e "$M/time.csv" ]; then
  fail "views=tree: time.csv beside the store's keys"
else
  pass "views=tree: no time.csv beside the store's keys"
fi
zumount "$M"

zmount "$SRC" "$M" -o views=none || finish
if [ -e "$M/time.csv" ] || ls "$M" | grep -q '\.csv$'; then
  fail "views=none: a table is shown"
else
  pass "views=none: no table"
fi
zumount "$M"

# A table streams: a pass over r.csv of the long group decodes each of
# its 9 chunks once with cache_size=1M (before: a chunk per block of 4096
# rows: 412 decodes at a983859), and gives the values.txt of its columns.
LONG="$ZT_TMP/long.zarr"
t "$PY" "$ZT_TMP/tab.py" long "$LONG" >"$ZT_TMP/long.log" 2>&1 ||
  zt_hard_error "xarray could not write the long store: $(tail -3 "$ZT_TMP/long.log")"
zmount "$LONG" "$M" -o cache_size=1M || finish
t cat "$M/r.csv" >"$ZT_TMP/long.csv"
assert_eq "cache_size=1M: a pass over a table of 9 chunks decodes each once" 9 \
  "$(awk '$1 == "decodes" { print $2 }' "$M/.zarrfs/stats")"
{ echo r,a,b; t paste -d, "$M/r/values.txt" "$M/a/values.txt" "$M/b/values.txt"; } \
  >"$ZT_TMP/long.want"
assert_eq "cache_size=1M: the table is its columns' values.txt side by side" \
  "$(md5sum <"$ZT_TMP/long.want")" "$(md5sum <"$ZT_TMP/long.csv")"
assert_eq "the long table has 300,001 lines" 300001 "$(wc -l <"$ZT_TMP/long.csv")"
zumount "$M"

printf 'mine\n' >"$SRC/x.csv"
zmount "$SRC" "$M" || finish
assert_eq "a stored x.csv wins over the table" "mine" "$(t cat "$M/x.csv")"
assert_eq "and is listed once" 1 "$(ls "$M" | grep -c '^x\.csv$')"
zumount "$M"
finish
