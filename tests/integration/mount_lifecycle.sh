#!/bin/bash
# mount_lifecycle.sh - the daemon's edges:
#   1. a second mount on a live mount point (any spelling of it, and a name
#      with spaces) is refused with exit 1 and one line naming
#      `fusermount3 -u`, and the first mount keeps serving; a non-FUSE mount
#      point (an empty tmpfs) is accepted;
#   2. after kill -9 the stale mount point is refused with the same hint;
#      after `fusermount3 -u` it mounts again; a fatal signal (SIGSEGV)
#      leaves its name and the stack in the daemon's log and kills it with
#      that signal (src/util/crash.h; a sanitizer build reports it its own
#      way);
#   3. SIGTERM, SIGINT and SIGHUP on an idle mount (multi- and single-
#      threaded) unmount and exit 0 quickly;
#   4. SIGTERM during a long `stat values.txt` (40,000 chunks): the daemon
#      exits, the mount is gone and the stat returns, all within 5 s (a hang
#      detector, not a speed test); the stat is answered with EINTR or EIO
#      and the daemon did not have to abandon requests.
. "$(dirname "$0")/lib.sh"
zt_require_mkstore

SRC="$ZT_TMP/example.zarr"
if ! t "$ZARRFS_MKSTORE" example "$SRC" >"$ZT_TMP/mkstore.log" 2>&1; then
  show "$ZT_TMP/mkstore.log"
  zt_hard_error "zarrfs-mkstore example failed"
fi
EXP="$SRC/EXPECTED/counts.txt"

# second_mount DESC MNT [opts]: run a second daemon on MNT (foreground,
# bounded: if it wrongly mounts, timeout stops it); its stderr in
# $ZT_TMP/second.err, its status in $second_rc.
second_mount() {
  local desc=$1 mnt=$2
  shift 2
  timeout -k 2 10 "$ZARRFS_BIN" -f "$@" "$SRC" "$mnt" >/dev/null 2>"$ZT_TMP/second.err" </dev/null
  second_rc=$?
  assert_eq "$desc: exit status" 1 "$second_rc"
}

# ---- 1. a live mount point ----

MNT=$(zt_mkdir live)
if zmount "$SRC" "$MNT"; then
  second_mount "second mount on a live mount point" "$MNT"
  assert_one_refusal "second mount on a live mount point: one line" "$ZT_TMP/second.err" \
    "zarrfs: $MNT: already a mount point (fuse.zarrfs " "fusermount3 -u $MNT"
  assert_eq "second mount: nothing stacked" 1 "$(zt_mount_count "$MNT")"
  assert_file_eq "second mount: the first mount still serves" "$EXP" "$MNT/counts/values.txt"

  second_mount "second mount, spelled MNT/" "$MNT/"
  assert_one_refusal "second mount, spelled MNT/: one line" "$ZT_TMP/second.err" "fusermount3 -u"
  ln -s "$MNT" "$ZT_TMP/live.link"
  second_mount "second mount through a symbolic link" "$ZT_TMP/live.link"
  assert_one_refusal "second mount through a symbolic link: one line" "$ZT_TMP/second.err" \
    "already a mount point" "fusermount3 -u $ZT_TMP/live.link"
  (cd "$(dirname "$MNT")" && exec timeout -k 2 10 "$ZARRFS_BIN" -f "$SRC" "./$(basename "$MNT")") \
    >/dev/null 2>"$ZT_TMP/second.err" </dev/null
  assert_eq "second mount, relative path: exit status" 1 "$?"
  assert_one_refusal "second mount, relative path: one line" "$ZT_TMP/second.err" \
    "fusermount3 -u ./$(basename "$MNT")"
  # Daemonized (no -f): refused before forking, still one line.
  timeout -k 2 10 "$ZARRFS_BIN" "$SRC" "$MNT" >/dev/null 2>"$ZT_TMP/second.err" </dev/null
  assert_eq "second mount without -f: exit status" 1 "$?"
  assert_one_refusal "second mount without -f: one line" "$ZT_TMP/second.err" "fusermount3 -u $MNT"
  assert_eq "second mount without -f: nothing stacked" 1 "$(zt_mount_count "$MNT")"
  assert_file_eq "the first mount still serves" "$EXP" "$MNT/counts/values.txt"
  zumount "$MNT"
