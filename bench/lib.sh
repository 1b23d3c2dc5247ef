# shellcheck shell=bash disable=SC2034 # it sets variables for its callers
# bench/lib.sh - helpers the benchmark scripts share (sourced, not run).
#
# Finding the binaries, the work directory, mounting and always unmounting
# (bounded waits; only the daemon we started is stopped, by its pid),
# dropping the page cache, timing one command, medians, and the kerchunk
# reference writer of bench/manifest.sh. A script sources it, calls
# bench_workdir and bench_traps, then mount_store / unmount_store around
# each measurement.
#
# Variables it sets: BENCH_ROOT (the source tree), WORK, MNT, LOG, DAEMON
# (pid of the mounted file system's process), DROP (yes once the page cache
# could be dropped), SECS and TIMEOUT (from time_once). Background jobs
# started with bench_bg are stopped at exit.

BENCH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DAEMON=""
BENCH_PIDS=() # jobs of bench_bg (pids, each its own process group)
DROP=no
MOUNT_WAIT=${MOUNT_WAIT:-10} # seconds a mount may take to appear

# bench_find VAR NAME: the executable NAME into VAR: $VAR when set (and
# then it must be executable), else ./NAME, build/NAME or NAME at the root;
# status 1 when there is none.
bench_find() {
  local var=$1 name=$2 f
  if [ -n "${!var:-}" ]; then
    if [ ! -f "${!var}" ] || [ ! -x "${!var}" ]; then
      echo "bench: $var=${!var} is not an executable" >&2
      exit 1
    fi
    return 0
  fi
  for f in "./$name" "$BENCH_ROOT/build/$name" "$BENCH_ROOT/$name"; do
    if [ -f "$f" ] && [ -x "$f" ]; then
      printf -v "$var" %s "$f"
      return 0
    fi
  done
  return 1
}

# bench_tool VAR NAME: bench_find, or exit with one line.
bench_tool() {
  bench_find "$1" "$2" || { echo "bench: no $2 (build it, or set $1)" >&2; exit 1; }
}

# bench_need TOOL...: exit with one line if a command is missing.
bench_need() {
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null || { echo "bench: needs $t" >&2; exit 1; }
  done
  [ -e /dev/fuse ] || { echo "bench: no /dev/fuse" >&2; exit 1; }
}

# bench_workdir PREFIX: WORK is BENCH_DIR (kept) or a new temp dir
# (removed at exit); MNT and LOG inside it.
bench_workdir() {
  if [ -n "${BENCH_DIR:-}" ]; then
    WORK=$BENCH_DIR
    mkdir -p "$WORK"
  else
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
  fi
  MNT=$WORK/mnt
  LOG=$WORK/zarrfs.log
  mkdir -p "$MNT"
}

# bench_bg DIR CMD...: run CMD in DIR in the background, in a process
# group of its own (setsid), so that cleanup stops it with its children;
# its pid (and group id) into BG.
bench_bg() {
  local dir=$1
  shift
  (cd "$dir" && exec setsid "$@") &
  BG=$!
  BENCH_PIDS+=("$BG")
}

# Unmount, stop the daemon and the jobs of bench_bg (their process groups,
# bounded waits), remove a temp WORK.
bench_cleanup() {
  local p
  for p in "${BENCH_PIDS[@]}"; do
    kill -TERM -- "-$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 -- "-$p" 2>/dev/null || break; sleep 0.05; done
  done
  unmount_store
  if [ -z "${BENCH_DIR:-}" ] && [ -n "${WORK:-}" ]; then
    rm -rf "$WORK" || echo "bench: could not remove $WORK" >&2
  fi
}

# Always clean up: on exit, and on INT and TERM (through exit).
bench_traps() {
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
}

# Is the mount point mounted?
mounted() { awk -v m="$MNT" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo; }

# Unmount and stop our daemon (only the pid we started), bounded waits. A
# timed-out reader may sit in the kernel waiting for the daemon's answer:
# the lazy unmount and the daemon's death (which aborts the connection)
# release it.
unmount_store() {
  if mounted; then
    timeout 10 fusermount3 -u "$MNT" 2>/dev/null || timeout 10 fusermount3 -u -z "$MNT" 2>/dev/null || true
  fi
  if [ -n "$DAEMON" ]; then
    for _ in $(seq 100); do kill -0 "$DAEMON" 2>/dev/null || break; sleep 0.05; done
    kill -TERM "$DAEMON" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$DAEMON" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$DAEMON" 2>/dev/null || true
    wait "$DAEMON" 2>/dev/null || true
    DAEMON=""
  fi
}

