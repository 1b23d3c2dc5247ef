#!/bin/bash
# bench/run.sh - zarrfs read benchmark (see bench/README.md).
#
# Builds two stores of N strings with zarrfs-mkstore bigstrings (zarrs.vlen,
# uint64 index; data uncompressed and zstd level 3), mounts each with
# zarrfs and times, each on a fresh mount: cat of values.txt, grep -c, tail
# -c 4096 and ls -l of the chunk directory c/. In the same run it times the
# references on the same machine state: cat of the plain text file (the
# same bytes values.txt shows) and zstd -dc of the very zstd frames the
# store holds. It prints seconds and the ratio to the reference: absolute
# seconds on a shared machine mean little, ratios travel.
#
# usage: bash bench/run.sh [--count N] [--strlen L] [--chunk C] [--runs R]
#                          [--cache SIZE]
# env:   ZARRFS_BIN      the daemon (default ./zarrfs, then build/zarrfs)
#        ZARRFS_MKSTORE  the store writer (default ./zarrfs-mkstore, then
#                        build/zarrfs-mkstore)
#        BENCH_DIR       where stores go (kept, and reused when the
#                        parameters match); default a temp dir, removed
set -euo pipefail
export LC_ALL=C
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

COUNT=10000000 STRLEN=40 CHUNK="" RUNS=3 CACHE=""
usage() {
  echo "usage: bash bench/run.sh [--count N] [--strlen L] [--chunk C] [--runs R] [--cache SIZE]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case $1 in
  --count) COUNT=$2 ;;
  --strlen) STRLEN=$2 ;;
  --chunk) CHUNK=$2 ;;
  --runs) RUNS=$2 ;;
  --cache) CACHE=$2 ;;
  *) usage ;;
  esac
  shift 2
done
for v in "$COUNT" "$STRLEN" "$RUNS" ${CHUNK:+"$CHUNK"}; do
  case $v in '' | *[!0-9]* | 0) usage ;; esac
done
# Default: 1,000,000 strings a chunk, fewer for small smoke runs (at least
# ten chunks, so the chunk directory and the multi-chunk paths are real).
if [ -z "$CHUNK" ]; then
  CHUNK=$((COUNT / 10))
  [ "$CHUNK" -le 1000000 ] || CHUNK=1000000
  [ "$CHUNK" -ge 1 ] || CHUNK=1
fi

bench_tool ZARRFS_BIN zarrfs
bench_tool ZARRFS_MKSTORE zarrfs-mkstore
bench_need zstd fusermount3 grep tail timeout
bench_workdir zarrfs-bench
bench_traps
ZOPTS=()
[ -z "$CACHE" ] || ZOPTS=(-o "cache_size=$CACHE")

# Best of RUNS of "${@:3}" with output to $2, into BEST. $1: "mount" =
# fresh mount and dropped page cache before each run; "file" = dropped page
# cache only; "warm" = as is. Output to /dev/null, except for grep: GNU
# grep stops at the first match when its output is /dev/null.
best() {
  local kind=$1 out=$2
  shift 2
  BEST=""
  for _ in $(seq "$RUNS"); do
    if [ "$kind" = mount ]; then
      unmount_store
      drop_caches
      mount_store "$STORE" "${ZOPTS[@]}"
    elif [ "$kind" = file ]; then
      drop_caches
    fi
    time_once "$out" "$@"
    if [ -z "$BEST" ] || bench_less "$SECS" "$BEST"; then
      BEST=$SECS
    fi
  done
}

# One table row: OPERATION SECONDS REFERENCE-NAME REFERENCE-SECONDS.
row() {
  awk -v op="$1" -v s="$2" -v rn="$3" -v rs="$4" 'BEGIN {
    if (rs == "") printf "%-40s %9.3f\n", op, s
    else printf "%-40s %9.3f   %-28s %7.2fx\n", op, s, rn, (rs > 0 ? s / rs : 0)
  }'
}

# ---- stores (reused from BENCH_DIR when built with the same parameters) ----

