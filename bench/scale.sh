#!/bin/bash
# bench/scale.sh - real-size 2-D arrays through zarrfs (see
# bench/README.md).
#
# Writes with zarrfs-mkstore numeric two stores of real sizes: a
# V2 (1000, COLS) int32 array as zarr-python 2.13 writes it, chunks (1000,
# 1000), zstd level 3 (COLS 30000: 30 chunks of 4 MB decoded, ~19 MB
# stored), and a V3 (1000, 1500) float64 array, chunks (128, 100), zstd
# level 3; for each, the text values.txt must show (plain.txt) and its
# chunks concatenated (chunks.zst: a multi-frame zstd file). Then times,
# each run on a fresh mount, with the default cache and with -o
# cache_size=1M: `cat values.txt`, and 16 concurrent readers of 128 KiB at
# random offsets. References, timed in the same run: `cat plain.txt` and
# `zstd -dc chunks.zst` (decompression alone). It prints seconds and the
# ratios to the references: machines here are shared and noisy, so compare
# ratios. Every result is checked against plain.txt first: a fast wrong
# answer is no result. A run that exceeds --limit seconds is stopped (the
# mount torn down) and shown as ">LIMIT".
#
# usage: bash bench/scale.sh [--cols N] [--runs R] [--limit SECS]
# env:   ZARRFS_BIN, ZARRFS_MKSTORE (default ./, then build/), BENCH_DIR
#        (keep the stores there and reuse them; default a temp dir, removed)
set -euo pipefail
export LC_ALL=C
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

COLS=30000 RUNS=3 LIMIT=60
usage() {
  echo "usage: bash bench/scale.sh [--cols N] [--runs R] [--limit SECS]" >&2
  exit 2
}
ARGS="$*"
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case $1 in
  --cols) COLS=$2 ;;
  --runs) RUNS=$2 ;;
  --limit) LIMIT=$2 ;;
  *) usage ;;
  esac
  shift 2
done
for v in "$COLS" "$RUNS" "$LIMIT"; do
  case $v in '' | *[!0-9]* | 0) usage ;; esac
done

bench_tool ZARRFS_BIN zarrfs
bench_tool ZARRFS_MKSTORE zarrfs-mkstore
bench_need zstd fusermount3 dd cmp timeout
bench_workdir zarrfs-bench-scale
bench_traps

# mount_cache STORE CACHE: mount STORE with CACHE ("default" or a
# cache_size).
mount_cache() {
  if [ "$2" = default ]; then mount_store "$1"; else mount_store "$1" -o "cache_size=$2"; fi
}

# The reference commands, limited like the rest.
lim() { timeout -k 2 "$LIMIT" "$@"; }

# cat_view: cat values.txt to /dev/null, within the limit.
cat_view() { lim cat "$MNT/values.txt" >/dev/null; }

# random16 OFFS: 16 concurrent dd readers of 128 KiB at the offsets in OFFS
# (outputs in $WORK/r.N); fails if any failed or hit the limit.
random16() {
  local k=0 off rc=0 pids=()
  while read -r off; do
    timeout -k 2 "$LIMIT" dd if="$MNT/values.txt" iflag=skip_bytes,count_bytes,fullblock \
      bs=131072 skip="$off" count=131072 of="$WORK/r.$k" status=none </dev/null &
    pids+=($!)
    k=$((k + 1))
  done <"$1"
  for k in "${!pids[@]}"; do wait "${pids[k]}" || rc=$?; done
  return "$rc"
}

# check_random OFFS PLAIN: every piece equals the same range of PLAIN.
check_random() {
  local k=0 off
  while read -r off; do
    dd if="$2" iflag=skip_bytes,count_bytes bs=131072 skip="$off" count=131072 \
      status=none | cmp -s - "$WORK/r.$k" ||
      { echo "bench: random read $k (offset $off) differs from plain.txt" >&2; exit 1; }
    k=$((k + 1))
  done <"$1"
}

# best KIND STORE CACHE: best of RUNS of KIND (cat | random) on a fresh
# mount each, into BEST (">LIMIT" after a timeout, which ends the runs).
# The first run's result is checked against plain.txt.
best() {
  local kind=$1 store=$2 cache=$3 run
  BEST=""
  for run in $(seq "$RUNS"); do
    mount_cache "$store" "$cache"
    if [ "$kind" = cat ]; then
      time_once /dev/null cat_view
    else
      time_once /dev/null random16 "$store.offs"
    fi
    if [ "$TIMEOUT" = yes ]; then
      BEST=">$LIMIT"
      unmount_store
      return
    fi
    if [ "$run" = 1 ]; then
      if [ "$kind" = cat ]; then
        # Same mount: the kernel keeps the pages zarrfs served.
        lim cmp -s "$MNT/values.txt" "$store.txt" ||
          { echo "bench: $store: values.txt differs from plain.txt" >&2; exit 1; }
      else
        check_random "$store.offs" "$store.txt"
      fi
    fi
    unmount_store
    if [ -z "$BEST" ] || bench_less "$SECS" "$BEST"; then
      BEST=$SECS
    fi
  done
}