# mount_fs BIN SOURCE [OPTION...]: run `BIN -f OPTION... SOURCE MNT` in the
# background and wait (at most MOUNT_WAIT seconds) until it is mounted.
mount_fs() {
  local bin=$1 src=$2
  shift 2
  "$bin" -f "$@" "$src" "$MNT" 2>>"$LOG" &
  DAEMON=$!
  for _ in $(seq $((MOUNT_WAIT * 20))); do
    mounted && return 0
    kill -0 "$DAEMON" 2>/dev/null || break
    sleep 0.05
  done
  echo "bench: mounting $src failed; log:" >&2
  tail -n 20 "$LOG" >&2
  exit 1
}

# mount_store SOURCE [ZARRFS-OPTION...]: mount_fs with ZARRFS_BIN.
mount_store() { mount_fs "$ZARRFS_BIN" "$@"; }

# Drop the page cache where permitted (root outside most containers),
# under the lock the integration tests count requests under
# (tests/integration/lib.sh zt_drop_caches): a benchmark beside a test
# run does not disturb a count.
drop_caches() {
  sync
  if (
    flock -x -w 120 9 || true
    echo 3 >/proc/sys/vm/drop_caches
  ) 9>>"${ZT_CACHES_LOCK:-/tmp/zarrfs-tests.drop-caches.lock}" 2>/dev/null; then DROP=yes; fi
}

# time_once OUT CMD...: wall seconds of one run of CMD (output to OUT) into
# SECS; TIMEOUT=yes when a limit stopped it (CMD applies the limit itself,
# with timeout(1): status 124 or 137).
time_once() {
  local TIMEFORMAT=%R out=$1 rc
  shift
  SECS=$({ time "$@" >"$out" 2>&1; } 2>&1) && rc=0 || rc=$?
  SECS=${SECS##*$'\n'}
  TIMEOUT=no
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then TIMEOUT=yes; fi
}

# bench_less A B: is number A < number B?
bench_less() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

# bench_median VALUE...: the median (the lower middle one of an even count).
bench_median() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# kerchunk_refs OUT ROWS COLS DKEYS BLOBSZ: a kerchunk reference file whose
# entries are all [url, offset, length] ranges of the blob "blob.bin" beside
# it (BLOBSZ bytes): array a, ROWS x COLS chunks of 4 int32 (keys a/I/J),
# and array d, DKEYS chunks in one directory (keys d/K).
kerchunk_refs() {
  awk -v rows="$2" -v cols="$3" -v dk="$4" -v bs="$5" 'BEGIN {
    q = "\\\""
    printf "{\"version\": 1, \"refs\": {\n"
    printf "  \".zgroup\": \"{%szarr_format%s: 2}\",\n", q, q
    printf "  \"a/.zarray\": \"{%schunks%s: [1, 4], %scompressor%s: null, %sdimension_separator%s: %s/%s, %sdtype%s: %s<i4%s, %sfill_value%s: 0, %sfilters%s: null, %sorder%s: %sC%s, %sshape%s: [%d, %d], %szarr_format%s: 2}\",\n", q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, rows, cols * 4, q, q
    printf "  \"d/.zarray\": \"{%schunks%s: [4], %scompressor%s: null, %sdtype%s: %s<i4%s, %sfill_value%s: 0, %sfilters%s: null, %sorder%s: %sC%s, %sshape%s: [%d], %szarr_format%s: 2}\"", q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, dk * 4, q, q
    n = bs / 16
    for (i = 0; i < rows; i++)
      for (j = 0; j < cols; j++)
        printf ",\n  \"a/%d/%d\": [\"blob.bin\", %d, 16]", i, j, ((i * cols + j) % n) * 16
    for (k = 0; k < dk; k++)
      printf ",\n  \"d/%d\": [\"blob.bin\", %d, 16]", k, ((k * 7919) % n) * 16
    printf "\n}}\n"
  }' >"$1"
}