PARAMS="count=$COUNT strlen=$STRLEN chunk=$CHUNK mkstore=$(cksum <"$ZARRFS_MKSTORE" | cut -d' ' -f1)"
if [ "$(cat "$WORK/params" 2>/dev/null)" != "$PARAMS" ]; then
  echo "bench: writing stores: $COUNT strings of ~$STRLEN bytes, $CHUNK a chunk, in $WORK"
  rm -rf "$WORK/none.zarr" "$WORK/zstd.zarr" "$WORK/params"
  "$ZARRFS_MKSTORE" bigstrings "$WORK/none.zarr" --count "$COUNT" --strlen "$STRLEN" \
    --chunk "$CHUNK" --data none --plain "$WORK/plain.txt"
  "$ZARRFS_MKSTORE" bigstrings "$WORK/zstd.zarr" --count "$COUNT" --strlen "$STRLEN" \
    --chunk "$CHUNK" --data zstd --zst "$WORK/data.zst"
  echo "$PARAMS" >"$WORK/params"
fi
SIZE=$(stat -c %s "$WORK/plain.txt")
NEEDLE=row-9999
NCHUNKS=$(find "$WORK/none.zarr/c" -type f | wc -l)

# ---- references ----

best file /dev/null cat "$WORK/plain.txt"
REF_CAT=$BEST
best file "$WORK/grep.out" grep -c "$NEEDLE" "$WORK/plain.txt"
REF_GREP=$BEST
best file /dev/null zstd -dc "$WORK/data.zst"
REF_ZSTD=$BEST
best warm /dev/null cat "$WORK/plain.txt"
REF_CAT_WARM=$BEST
WANT_GREP=$(grep -c "$NEEDLE" "$WORK/plain.txt" || true)

echo
echo "text: $SIZE bytes, $COUNT lines, $NCHUNKS chunks; best of $RUNS runs"
printf '%-40s %9s   %-28s %8s\n' operation seconds reference ratio
row "reference: cat plain.txt" "$REF_CAT" "" ""
row "reference: grep -c $NEEDLE plain.txt" "$REF_GREP" "" ""
row "reference: zstd -dc data.zst" "$REF_ZSTD" "" ""
row "reference: cat plain.txt (warm)" "$REF_CAT_WARM" "" ""

# ---- through the mount ----

for kind in none zstd; do
  STORE=$WORK/$kind.zarr
  mount_store "$STORE" "${ZOPTS[@]}"
  # Correctness first: a fast wrong answer is no result.
  got=$(stat -c %s "$MNT/values.txt")
  [ "$got" = "$SIZE" ] || { echo "bench: $kind: values.txt is $got bytes, want $SIZE" >&2; exit 1; }
  cmp -s "$MNT/values.txt" "$WORK/plain.txt" || { echo "bench: $kind: values.txt differs from plain.txt" >&2; exit 1; }
  got=$(grep -c "$NEEDLE" "$MNT/values.txt" || true)
  [ "$got" = "$WANT_GREP" ] || { echo "bench: $kind: grep -c gave $got, want $WANT_GREP" >&2; exit 1; }

  if [ "$kind" = none ]; then
    ref_name="cat plain.txt" ref=$REF_CAT grep_name="grep -c plain.txt" grep_ref=$REF_GREP
  else
    ref_name="zstd -dc data.zst" ref=$REF_ZSTD grep_name=$ref_name grep_ref=$REF_ZSTD
  fi
  best mount /dev/null cat "$MNT/values.txt"
  row "$kind: cat values.txt (cold)" "$BEST" "$ref_name" "$ref"
  best warm /dev/null cat "$MNT/values.txt" # same mount, caches warm
  row "$kind: cat values.txt (warm)" "$BEST" "cat plain.txt (warm)" "$REF_CAT_WARM"
  best mount "$WORK/grep.out" grep -c "$NEEDLE" "$MNT/values.txt"
  row "$kind: grep -c $NEEDLE values.txt (cold)" "$BEST" "$grep_name" "$grep_ref"
  best mount /dev/null tail -c 4096 "$MNT/values.txt"
  row "$kind: tail -c 4096 values.txt (cold)" "$BEST" "$ref_name" "$ref"
  best mount /dev/null ls -l "$MNT/c"
  row "$kind: ls -l c/ (cold, $NCHUNKS chunks)" "$BEST" "$ref_name" "$ref"
  unmount_store
done

echo
if [ "$DROP" = yes ]; then
  echo "cold: a fresh mount and a dropped page cache before each run"
else
  echo "cold: a fresh mount before each run; the page cache could not be dropped here, so the store files may be cached"
fi
echo "zarrfs: $ZARRFS_BIN${CACHE:+ -o cache_size=$CACHE}; stores in $WORK"
