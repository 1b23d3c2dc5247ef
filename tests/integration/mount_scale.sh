#!/bin/bash
# mount_scale.sh - real-size data: ordinary use of stores of real size must
# finish, be exact, and cost bounded memory, file descriptors and decode
# work. One section per way real sizes can fail:
#   1. 2-D arrays: a zarr-python 2.13 style V2 (1000, 30000) int32 array,
#      chunks (1000, 1000), zstd; a (1000, 1500) float64 array, chunks
#      (128, 100): head, tail, stat, whole-view reads, 16 concurrent 128 KiB
#      readers at random offsets and 16 readers covering the view once,
#      with the default cache, -o cache_size=64K (and 1M for the floats);
#      the daemon's rchar for a whole read stays within a small constant of
#      the store size (about one decode per chunk, or per chunk and band
#      where a row of chunks is read in bands);
#   2. file descriptors: the daemon under `ulimit -n 64` over a
#      10,000-chunk string store;
#   3. a chunk key that is a FIFO: EIO at once, logged once, the rest served;
#   4. fill values: a 1 MB string fill with -o max_decode=64M (peak RSS
#      bounded), a never-written array of 10^18 elements (stat, tail);
#   5. a 75M-element uint8 chunk: cat values.txt completes, exact;
#   6. a never-written shape [10^7] chunk [1] array: stat at once;
#   7. a chunk that is a symbolic link out of the store: 1,000 reads each
#      of the raw key, its view and values.txt, at most two log lines
#      naming it (one per key and reason);
#   8. a shard of 100,000 inner chunks: with size_wait=0, stat values.txt
#      shows 0 until the size is learned, head at once, tail and cat
#      exact, stat exact afterwards.
# Every command on a mount is time-bounded (lib.sh `t`, ZT_CMD_TIMEOUT; the
# "at once" checks by ZT_QUICK_TIMEOUT): a hang is a failure, never a stuck
# run. A FUSE request the daemon has taken but not answered leaves its
# caller in D state even after SIGKILL (timeout then returns, the caller
# stays), so output from the mount always goes to files, never into $(...)
# or a pipe the script waits on; after a timeout the mount is torn down by
# force (lazy unmount, daemon killed: that fails the pending requests) and
# the next check gets a fresh mount. Commands that may block for good (the
# FIFO) run in the background and are polled.
# Expected texts come from zarrfs-mkstore (numeric, bigstrings), streamed
# into cmp where they are large.
#
# Environment: ZT_SCALE=full|small|tiny (default: small when the daemon is
# an ASan build, else full): small shrinks the three largest cases (never
# skips a check); tiny runs every check on sizes any engine serves, to test
# the script itself. ZT_QUICK_TIMEOUT: the "at once" limit (default 10 s,
# 30 s under ASan); ZT_CMD_TIMEOUT defaults to 90 s under ASan. ZT_TIMEOUT (the whole script) defaults to 1200 s here.
ZT_TIMEOUT=${ZT_TIMEOUT:-1200}
ZS_CMD_TIMEOUT_SET=${ZT_CMD_TIMEOUT:-}
. "$(dirname "$0")/lib.sh"
zt_require_mkstore
command -v dd >/dev/null 2>&1 || zt_hard_error "required tool 'dd' missing"

ASAN=no
if zt_daemon_is_asan; then ASAN=yes; fi
SCALE=${ZT_SCALE:-auto}
if [ "$SCALE" = auto ]; then
  if [ "$ASAN" = yes ]; then SCALE=small; else SCALE=full; fi
fi
if [ "$ASAN" = yes ]; then QUICK=${ZT_QUICK_TIMEOUT:-30}; else QUICK=${ZT_QUICK_TIMEOUT:-10}; fi
# The per-command hang guard: an ASan daemon on a loaded 2-core machine
# took over 30 s for a 10M-element cat (seen in CI next to other jobs).
if [ "$ASAN" = yes ] && [ -z "$ZS_CMD_TIMEOUT_SET" ]; then ZT_CMD_TIMEOUT=90; fi
# Real sizes (full); small shrinks the three largest for ASan;
# tiny is a smoke run of the script itself (sizes even a naive engine
# serves: it proves the checks, not the fixes).
I2_COLS=30000 F_ROWS=1000 F_COLS=1500 U8_N=75000000 FILL_N=2000 FILL_C=1000
N7=10000000 N18=1000000000000000000 N_UNITS=100000
case $SCALE in
full) ;;
small) I2_COLS=8000 U8_N=20000000 FILL_N=600 FILL_C=300 ;;
tiny) I2_COLS=2000 F_ROWS=300 F_COLS=400 U8_N=1000000 FILL_N=20 FILL_C=10 N7=10000 N18=1000000 N_UNITS=70000 ;;
*) zt_hard_error "ZT_SCALE must be full, small or tiny, not '$SCALE'" ;;
esac
say "scale $SCALE (ASan daemon: $ASAN); command limit ${ZT_CMD_TIMEOUT}s, 'at once' limit ${QUICK}s"
T_START=$(date +%s)
PIECE=131072 # what each concurrent reader reads: FUSE's largest request

# ---- helpers ----

