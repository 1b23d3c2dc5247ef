#!/bin/bash
# mount_logs.sh - where log lines go (-o log_file, -o log_level, no
# syslog). A kerchunk reference file with one refused key (logged as a
# warning when the mount loads it) and one corrupt chunk (an error when
# its view is read) is mounted daemonized (no -f), and:
#   1. -o log_file=F: F gets both lines, each "TIME zarrfs[PID] LEVEL: ..."
#      with the time in UTC, the warning as "warn", the error as "error"
#      naming the key; lines are appended across mounts;
#   2. -o log_level=error: the warning is left out, the error is not;
#   3. no syslog (/dev/log missing or hidden in a private mount namespace)
#      and no log_file: the error reaches the stderr of the shell that
#      mounted, though the daemon detached from it;
#   4. a log file that cannot be opened refuses the mount;
#   5. a read that runs longer than 5 s (a store behind faultsrv answering
#      after 7 s) gets one info line naming the view, the read and how
#      long, however long it runs; a fast read gets none.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
export LC_ALL=C

S=$(zt_mkdir store)
zarray='{\"zarr_format\":2,\"shape\":[4],\"chunks\":[4],\"dtype\":\"<i4\",\"compressor\":{\"id\":\"zlib\",\"level\":1},\"fill_value\":0,\"order\":\"C\",\"filters\":null}'
cat >"$S/refs.json" <<EOF
{"version": 1, "refs": {".zgroup": "{\"zarr_format\":2}",
 "a/.zarray": "$zarray",
 "a/0": "base64:$(printf 'not zlib at all' | base64 -w0)",
 "../evil": "x"}}
EOF

# daemon_pid MNT: the pid of the daemonized zarrfs serving MNT.
daemon_pid() { pgrep -n -f -- "zarrfs .* $1( |\$)" || pgrep -n -f -- "zarrfs .*$1"; }
# mount_bg MNT ARGS...: mount without -f (the daemon detaches); 0 when
# mounted.
mount_bg() {
  local mnt=$1 i
  shift
  t "$ZARRFS_BIN" "$@" "$S/refs.json" "$mnt" || return 1
  for i in $(seq 50); do
    if zt_is_mounted "$mnt"; then
      echo "$(daemon_pid "$mnt") $ZT_TMP/bg.log $mnt" >>"$ZT_TMP/mounts"
      return 0
    fi
    sleep 0.1
  done
  return 1
}
# umount_bg MNT: unmount and wait (bounded) for the daemon to exit.
umount_bg() {
  local pid
  pid=$(daemon_pid "$1")
  fusermount3 -u "$1" 2>/dev/null
  [ -n "$pid" ] || return 0
  zt_wait_exit "$pid" 10
  zt_forget "$pid"
}
STAMP='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z zarrfs\[[0-9]+\] '

# ---- 1. log_file ----
LOG="$ZT_TMP/zarrfs.log"
M=$(zt_mkdir m1)
if mount_bg "$M" -o "log_file=$LOG"; then
  if cat "$M/a/0.txt" >/dev/null 2>&1; then fail "the corrupt chunk's view read"; fi
  umount_bg "$M"
  if grep -Eq "${STAMP}warn: .*refusing reference key '\.\./evil'" "$LOG"; then
    pass "log_file: the refused key, stamped, as a warning"
  else
    fail "log_file lacks the stamped warning:"
    show "$LOG"
  fi
  if grep -Eq "${STAMP}error: .*a/0" "$LOG"; then
    pass "log_file: the corrupt chunk, stamped, as an error naming the key"
  else
    fail "log_file lacks the stamped error naming a/0:"
    show "$LOG"
  fi
  n1=$(wc -l <"$LOG")
  if mount_bg "$M" -o "log_file=$LOG"; then
    cat "$M/a/0.txt" >/dev/null 2>&1
    umount_bg "$M"
  fi
  n2=$(wc -l <"$LOG")
  if [ "$n2" -gt "$n1" ] && [ "$(grep -c 'a/0' "$LOG")" -ge 2 ]; then
    pass "log_file: a second mount appends ($n1 then $n2 lines)"
  else
    fail "log_file: a second mount did not append ($n1 then $n2 lines)"
  fi
else
  fail "mount with -o log_file failed"
fi

