#!/bin/bash
# bench/manifest.sh - scale of manifest-backed stores: a kerchunk
# reference file of 1,100,000 chunk entries (array `a`: 1000 x 1000 chunks,
# keys a/I/J; array `d`: 100,000 chunks in one directory, keys d/K), every
# entry a [url, offset, length] range of one local blob. Measures the mount
# time (until a key inside answers stat), the daemon's RSS (VmRSS from
# /proc/PID/status) once mounted and after listing `d`, `ls` of `d`, and
# `stat` of 1000 random keys; beside each, a reference measured in the same
# run: `wc -l` of the reference file (one scan of its bytes), `ls` and `stat`
# on a plain directory of 100,000 files on the local disk. Prints a table
# with the ratios and, for information, the limits set for them (mount < 3 s,
# RSS < 200 MB once mounted, ls of 100,000 keys < 2 s). Not part of `make
# check`: it never fails on speed.
#
# usage: bash bench/manifest.sh [--chunks N] [--dir-keys K]
#   --chunks N    chunks of array a (default 1000000; a square-ish grid)
#   --dir-keys K  keys in directory d (default 100000)
# env:  ZARRFS_BIN  the daemon (default ./zarrfs, then build/zarrfs)
#       BENCH_DIR   where files go (kept); default a temp dir, removed
set -euo pipefail
export LC_ALL=C
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

CHUNKS=1000000 DKEYS=100000
usage() {
  echo "usage: bash bench/manifest.sh [--chunks N] [--dir-keys K]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case $1 in
  --chunks) CHUNKS=$2 ;;
  --dir-keys) DKEYS=$2 ;;
  *) usage ;;
  esac
  shift 2
done
for v in "$CHUNKS" "$DKEYS"; do
  case $v in '' | *[!0-9]* | 0) usage ;; esac
done
# Grid of a: ROWS x COLS chunks of 4 int32 each, ROWS*COLS >= CHUNKS.
COLS=1000
[ "$CHUNKS" -ge 1000 ] || COLS=$CHUNKS
ROWS=$(((CHUNKS + COLS - 1) / COLS))
CHUNKS=$((ROWS * COLS))

bench_tool ZARRFS_BIN zarrfs
bench_need fusermount3 timeout
bench_workdir zarrfs-mbench
bench_traps
: >"$LOG"

now() { date +%s%N; }
# Seconds between two now() stamps.
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }
# Best of 3 runs, into BEST.
best3() {
  local i b=""
  for i in 1 2 3; do
    time_once /dev/null "$@"
    if [ -z "$b" ] || bench_less "$SECS" "$b"; then b=$SECS; fi
  done
  BEST=$b
}
rss_mb() { awk -v f="$2:" '$1 == f { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }

# ---- the reference file and the blob ----
BLOBSZ=$((4 * 1024 * 1024))
REFS=$WORK/refs.json
if [ ! -s "$REFS" ] || [ "$(cat "$WORK/params" 2>/dev/null)" != "$ROWS $COLS $DKEYS" ]; then
  head -c "$BLOBSZ" /dev/urandom >"$WORK/blob.bin"
  t0=$(now)
  kerchunk_refs "$REFS" "$ROWS" "$COLS" "$DKEYS" "$BLOBSZ"
  t1=$(now)
  echo "$ROWS $COLS $DKEYS" >"$WORK/params"
  echo "bench: wrote $REFS ($(stat -c %s "$REFS") bytes, $((CHUNKS + DKEYS)) chunk entries) in $(secs "$t0" "$t1") s"
fi
ENTRIES=$((CHUNKS + DKEYS))

# ---- references on the local disk ----
PLAIN=$WORK/plain
if [ "$(find "$PLAIN" -maxdepth 1 -type f 2>/dev/null | wc -l)" != "$DKEYS" ]; then
  rm -rf "$PLAIN"
  mkdir -p "$PLAIN"
  (cd "$PLAIN" && seq 0 $((DKEYS - 1)) | xargs touch)
fi
# 1000 random keys of a (and the same count of plain files), fixed seed.
awk -v r="$ROWS" -v c="$COLS" 'BEGIN { srand(4); for (n = 0; n < 1000; n++) printf "%d/%d\n", int(rand() * r), int(rand() * c) }' >"$WORK/keys.a"
awk -v d="$DKEYS" 'BEGIN { srand(5); for (n = 0; n < 1000; n++) printf "%d\n", int(rand() * d) }' >"$WORK/keys.plain"

best3 wc -l "$REFS"
REF_SCAN=$BEST
time_once /dev/null ls "$PLAIN"
REF_LS_COLD=$SECS
best3 ls "$PLAIN"
REF_LS=$BEST
best3 sh -c 'cd "$1" && xargs stat -c %s <"$2"' sh "$PLAIN" "$WORK/keys.plain"
REF_STAT=$BEST

# ---- mount: until a key inside the mount answers stat ----
t0=$(now)
"$ZARRFS_BIN" -f "$REFS" "$MNT" 2>>"$LOG" &
DAEMON=$!
up=no
for _ in $(seq 6000); do
  if stat "$MNT/.zgroup" >/dev/null 2>&1; then up=yes; break; fi
  kill -0 "$DAEMON" 2>/dev/null || break
  sleep 0.005
done
t1=$(now)
if [ "$up" != yes ]; then
  echo "bench: mounting $REFS failed; daemon log:" >&2
  tail -n 20 "$LOG" >&2
  exit 1
fi
MOUNT=$(secs "$t0" "$t1")
RSS_MOUNT=$(rss_mb "$DAEMON" VmRSS)

# Correctness, so the timings mean something: one key's bytes and the
# number of names in d (each chunk key K and its view K.txt, values.txt,
# .zarray).
k=$(head -1 "$WORK/keys.a")
i=${k%/*} j=${k#*/}
off=$((((i * COLS + j) % (BLOBSZ / 16)) * 16))
if ! cmp -s <(tail -c +$((off + 1)) "$WORK/blob.bin" | head -c 16) "$MNT/a/$k"; then
  echo "bench: WARNING: a/$k does not hold the referenced bytes" >&2
fi

time_once /dev/null ls "$MNT/d"
LS_COLD=$SECS
NAMES=$(ls -f "$MNT/d" | grep -vc '^\.\.\?$' || true)
RSS_LS=$(rss_mb "$DAEMON" VmRSS)
if [ "$NAMES" != $((2 * DKEYS + 2)) ]; then
  echo "bench: WARNING: ls of d shows $NAMES names, expected $((2 * DKEYS + 2))" >&2
fi
best3 ls "$MNT/d"
LS_WARM=$BEST
time_once /dev/null sh -c 'cd "$1" && xargs stat -c %s <"$2"' sh "$MNT/a" "$WORK/keys.a"
STAT_COLD=$SECS
best3 sh -c 'cd "$1" && xargs stat -c %s <"$2"' sh "$MNT/a" "$WORK/keys.a"
STAT_WARM=$BEST
RSS_END=$(rss_mb "$DAEMON" VmRSS)
HWM=$(rss_mb "$DAEMON" VmHWM)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "-" }'; }
limit() { awk -v v="$1" -v l="$2" 'BEGIN { print (v < l) ? "pass" : "FAIL" }'; }