# Seconds since $1 (a `date +%s.%N` stamp), one decimal.
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# Run zarrfs-mkstore; a failure is a broken test setup.
mk() {
  if ! t "$ZARRFS_MKSTORE" "$@" >"$ZT_TMP/mkstore.log" 2>&1; then
    show "$ZT_TMP/mkstore.log"
    zt_hard_error "zarrfs-mkstore $* failed"
  fi
}

# Total size of the files of a store (what a whole read must decode).
store_bytes() { find "$1" -type f -exec cat {} + | wc -c; }

# Was a status a time-limit kill (timeout: 124; -k: 137)?
timed_out() { [ "$1" -eq 124 ] || [ "$1" -eq 137 ]; }

# smount SRC [OPTS...]: a fresh mount for a group of checks; sets MNT, PID.
# With ZS_NOFILE set, the daemon runs with that soft limit on open files.
ZS_NOFILE=
smount() {
  ZS_SRC=$1
  shift
  ZS_OPTS=("$@")
  MNT=$(zt_mkdir mnt)
  ZS_HWM=0
  smount_again
}

# smount_again: mount ZS_SRC with ZS_OPTS on MNT again (same path, so
# commands already written with "$MNT/..." reach the new mount).
smount_again() {
  local old rc
  ZS_STUCK=0
  PID=
  old=$(ulimit -S -n)
  [ -z "$ZS_NOFILE" ] || ulimit -S -n "$ZS_NOFILE" # the daemon inherits it
  zmount "$ZS_SRC" "$MNT" "${ZS_OPTS[@]}"
  rc=$?
  ulimit -S -n "$old"
  [ "$rc" -eq 0 ] || return 1
  PID=$ZT_PID
}

# Keep ZS_HWM, the highest peak RSS (kB) of the daemons of this group.
note_hwm() {
  local h
  [ -n "$PID" ] || return 0
  h=$(zt_status_kb "$PID" VmHWM)
  if [ -n "$h" ] && [ "$h" -gt "$ZS_HWM" ]; then ZS_HWM=$h; fi
}

# sdone: unmount the current mount; by force if a command on it timed out
# (its daemon may still be busy with the abandoned request).
sdone() {
  note_hwm
  if [ "$ZS_STUCK" = 1 ]; then
    zt_force_teardown "$MNT"
    zt_check_log_clean "$ZT_LOG"
  else
    zumount "$MNT"
  fi
}

# A check timed out: say so; the next check gets a fresh mount.
note_timeout() {
  fail "$1: no answer within $2 s (timed out)"
  ZS_STUCK=1
}

# Before a check: if the previous one timed out, mount again (same options).
fresh_if_stuck() {
  if [ "$ZS_STUCK" = 1 ]; then
    sdone
    smount_again
  fi
}

# alive DESC: the current daemon still runs.
alive() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
    pass "$1: daemon alive"
  else
    fail "$1: daemon died; log:"
    tail -n 20 "$ZT_LOG" | show
  fi
}

# check_stream DESC FILE GEN...: FILE (read through the mount, time-bounded)
# must equal the output of GEN, byte for byte.
check_stream() {
  local desc=$1 f=$2 t0 rc
  shift 2
  fresh_if_stuck
  t0=$(now)
  t cmp -- "$f" <("$@") >"$ZT_TMP/cmp.out" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ]; then
    pass "$desc"
    say "$desc: ok, $(since "$t0") s"
  elif timed_out "$rc"; then
    note_timeout "$desc" "$ZT_CMD_TIMEOUT"
  else
    fail "$desc (after $(since "$t0") s)"
    show "$ZT_TMP/cmp.out"
  fi
  return "$rc"
}

# check_out DESC EXPECTED_FILE SECS CMD...: CMD's stdout (time-bounded by
# SECS) must equal EXPECTED_FILE.
check_out() {
  local desc=$1 exp=$2 secs=$3 rc
  shift 3
  fresh_if_stuck
  tb "$secs" "$@" >"$ZT_TMP/out.got" 2>"$ZT_TMP/out.err"
  rc=$?
  if timed_out "$rc"; then
    note_timeout "$desc" "$secs"
  elif [ "$rc" -ne 0 ]; then
    fail "$desc: '$*' exited $rc"
    show "$ZT_TMP/out.err"
  else
    assert_file_eq "$desc" "$exp" "$ZT_TMP/out.got"
  fi
}

# check_size DESC FILE EXPECTED SECS: `stat -c %s` within SECS says EXPECTED.
check_size() {
  local desc=$1 f=$2 want=$3 secs=$4 got rc t0
  fresh_if_stuck
  t0=$(now)
  tb "$secs" stat -c %s -- "$f" >"$ZT_TMP/stat.out" 2>"$ZT_TMP/stat.err"
  rc=$?
  got=$(cat "$ZT_TMP/stat.out")
  if timed_out "$rc"; then
    note_timeout "$desc" "$secs"
  elif [ "$rc" -ne 0 ]; then
    fail "$desc: stat exited $rc"
    show "$ZT_TMP/stat.err"
  else
    assert_eq "$desc ($(since "$t0") s)" "$want" "$got"
  fi
}

