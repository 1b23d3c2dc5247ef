#!/bin/bash
# mount_interrupt.sh - a reader that gives up is let go (issue 32 item 8).
# The kernel waits for the answer to a request it has sent even after
# SIGKILL, sending only INTERRUPT; zarrfs abandons the request's work
# (transfers, waits, decodes) and answers at once.
#  1. a remote store behind tests/integration/faultsrv that stops
#     answering (stallhdr): `cat values.txt` waits on a chunk; SIGKILL ends
#     it within 10 s (it took 57 s: the transfer's own time bounds); the
#     mount serves the same file right once the server answers again, and
#     the abandoned read left no error line;
#  2. a group holding a never-written 1-D array of 2^40 elements with a
#     dimension name: `ls -l` of the group completes (no more rendering
#     2^40 table rows: the table's size is arithmetic) and shows D.csv's
#     exact size; `tail -c` of the table reads its last rows.
# No timed assertion: each bound is a generous poll.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
zt_require_mkstore

# dead PID: has PID exited (gone, or a zombie not reaped yet)?
dead() {
  local st
  st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 0
  [ -z "$st" ] || [ "$st" = Z ]
}
# poll SECS CMD...: CMD succeeds within SECS (checked every 0.1 s).
poll() {
  local i=0 n=$(($1 * 10))
  shift
  until "$@"; do
    [ "$i" -ge "$n" ] && return 1
    sleep 0.1
    i=$((i + 1))
  done
}
# stalled: faultsrv logged a request it holds unanswered (status 0).
stalled() { awk '$4 == 0 { n++ } END { exit !n }' "$FAULT_LOG"; }

# ---- 1. a reader waiting on a server that does not answer ----
WEB=$(zt_mkdir web)
t "$ZARRFS_MKSTORE" example "$WEB/example.zarr" >"$ZT_TMP/mkstore.log" 2>&1 ||
  zt_hard_error "zarrfs-mkstore example failed"
command -v curl >/dev/null || zt_skip_or_fail "no curl (to drive faultsrv)"
srv_fault_start "$WEB"
MNT=$(zt_mkdir mnt)
zmount "$FAULT_URL/example.zarr" "$MNT" || finish
F="$MNT/matrix/values.txt"
t stat "$F" >/dev/null || fail "stat of values.txt (lazy: no chunk read)"
srv_fault_mode stallhdr || zt_hard_error "cannot set faultsrv's mode"
: >"$FAULT_LOG"
zt_bg "$ZT_TMP/cat.out" cat "$F"
pid=$ZT_BG_PID
if poll 20 stalled; then
  pass "the reader waits on a chunk the server holds"
  kill -KILL "$pid"
  if poll 10 dead "$pid"; then
    pass "SIGKILL ends a reader waiting on a remote chunk within 10 s"
  else
    fail "a reader waiting on a remote chunk survives SIGKILL for 10 s"
  fi
else
  fail "no request held by the server after 20 s"
  show "$FAULT_LOG"
  kill -KILL "$pid"
fi
srv_fault_mode ok
if poll 60 dead "$pid"; then
  wait "$pid" 2>/dev/null
  t cat "$F" >"$ZT_TMP/again.out" 2>"$ZT_TMP/again.err" &&
    t "$ZARRFS_BIN" cat "$WEB/example.zarr" matrix/values.txt >"$ZT_TMP/want.out" &&
    cmp -s "$ZT_TMP/again.out" "$ZT_TMP/want.out"
  assert_eq "the mount serves values.txt right after the abandoned read" 0 "$?"
  assert_eq "the abandoned read logged no error" 0 \
    "$(grep -c -i 'interrupted\|EINTR' "$ZT_LOG")"
  zumount "$MNT"
else
  fail "the reader is still alive after the server answers again"
  zt_force_teardown "$MNT"
fi

# ---- 2. ls -l of a group holding a 2^40-element array ----
BIG="$ZT_TMP/big.zarr"
mkdir -p "$BIG/x" "$BIG/y"
printf '{"zarr_format":2}' >"$BIG/.zgroup"
printf '{"zarr_format":2,"shape":[1099511627776],"chunks":[1048576],"dtype":"<i4","fill_value":0,"order":"C","compressor":null,"filters":null}' >"$BIG/x/.zarray"
printf '{"zarr_format":2,"shape":[1099511627776],"chunks":[1048576],"dtype":"<f8","fill_value":"NaN","order":"C","compressor":null,"filters":null}' >"$BIG/y/.zarray"
printf '{"_ARRAY_DIMENSIONS":["t"]}' >"$BIG/x/.zattrs"
cp "$BIG/x/.zattrs" "$BIG/y/.zattrs"
zmount "$BIG" "$MNT" || finish
zt_bg "$ZT_TMP/lsl.out" ls -l "$MNT"
if zt_bg_wait "$ZT_BG_PID" 60; then
  assert_eq "ls -l of the group succeeds" 0 "$ZT_BG_RC"
  # "x,y\n", then ",\n" a row: V2 fill values are masked (empty fields)
  assert_eq "ls -l shows t.csv's arithmetic size" $((4 + 2 * 1099511627776)) \
    "$(awk '$NF == "t.csv" { print $5 }' "$ZT_TMP/lsl.out")"
  assert_eq "tail -c 6 of t.csv: its last rows" ",|,|,|" \
    "$(t tail -c 6 "$MNT/t.csv" | tr '\n' '|')"
  zumount "$MNT"
else
  fail "ls -l of a group holding a 2^40-element array runs past 60 s"
  kill -KILL "$ZT_BG_PID" 2>/dev/null
  zt_force_teardown "$MNT"
fi

finish