fi

# A mount point whose name needs escaping in /proc/self/mountinfo (\040).
MNTS="$ZT_TMP/mnt with spaces"
mkdir -p "$MNTS"
"$ZARRFS_BIN" -f "$SRC" "$MNTS" >/dev/null 2>"$ZT_TMP/spaces.log" </dev/null &
pid=$!
echo "$pid $ZT_TMP/spaces.log $MNTS" >>"$ZT_TMP/mounts"
i=0
while [ "$(zt_mount_count "$MNTS")" = 0 ] && [ "$i" -lt 100 ] && kill -0 "$pid" 2>/dev/null; do
  sleep 0.1
  i=$((i + 1))
done
if [ "$(zt_mount_count "$MNTS")" = 1 ]; then
  second_mount "second mount on 'mnt with spaces'" "$MNTS"
  assert_one_refusal "second mount on 'mnt with spaces': one line, quoted fix" "$ZT_TMP/second.err" \
    "already a mount point" "fusermount3 -u '$MNTS'"
  kill -TERM "$pid"
  if zt_wait_exit "$pid" 5 && zt_wait_unmounted "$MNTS" 2; then
    pass "'mnt with spaces': SIGTERM unmounts"
  else
    fail "'mnt with spaces': still mounted or running 5 s after SIGTERM"
  fi
  wait "$pid" 2>/dev/null
  zt_forget "$pid"
else
  fail "could not mount on 'mnt with spaces':"
  show "$ZT_TMP/spaces.log"
fi

# A mount point of another type is fine: an empty tmpfs.
MNTT=$(zt_mkdir tmpfs)
if mount -t tmpfs -o size=1m zarrfs-test "$MNTT" 2>/dev/null; then
  if zmount "$SRC" "$MNTT"; then
    # zmount saw the tmpfs; wait for the FUSE mount on top of it.
    i=0
    while [ "$(zt_mount_count "$MNTT")" -lt 2 ] && [ "$i" -lt 100 ] && kill -0 "$ZT_PID" 2>/dev/null; do
      sleep 0.1
      i=$((i + 1))
    done
    if [ "$(zt_mount_count "$MNTT")" = 2 ]; then
      pass "mount over an empty tmpfs"
      assert_file_eq "over tmpfs: serves" "$EXP" "$MNTT/counts/values.txt"
    else
      fail "mount over an empty tmpfs: refused or not mounted; log:"
      show "$ZT_LOG"
    fi
    zumount "$MNTT"
  fi
  umount "$MNTT" 2>/dev/null || umount -l "$MNTT"
else
  say "note: cannot mount a tmpfs here; mounting over one is not tested"
fi

# ---- 2. a stale mount point (kill -9) ----