# check_rchar DESC R0 R1 STORED: a whole read made the daemon read at most
# 4 x the store plus 4 MiB (about one decode per chunk: re-decoding per
# 128 KiB request costs orders of magnitude more; RCHAR_TIMES instead of 4
# where a pass decodes each chunk several times), and at least half the
# store (else the counter is blind and the bound proves nothing).
check_rchar() {
  local desc=$1 r0=$2 r1=$3 stored=$4 times=${RCHAR_TIMES:-4} d
  if [ -z "$r0" ] || [ -z "$r1" ]; then
    fail "$desc: cannot read /proc/PID/io"
    return
  fi
  d=$((r1 - r0))
  say "$desc: daemon rchar +$d bytes for a $stored-byte store ($(awk -v a="$d" -v b="$stored" 'BEGIN { printf "%.2f", b ? a / b : 0 }')x)"
  if [ "$d" -gt $((times * stored + 4194304)) ]; then
    fail "$desc: the daemon read $d bytes for a $stored-byte store (limit ${times}x + 4 MiB): chunks decoded again and again"
  elif [ "$d" -lt $((stored / 2)) ]; then
    fail "$desc: rchar rose by only $d for a $stored-byte store: the measurement is blind"
  else
    pass "$desc: rchar within ${times}x the store"
  fi
}

# whole_read DESC FILE STORED GEN...: on a fresh mount (nothing cached),
# read FILE whole (cmp against GEN), then check the daemon's rchar.
whole_read() {
  local desc=$1 f=$2 stored=$3 r0 r1
  shift 3
  r0=$(zt_io_field "$PID" rchar)
  if check_stream "$desc: values.txt exact" "$f" "$@"; then
    r1=$(zt_io_field "$PID" rchar)
    check_rchar "$desc: one decode per chunk" "$r0" "$r1" "$stored"
  else
    fail "$desc: rchar not measured (the read did not complete)"
  fi
}

# ranges OFFS LEN PREFIX GEN...: the LEN-byte ranges at the (ascending,
# non-overlapping) offsets in OFFS of GEN's output, into PREFIX.0, .1, ...;
# one pass over the stream (dd skips by reading on a pipe).
ranges() {
  local offs=$1 len=$2 prefix=$3
  shift 3
  (
    pos=0 k=0
    while read -r off <&3; do
      dd iflag=skip_bytes,count_bytes,fullblock bs=65536 skip=$((off - pos)) \
        count="$len" of="$prefix.$k" status=none
      pos=$((off + len)) k=$((k + 1))
    done 3<"$offs"
  ) < <("$@")
}

# readers DESC FILE SIZE SEED GEN...: 16 concurrent dd readers of 128 KiB
# (less if FILE is under 2 MiB) at random offsets (one in each 16th of FILE,
# so they do not overlap), each time-bounded, each compared with the same
# range of GEN's output.
readers() {
  local desc=$1 f=$2 size=$3 seed=$4 len=$PIECE k off t0 bad=0 slow=0
  local -a pids rcs
  shift 4
  fresh_if_stuck
  [ $((size / 16)) -ge "$len" ] || len=$((size / 16))
  awk -v n="$size" -v s="$seed" -v p="$len" 'BEGIN {
    srand(s); w = int(n / 16); span = w - p; if (span < 1) span = 1
    for (k = 0; k < 16; k++) printf "%d\n", k * w + int(rand() * span) }' >"$ZT_TMP/offs"
  rm -f "$ZT_TMP"/r.exp.* "$ZT_TMP"/r.got.*
  ranges "$ZT_TMP/offs" "$len" "$ZT_TMP/r.exp" "$@"
  t0=$(now)
  k=0
  while read -r off; do
    timeout -k 5 "$ZT_CMD_TIMEOUT" dd if="$f" iflag=skip_bytes,count_bytes,fullblock \
      bs=$PIECE skip="$off" count="$len" of="$ZT_TMP/r.got.$k" status=none \
      2>"$ZT_TMP/r.err.$k" </dev/null &
    pids[k]=$!
    k=$((k + 1))
  done <"$ZT_TMP/offs"
  for k in "${!pids[@]}"; do
    wait "${pids[k]}"
    rcs[k]=$?
  done
  for k in "${!pids[@]}"; do
    off=$(sed -n "$((k + 1))p" "$ZT_TMP/offs")
    if timed_out "${rcs[k]}"; then
      slow=$((slow + 1))
    elif [ "${rcs[k]}" -ne 0 ]; then
      bad=$((bad + 1))
      say "$desc: reader $k (offset $off) exited ${rcs[k]}: $(head -c 200 "$ZT_TMP/r.err.$k")"
    elif ! cmp -s "$ZT_TMP/r.exp.$k" "$ZT_TMP/r.got.$k"; then
      bad=$((bad + 1))
      say "$desc: reader $k (offset $off): $(cmp "$ZT_TMP/r.exp.$k" "$ZT_TMP/r.got.$k" 2>&1 | head -1)"
    fi
  done
  if [ "$slow" -gt 0 ]; then
    note_timeout "$desc: $slow of 16 readers" "$ZT_CMD_TIMEOUT"
  elif [ "$bad" -gt 0 ]; then
    fail "$desc: $bad of 16 readers got wrong bytes or an error"
  else
    pass "$desc"
    say "$desc: ok, $(since "$t0") s"
  fi
}

