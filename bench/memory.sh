#!/bin/bash
# bench/memory.sh - the daemon's peak memory against its bound.
#
# zarrfs keeps decoded data within -o cache_size, plus what the requests
# in flight hold; the bound it promises is a peak resident set of
# cache_size + 64 MiB whatever the reader does. For each read pattern
# this mounts a fresh daemon with -o cache_size=CACHE, runs the reader,
# and prints the daemon's VmHWM (/proc/PID/status) against the bound:
#
#   strings   cat values.txt of COUNT strings in 1,000,000-string
#             zarrs.vlen chunks (uncompressed)
#   unit48    cat values.txt of one chunk of 3,000,000 strings (about
#             48 MB of text, three times the default CACHE), zarrs.vlen
#             uncompressed and with zstd, and vlen-utf8 with zstd (an
#             inner chunk of a shard: no index to read partially)
#   wide      one 128 KiB read at offset 0 of a 100 x 80,000 float64
#             array in 100 x 4,000 zstd chunks (a row of 20 chunks,
#             about 105 MB of text), cold
#
#
# With --scale, every view kind at scale as well, each read whole by `cat`
# on a fresh mount (sizes exact, index cache none):
#
#   K   a kerchunk reference set of 200,000 float32 chunks of (1,25,36)
#       (bench/archives.py kerchunk, as bench/archives.sh --only K writes
#       it): t2m/values.txt, t2m/rows.csv, one chunk's text, the array's
#       and the group's info.txt, the table lat.csv
#   T   an xarray group of 10^7 rows x 4 columns (bench/archives.py
#       table): the table obs.csv, x/values.txt, and the CF view
#       x/values.cf.txt
#   I   an Icechunk repository of 10^6 chunk references of one int32
#       array (tests/writers/icechunk_writer.py scale, as bench/icechunk.sh
#       writes it): scale/values/values.txt
#
#   bash bench/memory.sh [--cache SIZE] [--count N] [--scale]
#
# Defaults: --cache 16M, --count 10000000 (the bound at the default cache,
# 320 MiB, is --cache 256M). Needs root (or FUSE access), /dev/fuse and
# fusermount3; finds zarrfs and zarrfs-mkstore as bench/lib.sh says.
# BENCH_DIR keeps the stores between runs; the K archive is taken from
# BENCH_DIR/archives/K when bench/archives.sh wrote it there.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CACHE=16M
COUNT=10000000
SCALE=no
while [ $# -gt 0 ]; do
  case $1 in
  --cache) CACHE=$2; shift 2 ;;
  --count) COUNT=$2; shift 2 ;;
  --scale) SCALE=yes; shift ;;
  *) echo "usage: bench/memory.sh [--cache SIZE] [--count N] [--scale]" >&2; exit 2 ;;
  esac
done

bench_need fusermount3 python3
bench_tool ZARRFS_BIN zarrfs
bench_tool ZARRFS_MKSTORE zarrfs-mkstore
bench_workdir zarrfs-memory
bench_traps

# Bytes of a size such as 16M.
to_bytes() {
  awk -v s="$1" 'BEGIN { n = s + 0; u = toupper(substr(s, length(s)))
    if (u == "K") n *= 1024; else if (u == "M") n *= 1048576;
    else if (u == "G") n *= 1073741824; printf "%d\n", n }'
}
BOUND_KB=$(( ($(to_bytes "$CACHE") + 64 * 1048576) / 1024 ))

# make_store DIR KIND ARGS...: `zarrfs-mkstore KIND WORK/DIR ARGS`, unless
# it is there already (BENCH_DIR).
make_store() {
  local dir=$WORK/$1 kind=$2
  shift 2
  [ -e "$dir/zarr.json" ] || "$ZARRFS_MKSTORE" "$kind" "$dir" "$@" >/dev/null
}
make_store strings bigstrings --count "$COUNT" --chunk 1000000 --strlen 15 --data none
make_store unit48 bigstrings --count 3000000 --chunk 3000000 --strlen 15 --data none
make_store unit48z bigstrings --count 3000000 --chunk 3000000 --strlen 15 --data zstd
make_store unit48u8 bigstrings --count 3000000 --chunk 3000000 --strlen 15 \
  --shard 3000000 --inner utf8 --data zstd