# best_ref CMD...: best of RUNS of a reference command, into BEST.
best_ref() {
  BEST=""
  for _ in $(seq "$RUNS"); do
    time_once /dev/null lim "$@"
    if [ -z "$BEST" ] || bench_less "$SECS" "$BEST"; then
      BEST=$SECS
    fi
  done
}

# One table row: OPERATION SECONDS [REF-SECONDS [REF2-SECONDS]].
row() {
  awk -v op="$1" -v s="$2" -v r1="${3:-}" -v r2="${4:-}" 'BEGIN {
    slow = (substr(s, 1, 1) == ">"); v = slow ? substr(s, 2) + 0 : s + 0
    printf "%-46s %9s", op, slow ? s : sprintf("%.3f", v)
    if (r1 != "" || r2 != "") {
      printf "   %9s", (r1 > 0 ? sprintf("%s%.1fx", slow ? ">" : "", v / r1) : "-")
      printf "   %9s", (r2 > 0 ? sprintf("%s%.1fx", slow ? ">" : "", v / r2) : "-")
    }
    printf "\n"
  }'
}

# ---- stores (reused from BENCH_DIR when written with the same parameters) ----

INT_ARGS=(--dtype int32 --shape "1000,$COLS" --chunk 1000,1000 --codec zstd --format 2)
FLT_ARGS=(--dtype float64 --shape 1000,1500 --chunk 128,100 --codec zstd)
PARAMS="cols=$COLS mkstore=$(cksum <"$ZARRFS_MKSTORE" | cut -d' ' -f1)"
if [ "$(cat "$WORK/params" 2>/dev/null)" != "$PARAMS" ]; then
  echo "bench: writing stores in $WORK"
  rm -rf "$WORK/int32" "$WORK/float64" "$WORK"/*.txt "$WORK"/*.zst "$WORK/params"
  "$ZARRFS_MKSTORE" numeric "$WORK/int32" "${INT_ARGS[@]}" --plain "$WORK/int32.txt"
  "$ZARRFS_MKSTORE" numeric "$WORK/float64" "${FLT_ARGS[@]}" --plain "$WORK/float64.txt"
  for s in int32 float64; do
    find "$WORK/$s" -type f ! -name .zarray ! -name zarr.json | sort |
      xargs cat >"$WORK/$s.zst"
  done
  echo "$PARAMS" >"$WORK/params"
fi
# 16 random offsets per store, fixed seed: the same ranges on every run.
for s in int32 float64; do
  awk -v n="$(stat -c %s "$WORK/$s.txt")" 'BEGIN { srand(9)
    for (k = 0; k < 16; k++) printf "%d\n", int(rand() * (n - 131072)) }' >"$WORK/$s.offs"
done

echo
printf '%-46s %9s   %9s   %9s\n' operation seconds "/ cat" "/ zstd -dc"
for s in int32 float64; do
  if [ "$s" = int32 ]; then
    name="int32 (1000, $COLS) V2 zstd, chunks (1000, 1000)"
  else
    name="float64 (1000, 1500) V3 zstd, chunks (128, 100)"
  fi
  echo "-- $name: $(stat -c %s "$WORK/$s.txt") bytes of text, $(stat -c %s "$WORK/$s.zst") stored"
  best_ref cat "$WORK/$s.txt"
  REF_CAT=$BEST
  row "reference: cat plain.txt" "$REF_CAT"
  best_ref zstd -dcq "$WORK/$s.zst"
  REF_ZSTD=$BEST
  row "reference: zstd -dc chunks.zst" "$REF_ZSTD"
  for cache in default 1M; do
    best cat "$WORK/$s" "$cache"
    row "cat values.txt, cache $cache" "$BEST" "$REF_CAT" "$REF_ZSTD"
  done
  for cache in default 1M; do
    best random "$WORK/$s" "$cache"
    row "16 x 128 KiB random reads, cache $cache" "$BEST" "" "$REF_ZSTD"
  done
done

echo
echo "best of $RUNS; each zarrfs run on a fresh mount (the store files may be in the page cache); limit ${LIMIT}s a run"
echo "zarrfs: $ZARRFS_BIN; stores in $WORK"
echo "reproduce: bash bench/scale.sh${ARGS:+ $ARGS}"