# cover DESC FILE SIZE STORED GEN...: 16 concurrent readers that together
# read FILE once (reader k reads the k-th 16th sequentially, 128 KiB at a
# time); their bytes, joined, must equal GEN's output; then the daemon's
# rchar (call on a fresh mount).
cover() {
  local desc=$1 f=$2 size=$3 stored=$4 k w from n r0 r1 t0 bad=0 slow=0
  local -a pids rcs
  shift 4
  fresh_if_stuck
  w=$(((size + 15) / 16))
  rm -f "$ZT_TMP"/c.got.*
  r0=$(zt_io_field "$PID" rchar)
  t0=$(now)
  for k in $(seq 0 15); do
    from=$((k * w))
    n=$w
    [ $((from + n)) -le "$size" ] || n=$((size - from))
    [ "$n" -gt 0 ] || n=0
    timeout -k 5 "$ZT_CMD_TIMEOUT" dd if="$f" iflag=skip_bytes,count_bytes \
      bs=$PIECE skip="$from" count="$n" of="$ZT_TMP/c.got.$k" status=none \
      2>"$ZT_TMP/c.err.$k" </dev/null &
    pids[k]=$!
  done
  for k in "${!pids[@]}"; do
    wait "${pids[k]}"
    rcs[k]=$?
    if timed_out "${rcs[k]}"; then
      slow=$((slow + 1))
    elif [ "${rcs[k]}" -ne 0 ]; then
      bad=$((bad + 1))
      say "$desc: reader $k exited ${rcs[k]}: $(head -c 200 "$ZT_TMP/c.err.$k")"
    fi
  done
  r1=$(zt_io_field "$PID" rchar)
  if [ "$slow" -gt 0 ]; then
    note_timeout "$desc: $slow of 16 readers" "$ZT_CMD_TIMEOUT"
  elif [ "$bad" -gt 0 ]; then
    fail "$desc: $bad of 16 readers failed"
  elif ! cmp <(for k in $(seq 0 15); do cat "$ZT_TMP/c.got.$k"; done) <("$@") >"$ZT_TMP/cmp.out" 2>&1; then
    fail "$desc: the joined bytes differ"
    show "$ZT_TMP/cmp.out"
  else
    pass "$desc"
    say "$desc: ok, $(since "$t0") s"
    check_rchar "$desc" "$r0" "$r1" "$stored"
    return
  fi
  fail "$desc: rchar not measured (the readers did not complete)"
}

# fails_eio DESC OUT SECS CMD...: CMD (run in the background, polled, as it
# may block in the kernel) must fail within SECS with "Input/output error".
# Returns 2 when it is still running (then the mount must be torn down).
fails_eio() {
  local desc=$1 out=$2 secs=$3
  shift 3
  zt_bg "$out" "$@"
  if ! zt_bg_wait "$ZT_BG_PID" "$secs"; then
    fail "$desc: still blocked after $secs s"
    return 2
  fi
  if [ "$ZT_BG_RC" -ne 0 ] && grep -q 'Input/output error' "$out.err"; then
    pass "$desc"
  else
    fail "$desc: expected EIO, got exit $ZT_BG_RC"
    show "$out.err"
  fi
}

# ---- 8. a shard of 100,000 inner chunks: the first byte at once ----
# A stat that may not wait (size_wait=0) shows 0 until the size is
# learned; reads learn sizes only as far as they reach, a tail (its seek
# to the end) all of them. One shard holds them: 100,000 files would test
# the disk.

SRC=$ZT_TMP/manyunits
mk bigstrings "$SRC" --count $N_UNITS --chunk $N_UNITS --shard 1 --plain "$ZT_TMP/u.txt"
head -c 64 "$ZT_TMP/u.txt" >"$ZT_TMP/u.head"
tail -c 64 "$ZT_TMP/u.txt" >"$ZT_TMP/u.tail"
if smount "$SRC" -o attr_timeout=0 -o size_wait=0; then
  check_size "$N_UNITS units: stat values.txt 0 at once (size not learned)" \
    "$MNT/values.txt" 0 "$QUICK"
  check_out "$N_UNITS units: head -c 64 at once" "$ZT_TMP/u.head" "$QUICK" \
    head -c 64 "$MNT/values.txt"
  check_out "$N_UNITS units: tail -c 64" "$ZT_TMP/u.tail" "$ZT_CMD_TIMEOUT" \
    tail -c 64 "$MNT/values.txt"
  check_stream "$N_UNITS units: cat values.txt" "$MNT/values.txt" cat "$ZT_TMP/u.txt"
  check_size "$N_UNITS units: stat values.txt exact once learned" \
    "$MNT/values.txt" "$(wc -c <"$ZT_TMP/u.txt")" "$QUICK"
  alive "$N_UNITS units"
  sdone
fi
rm -rf "$SRC"

# ---- 6. a never-written shape [10^7] chunk [1] array: stat at once ----

