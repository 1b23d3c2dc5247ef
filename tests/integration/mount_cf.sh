#!/bin/bash
# mount_cf.sh - values.cf.txt and K.cf.txt against xarray itself (Debian's
# python3-xarray). xarray.Dataset.to_zarr writes a packed temperature
# (int16 with scale_factor, add_offset and _FillValue, some values NaN), a
# time coordinate (hours since a date), a bool variable (int8 with
# `dtype: bool`) and a count (int16 whose _FillValue xarray keeps in the
# array's fill_value only); each values.cf.txt on the mount must equal what
# xarray's open_zarr(...).load() gives, printed by the text contract
# (floats: the fewest digits at the value's own width, without a trailing
# `.0`; `nan`; times ISO 8601; `true`/`false`). Also: the K.cf.txt of the
# chunks in order make values.cf.txt, `tail -c` reads its end, `stat`
# gives its exact size, values.txt still shows the stored integers, an
# array without CF attributes has no CF view, and info.txt shows the V2
# attributes (and the root's the group like ncdump -h). Then time units as
# xarray reads them (issue 32): zarr-python writes counts with units
# `nanoseconds since` (which xarray decodes through pandas) and the
# abbreviations cftime reads (`d`, `h`, `hr`, `min`, `ms`, `s`, `sec`,
# `secs`, `months` in 360_day), each values.cf.txt equal to xarray's; a
# count beyond what xarray represents (xarray refuses the variable) shows
# as the stored number with one log line naming its chunk, and units
# xarray refuses (`us since`) give no CF views and one log line.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3 # Debian's: its xarray is python3-xarray
"$PY" -c 'import xarray, zarr, numpy, pandas' 2>/dev/null ||
  zt_skip_or_fail "no xarray for $PY (Debian package python3-xarray)"

SRC="$ZT_TMP/cf.zarr"
cat >"$ZT_TMP/cf.py" <<'EOF'
import os
import sys

import numpy as np
import pandas as pd
import xarray as xr


def write(d):
    n = 1000
    time = pd.date_range("2021-03-01", periods=n, freq="6H")
    temp = 15 + 10 * np.sin(np.arange(n) / 17.0)
    temp[::37] = np.nan
    count = np.arange(n, dtype="f8") % 500
    count[5::11] = np.nan
    flag = (np.arange(n) % 3) == 0
    ds = xr.Dataset(
        {"temperature": ("time", temp, {"units": "degC"}),
         "flag": ("time", flag),
         "count": ("time", count),
         "plain": ("time", np.arange(n, dtype="i4"))},
        coords={"time": time})
    enc = {"temperature": {"dtype": "int16", "scale_factor": 0.01,
                           "add_offset": 20.0, "_FillValue": -32768,
                           "chunks": (100,)},
           "time": {"units": "hours since 2021-03-01", "chunks": (100,)},
           "flag": {"chunks": (100,)},
           "count": {"dtype": "int16", "_FillValue": -1, "chunks": (100,)},
           "plain": {"chunks": (100,)}}
    ds.to_zarr(d, mode="w", encoding=enc)


def text(v):
    """One decoded element by the text contract."""
    if isinstance(v, np.datetime64):
        return "NaT" if np.isnat(v) else pd.Timestamp(v).isoformat()
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (np.floating, float)):
        if np.isnan(v):
            return "nan"
        s = str(v) if isinstance(v, np.float32) else repr(float(v))
        return s[:-2] if s.endswith(".0") else s
    return str(v)


def expect(d, out):
    ds = xr.open_zarr(d).load()
    for name in ("temperature", "time", "flag", "count"):
        a = ds[name].values
        with open(os.path.join(out, name), "w") as f:
            for v in a.ravel():
                f.write(text(v) + "\n")


{"write": write, "expect": expect}[sys.argv[1]](*sys.argv[2:])
EOF
t "$PY" "$ZT_TMP/cf.py" write "$SRC" >"$ZT_TMP/write.log" 2>&1 ||
  zt_hard_error "xarray could not write the store: $(tail -3 "$ZT_TMP/write.log")"
mkdir -p "$ZT_TMP/want"
t "$PY" "$ZT_TMP/cf.py" expect "$SRC" "$ZT_TMP/want" >"$ZT_TMP/py.log" 2>&1 ||
  zt_hard_error "xarray could not read the store: $(tail -3 "$ZT_TMP/py.log")"