MNT=$(zt_mkdir stale)
if zmount "$SRC" "$MNT"; then
  assert_file_eq "before kill -9: serves" "$EXP" "$MNT/counts/values.txt"
  pid=$ZT_PID
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null
  zt_forget "$pid"
  echo "none none $MNT" >>"$ZT_TMP/mounts" # the teardown still unmounts it
  if t ls "$MNT" >/dev/null 2>&1; then
    fail "after kill -9 the mount point still lists (daemon not dead?)"
  fi
  second_mount "remount on a stale mount point" "$MNT"
  assert_one_refusal "remount on a stale mount point: one line" "$ZT_TMP/second.err" \
    "zarrfs: $MNT: stale mount" "fusermount3 -u $MNT"
  assert_eq "remount on a stale mount point: nothing stacked" 1 "$(zt_mount_count "$MNT")"
  second_mount "mount below a stale mount point" "$MNT/sub"
  assert_one_refusal "mount below a stale mount point: names the stale mount" "$ZT_TMP/second.err" \
    "inside the stale mount $MNT" "fusermount3 -u $MNT"
  if t fusermount3 -u "$MNT" 2>"$ZT_TMP/fu.err"; then
    pass "fusermount3 -u cleans up the stale mount"
  else
    fail "fusermount3 -u on the stale mount failed:"
    show "$ZT_TMP/fu.err"
  fi
  zt_forget none
  if zmount "$SRC" "$MNT"; then
    pass "remount after fusermount3 -u"
    assert_file_eq "remount after fusermount3 -u: serves" "$EXP" "$MNT/counts/values.txt"
    assert_eq "remount: one mount" 1 "$(zt_mount_count "$MNT")"
    zumount "$MNT"
  fi
fi

# ---- 2b. a fault says where (src/util/crash.h) ----

MNT=$(zt_mkdir fault)
if zmount "$SRC" "$MNT"; then
  assert_file_eq "before SIGSEGV: serves" "$EXP" "$MNT/counts/values.txt"
  pid=$ZT_PID
  kill -SEGV "$pid"
  wait "$pid" 2>/dev/null
  st=$?
  zt_forget "$pid"
  t fusermount3 -u "$MNT" 2>/dev/null
  # (grep reads all of nm's output: with -q, nm's SIGPIPE would fail the
  # pipeline under pipefail)
  if nm "$ZARRFS_BIN" 2>/dev/null | grep -E ' __(asan|tsan)_init$' >/dev/null; then
    assert_eq "SIGSEGV, sanitizer build: the daemon dies (its report is the sanitizer's)" \
      1 "$([ "$st" -ne 0 ] && echo 1)"
  else
    assert_eq "SIGSEGV: the daemon dies of it (status 139)" 139 "$st"
    if grep -q '^zarrfs: fatal signal SIGSEGV' "$ZT_LOG" &&
      [ "$(grep -c 'zarrfs(' "$ZT_LOG")" -ge 2 ]; then
      pass "SIGSEGV: the log names the signal and holds the stack"
    else
      fail "SIGSEGV: no signal line and stack in the log:"
      show "$ZT_LOG"
    fi
  fi
fi

# ---- 3. signals on an idle mount ----

# signal_case DESC SIGNAL [opts]: mount, read, send SIGNAL; the mount must
# go and the daemon exit 0 within 2 s.
signal_case() {
  local desc=$1 sig=$2 mnt pid st t0 t1
  shift 2
  mnt=$(zt_mkdir sig)
  zmount "$SRC" "$mnt" "$@" || return
  assert_file_eq "$desc: serves" "$EXP" "$mnt/counts/values.txt"
  pid=$ZT_PID
  t0=$(zt_now_ms)
  kill "-$sig" "$pid"
  if zt_wait_exit "$pid" 2 && zt_wait_unmounted "$mnt" 1; then
    t1=$(zt_now_ms)
    wait "$pid"
    st=$?
    assert_eq "$desc: exit status" 0 "$st"
    pass "$desc: unmounted and exited ($((t1 - t0)) ms)"
  else
    fail "$desc: still mounted or running 2 s after SIG$sig"
  fi
  if out=$(t ls -A "$mnt" 2>&1); then
    assert_eq "$desc: mount point is an empty directory again" "" "$out"
  else
    fail "$desc: ls of the mount point fails: $out"
  fi
  zt_check_log_clean "$ZT_LOG"
  zt_forget "$pid"
}
signal_case "SIGTERM, idle" TERM
signal_case "SIGINT, idle" INT
signal_case "SIGHUP, idle" HUP
signal_case "SIGTERM, idle, -s" TERM -s
signal_case "SIGINT, idle, -s" INT -s