SRC=$ZT_TMP/tenmillion
mk numeric "$SRC" --dtype int32 --shape $N7 --chunk 1 --fill 42 --missing 1
yes 42 | head -n 30 | tail -c 64 >"$ZT_TMP/t7.tail"
if smount "$SRC"; then
  check_size "[$N7] chunk [1], never written: stat values.txt at once" \
    "$MNT/values.txt" $((3 * N7)) "$QUICK"
  check_out "[$N7] chunk [1]: tail -c 64 at once" "$ZT_TMP/t7.tail" "$QUICK" \
    tail -c 64 "$MNT/values.txt"
  check_stream "[$N7] chunk [1]: cat values.txt" "$MNT/values.txt" \
    sh -c 'yes 42 | head -n "$1"' sh $N7
  alive "[$N7] chunk [1]"
  sdone
fi
rm -rf "$SRC"

# ---- 4b. a never-written array of 10^18 elements ----

SRC=$ZT_TMP/exa
mk numeric "$SRC" --dtype float64 --shape $N18 --chunk $N18 --fill -0.25 --missing 1
# "-0.25\n" is 6 bytes: the view is 6e18 bytes, 3e18 starts a line.
yes -- -0.25 | head -n 20 | tail -c 64 >"$ZT_TMP/e18.tail"
yes -- -0.25 | head -n 20 | tail -c +4 | head -c 64 >"$ZT_TMP/e18.mid"
if smount "$SRC"; then
  check_size "[$N18] chunk [$N18], never written: stat values.txt" \
    "$MNT/values.txt" $((6 * N18)) "$QUICK"
  check_out "[$N18]: tail -c 64 values.txt" "$ZT_TMP/e18.tail" "$QUICK" \
    tail -c 64 "$MNT/values.txt"
  check_out "[$N18]: 64 bytes at offset 3N+3" "$ZT_TMP/e18.mid" "$QUICK" \
    dd if="$MNT/values.txt" iflag=skip_bytes,count_bytes bs=64 \
    skip=$((3 * N18 + 3)) count=64 status=none
  alive "[$N18]"
  sdone
fi
rm -rf "$SRC"

# ---- 4a. a 1 MB string fill, chunks missing, -o max_decode=64M ----

SRC=$ZT_TMP/bigfill
FILL=1000000
mk bigstrings "$SRC" --count $FILL_N --chunk $FILL_C --fill-len $FILL --missing 1 \
  --inner utf8 --data zstd
fill_gen() {
  "$ZARRFS_MKSTORE" bigstrings - --count $FILL_N --chunk $FILL_C --fill-len $FILL \
    --missing 1 --plain -
}
fill_gen | head -c 4096 >"$ZT_TMP/fill.head"
fill_gen | tail -c 64 >"$ZT_TMP/fill.tail"
FILL_SIZE=$((FILL_N * (FILL + 1)))
# ASan keeps freed memory in a quarantine (256 MB by default); keep it small
# so the peak measures what the daemon holds, and allow for shadow memory.
SLACK_MB=0
if [ "$ASAN" = yes ]; then
  SAVED_ASAN=${ASAN_OPTIONS-}
  export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16
  SLACK_MB=48
fi
if smount "$SRC" -o max_decode=64M; then
  HWM0=$(zt_status_kb "$PID" VmHWM)
  check_size "1 MB fill, $FILL_N elements, no chunk: stat values.txt" \
    "$MNT/values.txt" $FILL_SIZE "$QUICK"
  check_out "1 MB fill: head -c 4096" "$ZT_TMP/fill.head" "$QUICK" \
    head -c 4096 "$MNT/values.txt"
  check_out "1 MB fill: tail -c 64" "$ZT_TMP/fill.tail" "$QUICK" \
    tail -c 64 "$MNT/values.txt"
  check_stream "1 MB fill: cat values.txt ($FILL_SIZE bytes)" "$MNT/values.txt" fill_gen
  note_hwm # the peak of every daemon of this group (one per timeout)
  HWM1=$ZS_HWM
  LIMIT_KB=$(((64 + SLACK_MB) * 1024))
  if [ -z "$HWM0" ] || [ "$HWM1" -eq 0 ]; then
    fail "1 MB fill: cannot read VmHWM of the daemon"
  else
    say "1 MB fill: daemon peak RSS (VmHWM) $((HWM0 / 1024)) MiB after mounting, $((HWM1 / 1024)) MiB after the reads"
    if [ $((HWM1 - HWM0)) -le "$LIMIT_KB" ]; then
      pass "1 MB fill: peak RSS grew by less than max_decode (64 MiB)"
    else
      fail "1 MB fill: peak RSS grew by $(((HWM1 - HWM0) / 1024)) MiB (limit $((LIMIT_KB / 1024)) MiB with -o max_decode=64M): missing chunks cost memory"
    fi
  fi
  alive "1 MB fill"
  sdone
fi
if [ "$ASAN" = yes ]; then export ASAN_OPTIONS=$SAVED_ASAN; fi
rm -rf "$SRC"

# ---- 7. a chunk that is a symbolic link out of the store ----

