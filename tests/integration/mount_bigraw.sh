#!/bin/bash
# mount_bigraw.sh - chunks stored as decoded (no compressor, no filter: a
# `bytes`-only chain) larger than the cache or -o max_decode are read by
# ranges in windows: exact bytes, and the daemon's peak resident set
# (VmHWM) within -o cache_size + 64 MiB.
#   1. a netCDF4 file (Debian's netCDF4) with a contiguous uncompressed
#      float64 variable of 5,000,000 values (40 MB) and a big-endian int32
#      one of 3,000,000 (12 MB), through kerchunk JSON references made by
#      tests/writers/nc_refs.py: `cat values.txt` of each equals numpy's
#      values by the text rules, within the bound at cache_size=16M; with
#      max_decode=8M (both chunks over it) too, and `tail -c` on a fresh
#      mount;
#   2. a V3 `bytes`-only chunk of 5,000,000 float64 (zarrfs-mkstore
#      numeric --codec none): `cat` exact within the bound, and with
#      max_decode=8M;
#   3. that chunk's text size (learned by one pass of ranged reads) kept in
#      the persistent index (-o index_cache): a second mount's `stat`
#      answers it reading under 1 MiB.
# Under AddressSanitizer or ThreadSanitizer the peaks are printed, not
# checked (their shadow memory is not zarrfs').
. "$(dirname "$0")/lib.sh"
export LC_ALL=C
zt_require_mkstore

PY=/usr/bin/python3 # Debian's: python3-netcdf4, python3-h5py, numpy
"$PY" -c 'import netCDF4, h5py, numpy' 2>/dev/null ||
  zt_skip_or_fail "no netCDF4/h5py/numpy for $PY (Debian packages" \
    "python3-netcdf4, python3-h5py, python3-numpy)"
W="$ZARRFS_SRCDIR/tests/writers"

CACHE_MB=16
BOUND_KB=$(((CACHE_MB + 64) * 1024))

# ---- the netCDF4 file, its references and numpy's text ----
"$PY" - "$ZT_TMP" <<'PYEOF' || zt_hard_error "cannot write big.nc"
import sys
import netCDF4
import numpy as np

out = sys.argv[1]
x = np.arange(5_000_000, dtype=np.float64) * 0.1 - 1000.0
b = ((np.arange(3_000_000, dtype=np.int64) * 7919) % 2_000_001
     - 1_000_000).astype(np.int32)
with netCDF4.Dataset(out + "/big.nc", "w") as ds:
    ds.createDimension("n", x.size)
    ds.createDimension("m", b.size)
    v = ds.createVariable("x", "f8", ("n",), contiguous=True)
    v[:] = x
    w = ds.createVariable("b", ">i4", ("m",), contiguous=True, endian="big")
    w[:] = b
# what netCDF4 reads back, written by the text rules: floats shortest
# (Python's repr has the same digits and exponent rule; integral values
# lose their ".0")
with netCDF4.Dataset(out + "/big.nc") as ds:
    ds.set_auto_mask(False)
    xs = ds["x"][:]
    bs = ds["b"][:]
def ftext(f):
    s = repr(float(f))
    return s[:-2] if s.endswith(".0") else s
with open(out + "/x.txt", "w") as f:
    f.write("\n".join(ftext(v) for v in xs.tolist()) + "\n")
with open(out + "/b.txt", "w") as f:
    f.write("\n".join(str(v) for v in bs.tolist()) + "\n")
PYEOF
"$PY" "$W/nc_refs.py" json "$ZT_TMP/big.nc" "$ZT_TMP/big.json" ||
  zt_hard_error "nc_refs.py json big.nc failed"
# the references hold what this test is about: no compressor, no filter
"$PY" - "$ZT_TMP/big.json" <<'PYEOF' || zt_hard_error "big.json is not bytes-only"
import json, sys
refs = json.load(open(sys.argv[1]))["refs"]
for v, dt in (("x", "<f8"), ("b", ">i4")):
    za = json.loads(refs[v + "/.zarray"])
    assert za["compressor"] is None and not za["filters"], za
    assert za["dtype"] == dt and za["chunks"] == za["shape"], za
PYEOF

