#!/bin/bash
# bench/run.sh - zarrfs read benchmark. Builds large string arrays with
# zarrfs-mkstore (zarrs.vlen, uncompressed data and zstd data), mounts each,
# and times through the mount: cat of the whole values.txt, grep -c, a cold
# tail -c 4096, ls -l of the chunk directory. In the same run it times the
# references: cat of a plain file holding the same text, and zstd -dc of the
# same data compressed the same way. Figures are reported as ratios to those
# references (machines here are shared and noisy; absolute seconds mean
# little).
#
# usage: bash bench/run.sh [--count N] [--strlen L] [--chunk C] [--runs R]
# env:   ZARRFS_BIN, ZARRFS_MKSTORE (default: build/ or ./), BENCH_DIR
set -euo pipefail

COUNT=10000000 STRLEN=40 CHUNK=1000000 RUNS=3
while [ $# -gt 0 ]; do
  case $1 in
  --count) COUNT=$2; shift 2 ;;
  --strlen) STRLEN=$2; shift 2 ;;
  --chunk) CHUNK=$2; shift 2 ;;
  --runs) RUNS=$2; shift 2 ;;
  *) echo "usage: $0 [--count N] [--strlen L] [--chunk C] [--runs R]" >&2; exit 2 ;;
  esac
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
pick() { for f in "$@"; do [ -x "$f" ] && { echo "$f"; return; }; done; echo "$1"; }
ZARRFS_BIN=${ZARRFS_BIN:-$(pick "$ROOT/build/zarrfs" "$ROOT/zarrfs")}
ZARRFS_MKSTORE=${ZARRFS_MKSTORE:-$(pick "$ROOT/build/zarrfs-mkstore" "$ROOT/zarrfs-mkstore")}
for t in "$ZARRFS_BIN" "$ZARRFS_MKSTORE"; do
  [ -x "$t" ] || { echo "bench: $t not built (run make first)" >&2; exit 1; }
done
command -v zstd >/dev/null || { echo "bench: needs zstd (apt-get install zstd)" >&2; exit 1; }

WORK=${BENCH_DIR:-$(mktemp -d /tmp/zarrfs-bench.XXXXXX)}
MNT=$WORK/mnt
DAEMON=""
mkdir -p "$MNT"

cleanup() {
  if grep -q " $MNT " /proc/mounts 2>/dev/null; then
    fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
  fi
  [ -n "$DAEMON" ] && kill "$DAEMON" 2>/dev/null || true
  [ -z "${BENCH_DIR:-}" ] && rm -rf "$WORK"
}
trap cleanup EXIT

# Drop the page cache when allowed, so "cold" means cold.
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }

# Seconds (best of RUNS) for a shell command, into $BEST; cold runs drop
# caches and remount first. Runs in this shell (not in $(...)): remounting
# changes the daemon's pid.
best() {
  local cold=$1 cmd=$2 best="" t s e
  for _ in $(seq "$RUNS"); do
    [ "$cold" = cold ] && { drop_caches; remount; }
    s=$(date +%s.%N)
    bash -c "$cmd" >/dev/null
    e=$(date +%s.%N)
    t=$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.6f", b - a }')
    if [ -z "$best" ] || awk -v t="$t" -v b="$best" 'BEGIN { exit !(t < b) }'; then best=$t; fi
  done
  BEST=$best
}

STORE=""
mount_store() {
  STORE=$1
  "$ZARRFS_BIN" -f -o cache_size=1G "$STORE" "$MNT" 2>"$WORK/daemon.log" &
  DAEMON=$!
  for _ in $(seq 100); do grep -q " $MNT " /proc/mounts && return 0; sleep 0.05; done
  echo "bench: mount failed" >&2; cat "$WORK/daemon.log" >&2; exit 1
}
unmount_store() {
  fusermount3 -u "$MNT"
  wait "$DAEMON" 2>/dev/null || true
  DAEMON=""
}
remount() { [ -n "$DAEMON" ] || return 0; unmount_store; mount_store "$STORE"; }

echo "bench: building stores ($COUNT strings of ~$STRLEN bytes, $CHUNK per chunk) in $WORK"
"$ZARRFS_MKSTORE" bigstrings "$WORK/plain.zarr" --count "$COUNT" --strlen "$STRLEN" \
  --chunk "$CHUNK" --data none --plain "$WORK/plain.txt"
"$ZARRFS_MKSTORE" bigstrings "$WORK/zstd.zarr" --count "$COUNT" --strlen "$STRLEN" \
  --chunk "$CHUNK" --data zstd
# The zstd reference: the same text compressed with the same library and
# level, one frame per chunk of text.
zstd -q -3 -f "$WORK/plain.txt" -o "$WORK/plain.txt.zst"
SIZE=$(stat -c %s "$WORK/plain.txt")
NEEDLE="row-$((COUNT - 1))-"

best warm "cat '$WORK/plain.txt'"; ref_cat=$BEST
best cold "cat '$WORK/plain.txt'"; ref_cat_cold=$BEST
best warm "zstd -dc '$WORK/plain.txt.zst'"; ref_zstd=$BEST
best warm "grep -c '$NEEDLE' '$WORK/plain.txt'"; ref_grep=$BEST

report() { printf '%-34s %9.4f s   %7.2fx %s\n' "$1" "$2" "$(awk -v a="$2" -v b="$3" 'BEGIN { print (b > 0 ? a / b : 0) }')" "$4"; }

echo
echo "text size: $SIZE bytes; best of $RUNS runs"
printf '%-34s %11s   %8s\n' operation seconds ratio
printf '%-34s %9.4f s\n' "reference: cat plain.txt (warm)" "$ref_cat"
printf '%-34s %9.4f s\n' "reference: cat plain.txt (cold)" "$ref_cat_cold"
printf '%-34s %9.4f s\n' "reference: zstd -dc plain.txt.zst" "$ref_zstd"
printf '%-34s %9.4f s\n' "reference: grep -c plain.txt" "$ref_grep"
for kind in plain zstd; do
  mount_store "$WORK/$kind.zarr"
  [ "$(stat -c %s "$MNT/values.txt")" = "$SIZE" ] || { echo "bench: size mismatch" >&2; exit 1; }
  cmp -s "$MNT/values.txt" "$WORK/plain.txt" || { echo "bench: content mismatch" >&2; exit 1; }
  if [ "$kind" = plain ]; then ref=$ref_cat_cold refname="cold cat plain.txt"; else ref=$ref_zstd refname="zstd -dc"; fi
  best cold "cat '$MNT/values.txt'"; report "$kind: cat values.txt (cold)" "$BEST" "$ref" "vs $refname"
  best warm "cat '$MNT/values.txt'"; report "$kind: cat values.txt (warm)" "$BEST" "$ref_cat" "vs warm cat plain.txt"
  best cold "grep -c '$NEEDLE' '$MNT/values.txt'"; report "$kind: grep -c (cold)" "$BEST" "$ref" "vs $refname"
  best cold "tail -c 4096 '$MNT/values.txt'"; report "$kind: tail -c 4096 (cold)" "$BEST" "$ref" "vs $refname"
  best cold "ls -l '$MNT/c'"; report "$kind: ls -l c/ (cold)" "$BEST" "$ref" "vs $refname"
  unmount_store
done