SRC=$ZT_TMP/linkstore
mkdir -p "$SRC" "$ZT_TMP/outside"
printf '{"zarr_format": 3, "node_type": "group", "attributes": {}}\n' >"$SRC/zarr.json"
mk numeric "$SRC/ln" --shape 40 --chunk 10 --plain "$ZT_TMP/ln.txt"
# Valid chunk bytes outside the store: serving them would be a breach.
mv "$SRC/ln/c/1" "$ZT_TMP/outside/chunk1"
ln -s "$ZT_TMP/outside/chunk1" "$SRC/ln/c/1"
sed -n 1,10p "$ZT_TMP/ln.txt" >"$ZT_TMP/ln.c0"
if smount "$SRC"; then
  tb 120 sh -c 'for i in $(seq 1000); do cat "$1"; done' sh "$MNT/ln/c/1" \
    >"$ZT_TMP/ln.raw" 2>"$ZT_TMP/ln.raw.err"
  rc=$?
  timed_out "$rc" && note_timeout "symlink out of the store: 1000 reads of the raw key" 120
  tb 120 sh -c 'for i in $(seq 1000); do cat "$1"; done' sh "$MNT/ln/c/1.txt" \
    >"$ZT_TMP/ln.view" 2>"$ZT_TMP/ln.view.err"
  rc=$?
  timed_out "$rc" && note_timeout "symlink out of the store: 1000 reads of its view" 120
  # values.txt needs the chunk too: its failures must not log again either.
  tb 120 sh -c 'for i in $(seq 1000); do cat "$1"; done' sh "$MNT/ln/values.txt" \
    >/dev/null 2>"$ZT_TMP/ln.values.err"
  rc=$?
  timed_out "$rc" && note_timeout "symlink out of the store: 1000 reads of values.txt" 120
  if [ -s "$ZT_TMP/ln.raw" ]; then
    fail "symlink out of the store: reading ln/c/1 returned bytes (the file outside was served)"
  else
    pass "symlink out of the store: its bytes are never served"
  fi
  n=$(grep -F -c 'ln/c/1' "$ZT_LOG")
  say "symlink out of the store: $n log lines name ln/c/1 after 3,000 reads; errors seen: $(sort -u "$ZT_TMP"/ln.*.err | sed 's|.*/ln/||' | tr '\n' ';')"
  if [ "$n" -le 2 ]; then
    pass "symlink out of the store: at most 2 log lines name the key"
  else
    fail "symlink out of the store: $n log lines name ln/c/1 after 1,000 reads each of c/1, c/1.txt, values.txt (at most 2: one per key and reason)"
    grep -F 'ln/c/1' "$ZT_LOG" | head -3 | show
  fi
  check_out "symlink store: a healthy chunk view still reads" "$ZT_TMP/ln.c0" 30 \
    cat "$MNT/ln/c/0.txt"
  alive "symlink store"
  sdone
fi
rm -rf "$SRC" "$ZT_TMP/outside"

# ---- 3. a chunk key that is a FIFO ----

SRC=$ZT_TMP/fifostore
mkdir -p "$SRC"
printf '{"zarr_format": 3, "node_type": "group", "attributes": {}}\n' >"$SRC/zarr.json"
mk numeric "$SRC/ok" --shape 40 --chunk 10 --plain "$ZT_TMP/ok.txt"
mk numeric "$SRC/fifo" --shape 40 --chunk 10 --plain "$ZT_TMP/fifo.txt"
rm "$SRC/fifo/c/2"
mkfifo "$SRC/fifo/c/2"
FIFO=$SRC/fifo/c/2
if smount "$SRC"; then
  STUCK=0
  # stat needs the view's size, so the chunk: at once, not a hang; a
  # size that needs a bad chunk shows 0 (a bad chunk closes only itself).
  for again in "" " again"; do
    [ "$STUCK" = 0 ] || break
    zt_bg "$ZT_TMP/f1" stat -c %s "$MNT/fifo/values.txt"
    if ! zt_bg_wait "$ZT_BG_PID" "$QUICK"; then
      fail "FIFO chunk: stat fifo/values.txt$again still blocked after $QUICK s"
      STUCK=1
    elif [ "$ZT_BG_RC" -eq 0 ] && [ "$(cat "$ZT_TMP/f1")" = 0 ]; then
      pass "FIFO chunk: stat fifo/values.txt$again shows 0 at once"
    else
      fail "FIFO chunk: stat fifo/values.txt$again exited $ZT_BG_RC: $(head -c 100 "$ZT_TMP/f1") $(head -c 100 "$ZT_TMP/f1.err")"
    fi
  done
  if [ "$STUCK" = 0 ]; then
    fails_eio "FIFO chunk: cat fifo/values.txt fails with EIO at once" \
      "$ZT_TMP/f3" "$QUICK" cat "$MNT/fifo/values.txt" || [ $? -ne 2 ] || STUCK=1
  fi
  if [ "$STUCK" = 0 ]; then
    # The raw key and its view: failing (EIO, or not listed) is fine;
    # blocking or serving bytes is not.
    for f in c/2 c/2.txt; do
      zt_bg "$ZT_TMP/f4" cat "$MNT/fifo/$f"
      if ! zt_bg_wait "$ZT_BG_PID" "$QUICK"; then
        fail "FIFO chunk: cat fifo/$f still blocked after $QUICK s"
        STUCK=1
        break
      elif [ "$ZT_BG_RC" -ne 0 ] && [ ! -s "$ZT_TMP/f4" ]; then
        pass "FIFO chunk: cat fifo/$f fails at once ($(head -c 100 "$ZT_TMP/f4.err"))"
      else
        fail "FIFO chunk: cat fifo/$f exited $ZT_BG_RC with $(wc -c <"$ZT_TMP/f4") bytes"
      fi
    done
  fi
  if [ "$STUCK" = 0 ]; then
    for k in 0 1 3; do
      sed -n "$((k * 10 + 1)),$((k * 10 + 10))p" "$ZT_TMP/fifo.txt" >"$ZT_TMP/fifo.c$k"
      check_out "FIFO chunk: fifo/c/$k.txt still reads" "$ZT_TMP/fifo.c$k" "$QUICK" \
        cat "$MNT/fifo/c/$k.txt"
    done
    n=$(grep -F -c 'fifo/c/2' "$ZT_LOG")
    if [ "$n" -eq 1 ]; then
      pass "FIFO chunk: the log names fifo/c/2 once"
    else
      fail "FIFO chunk: $n log lines name fifo/c/2 (want exactly 1)"
      show "$ZT_LOG"
    fi
  else
    fail "FIFO chunk: the other checks of fifo/ not run (a command is blocked)"
  fi
  # Another array of the store is served whatever happened above.
  zt_bg "$ZT_TMP/f5" cat "$MNT/ok/values.txt"
  if ! zt_bg_wait "$ZT_BG_PID" "$QUICK"; then
    fail "FIFO store: ok/values.txt blocked too"
    STUCK=1
  elif [ "$ZT_BG_RC" -eq 0 ] && cmp -s "$ZT_TMP/ok.txt" "$ZT_TMP/f5"; then
    pass "FIFO store: the other array is still served"
  else
    fail "FIFO store: ok/values.txt: exit $ZT_BG_RC, or wrong bytes"
    show "$ZT_TMP/f5.err"
  fi
  alive "FIFO store"
  if [ "$STUCK" = 1 ]; then
    say "FIFO store: tearing down by force (FIFO opened for writing, lazy unmount, daemon killed)"
    zt_force_teardown "$MNT" "$FIFO"
    zt_check_log_clean "$ZT_LOG"
  else
    zumount "$MNT"
  fi