D=$(zt_mkdir stores)
# (writing 40 MB of text takes this writer a while on a loaded machine)
timeout -k 5 600 "$ZARRFS_MKSTORE" numeric "$D/v3" --shape 5000000 --chunk 5000000 \
  --dtype float64 --codec none --plain "$ZT_TMP/v3.txt" >/dev/null ||
  zt_hard_error "zarrfs-mkstore numeric --codec none failed"

# peak_ok DESC PID: the daemon's VmHWM within the bound.
peak_ok() {
  local hwm
  hwm=$(zt_status_kb "$2" VmHWM)
  if zt_daemon_is_sanitized; then
    say "$1: peak $hwm KiB (a sanitizer build: not checked against $BOUND_KB)"
  elif [ -n "$hwm" ] && [ "$hwm" -le "$BOUND_KB" ]; then
    pass "$1: peak $hwm KiB <= $BOUND_KB KiB"
  else
    fail "$1: peak ${hwm:-?} KiB over cache_size + 64 MiB = $BOUND_KB KiB"
  fi
}

# cat_within NAME SRC OPTS DESC FILE=REF...: on a fresh mount of SRC with
# OPTS, each FILE is REF byte for byte, then the peak within the bound.
cat_within() {
  local m name=$1 src=$2 opts=$3 desc=$4
  shift 4
  m=$(zt_mkdir "$name")
  if zmount "$src" "$m" -o "$opts"; then
    local fr
    for fr in "$@"; do
      assert_file_eq "$desc: ${fr%%=*} exact" "${fr#*=}" "$m/${fr%%=*}"
    done
    peak_ok "$desc: cat" "$ZT_PID"
    zumount "$m"
  fi
}

BASE="cache_size=${CACHE_MB}M,index_cache=none"
# ---- 1. the contiguous netCDF variables through kerchunk ----
cat_within k1 "$ZT_TMP/big.json" "$BASE" "netCDF contiguous 40 MB float64" \
  "x/values.txt=$ZT_TMP/x.txt"
cat_within k2 "$ZT_TMP/big.json" "$BASE,max_decode=8M" \
  "netCDF contiguous, max_decode=8M" "x/values.txt=$ZT_TMP/x.txt" \
  "b/values.txt=$ZT_TMP/b.txt"
M=$(zt_mkdir k3)
if zmount "$ZT_TMP/big.json" "$M" -o "$BASE,max_decode=8M"; then
  assert_eq "netCDF big-endian int32 over max_decode: tail -c 5000 exact" \
    "$(tail -c 5000 "$ZT_TMP/b.txt" | md5sum)" \
    "$(tail -c 5000 "$M/b/values.txt" | md5sum)"
  assert_eq "netCDF float64 over max_decode: 4096 bytes at 30,000,000 exact" \
    "$(dd if="$ZT_TMP/x.txt" bs=4096 skip=7324 count=1 2>/dev/null | md5sum)" \
    "$(dd if="$M/x/values.txt" bs=4096 skip=7324 count=1 2>/dev/null | md5sum)"
  zumount "$M"
fi

# ---- 2. a V3 bytes-only chunk ----
cat_within v1 "$D/v3" "$BASE" "V3 bytes-only 40 MB chunk" \
  "values.txt=$ZT_TMP/v3.txt"
cat_within v2 "$D/v3" "$BASE,max_decode=8M" "V3 bytes-only, max_decode=8M" \
  "values.txt=$ZT_TMP/v3.txt" "c/0.txt=$ZT_TMP/v3.txt"

# ---- 3. the chunk's text size from the persistent index ----
IX=$(zt_mkdir ix)
read_kb=
for pass in 1 2; do
  M=$(zt_mkdir "ix$pass")
  if zmount "$D/v3" "$M" -o "cache_size=${CACHE_MB}M,index_cache=$IX"; then
    assert_eq "V3 bytes-only, mount $pass: stat size exact" \
      "$(stat -c %s "$ZT_TMP/v3.txt")" "$(stat -c %s "$M/values.txt")"
    read_kb=$(($(zt_rchar "$ZT_PID") / 1024))
    zumount "$M"
  fi
done
if [ "$read_kb" ]; then
  [ "$read_kb" -lt 1024 ] || say "  second mount read $read_kb KiB"
  assert_eq "V3 bytes-only: a second mount's stat reads < 1 MiB" 1 \
    "$([ "$read_kb" -lt 1024 ] && echo 1 || echo 0)"
fi

finish
