#!/bin/bash
# mount_xarray_nc.sh - netCDF4 and HDF5 files through kerchunk JSON
# references, against xarray.open_dataset on the files themselves, value by
# value. The files are written here with Debian's netCDF4 and h5py; their
# references by tests/writers/nc_refs.py (json mode: h5py's chunk index,
# laid out as kerchunk's SingleHdf5ToZarr lays it out, `"fill_value": " "`
# on every |S array, phony_dim_N where a dataset has no dimension scale).
#   cf.nc (netCDF4, xarray's netcdf4 engine): times with bounds (a noleap
#     time and its bounds without units; days whose bounds have a calendar
#     of their own and take only the units), character arrays (S1 with a
#     character dimension: with _Encoding, without, 3-D, and one along a
#     dimension that has a coordinate, which xarray does not join), a
#     packed int16, an int8 bool flag with a fill value.
#   h5.h5 (h5py, xarray's h5netcdf engine): no dimension scales, so kerchunk
#     names every first axis phony_dim_0 whatever its length; a bool
#     masked by _FillValue, a complex64 masked by _FillValue, an |S5
#     masked by _FillValue.
# For each variable the mount's values.cf.txt (values.txt where it has
# none) must equal xarray's values written by the text rules
# (tests/writers/cf_expect.py: times ISO 8601, floats shortest, masked
# numbers nan, masked strings empty), and each table D.csv must hold
# xarray's values of its columns (missing empty, integral floats with
# .0); in cf.nc every dimension of a 1-D variable has its table, whose
# columns are xarray's variables along it (joined character arrays among
# them). info.txt's dimension sizes must be the tables' row counts, and
# it must name what phony_dim_0.csv leaves out. A vlen string variable
# referenced by byte range (not inlined) is EIO with a log line saying it
# must be inlined; inlined, it reads as xarray reads it. A float32 whose
# fill_value JavaScript wrote as 100000002004087730000 mounts, and its
# CF view masks float32(1e20).
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3 # Debian's: python3-netcdf4, python3-h5py, python3-xarray
"$PY" -c 'import netCDF4, h5py, xarray, h5netcdf' 2>/dev/null ||
  zt_skip_or_fail "no netCDF4/h5py/xarray/h5netcdf for $PY (Debian packages" \
    "python3-netcdf4, python3-h5py, python3-xarray, python3-h5netcdf)"
W="$ZARRFS_SRCDIR/tests/writers"

cat >"$ZT_TMP/write.py" <<'EOF'
import sys

import h5py
import netCDF4
import numpy as np

out = sys.argv[1]


def chars(strings, n):
    """An S1 array of the strings, each padded with NULs to n bytes."""
    return np.array(strings, dtype="S%d" % n).view("S1").reshape(
        len(strings), n)


ds = netCDF4.Dataset(out + "/cf.nc", "w", format="NETCDF4")
for name, size in (("time", 4), ("nv", 2), ("station", 3), ("name_strlen", 8),
                   ("code_len", 4), ("day", 3), ("lab_len", 4)):
    ds.createDimension(name, size)
t = ds.createVariable("time", "f8", ("time",))
t.units, t.calendar, t.bounds = "hours since 2020-01-01", "noleap", "time_bnds"
t[:] = [0, 6, 12, 18]
tb = ds.createVariable("time_bnds", "f8", ("time", "nv"))
tb[:] = [[-3, 3], [3, 9], [9, 15], [15, 21]]
d = ds.createVariable("day", "i4", ("day",))
d.units, d.bounds = "days since 1999-12-31 12:00", "day_bnds"
d[:] = [0, 1, 2]
db = ds.createVariable("day_bnds", "i4", ("day", "nv"))
db.calendar = "julian"
db[:] = [[0, 1], [1, 2], [2, 3]]
sn = ds.createVariable("station_name", "S1", ("station", "name_strlen"))
sn[:] = chars(["Zürich".encode(), b"", b"Trondhei"], 8)
sn._Encoding = "utf-8"
code = ds.createVariable("code", "S1", ("station", "code_len"))
code[:] = chars([b"AB", b"CDEF", b"a\x00b"], 4)
lab = ds.createVariable("label", "S1", ("time", "station", "lab_len"))
lab[:] = chars([b"t%ds%d" % (i, j) for i in range(4) for j in range(3)],
               4).reshape(4, 3, 4)