make_store wide numeric --shape 100,80000 --chunk 100,4000 --dtype float64 --codec zstd

FAILED=0
printf '%-44s %12s %12s %s\n' "read (cache_size=$CACHE)" "VmHWM KiB" "bound KiB" verdict
# measure_at NAME SOURCE VIEW CMD...: mount SOURCE fresh, run CMD with
# $MNT/VIEW as its last argument, print the daemon's peak against the
# bound.
measure_at() {
  local name=$1 src=$2 view=$3 hwm verdict
  shift 3
  mount_store "$src" -o "cache_size=$CACHE,index_cache=none"
  "$@" "$MNT/$view" >/dev/null
  hwm=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$DAEMON/status")
  unmount_store
  verdict=ok
  if [ "$hwm" -gt "$BOUND_KB" ]; then verdict=OVER; FAILED=1; fi
  printf '%-44s %12s %12s %s\n' "$name" "$hwm" "$BOUND_KB" "$verdict"
}
# measure NAME STORE CMD...: measure_at of WORK/STORE's values.txt.
measure() {
  local name=$1 store=$2
  shift 2
  measure_at "$name" "$WORK/$store" values.txt "$@"
}
# head128k FILE: one 128 KiB read at offset 0, with the kernel's
# read-ahead off for the file (POSIX_FADV_RANDOM), so the daemon sees that
# one read and nothing after it.
head128k() {
  python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
sys.stdout.buffer.write(os.pread(fd, 131072, 0))' "$1"
}

measure "strings: cat ($COUNT strings)" strings cat
measure "unit48: cat (zarrs.vlen, bytes)" unit48 cat
measure "unit48: cat (zarrs.vlen, zstd)" unit48z cat
measure "unit48: cat (vlen-utf8, zstd)" unit48u8 cat
measure "unit48: tail -c 4096" unit48 tail -c 4096
measure "wide: cold 128 KiB read" wide head128k
measure "wide: cat" wide cat

if [ "$SCALE" = yes ]; then
  PY=${PYTHON:-/usr/bin/python3}
  A=$WORK/archives
  mkdir -p "$A"
  if [ ! -f "$A/K/refs.json" ]; then
    echo "writing the 200,000-chunk kerchunk archive" >&2
    "$PY" "$BENCH_ROOT/bench/archives.py" kerchunk "$A/K" --chunks 200000
  fi
  if [ ! -d "$A/T/group.zarr" ]; then
    echo "writing the 10^7-row table" >&2
    "$PY" "$BENCH_ROOT/bench/archives.py" table "$A/T" --rows 10000000
  fi
  if [ ! -f "$A/I/repo" ]; then
    echo "writing the Icechunk repository of 10^6 chunks" >&2
    rm -rf "$A/I"
    "$PY" "$BENCH_ROOT/tests/writers/icechunk_writer.py" scale "$A/I" \
      --refs 1000000 --manifests 100 --snapshots 2 >/dev/null
  fi
  K=$A/K/refs.json T=$A/T/group.zarr
  measure_at "K: cat t2m/values.txt (200,000 chunks)" "$K" t2m/values.txt cat
  measure_at "K: cat t2m/rows.csv" "$K" t2m/rows.csv cat
  measure_at "K: cat t2m/150000.0.0.txt (a chunk)" "$K" t2m/150000.0.0.txt cat
  measure_at "K: cat t2m/info.txt" "$K" t2m/info.txt cat
  measure_at "K: cat info.txt (the group)" "$K" info.txt cat
  measure_at "K: cat lat.csv (a D.csv table)" "$K" lat.csv cat
  measure_at "T: cat obs.csv (10^7 rows x 4)" "$T" obs.csv cat
  measure_at "T: cat x/values.txt" "$T" x/values.txt cat
  measure_at "T: cat x/values.cf.txt (a CF view)" "$T" x/values.cf.txt cat
  measure_at "I: cat scale/values/values.txt (10^6 chunks)" "$A/I" scale/values/values.txt cat
fi
exit "$FAILED"
