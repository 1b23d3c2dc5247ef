#!/bin/bash
# mount_xarray_nc.sh - netCDF4 and HDF5 files through every reference
# form virtual datasets are kept in, against the files themselves, value by
# value. The files (tests/writers/nc_files.py, Debian's netCDF4 and h5py)
# are kept in tests/data/nc-refs/ beside their kerchunk Parquet references
# (fsspec's LazyReferenceMapper format, written by parquet-wasm and
# hyparquet-writer: tests/writers/nc_refs.py parquet); their kerchunk JSON
# references (nc_refs.py json) and VirtualiZarr manifests (nc_refs.py
# manifest: V3 zarr.json + manifest.json) are made here, all three from
# h5py's chunk index (get_chunk_info) laid out as kerchunk's
# SingleHdf5ToZarr lays it out (`"fill_value": " "` on every |S array,
# phony_dim_N where a dataset has no dimension scale).
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
# For each form and file (tests/writers/nc_compare.py): every values.txt
# must equal the raw values (netCDF4 without masking, scaling or char
# joining; h5py for h5.h5); every values.cf.txt (values.txt where it has
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
D="$ZARRFS_SRCDIR/tests/data/nc-refs"

"$PY" "$W/nc_files.py" "$ZT_TMP" vlen || zt_hard_error "cannot write vlen.nc"
P="$ZARRFS_SRCDIR/tests/data/parquet-nc/store"
cp "$D/cf/cf.nc" "$D/h5/h5.h5" "$P/data.nc" "$ZT_TMP/" ||
  zt_hard_error "no $D or $P"
for f in cf.nc h5.h5 data.nc vlen.nc; do
  "$PY" "$W/nc_refs.py" json "$ZT_TMP/$f" "$ZT_TMP/${f%.*}.json" ||
    zt_hard_error "nc_refs.py json $f failed"
done
for f in cf.nc h5.h5 data.nc; do
  "$PY" "$W/nc_refs.py" manifest "$ZT_TMP/$f" "$ZT_TMP/${f%.*}.vz" ||
    zt_hard_error "nc_refs.py manifest $f failed"
done
"$PY" "$W/nc_refs.py" json "$ZT_TMP/vlen.nc" "$ZT_TMP/vrange.json" \
  --vlen-range || zt_hard_error "nc_refs.py json --vlen-range failed"

# dump MNT OUT: each array's values.txt (as A.raw.txt) and values.cf.txt
# (else values.txt, as A.txt), each table D.csv and each info.txt of the
# mount into OUT.
dump() {
  local m=$1 o=$2 a
  mkdir -p "$o"
  t cat "$m/info.txt" >"$o/info.txt" 2>>"$o/errors" || echo "info.txt" >>"$o/errors"
  for a in "$m"/*/; do
    a=$(basename "$a")
    t cat "$m/$a/values.txt" >"$o/$a.raw.txt" 2>>"$o/errors" ||
      echo "$a/values.txt" >>"$o/errors"
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

# Each file through each form: FORM SOURCE FILE (the file the references
# name) [OPTIONS].
while read -r form src file opts; do
  o="${file##*/}"
  o="${o%.*}.$form.d"
  M=$(zt_mkdir "$o")
  # shellcheck disable=SC2086 # opts: zero or more words
  zmount "$src" "$M" $opts || continue
  dump "$M" "$ZT_TMP/$o"
  zumount "$M"
  if [ -s "$ZT_TMP/$o/errors" ]; then
    fail "$o: some views cannot be read:"
    show "$ZT_TMP/$o/errors"
  fi
  zf=--zarr-fill # kerchunk's V2 layout: xarray masks with the fill_value
  [ "$form" = manifest ] && zf=
  # shellcheck disable=SC2086 # zf: zero or one word
  out=$("$PY" "$W/nc_compare.py" "$file" "$ZT_TMP/$o" "${o%.d}" $zf 2>&1)
  while IFS= read -r line; do
    case $line in
    PASS*) pass "${line#PASS }" ;;
    FAIL*) fail "${line#FAIL }" ;;
    *) fail "nc_compare.py: $line" ;;
    esac
  done <<<"$out"
  # Dimensions: info.txt gives each dimension its table's row count, and
  # says what phony_dim_0.csv leaves out.
  while read -r name _ size; do
    [ -e "$ZT_TMP/$o/$name.csv" ] || continue
    assert_eq "$o: info.txt's $name is $name.csv's rows" "$size" \
      "$(($(wc -l <"$ZT_TMP/$o/$name.csv") - 1))"
  done < <(awk '/^dimensions:/ { on = 1; next } /^variables:/ { on = 0 }
    on && /^  [^ ]/ { print $1, $2, $3 }' "$ZT_TMP/$o/info.txt")
  case $file in
  *.h5)
    assert_eq "$o: info.txt says what phony_dim_0.csv leaves out" \
      "    left out of phony_dim_0.csv: time (length 6)" \
      "$(grep 'left out of phony_dim_0.csv' "$ZT_TMP/$o/info.txt")"
    assert_eq "$o: info.txt names the arrays of other lengths" \
      "    other lengths: data (6), time (6)" \
      "$(grep -A1 '^  phony_dim_0 = 4$' "$ZT_TMP/$o/info.txt" | tail -1)"
    ;;
  esac
done <<EOF
json $ZT_TMP/cf.json $ZT_TMP/cf.nc
parquet $D/cf $D/cf/cf.nc
manifest $ZT_TMP/cf.vz $ZT_TMP/cf.nc -o target_root=$ZT_TMP
json $ZT_TMP/h5.json $ZT_TMP/h5.h5
parquet $D/h5 $D/h5/h5.h5
manifest $ZT_TMP/h5.vz $ZT_TMP/h5.h5 -o target_root=$ZT_TMP
json $ZT_TMP/data.json $ZT_TMP/data.nc
parquet $P $P/data.nc
manifest $ZT_TMP/data.vz $ZT_TMP/data.nc -o target_root=$ZT_TMP
EOF

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
