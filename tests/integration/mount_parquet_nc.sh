#!/bin/bash
# mount_parquet_nc.sh - a netCDF4 file through kerchunk Parquet references
# made from h5py's chunk index the way kerchunk makes them
# (tests/writers/nc_refs.py: get_chunk_info offsets and sizes, small chunks
# inlined, unwritten chunks missing, zlib + shuffle, _FillValue), written by
# parquet-wasm and hyparquet-writer (tests/data/parquet-nc/store). Every
# value the mount shows (values.txt of each variable, every chunk's K.txt)
# equals what netCDF4 reads from the file itself, raw (no masking or
# scaling); unwritten chunks show the fill value, as netCDF4 does.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3 # Debian's: python3-netcdf4, python3-numpy
"$PY" -c 'import netCDF4, numpy' 2>/dev/null ||
  zt_skip_or_fail "no netCDF4 for $PY (Debian package python3-netcdf4)"
ST="$ZARRFS_SRCDIR/tests/data/parquet-nc/store"

M=$(zt_mkdir nc)
zmount "$ST" "$M" || finish
for v in lat lon temp count; do
  t cat "$M/$v/values.txt" >"$ZT_TMP/$v.txt" 2>"$ZT_TMP/$v.err" ||
    { fail "$v/values.txt: cannot read"; show "$ZT_TMP/$v.err"; }
done
# Chunk views of temp: each K.txt is the chunk's in-bounds elements.
ls "$M/temp" | grep -E '^[0-9]+\.[0-9]+\.[0-9]+\.txt$' >"$ZT_TMP/chunks"
while read -r c; do
  t cat "$M/temp/$c" >"$ZT_TMP/temp.$c" || fail "temp/$c: cannot read"
done <"$ZT_TMP/chunks"
zumount "$M"

out=$("$PY" - "$ST/data.nc" "$ZT_TMP" <<'EOF'
import sys, netCDF4, numpy as np
nc, tmp = sys.argv[1], sys.argv[2]
ds = netCDF4.Dataset(nc)
ds.set_auto_maskandscale(False)
for v in ("lat", "lon", "temp", "count"):
    want = np.asarray(ds[v][:]).ravel()
    lines = open(f"{tmp}/{v}.txt").read().split("\n")
    if lines[-1] != "":
        print(f"FAIL {v}: no newline at the end"); continue
    got = np.array(lines[:-1]).astype(want.dtype)
    if got.shape != want.shape or not np.array_equal(got, want):
        print(f"FAIL {v}: {got.shape} values, netCDF4 {want.shape}; first "
              f"difference {next((i for i in range(min(got.size, want.size)) if got[i] != want[i]), None)}")
    else:
        print(f"PASS {v}: all {want.size} values equal netCDF4's")
t = np.asarray(ds["temp"][:])
chunks, n = (2, 3, 4), 0
for c in open(f"{tmp}/chunks").read().split():
    idx = [int(i) for i in c[:-4].split(".")]
    sl = tuple(slice(i * k, (i + 1) * k) for i, k in zip(idx, chunks))
    want = t[sl].ravel()
    got = np.array(open(f"{tmp}/temp.{c}").read().split("\n")[:-1]).astype(np.float32)
    if not np.array_equal(got, want):
        print(f"FAIL temp/{c}: differs from netCDF4")
    n += 1
print(f"PASS temp: {n} chunk views equal netCDF4's slices")
print(f"PASS unwritten: netCDF4 shows {int((t == -999).sum())} fill values, as the mount")
EOF
)
while IFS= read -r line; do
  case $line in
  PASS*) pass "${line#PASS }" ;;
  *) fail "${line#FAIL }" ;;
  esac
done <<<"$out"
assert_eq "temp: 8 chunk views (the rest unwritten)" 8 "$(wc -l <"$ZT_TMP/chunks")"
finish