flag = ds.createVariable("flag", "S1", ("time",))
flag[:] = np.array([b"a", b"b", b"", b"c"], dtype="S1")
temp = ds.createVariable("temp", "i2", ("time", "station"), fill_value=-32767)
temp.scale_factor, temp.add_offset = 0.1, 20.0
temp[:] = np.ma.masked_equal(
    np.array([[1, 2, 3], [4, -32767, 6], [7, 8, 9], [-5, 0, 250]], "i2"),
    -32767)
ok = ds.createVariable("ok", "i1", ("time",), fill_value=-1)
ok.setncattr("dtype", "bool")
ok[:] = np.ma.masked_equal(np.array([1, 0, -1, 1], "i1"), -1)
ds.close()

with h5py.File(out + "/h5.h5", "w") as f:
    f.create_dataset("data", data=np.arange(18, dtype="f4").reshape(6, 3))
    f.create_dataset("lat", data=np.array([-45.0, -15, 15, 45]))
    f.create_dataset("lon", data=np.array([0, 90, 180, 270], "i2"))
    f.create_dataset("time", data=np.arange(6, dtype="i4") * 10)
    b = f.create_dataset("flags", data=np.array([True, False, True, False]))
    b.attrs["_FillValue"] = np.bool_(False)
    z = f.create_dataset("z", data=np.array([1 + 2j, 0, 3.5 - 1j, 0], "c8"))
    z.attrs["_FillValue"] = np.complex64(0)
    s = f.create_dataset("s5", data=np.array([b"abc", b"", b"hello", b"x"],
                                             "S5"))
    s.attrs["_FillValue"] = np.bytes_(b"x")

ds = netCDF4.Dataset(out + "/vlen.nc", "w", format="NETCDF4")
ds.createDimension("n", 10)
v = ds.createVariable("names", str, ("n",), chunksizes=(10,))
for i, s in enumerate(["hello", "", "a", "bb", "héllo", "x" * 20, "", "z",
                       "q", "r"]):
    v[i] = s
ds.close()
EOF
"$PY" "$ZT_TMP/write.py" "$ZT_TMP" || zt_hard_error "cannot write the files"
for f in cf.nc h5.h5 vlen.nc; do
  "$PY" "$W/nc_refs.py" json "$ZT_TMP/$f" "$ZT_TMP/${f%.*}.json" ||
    zt_hard_error "nc_refs.py json $f failed"
done
"$PY" "$W/nc_refs.py" json "$ZT_TMP/vlen.nc" "$ZT_TMP/vrange.json" \
  --vlen-range || zt_hard_error "nc_refs.py json --vlen-range failed"