# ---- 2. log_level=error ----
LOG2="$ZT_TMP/errors.log"
M=$(zt_mkdir m2)
if mount_bg "$M" -o "log_file=$LOG2,log_level=error"; then
  cat "$M/a/0.txt" >/dev/null 2>&1
  umount_bg "$M"
  if grep -q "a/0" "$LOG2" && ! grep -q "refusing" "$LOG2"; then
    pass "log_level=error: the error is there, the warning is not"
  else
    fail "log_level=error: wrong lines:"
    show "$LOG2"
  fi
else
  fail "mount with -o log_level=error failed"
fi

# ---- 3. no syslog, no log_file: the mounting shell's stderr ----
M=$(zt_mkdir m3)
cat >"$ZT_TMP/nosyslog.sh" <<'EOF'
bin=$1 src=$2 mnt=$3 err=$4
if [ -e /dev/log ]; then mount --bind /dev/null /dev/log || exit 3; fi
"$bin" "$src" "$mnt" 2>"$err" || exit 4
for i in $(seq 50); do grep -q " $mnt " /proc/self/mounts && break; sleep 0.1; done
cat "$mnt/a/0.txt" >/dev/null 2>&1
for i in $(seq 50); do grep -q 'a/0' "$err" && break; sleep 0.1; done
fusermount3 -u "$mnt"
EOF
if command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
  t unshare -m bash "$ZT_TMP/nosyslog.sh" "$ZARRFS_BIN" "$S/refs.json" "$M" "$ZT_TMP/stderr.txt"
  rc=$?
  if [ "$rc" = 0 ] && grep -Eq "${STAMP}error: .*a/0" "$ZT_TMP/stderr.txt"; then
    pass "no syslog: the daemon's error reached the mounting shell's stderr"
  else
    fail "no syslog: status $rc, stderr:"
    show "$ZT_TMP/stderr.txt"
  fi
else
  zt_skip_part "no private mount namespace here (unshare -m): the no-syslog case"
fi

# ---- 4. an unopenable log file ----
M=$(zt_mkdir m4)
out=$(t "$ZARRFS_BIN" -o "log_file=$ZT_TMP/no/such/dir/x.log" "$S/refs.json" "$M" 2>&1)
rc=$?
if [ "$rc" = 1 ] && [[ $out == "zarrfs: $ZT_TMP/no/such/dir/x.log: cannot open the log file: No such file or directory" ]] &&
  ! zt_is_mounted "$M"; then
  pass "an unopenable log file: refused, one zarrfs: line"
else
  fail "an unopenable log file: status $rc, '$out'"
  zt_is_mounted "$M" && fusermount3 -u "$M"
fi

# ---- 5. a slow request: one info line ----
zt_require_mkstore
WEB=$(zt_mkdir web)
if t "$ZARRFS_MKSTORE" numeric "$WEB/one" --shape 100 --chunk 100 --dtype int32 \
  --codec gzip --plain "$ZT_TMP/one.txt" >/dev/null; then
  srv_fault_start "$WEB"
  LOG5="$ZT_TMP/slow.log"
  M=$(zt_mkdir m5)
  if zmount "$FAULT_URL/one" "$M" -o "log_file=$LOG5"; then
    stat "$M/values.txt" >/dev/null # metadata read at full speed
    srv_fault_mode lat=7000
    start=$(zt_now_ms)
    assert_file_eq "slow store: values.txt exact" "$ZT_TMP/one.txt" "$M/values.txt"
    ms=$(($(zt_now_ms) - start))
    srv_fault_mode ok
    cmp -s "$ZT_TMP/one.txt" "$M/values.txt" # again, fast: no line
    zumount "$M"
    lines=$(grep -c 'has been running' "$LOG5")
    if [ "$ms" -ge 5000 ] && [ "$lines" = 1 ] &&
      grep -Eq "${STAMP}info: .*/one: values\.txt: a read of [0-9]+ bytes at offset 0 has been running for [5-9]\.[0-9] s, [0-9]+ units decoded so far" "$LOG5"; then
      pass "slow store: one info line for the read that ran ${ms} ms"
    else
      fail "slow store: read ran ${ms} ms, $lines 'has been running' lines:"
      show "$LOG5"
    fi
  fi
else
  fail "zarrfs-mkstore numeric failed"
fi
finish