# ---- 4. SIGTERM during a long operation ----

# 40,000 chunks of 200 strings, vlen-utf8 + zstd: a fresh mount's stat of
# values.txt decodes every chunk once (about 3 s on a 2-core VM).
BIG="$ZT_TMP/big.zarr"
avail_kb=$(df -Pk "$ZT_TMP" | awk 'NR == 2 { print $4 }')
if [ "${avail_kb:-0}" -lt 600000 ]; then
  say "note: less than 600 MB free under $ZT_TMP; the long-operation case is skipped"
elif ! timeout -k 5 $((ZT_CMD_TIMEOUT * 6)) "$ZARRFS_MKSTORE" bigstrings "$BIG" \
  --count 8000000 --chunk 200 --inner utf8 --data zstd >"$ZT_TMP/big.log" 2>&1; then
  st=$?
  show "$ZT_TMP/big.log"
  zt_hard_error "zarrfs-mkstore bigstrings failed (status $st)"
else
  MNT=$(zt_mkdir load)
  if zmount "$BIG" "$MNT"; then
    pid=$ZT_PID
    log=$ZT_LOG
    r0=$(zt_rchar "$pid")
    t stat -c %s "$MNT/values.txt" >"$ZT_TMP/stat.out" 2>"$ZT_TMP/stat.err" &
    spid=$!
    # until the daemon has read 1 MiB of chunks (it is decoding), bounded
    decoding() { ! kill -0 "$spid" 2>/dev/null || [ $(($(zt_rchar "$pid") - r0)) -ge 1048576 ]; }
    zt_poll 20 decoding
    if ! kill -0 "$spid" 2>/dev/null; then
      say "note: the stat of 40,000 chunks finished first; SIGTERM meets an idle daemon"
    fi
    t0=$(zt_now_ms)
    kill -TERM "$pid"
    if zt_wait_exit "$pid" 5; then
      t1=$(zt_now_ms)
      wait "$pid"
      st=$?
      pass "SIGTERM under load: daemon exited ($((t1 - t0)) ms)"
      assert_eq "SIGTERM under load: exit status" 0 "$st"
    else
      fail "SIGTERM under load: daemon still running 5 s after SIGTERM"
    fi
    if zt_wait_unmounted "$MNT" 1; then
      pass "SIGTERM under load: mount gone"
    else
      fail "SIGTERM under load: still mounted after SIGTERM"
    fi
    if zt_wait_exit "$spid" 2; then
      wait "$spid"
      sst=$?
      t2=$(zt_now_ms)
      if [ "$sst" -ne 0 ] && [ "$sst" -ne 124 ]; then
        pass "SIGTERM under load: the stat returned with an error ($((t2 - t0)) ms)"
      elif [ "$sst" -eq 0 ]; then
        say "note: the stat completed before the shutdown: $(cat "$ZT_TMP/stat.out")"
      else
        fail "SIGTERM under load: the stat hung"
      fi
      # The contract: an interrupted request is answered with EINTR or
      # EIO by the engine (engine_stopping), not aborted with the
      # connection when the watchdog gives up on it.
      if [ "$sst" -ne 0 ]; then
        if grep -q -E 'Interrupted system call|Input/output error' "$ZT_TMP/stat.err"; then
          pass "SIGTERM under load: the stat got EINTR or EIO"
        else
          fail "SIGTERM under load: the stat did not get EINTR or EIO:"
          show "$ZT_TMP/stat.err"
        fi
      fi
    else
      fail "SIGTERM under load: the stat had not returned 2 s after the daemon exited"
    fi
    if grep -q 'requests still running' "$log"; then
      fail "SIGTERM under load: in-flight requests were abandoned after the grace time (the engine did not stop them):"
      show "$log"
    else
      pass "SIGTERM under load: every request finished within the grace time"
    fi
    zt_check_log_clean "$log"
    zt_forget "$pid"
  fi
fi

finish