# dump MNT OUT: each array's values.cf.txt (else values.txt), each table
# D.csv and each info.txt of the mount into OUT.
dump() {
  local m=$1 o=$2 a
  mkdir -p "$o"
  t cat "$m/info.txt" >"$o/info.txt" 2>>"$o/errors" || echo "info.txt" >>"$o/errors"
  for a in "$m"/*/; do
    a=$(basename "$a")
    if [ -e "$m/$a/values.cf.txt" ]; then
      t cat "$m/$a/values.cf.txt" >"$o/$a.txt" 2>>"$o/errors" ||
        echo "$a/values.cf.txt" >>"$o/errors"
    else
      t cat "$m/$a/values.txt" >"$o/$a.txt" 2>>"$o/errors" ||
        echo "$a/values.txt" >>"$o/errors"
    fi
  done
  for a in "$m"/*.csv; do
    [ -e "$a" ] || continue
    t cat "$a" >"$o/$(basename "$a")" 2>>"$o/errors" ||
      echo "$(basename "$a")" >>"$o/errors"
  done
}

M=$(zt_mkdir cf)
if zmount "$ZT_TMP/cf.json" "$M"; then
  dump "$M" "$ZT_TMP/cf"
  zumount "$M"
fi
M=$(zt_mkdir h5)
if zmount "$ZT_TMP/h5.json" "$M"; then
  dump "$M" "$ZT_TMP/h5"
  zumount "$M"
fi
for o in cf h5; do
  if [ -s "$ZT_TMP/$o/errors" ]; then
    fail "$o: some views cannot be read:"
    show "$ZT_TMP/$o/errors"
  fi
done

cat >"$ZT_TMP/compare.py" <<'EOF'
import csv
import glob
import os
import sys
import warnings

import numpy as np
import xarray as xr

sys.path.insert(0, sys.argv[1])
from cf_expect import float_text, text  # noqa: E402  the text rules

warnings.simplefilter("ignore")
tmp = sys.argv[2]


def part_text(x, width):
    return float_text(float(x), width)


def value_text(v, dtype, csvfield=False):
    """xarray's value v as the mount writes it (csvfield: a D.csv field)."""
    if isinstance(v, (bytes, np.bytes_)):
        return bytes(v).decode("utf-8", "replace")
    if isinstance(v, str):
        return v
    if isinstance(v, float) and np.isnan(v) and dtype.kind == "O":
        return "" if csvfield else "nan"  # a masked bool: NaN
    if dtype.kind == "c":
        w = np.float32 if dtype == np.complex64 else np.float64
        im = part_text(v.imag, w)
        s = part_text(v.real, w) + ("" if im.startswith("-") else "+") + im + "j"
        return "" if csvfield and np.isnan(v.real) else s
    if dtype.kind == "O" and isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if dtype.kind == "O" and not hasattr(v, "calendar"):
        return "" if csvfield else "nan"
    s = text(v, dtype)
    if csvfield and s in ("nan", "NaT"):
        return ""
    if csvfield and dtype.kind == "f" and s.lstrip("-").isdigit():
        return s + ".0"
    return s


def string_var(var):
    """Strings (or masked strings): xarray's NaN shows as an empty line."""
    return var.dtype.kind in "SU" or (
        var.dtype.kind == "O" and any(isinstance(x, (str, bytes))
                                      for x in var.values.ravel()))


def expected(var, csvfield=False):
    out = []
    for v in var.values.ravel():
        if string_var(var) and not isinstance(v, (str, bytes, np.bytes_)):
            out.append("")
        else:
            out.append(value_text(v, var.dtype, csvfield))
    return out


def check(name, path, engine, columns, **kw):
    """Each view of mount name against xarray (columns: and each table's
    columns are xarray's variables along its dimension, joined character
    arrays among them)."""
    ds = xr.open_dataset(path, engine=engine, **kw)
    bad = 0
    for v in ds.variables:
        var = ds[v]
        want = expected(var)
        try:
            got = open(f"{tmp}/{name}/{v}.txt", "rb").read().decode()
        except OSError:
            print(f"FAIL {name}: {v}: no text from the mount")
            bad += 1
            continue
        lines = got.split("\n")
        if lines[-1] != "" or lines[:-1] != want:
            print(f"FAIL {name}: {v}: mount {lines[:-1][:12]!r}, "
                  f"xarray {want[:12]!r}")
            bad += 1
    for path in sorted(glob.glob(f"{tmp}/{name}/*.csv")):
        rows = list(csv.reader(open(path, newline="", encoding="utf-8")))
        head, body = rows[0], rows[1:]
        dim = path.split("/")[-1][:-4]
        along = sorted(v for v in ds.variables if ds[v].dims == (dim,))
        if columns and sorted(head) != along:
            print(f"FAIL {name}: {dim}.csv has the columns {head!r}, "
                  f"xarray the variables {along!r}")
            bad += 1
        for j, col in enumerate(head):
            var = ds[col]
            want = expected(var, csvfield=True)
            got = [r[j] if j < len(r) else "" for r in body]
            if got != want:
                print(f"FAIL {name}: {path.split('/')[-1]} column {col}: "
                      f"{got[:8]!r}, xarray {want[:8]!r}")
                bad += 1
    for dim in ds.dims if columns else ():
        if (any(ds[v].dims == (dim,) for v in ds.variables)
                and not os.path.exists(f"{tmp}/{name}/{dim}.csv")):
            print(f"FAIL {name}: no table {dim}.csv")
            bad += 1
    if not bad:
        print(f"PASS {name}: every variable and table equals xarray's")


check("cf", f"{tmp}/cf.nc", "netcdf4", True)
check("h5", f"{tmp}/h5.h5", "h5netcdf", False, phony_dims="access")
EOF
out=$("$PY" "$ZT_TMP/compare.py" "$W" "$ZT_TMP" 2>&1)
while IFS= read -r line; do
  case $line in
  PASS*) pass "${line#PASS }" ;;
  FAIL*) fail "${line#FAIL }" ;;
  *) fail "compare.py: $line" ;;
  esac
done <<<"$out"

# Dimensions: info.txt gives each dimension its table's row count, and
# says what phony_dim_0.csv leaves out.
for o in cf h5; do
  while read -r name _ size; do
    [ -e "$ZT_TMP/$o/$name.csv" ] || continue
    assert_eq "$o: info.txt's $name is $name.csv's rows" "$size" \
      "$(($(wc -l <"$ZT_TMP/$o/$name.csv") - 1))"
  done < <(awk '/^dimensions:/ { on = 1; next } /^variables:/ { on = 0 }
    on && /^  [^ ]/ { print $1, $2, $3 }' "$ZT_TMP/$o/info.txt")
done
assert_eq "h5: info.txt says what phony_dim_0.csv leaves out" \
  "    left out of phony_dim_0.csv: time (length 6)" \
  "$(grep 'left out of phony_dim_0.csv' "$ZT_TMP/h5/info.txt")"
assert_eq "h5: info.txt names the arrays of other lengths" \
  "    other lengths: data (6), time (6)" \
  "$(grep -A1 '^  phony_dim_0 = 4$' "$ZT_TMP/h5/info.txt" | tail -1)"

# HDF5 variable-length strings: inlined, as xarray reads them; by byte
# range, refused naming the reason.
M=$(zt_mkdir vlen)
if zmount "$ZT_TMP/vlen.json" "$M"; then
  want=$("$PY" -c 'import sys, xarray as xr
for s in xr.open_dataset(sys.argv[1])["names"].values: print(s)' "$ZT_TMP/vlen.nc")
  assert_eq "inlined vlen strings read as xarray reads them" "$want" \
    "$(t cat "$M/names/values.txt")"
  zumount "$M"
fi
M=$(zt_mkdir vrange)
if zmount "$ZT_TMP/vrange.json" "$M"; then
  assert_fails_with_eio "vlen strings by byte range: EIO" "$M/names/values.txt"
  zumount "$M"
  if grep -q "HDF5 variable-length references.*must inline them" "$ZT_LOG"; then
    pass "vlen strings by byte range: the log says they must be inlined"
  else
    fail "vlen strings by byte range: the log does not say why:"
    show "$ZT_LOG"
  fi
fi

# A float32 fill_value as JavaScript writes 1e20.
"$PY" - "$ZT_TMP/js.json" <<'EOF'
import base64, json, sys
import numpy as np
za = ('{"chunks":[3],"compressor":null,"dtype":"<f4",'
      '"fill_value":100000002004087730000,"filters":null,"order":"C",'
      '"shape":[3],"zarr_format":2}')
data = np.array([1.5, 1e20, 2.5], "<f4").tobytes()
json.dump({"version": 1, "refs": {
    ".zgroup": '{"zarr_format":2}', "v/.zarray": za,
    "v/.zattrs": '{"_ARRAY_DIMENSIONS":["x"]}',
    "v/0": "base64:" + base64.b64encode(data).decode()}}, open(sys.argv[1], "w"))
EOF
M=$(zt_mkdir js)
if zmount "$ZT_TMP/js.json" "$M"; then
  assert_eq "fill_value 100000002004087730000: values.txt" "1.5 1e+20 2.5" \
    "$(t cat "$M/v/values.txt" | tr '\n' ' ' | sed 's/ $//')"
  assert_eq "fill_value 100000002004087730000: masks float32(1e20)" \
    "1.5 nan 2.5" "$(t cat "$M/v/values.cf.txt" | tr '\n' ' ' | sed 's/ $//')"
  zumount "$M"
fi
finish