grep -q '"scale_factor"' "$SRC/temperature/.zattrs" ||
  zt_hard_error "xarray did not pack temperature (no scale_factor in .zattrs)"

M=$(zt_mkdir m)
zmount "$SRC" "$M" || finish
for name in temperature time flag count; do
  assert_file_eq "$name/values.cf.txt equals xarray's decoded values" \
    "$ZT_TMP/want/$name" "$M/$name/values.cf.txt"
  assert_eq "$name/values.cf.txt: stat gives its exact size" \
    "$(wc -c <"$ZT_TMP/want/$name")" "$(stat -c %s "$M/$name/values.cf.txt")"
  assert_eq "$name/values.cf.txt: tail -c 1000" \
    "$(tail -c 1000 "$ZT_TMP/want/$name" | md5sum)" \
    "$(t tail -c 1000 "$M/$name/values.cf.txt" | md5sum)"
  chunks=$(for i in $(seq 0 9); do printf '%s ' "$M/$name/$i.cf.txt"; done)
  # shellcheck disable=SC2086
  assert_eq "$name: the K.cf.txt of the chunks in order make values.cf.txt" \
    "$(md5sum <"$ZT_TMP/want/$name")" "$(t cat $chunks | md5sum)"
done
assert_eq "temperature/values.txt still shows the stored int16 (first NaN is -32768)" \
  "-32768" "$(head -1 "$M/temperature/values.txt")"
assert_eq "flag/values.txt still shows the stored int8" \
  "1 0 0 1" "$(head -4 "$M/flag/values.txt" | tr '\n' ' ' | sed 's/ $//')"
if [ -e "$M/plain/values.cf.txt" ] || ls "$M/plain" | grep -q '\.cf\.txt$'; then
  fail "plain (no CF attributes) has CF views"
else
  pass "plain (no CF attributes) has no CF views"
fi
assert_eq "temperature lists values.cf.txt and ten K.cf.txt" \
  11 "$(ls "$M/temperature" | grep -c '\.cf\.txt$')"
# info.txt: the V2 attributes and _ARRAY_DIMENSIONS; the root like ncdump -h
info=$(t cat "$M/temperature/info.txt")
case $info in
*'dimension_names: ["time"]'*'attributes: 3'*'  scale_factor: 0.01'*) pass "temperature/info.txt: dimension_names and the .zattrs attributes" ;;
*) fail "temperature/info.txt lacks dimension_names or attributes:"; printf '%s\n' "$info" | show ;;
esac
root=$(t cat "$M/info.txt")
case $root in
*'dimensions: 1'*'  time = 1000'*'variables: 5'*'  temperature(time)'*'    data_type: <i2'*'groups: 0'*) pass "info.txt of the root summarises the group (dimensions, variables)" ;;
*) fail "info.txt of the root is not the summary:"; printf '%s\n' "$root" | show ;;
esac
assert_eq "info.txt of the root: stat gives its exact size" \
  "$(t cat "$M/info.txt" | wc -c)" "$(stat -c %s "$M/info.txt")"
zumount "$M"

# ---- time units as xarray reads them ----
UNITS="$ZT_TMP/units.zarr"
cat >"$ZT_TMP/units.py" <<'EOF'
import os
import sys
import warnings

import numpy as np
import xarray as xr
import zarr

warnings.simplefilter("ignore")
# name: (units, calendar, dtype, values)
CASES = {
    "ns": ("nanoseconds since 2000-01-01", None, "i8",
           [0, 1, -1, 86400000000123, 2**62]),
    "nsf": ("nanoseconds since 2000-01-01", None, "f8", [1.7, -1.2, 1e15]),
    "d": ("d since 2000-01-01", None, "i4", [0, 1, -1, 366]),
    "h": ("h since 2000-01-01", None, "i4", [1, 25]),
    "hr": ("hr since 2000-01-01", None, "f8", [0.5, -1.25]),
    "min": ("min since 2000-01-01", None, "i8", [1, 1441]),
    "ms": ("ms since 2000-01-01", None, "i8", [1, 1500, -1]),
    "s": ("s since 2000-01-01", None, "f4", [1.5, 0.1]),
    "sec": ("sec since 2000-01-01", "julian", "i4", [61]),
    "secs": ("secs since 1990-06-30", None, "i4", [86401]),
    "months": ("months since 2000-01-01", "360_day", "f8", [1, 13, 1.5]),
    "far": ("days since 2000-01-01", None, "f8", [1, 1e17, 2]),
    "us": ("us since 2000-01-01", None, "i4", [1, 2]),
}