fi
rm -rf "$SRC"

# ---- 2. file descriptors: ulimit -n 64, 10,000 chunks ----

SRC=$ZT_TMP/manychunks
mk bigstrings "$SRC" --count 100000 --chunk 10 --plain "$ZT_TMP/many.txt"
tail -n 10 "$ZT_TMP/many.txt" >"$ZT_TMP/many.last"
sed -n 50001,50010p "$ZT_TMP/many.txt" >"$ZT_TMP/many.mid"
ZS_NOFILE=64
if smount "$SRC"; then
  say "ulimit -n 64: daemon limit: $(awk '/^Max open files/ { print $4 }' "/proc/$PID/limits")"
  check_stream "ulimit -n 64, 10,000 chunks: cat values.txt" "$MNT/values.txt" \
    cat "$ZT_TMP/many.txt"
  say "ulimit -n 64: the daemon has $(ls "/proc/$PID/fd" 2>/dev/null | wc -l) fds open after the read"
  check_size "ulimit -n 64: stat values.txt afterwards" "$MNT/values.txt" \
    "$(wc -c <"$ZT_TMP/many.txt")" 30
  check_size "ulimit -n 64: stat c/9999 afterwards" "$MNT/c/9999" \
    "$(stat -c %s "$SRC/c/9999")" 30
  check_out "ulimit -n 64: c/9999.txt afterwards" "$ZT_TMP/many.last" 30 cat "$MNT/c/9999.txt"
  check_out "ulimit -n 64: c/5000.txt afterwards" "$ZT_TMP/many.mid" 30 cat "$MNT/c/5000.txt"
  t ls "$MNT/c" >"$ZT_TMP/many.ls" 2>&1
  assert_eq "ulimit -n 64: ls c/ lists 10,000 keys and their views" 20000 \
    "$(wc -l <"$ZT_TMP/many.ls")"
  alive "ulimit -n 64"
  sdone
fi
ZS_NOFILE=
rm -rf "$SRC" "$ZT_TMP"/many.*

# ---- 1a. 2-D: V2 (1000, 30000) int32, chunks (1000, 1000), zstd ----