echo
echo "kerchunk reference file: $ENTRIES chunk entries ($ROWS x $COLS in a, $DKEYS in d), $(stat -c %s "$REFS") bytes"
echo "ls of d shows $NAMES names (each key K and its view K.txt, values.txt, .zarray)"
printf '%-38s %10s  %-40s %s\n' "measure" "value" "reference (same run)" "limit (info)"
printf '%-38s %9ss  %-40s %s\n' "mount, until a key answers stat" "$MOUNT" \
  "$(ratio "$MOUNT" "$REF_SCAN") wc -l of the JSON ($REF_SCAN s)" "< 3 s: $(limit "$MOUNT" 3)"
printf '%-38s %8sMB  %-40s %s\n' "daemon VmRSS once mounted" "$RSS_MOUNT" "" "< 200 MB: $(limit "$RSS_MOUNT" 200)"
printf '%-38s %8sMB  %-40s %s\n' "daemon VmRSS after ls of d" "$RSS_LS" "" "< 200 MB: $(limit "$RSS_LS" 200)"
printf "%-38s %8sMB  %-40s\n" "daemon VmRSS at the end" "$RSS_END" "peak so far (VmHWM): $HWM MB"
printf '%-38s %9ss  %-40s %s\n' "ls of d ($DKEYS keys), first" "$LS_COLD" \
  "$(ratio "$LS_COLD" "$REF_LS_COLD") first ls of plain dir ($REF_LS_COLD s)" "< 2 s: $(limit "$LS_COLD" 2)"
printf '%-38s %9ss  %-40s %s\n' "ls of d, best of 3 after" "$LS_WARM" \
  "$(ratio "$LS_WARM" "$REF_LS") ls of plain dir ($REF_LS s)" "< 2 s: $(limit "$LS_WARM" 2)"
printf '%-38s %9ss  %-40s\n' "stat of 1000 random keys of a, first" "$STAT_COLD" \
  "$(ratio "$STAT_COLD" "$REF_STAT") stat of 1000 plain files ($REF_STAT s)"
printf '%-38s %9ss  %-40s\n' "stat of the same keys, best of 3" "$STAT_WARM" \
  "$(ratio "$STAT_WARM" "$REF_STAT") stat of 1000 plain files"
if [ -s "$LOG" ]; then
  echo "daemon log (last lines):"
  tail -n 5 "$LOG"
fi