def write(d):
    g = zarr.open_group(d, mode="w")
    for name, (units, cal, dtype, values) in CASES.items():
        # no fill value: xarray would mask 0, and its cftime path fails a
        # variable that holds a masked value (xarray 2023.01)
        a = g.create_dataset(name, data=np.array(values, dtype=dtype),
                             chunks=(len(values),), compressor=None,
                             fill_value=None)
        a.attrs["_ARRAY_DIMENSIONS"] = [name + "_i"]
        a.attrs["units"] = units
        if cal:
            a.attrs["calendar"] = cal


def text(v):
    """A time by the text contract: ISO 8601, the fraction only when not 0."""
    if hasattr(v, "calendar"):  # cftime
        s = "%04d-%02d-%02dT%02d:%02d:%02d" % (v.year, v.month, v.day, v.hour,
                                               v.minute, v.second)
        return s + ("." + ("%06d" % v.microsecond).rstrip("0")
                    if v.microsecond else "")
    head, frac = np.datetime_as_string(v, unit="ns").split(".")
    frac = frac.rstrip("0")
    return head + ("." + frac if frac else "")


def expect(d, out):
    for name in CASES:  # one at a time: one refused fails the whole open
        others = [k for k in CASES if k != name]
        try:
            ds = xr.open_zarr(d, consolidated=False,
                              drop_variables=others).load()
        except Exception as e:  # xarray refuses the variable
            open(os.path.join(out, name + ".refused"), "w").write(str(e))
            continue
        with open(os.path.join(out, name), "w") as f:
            for v in ds[name].values.ravel():
                f.write(text(v) + "\n")


{"write": write, "expect": expect}[sys.argv[1]](*sys.argv[2:])
EOF
t "$PY" "$ZT_TMP/units.py" write "$UNITS" >"$ZT_TMP/uwrite.log" 2>&1 ||
  zt_hard_error "zarr-python could not write the units store: $(tail -3 "$ZT_TMP/uwrite.log")"
mkdir -p "$ZT_TMP/uwant"
t "$PY" "$ZT_TMP/units.py" expect "$UNITS" "$ZT_TMP/uwant" >"$ZT_TMP/upy.log" 2>&1 ||
  zt_hard_error "xarray could not read the units store: $(tail -3 "$ZT_TMP/upy.log")"
zmount "$UNITS" "$M" || finish
for name in ns nsf d h hr min ms s sec secs months; do
  if [ -e "$ZT_TMP/uwant/$name.refused" ]; then
    fail "units $name: xarray refused it: $(head -c 200 "$ZT_TMP/uwant/$name.refused")"
    continue
  fi
  assert_file_eq "units $name: values.cf.txt equals xarray's decoded times" \
    "$ZT_TMP/uwant/$name" "$M/$name/values.cf.txt"
done
for name in far us; do
  if [ -e "$ZT_TMP/uwant/$name.refused" ]; then
    pass "units $name: xarray refuses the variable"
  else
    fail "units $name: xarray decoded it"
  fi
done
assert_eq "far: the count beyond xarray shows as the stored number" \
  "2000-01-02T00:00:00 1e+17 2000-01-03T00:00:00" \
  "$(t cat "$M/far/values.cf.txt" | tr '\n' ' ' | sed 's/ $//')"
if [ -e "$M/us/values.cf.txt" ]; then fail "us since: has CF views"; else
  pass "us since: no CF views (xarray refuses the units)"
fi
t cat "$M/far/values.cf.txt" "$M/far/0.cf.txt" >/dev/null
zumount "$M"
assert_eq "far: one log line names the chunk of the time beyond xarray" 1 \
  "$(grep -c 'far/0: CF times beyond what xarray represents' "$ZT_LOG")"
assert_eq "us: one log line says why there are no CF views" 1 \
  "$(grep -c 'us/.zarray: no CF views: CF units "us since 2000-01-01"' "$ZT_LOG")"

zmount "$SRC" "$M" -o views=tree || finish
assert_file_eq "views=tree: .text/temperature/values.cf.txt" \
  "$ZT_TMP/want/temperature" "$M/.text/temperature/values.cf.txt"
if [ -e "$M/temperature/values.cf.txt" ]; then
  fail "views=tree: values.cf.txt at the root"
else
  pass "views=tree: no values.cf.txt beside the store's keys"
fi
zumount "$M"
finish