SRC=$ZT_TMP/int2d
I2_ARGS=(--dtype int32 --shape 1000,$I2_COLS --chunk 1000,1000)
mk numeric "$SRC" "${I2_ARGS[@]}" --codec zstd --format 2
int2d_gen() { "$ZARRFS_MKSTORE" numeric - "${I2_ARGS[@]}" --plain -; }
I2_STORED=$(store_bytes "$SRC")
I2_SIZE=$(int2d_gen | wc -c)
int2d_gen | head -c 4096 >"$ZT_TMP/i2.head"
int2d_gen | tail -c 4096 >"$ZT_TMP/i2.tail"
say "int32 (1000, $I2_COLS) V2 zstd: $I2_STORED bytes stored, values.txt $I2_SIZE bytes"
for cache in default 64K; do
  opts=()
  [ "$cache" = default ] || opts=(-o "cache_size=$cache")
  d="int32 (1000, $I2_COLS) V2, cache $cache"
  smount "$SRC" "${opts[@]}" || continue
  # The first 4 KiB must come without the whole view being decoded.
  check_out "$d: head -c 4096 values.txt" "$ZT_TMP/i2.head" "$ZT_CMD_TIMEOUT" \
    head -c 4096 "$MNT/values.txt"
  check_size "$d: stat values.txt" "$MNT/values.txt" "$I2_SIZE" "$ZT_CMD_TIMEOUT"
  check_out "$d: tail -c 4096 values.txt" "$ZT_TMP/i2.tail" "$ZT_CMD_TIMEOUT" \
    tail -c 4096 "$MNT/values.txt"
  readers "$d: 16 concurrent 128 KiB readers" "$MNT/values.txt" "$I2_SIZE" 9 int2d_gen
  sdone
  smount "$SRC" "${opts[@]}" || continue
  # With 64K its row of 30 chunks (120 MB decoded) is read in bands of
  # 18 MiB of text: each chunk is decoded once per band, once for the
  # slab's map and once for its size (docs/performance.md).
  times=4
  [ "$cache" = default ] || times=$((I2_SIZE / (18 << 20) + 4))
  RCHAR_TIMES=$times whole_read "$d" "$MNT/values.txt" "$I2_STORED" int2d_gen
  alive "$d"
  sdone
done
rm -rf "$SRC"

# ---- 1b. 2-D: (1000, 1500) float64, chunks (128, 100) ----

SRC=$ZT_TMP/float2d
F_ARGS=(--dtype float64 --shape $F_ROWS,$F_COLS --chunk 128,100 --fill nan --missing 7)
mk numeric "$SRC" "${F_ARGS[@]}" --codec gzip --plain "$ZT_TMP/f.txt"
F_STORED=$(store_bytes "$SRC")
F_SIZE=$(wc -c <"$ZT_TMP/f.txt")
say "float64 ($F_ROWS, $F_COLS) V3 gzip: $F_STORED bytes stored, values.txt $F_SIZE bytes"
# Two chunk views: an inner one and the edge corner (104 x 100 at full
# size); neither is one of the missing chunks (every 7th).
F_VIEWS="$(((F_ROWS + 127) / 128 / 2)),$(((F_COLS + 99) / 100 / 3)) $(((F_ROWS + 127) / 128 - 1)),$(((F_COLS + 99) / 100 - 1))"
for idx in $F_VIEWS; do
  zt_chunk_lines $F_ROWS,$F_COLS 128,100 "$idx" >"$ZT_TMP/f.lines"
  zt_select_lines "$ZT_TMP/f.lines" "$ZT_TMP/f.txt" >"$ZT_TMP/f.c${idx/,/.}"
done
for cache in default 1M 64K; do
  opts=()
  [ "$cache" = default ] || opts=(-o "cache_size=$cache")
  d="float64 ($F_ROWS, $F_COLS), cache $cache"
  smount "$SRC" "${opts[@]}" || continue
  whole_read "$d" "$MNT/values.txt" "$F_STORED" cat "$ZT_TMP/f.txt"
  readers "$d: 16 concurrent 128 KiB readers" "$MNT/values.txt" "$F_SIZE" 17 cat "$ZT_TMP/f.txt"
  for idx in $F_VIEWS; do
    check_out "$d: c/${idx/,//}.txt" "$ZT_TMP/f.c${idx/,/.}" "$ZT_CMD_TIMEOUT" \
      cat "$MNT/c/${idx/,//}.txt"
  done
  sdone
  smount "$SRC" "${opts[@]}" || continue
  cover "$d: 16 concurrent readers, the view once" "$MNT/values.txt" "$F_SIZE" \
    "$F_STORED" cat "$ZT_TMP/f.txt"
  alive "$d"
  sdone
done
rm -rf "$SRC" "$ZT_TMP"/f.*

# ---- 5. one 75M-element uint8 chunk ----

SRC=$ZT_TMP/u8
U8_ARGS=(--dtype uint8 --shape $U8_N --chunk $U8_N)
mk numeric "$SRC" "${U8_ARGS[@]}" --codec none
u8_gen() { "$ZARRFS_MKSTORE" numeric - "${U8_ARGS[@]}" --plain -; }
U8_STORED=$(store_bytes "$SRC")
U8_SIZE=$(u8_gen | wc -c)
u8_gen | tail -c 4096 >"$ZT_TMP/u8.tail"
say "uint8 [$U8_N] in one chunk, uncompressed: $U8_STORED bytes stored, values.txt $U8_SIZE bytes"
for cache in default 64K; do
  opts=()
  [ "$cache" = default ] || opts=(-o "cache_size=$cache")
  d="uint8 one $U8_N-element chunk, cache $cache"
  smount "$SRC" "${opts[@]}" || continue
  whole_read "$d" "$MNT/values.txt" "$U8_STORED" u8_gen
  check_size "$d: stat values.txt" "$MNT/values.txt" "$U8_SIZE" "$ZT_CMD_TIMEOUT"
  check_out "$d: tail -c 4096" "$ZT_TMP/u8.tail" "$ZT_CMD_TIMEOUT" tail -c 4096 "$MNT/values.txt"
  alive "$d"
  sdone
done
rm -rf "$SRC"

say "total $(($(date +%s) - T_START)) s"
finish
