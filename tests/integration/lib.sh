# lib.sh - helpers sourced by every integration test script.
#
# Provides: binary discovery, skip rules, a per-script watchdog, mount and
# unmount with bounded waits, a cleanup trap that always unmounts and kills
# the daemons it started, assertion helpers that say what differed, Zarr
# metadata helpers (pure awk: no python3, no jq), and the closing
# "NAME.sh: N passed, M failed, K skipped" line.
#
# Environment (set by `make check`; each has a fallback):
#   ZARRFS_BIN       the daemon            (else $ZARRFS_BUILDDIR/zarrfs, ./zarrfs)
#   ZARRFS_MKSTORE   the test store writer (else .../zarrfs-mkstore)
#   ZARRFS_SRCDIR    the source tree       (else two levels above this file)
#   ZARRFS_BUILDDIR  the build tree        (else $PWD)
#   ZT_TIMEOUT       hard limit for the whole script, seconds (default 300)
#   ZT_CMD_TIMEOUT   limit for one command on a mount, seconds (default 30)
#   ZT_MOUNT_TIMEOUT limit for a mount to appear, seconds (default 10)
#   CI               when "true", missing FUSE support is a failure, not a skip
#   ZT_VERBOSE       when set, print every passing check too
#
# Exit codes follow automake: 0 pass (checks ran and none failed, even if
# some parts were skipped: the closing line counts them), 1 fail, 77 skip
# (nothing could run at all), 99 hard error.

set -u
set -o pipefail
export LC_ALL=C

ZT_NAME=$(basename "$0" .sh)
ZT_PASS=0
ZT_FAIL=0
ZT_SKIPPED=0
ZT_TIMEOUT=${ZT_TIMEOUT:-300}
ZT_CMD_TIMEOUT=${ZT_CMD_TIMEOUT:-30}
ZT_MOUNT_TIMEOUT=${ZT_MOUNT_TIMEOUT:-10}

# ---- messages and counters ----

# One line to stderr-free stdout, prefixed with the script name.
say() { printf '%s: %s\n' "$ZT_NAME" "$*"; }

# A check that passed.
pass() {
  ZT_PASS=$((ZT_PASS + 1))
  if [ -n "${ZT_VERBOSE:-}" ]; then say "ok: $*"; fi
  return 0
}

# A check that failed; extra lines (what differed) follow indented.
fail() {
  ZT_FAIL=$((ZT_FAIL + 1))
  say "FAIL: $*"
  return 1
}

# Indent a file or stdin for a failure report, at most 20 lines.
show() {
  if [ $# -gt 0 ]; then sed -n '1,20s/^/    | /p' "$@"; else sed -n '1,20s/^/    | /p'; fi
}

# The closing line: what ran, what failed, what was left out.
zt_summary() {
  echo "$ZT_NAME.sh: $ZT_PASS passed, $ZT_FAIL failed, $ZT_SKIPPED skipped"
}

# Print the closing line and exit: 1 on any failure; 77 (SKIP) when every
# part was skipped and no check ran; else 0, skipped parts or not (the
# closing line says how many).
finish() {
  zt_summary
  if [ "$ZT_FAIL" -gt 0 ]; then exit 1; fi
  if [ "$ZT_PASS" -eq 0 ] && [ "$ZT_SKIPPED" -gt 0 ]; then exit 77; fi
  exit 0
}

# Skip the rest of the script, whose prerequisite is missing, and finish:
# 77 (SKIP) when no check ran before, else as finish says. Under CI=true
# that is a failure instead, so CI cannot silently test nothing.
zt_skip_or_fail() {
  if [ "${CI:-}" = true ]; then
    say "FAIL (CI=true, cannot skip): $*"
    ZT_FAIL=$((ZT_FAIL + 1))
  else
    say "SKIP: $*"
    ZT_SKIPPED=$((ZT_SKIPPED + 1))
  fi
  finish
}

# Leave out one part of the script whose prerequisite (the shared fixtures,
# a tool) is missing: the rest runs, and the closing line counts the part
# as skipped; the script still passes when the rest does. Under CI=true it
# is a failure.
zt_skip_part() {
  if [ "${CI:-}" = true ]; then
    fail "(CI=true, cannot skip) $*"
    return 0
  fi
  say "SKIP part: $*"
  ZT_SKIPPED=$((ZT_SKIPPED + 1))
}

# A broken test setup (not a product failure): exit 99.
zt_hard_error() {
  say "ERROR: $*"
  ZT_FAIL=$((ZT_FAIL + 1))
  zt_summary
  exit 99
}

# zt_built_without LIB: true when the daemon was configured without LIB
# (configure --without-LIB: its codecs are refused by name, and
# `zarrfs --version` says "built without: LIB ...").
zt_built_without() {
  "$ZARRFS_BIN" --version 2>/dev/null | sed -n 's/^built without: //p' |
    tr ' ' '\n' | grep -qx "$1"
}

# zt_lacks_codec FILE: true, printing the library, when FILE (metadata or
# a reference file written elsewhere) names a codec whose library the
# daemon was built without. (lz4 by its own id: blosc's cname "lz4" is
# blosc's business.)
zt_lacks_codec() {
  local lib
  for lib in blosc bz2 lz4 zfp; do
    zt_built_without "$lib" || continue
    case $lib in
    lz4) grep -qE 'numcodecs\.lz4|id\\?"[[:space:]]*:[[:space:]]*\\?"lz4' "$1" ;;
    *) grep -q "$lib" "$1" ;;
    esac && {
      echo "$lib"
      return 0
    }
  done
  return 1
}

# ---- locate binaries ----

ZT_LIBDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${ZARRFS_SRCDIR:=$(cd "$ZT_LIBDIR/../.." && pwd)}"
: "${ZARRFS_BUILDDIR:=$PWD}"

# First executable among the arguments, or nothing.
zt_first_exe() {
  local f
  for f in "$@"; do
    if [ -n "$f" ] && [ -x "$f" ] && [ -f "$f" ]; then
      printf '%s\n' "$f"
      return 0
    fi
  done
  return 1
}

ZARRFS_BIN=$(zt_first_exe "${ZARRFS_BIN:-}" "$ZARRFS_BUILDDIR/zarrfs" ./zarrfs \
  "$ZARRFS_SRCDIR/zarrfs" "$ZARRFS_SRCDIR/build/zarrfs") ||
  zt_hard_error "zarrfs binary not found (set ZARRFS_BIN)"
ZARRFS_MKSTORE=$(zt_first_exe "${ZARRFS_MKSTORE:-}" "$ZARRFS_BUILDDIR/zarrfs-mkstore" \
  ./zarrfs-mkstore "$ZARRFS_SRCDIR/zarrfs-mkstore" "$ZARRFS_SRCDIR/build/zarrfs-mkstore")
# Scripts that write test stores call this first.
zt_require_mkstore() {
  [ -n "$ZARRFS_MKSTORE" ] || zt_hard_error "zarrfs-mkstore binary not found (set ZARRFS_MKSTORE)"
}
export ZARRFS_BIN ZARRFS_MKSTORE ZARRFS_SRCDIR ZARRFS_BUILDDIR

# A daemon built without blosc cannot read what zarr-python and xarray
# write by default (Blosc): their default compressor becomes Zstd instead
# (without_blosc/usercustomize.py), so the tests of the views still run.
if zt_built_without blosc; then
  export PYTHONPATH="$ZT_LIBDIR/without_blosc${PYTHONPATH:+:$PYTHONPATH}"
fi

for zt_tool in timeout cmp awk sed od stat; do
  command -v "$zt_tool" >/dev/null 2>&1 || zt_hard_error "required tool '$zt_tool' missing"
done

# ---- FUSE prerequisites ----

if [ "$(id -u)" != 0 ]; then
  zt_skip_or_fail "not root: mount tests need root"
fi
if [ ! -c /dev/fuse ] || ! [ -r /dev/fuse ] || ! [ -w /dev/fuse ]; then
  zt_skip_or_fail "/dev/fuse missing or not usable"
fi
if ! command -v fusermount3 >/dev/null 2>&1; then
  zt_skip_or_fail "fusermount3 missing (apt-get install fuse3)"
fi

# ---- temp dir, watchdog, cleanup ----

ZT_TMP=$(mktemp -d "${TMPDIR:-/tmp}/zarrfs-$ZT_NAME.XXXXXX") ||
  zt_hard_error "mktemp failed"
: >"$ZT_TMP/mounts" # one "PID LOGFILE MOUNTPOINT" line per live mount we made
ZT_MAIN_PID=$$
ZT_PID=
ZT_LOG=
ZT_MNT=
ZT_NMOUNT=0

# Is MNT currently a mount point? (exact match on /proc/mounts field 2)
zt_is_mounted() {
  awk -v m="$1" '$2 == m { found = 1 } END { exit !found }' /proc/mounts
}

# Emergency teardown, also used by the watchdog (a separate process): lazy
# unmount everything we mounted and kill our daemons by pid.
zt_teardown_all() {
  local pid log mnt
  while read -r pid log mnt; do
    [ -n "$mnt" ] || continue
    if zt_is_mounted "$mnt"; then
      timeout 10 fusermount3 -u -z "$mnt" 2>/dev/null || timeout 10 umount -l "$mnt" 2>/dev/null
    fi
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null
      # (the watchdog runs this too: defined before zt_wait_exit)
      for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      kill -KILL "$pid" 2>/dev/null
    fi
  done <"$ZT_TMP/mounts"
  : >"$ZT_TMP/mounts"
  # Servers a test started (tests/integration/servers.sh), after the mounts
  # that use them.
  if [ -s "$ZT_TMP/servers.pids" ]; then
    while read -r pid; do kill -TERM "$pid" 2>/dev/null; done <"$ZT_TMP/servers.pids"
    : >"$ZT_TMP/servers.pids"
  fi
}

# Watchdog: after ZT_TIMEOUT seconds, tear down (which unblocks any reader
# stuck on the mount) and stop the script with a failure.
(
  sleep "$ZT_TIMEOUT" >/dev/null 2>&1 &
  echo $! >"$ZT_TMP/watchdog.sleep"
  wait $!
  say "FAIL: script timed out after ${ZT_TIMEOUT}s; tearing down" >&2
  zt_teardown_all
  kill -TERM "$ZT_MAIN_PID" 2>/dev/null
) &
ZT_WATCHDOG=$!

# EXIT trap: stop the watchdog, unmount, kill daemons, remove temp files
# (never while anything under ZT_TMP is still mounted).
zt_cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  kill "$ZT_WATCHDOG" 2>/dev/null
  if [ -s "$ZT_TMP/watchdog.sleep" ]; then kill "$(cat "$ZT_TMP/watchdog.sleep")" 2>/dev/null; fi
  wait "$ZT_WATCHDOG" 2>/dev/null
  zt_teardown_all
  if awk -v t="$ZT_TMP/" 'index($2, t) == 1 { found = 1 } END { exit !found }' /proc/mounts; then
    say "WARNING: something is still mounted under $ZT_TMP; leaving it" >&2
  elif [ -z "${ZT_KEEP:-}" ]; then
    rm -rf "$ZT_TMP"
  fi
  exit "$rc"
}
trap zt_cleanup EXIT
trap 'say "interrupted"; ZT_FAIL=$((ZT_FAIL + 1)); zt_summary; exit 1' INT TERM

# ---- running things with a time bound ----

# Run a command with the per-command time limit (a hang becomes status 124).
t() { timeout -k 5 "$ZT_CMD_TIMEOUT" "$@"; }

# A fresh empty directory under ZT_TMP; prints its path.
zt_mkdir() {
  local d
  d=$(mktemp -d "$ZT_TMP/${1:-d}.XXXXXX") || zt_hard_error "mktemp failed"
  printf '%s\n' "$d"
}

# ---- mount / unmount ----

# zmount SOURCE MNT [daemon options...]: start `zarrfs -f [opts] SOURCE MNT`
# in the background with stderr in a log file; wait (bounded) until MNT is in
# /proc/mounts. Sets ZT_PID, ZT_LOG, ZT_MNT. Returns 1 (after a failure line)
# when the daemon dies or the mount does not appear.
zmount() {
  local src=$1 mnt=$2
  shift 2
  ZT_NMOUNT=$((ZT_NMOUNT + 1))
  ZT_LOG="$ZT_TMP/daemon.$ZT_NMOUNT.log"
  ZT_MNT=$mnt
  # The tests assert exact sizes, never times: a stat waits as long as
  # learning a size takes (mount_sizes.sh tests the bound, after this).
  "$ZARRFS_BIN" -f -o size_wait=3600 "$@" "$src" "$mnt" >"$ZT_LOG.stdout" \
    2>"$ZT_LOG" </dev/null &
  ZT_PID=$!
  echo "$ZT_PID $ZT_LOG $mnt" >>"$ZT_TMP/mounts"
  local i=0 limit=$((ZT_MOUNT_TIMEOUT * 10))
  while [ "$i" -lt "$limit" ]; do
    if zt_is_mounted "$mnt"; then return 0; fi
    if ! kill -0 "$ZT_PID" 2>/dev/null; then
      wait "$ZT_PID" 2>/dev/null
      fail "mount $src: daemon exited with status $? before mounting; its log:"
      show "$ZT_LOG"
      zt_forget "$ZT_PID"
      return 1
    fi
    sleep 0.1
    i=$((i + 1))
  done
  fail "mount $src on $mnt: not in /proc/mounts after ${ZT_MOUNT_TIMEOUT}s; log:"
  show "$ZT_LOG"
  zumount "$mnt" >/dev/null 2>&1
  return 1
}

# Drop a pid from the list of live mounts.
zt_forget() {
  awk -v p="$1" '$1 != p' "$ZT_TMP/mounts" >"$ZT_TMP/mounts.new" &&
    mv "$ZT_TMP/mounts.new" "$ZT_TMP/mounts"
}

# zt_own_fixtures: set OWN to the directory of the fixtures the tests make
# themselves (tests/writers/own_fixtures.py: a zarr-python 2 store, an
# xarray store, the Zarr V3 specification's example hierarchy, kerchunk
# references), which make check writes into $ZARRFS_OWN_FIXTURES before
# the tests; made here into $ZT_TMP/own-fixtures when that is missing (a
# test run by hand). 1 when they cannot be made (Debian's python3-zarr is
# missing): $ZT_TMP/own-fixtures.log says why.
zt_own_fixtures() {
  OWN=${ZARRFS_OWN_FIXTURES:-}
  [ -n "$OWN" ] && [ -f "$OWN/kerchunk/expected_refs.json" ] && return 0
  OWN=$ZT_TMP/own-fixtures
  [ -f "$OWN/kerchunk/expected_refs.json" ] && return 0
  /usr/bin/python3 "$ZARRFS_SRCDIR/tests/writers/own_fixtures.py" "$OWN" \
    >"$ZT_TMP/own-fixtures.log" 2>&1 && return 0
  OWN=
  return 1
}

# zt_third_party_fixtures: set FIX to the third-party fixtures' directory
# ($ZARRFS_FIXTURES, else ../shared/fixtures beside the checkout) when it
# is there; else empty it, say that this extra layer is left out and return 1. Not a
# skip: a test runs its parts whole on zt_own_fixtures, the third-party
# stores (other writers, other versions) are checked on top when present.
zt_third_party_fixtures() {
  FIX=${ZARRFS_FIXTURES:-$ZARRFS_SRCDIR/../shared/fixtures}
  if [ -d "$FIX/zarrita" ] || [ -d "$FIX/kerchunk" ] || [ -d "$FIX/zarrs" ]; then
    return 0
  fi
  say "third-party fixtures not at $FIX: that extra layer is left out (the tests' own fixtures run)"
  FIX=
  return 1
}

# zt_icechunk_standins DIR: stand-ins of Icechunk's test-repo-v1/-v2 (the
# shared fixtures a fresh clone lacks) in DIR/own-v1 (spec 1) and
# DIR/own-v2 (spec 2), written by tests/writers/icechunk_writer.py from
# tests/writers/icechunk_standin.py with Debian's python3; 1 when they
# cannot be (DIR/log says why).
zt_icechunk_standins() {
  local dir=$1 py=/usr/bin/python3 w="$ZARRFS_SRCDIR/tests/writers" spec
  mkdir -p "$dir"
  "$py" "$w/icechunk_standin.py" >"$dir/desc.json" 2>"$dir/log" || return 1
  for spec in 1 2; do
    "$py" "$w/icechunk_writer.py" write "$dir/own-v$spec" "$dir/desc.json" \
      --spec "$spec" >>"$dir/log" 2>&1 || return 1
  done
}

# zt_rchar PID: bytes process PID has read so far (/proc/PID/io), 0 when
# it is gone: a poll's sign that a daemon is at work.
zt_rchar() { awk '$1 == "rchar:" { print $2; f = 1 } END { if (!f) print 0 }' "/proc/$1/io" 2>/dev/null || echo 0; }

# zt_poll SECS CMD...: run CMD every 0.1 s until it succeeds (0) or SECS
# seconds pass (1): the bounded wait for a condition, never a fixed sleep.
zt_poll() {
  local secs=$1 i=0
  shift
  until "$@"; do
    [ "$i" -ge $((secs * 10)) ] && return 1
    sleep 0.1
    i=$((i + 1))
  done
  return 0
}

# Wait (bounded, seconds) for a pid to exit; 0 if it did.
zt_wait_exit() {
  local pid=$1 secs=$2 i=0
  while kill -0 "$pid" 2>/dev/null; do
    [ "$i" -ge $((secs * 10)) ] && return 1
    sleep 0.1
    i=$((i + 1))
  done
  return 0
}

# Fail if a daemon log holds a sanitizer report or an assertion.
zt_check_log_clean() {
  local log=$1
  if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|Assertion .* failed' "$log" 2>/dev/null; then
    fail "daemon log $log has a sanitizer/assertion report:"
    grep -E -A12 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|Assertion' "$log" | show
    return 1
  fi
  return 0
}

# zumount MNT: `fusermount3 -u` (falling back to `umount -l`), then wait for
# the daemon to exit and check it exited 0 with a clean log.
zumount() {
  local mnt=$1 pid log
  pid=$(awk -v m="$mnt" '$3 == m { p = $1 } END { print p }' "$ZT_TMP/mounts")
  log=$(awk -v m="$mnt" '$3 == m { l = $2 } END { print l }' "$ZT_TMP/mounts")
  if zt_is_mounted "$mnt"; then
    if ! timeout 10 fusermount3 -u "$mnt" 2>"$ZT_TMP/umount.err"; then
      say "fusermount3 -u $mnt failed ($(head -1 "$ZT_TMP/umount.err")); using umount -l"
      timeout 10 umount -l "$mnt" 2>/dev/null || fail "cannot unmount $mnt"
    fi
  fi
  [ -n "$pid" ] || return 0
  if ! zt_wait_exit "$pid" 10; then
    fail "daemon $pid did not exit within 10s of unmounting $mnt; killing it"
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null
  local st=$?
  zt_forget "$pid"
  if [ "$st" -ne 0 ]; then
    fail "daemon for $mnt exited with status $st after unmount"
    [ -f "$log" ] && tail -n 20 "$log" | show
  fi
  [ -f "$log" ] && zt_check_log_clean "$log"
  return 0
}

# ---- assertions ----

# assert_eq DESC EXPECTED GOT
assert_eq() {
  if [ "$2" = "$3" ]; then
    pass "$1"
  else
    fail "$1"
    printf '    expected: %s\n    got:      %s\n' "$(printf '%s' "$2" | head -c 300)" \
      "$(printf '%s' "$3" | head -c 300)"
  fi
}

# assert_file_eq DESC EXPECTED_FILE GOT_FILE (byte-exact)
assert_file_eq() {
  local desc=$1 exp=$2 got=$3 out
  if out=$(t cmp -- "$exp" "$got" 2>&1); then
    pass "$desc"
    return 0
  fi
  fail "$desc"
  printf '    %s\n' "$out"
  printf '    expected size %s, got size %s\n' \
    "$(wc -c <"$exp" 2>/dev/null)" "$(t wc -c <"$got" 2>/dev/null)"
  t diff -u --label expected --label got -- "$exp" "$got" 2>&1 | sed -n '3,22s/^/    | /p'
  return 1
}

# assert_output_eq DESC EXPECTED_TEXT CMD...: run CMD (time-bounded), compare
# its stdout with EXPECTED_TEXT (trailing newlines matter).
assert_output_eq() {
  local desc=$1 exp=$2
  shift 2
  printf '%s' "$exp" >"$ZT_TMP/exp.out"
  t "$@" >"$ZT_TMP/got.out" 2>"$ZT_TMP/got.err"
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    fail "$desc: '$*' exited $rc"
    show "$ZT_TMP/got.err"
    return 1
  fi
  assert_file_eq "$desc" "$ZT_TMP/exp.out" "$ZT_TMP/got.out"
}

# assert_fails_with_eio DESC FILE: reading FILE must fail with EIO
# ("Input/output error"), not hang, not succeed, not fail otherwise.
assert_fails_with_eio() {
  local desc=$1 f=$2
  t cat -- "$f" >"$ZT_TMP/eio.out" 2>"$ZT_TMP/eio.err"
  local rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    fail "$desc: reading $f timed out"
    return 1
  fi
  if [ "$rc" -ne 0 ] && grep -q 'Input/output error' "$ZT_TMP/eio.err"; then
    pass "$desc"
    return 0
  fi
  fail "$desc: expected EIO reading $f, got exit $rc"
  show "$ZT_TMP/eio.err"
  if [ -s "$ZT_TMP/eio.out" ]; then
    echo "    first bytes read:"
    head -c 200 "$ZT_TMP/eio.out" | show
  fi
  return 1
}

# assert_erofs DESC CMD...: CMD must fail with "Read-only file system".
assert_erofs() {
  local desc=$1
  shift
  t "$@" >"$ZT_TMP/erofs.out" 2>"$ZT_TMP/erofs.err"
  local rc=$?
  if [ "$rc" -ne 0 ] && grep -q 'Read-only file system' "$ZT_TMP/erofs.err"; then
    pass "$desc"
  else
    fail "$desc: expected EROFS from '$*', got exit $rc"
    show "$ZT_TMP/erofs.err"
  fi
}

# assert_size_matches DESC FILE: stat size == bytes actually read.
assert_size_matches() {
  local st n
  st=$(t stat -c %s -- "$2" 2>&1)
  n=$(t wc -c <"$2" 2>&1)
  assert_eq "$1" "$st" "$n"
}

# ---- expected text generators (awk/printf only) ----

# Lowercase hex of a string's bytes.
zt_hex() { printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n'; }

# ---- Zarr metadata (no jq, no python) ----

# zt_meta FILE: print "NODE_TYPE|SHAPE|CHUNKS|ENC|SEP" from a zarr.json,
# e.g. "array|8,24|4,6|default|/"; a group prints "group||||".
# Whitespace outside strings is dropped, then the fields are matched.
zt_meta() {
  awk '
    { s = s $0 "\n" }
    END {
      n = length(s); out = ""; instr = 0; esc = 0
      for (i = 1; i <= n; i++) {
        c = substr(s, i, 1)
        if (instr) {
          out = out c
          if (esc) esc = 0; else if (c == "\\") esc = 1; else if (c == "\"") instr = 0
          continue
        }
        if (c == "\"") { instr = 1; out = out c; continue }
        if (c == " " || c == "\t" || c == "\r" || c == "\n") continue
        out = out c
      }
      nt = ""
      if (match(out, /"node_type":"[a-z]*"/)) { nt = substr(out, RSTART + 13, RLENGTH - 14) }
      shape = ""
      if (match(out, /"shape":\[[0-9,]*\]/)) { shape = substr(out, RSTART + 9, RLENGTH - 10) }
      chunks = ""
      p = index(out, "\"chunk_grid\":")
      if (p > 0) {
        rest = substr(out, p)
        if (match(rest, /"chunk_shape":\[[0-9,]*\]/)) chunks = substr(rest, RSTART + 15, RLENGTH - 16)
      }
      enc = ""; sep = ""
      p = index(out, "\"chunk_key_encoding\":")
      if (p > 0) {
        rest = substr(out, p + 21); depth = 0; obj = ""
        for (i = 1; i <= length(rest); i++) {
          c = substr(rest, i, 1); obj = obj c
          if (c == "{") depth++
          else if (c == "}") { depth--; if (depth == 0) break }
        }
        if (match(obj, /"name":"[^"]*"/)) enc = substr(obj, RSTART + 8, RLENGTH - 9)
        if (match(obj, /"separator":"[^"]*"/)) sep = substr(obj, RSTART + 13, RLENGTH - 14)
      }
      if (sep == "") sep = (enc == "v2") ? "." : "/"
      print nt "|" shape "|" chunks "|" enc "|" sep
    }' "$1"
}

# zt_chunk_keys SHAPE CHUNKS ENC SEP: every chunk of the grid in C order, one
# line each: "KEY IDX" (IDX comma-separated), e.g. "c/0/1 0,1".
zt_chunk_keys() {
  awk -v shape="$1" -v chunks="$2" -v enc="$3" -v sep="$4" '
    BEGIN {
      nd = (shape == "") ? 0 : split(shape, S, ",")
      split(chunks, C, ",")
      total = 1
      for (d = 1; d <= nd; d++) {
        G[d] = (S[d] == 0) ? 0 : int((S[d] + C[d] - 1) / C[d])
        total *= G[d]
      }
      for (k = 0; k < total; k++) {
        r = k; idx = ""; key = ""
        for (d = nd; d >= 1; d--) { I[d] = r % G[d]; r = int(r / G[d]) }
        for (d = 1; d <= nd; d++) {
          idx = idx (d > 1 ? "," : "") I[d]
          key = key (d > 1 ? sep : "") I[d]
        }
        if (enc == "v2") { if (nd == 0) key = "0" }
        else key = (nd == 0) ? "c" : "c" sep key
        print key, idx
      }
    }'
}

# zt_chunk_lines SHAPE CHUNKS IDX: the 1-based line numbers of values.txt
# that chunk IDX holds (its in-bounds elements), in C order.
zt_chunk_lines() {
  awk -v shape="$1" -v chunks="$2" -v idx="$3" '
    BEGIN {
      nd = (shape == "") ? 0 : split(shape, S, ",")
      split(chunks, C, ","); split(idx, I, ",")
      total = 1
      for (d = 1; d <= nd; d++) {
        lo[d] = I[d] * C[d]; hi[d] = lo[d] + C[d]; if (hi[d] > S[d]) hi[d] = S[d]
        E[d] = hi[d] - lo[d]; if (E[d] < 0) E[d] = 0
        total *= E[d]
      }
      for (k = 0; k < total; k++) {
        r = k; lin = 0
        for (d = nd; d >= 1; d--) { X[d] = lo[d] + r % E[d]; r = int(r / E[d]) }
        for (d = 1; d <= nd; d++) lin = lin * S[d] + X[d]
        print lin + 1
      }
    }'
}

# zt_select_lines LINENOS_FILE TEXT_FILE: the lines of TEXT_FILE whose numbers
# are listed (numbers ascending), in order.
zt_select_lines() {
  awk 'NR == FNR { w[$1] = 1; next } (FNR in w)' "$1" "$2"
}

# ---- mount points with odd names, counts, signals (mount_lifecycle.sh) ----

# zt_mount_count MNT: how many mounts /proc/mounts lists at MNT (2 means
# one stacked on another). Field 2 is decoded first: /proc/mounts writes a
# space, tab, newline and backslash as \040, \011, \012 and \134. MNT is
# passed through the environment, so awk does not read escapes in it.
zt_mount_count() {
  ZT_M=$1 awk '
    BEGIN { bs = sprintf("%c", 92); m = ENVIRON["ZT_M"] }
    {
      p = $2
      gsub(/\\040/, " ", p); gsub(/\\011/, "\t", p); gsub(/\\012/, "\n", p)
      gsub(/\\134/, bs, p)
      if (p == m) n++
    }
    END { print n + 0 }' /proc/mounts
}

# zt_wait_unmounted MNT SECS: wait (bounded) until nothing is mounted at
# MNT; 0 if so.
zt_wait_unmounted() {
  local i=0
  while [ "$(zt_mount_count "$1")" -gt 0 ]; do
    [ "$i" -ge $(($2 * 10)) ] && return 1
    sleep 0.1
    i=$((i + 1))
  done
  return 0
}

# zt_now_ms: milliseconds since the epoch (for elapsed-time reports).
zt_now_ms() { echo $(($(date +%s%N) / 1000000)); }

# assert_one_refusal DESC ERRFILE PATTERN...: ERRFILE holds exactly one
# line, it starts with "zarrfs: " and contains every fixed-string PATTERN.
assert_one_refusal() {
  local desc=$1 f=$2 p
  shift 2
  if [ "$(wc -l <"$f")" -ne 1 ] || ! grep -q '^zarrfs: ' "$f"; then
    fail "$desc: expected one 'zarrfs: ' line on stderr, got:"
    show "$f"
    return 1
  fi
  for p in "$@"; do
    if ! grep -q -F -- "$p" "$f"; then
      fail "$desc: the line does not say '$p':"
      show "$f"
      return 1
    fi
  done
  pass "$desc"
}

# ---- the kernel's caches, dropped by one test, counted by another ----
# A test that drops the kernel's caches (echo N > /proc/sys/vm/drop_caches)
# makes every mount beside it, under make -j or in another checkout's run,
# see LOOKUPs, GETATTRs and reads it did not cause. The drop takes this
# lock exclusively; a test counting requests holds it shared while it
# counts (zt_counting_begin/end), so drops wait for it and it never sees
# one (memory pressure can still make the kernel forget: such tests keep
# their kernel_forgets check).
ZT_CACHES_LOCK=${ZT_CACHES_LOCK:-/tmp/zarrfs-tests.drop-caches.lock}

# zt_drop_caches N: sync, then drop the kernel's caches (N as drop_caches
# takes it) once no test is counting (waits at most 120 s for them, then
# drops all the same). Non-zero when dropping is not permitted.
zt_drop_caches() {
  sync
  (
    flock -x -w 120 9 || true
    echo "$1" >/proc/sys/vm/drop_caches
  ) 9>>"$ZT_CACHES_LOCK" 2>/dev/null
}

# zt_counting_begin / zt_counting_end: hold the lock shared (fd 8) while a
# test counts the kernel's requests (waits at most 120 s for a drop).
zt_counting_begin() {
  exec 8>>"$ZT_CACHES_LOCK" && flock -s -w 120 8 || true
}
zt_counting_end() { exec 8>&- 2>/dev/null || true; }

# ---- additions for real-size tests (mount_scale.sh) ----

# tb SECS CMD...: run CMD with an explicit time limit (a hang is status 124).
tb() {
  local secs=$1
  shift
  timeout -k 5 "$secs" "$@"
}

# zt_io_field PID FIELD: one field of /proc/PID/io (rchar: bytes the
# process got from read()/pread() on any fd, all threads).
zt_io_field() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/io" 2>/dev/null; }

# zt_status_kb PID FIELD: a /proc/PID/status field in kB (VmHWM, VmRSS).
zt_status_kb() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null; }

# Is the daemon built with AddressSanitizer? (It is slower and uses more
# memory: tests may shrink their largest cases, never skip them.)
zt_daemon_is_asan() { grep -aq '__asan_init' "$ZARRFS_BIN" 2>/dev/null; }
# zt_daemon_is_sanitized: built with AddressSanitizer or ThreadSanitizer,
# whose shadow memory makes the resident set no measure of what zarrfs holds.
zt_daemon_is_sanitized() { grep -aqE '__(asan|tsan)_init' "$ZARRFS_BIN" 2>/dev/null; }

# zt_bg OUT CMD...: start CMD in the background (stdout to OUT, stderr to
# OUT.err); its pid is in ZT_BG_PID. For commands that may block in the
# kernel (D state), where even `timeout` could wait forever: poll it with
# zt_bg_wait and never `wait` for it unless it has exited.
zt_bg() {
  local out=$1
  shift
  "$@" >"$out" 2>"$out.err" </dev/null &
  ZT_BG_PID=$!
}

# zt_bg_wait PID SECS: poll (bounded) until PID exits; then reap it and put
# its exit status in ZT_BG_RC and return 0. Still running after SECS:
# return 1 without waiting (ZT_BG_RC=124).
zt_bg_wait() {
  local pid=$1 secs=$2
  if zt_wait_exit "$pid" "$secs"; then
    wait "$pid" 2>/dev/null
    ZT_BG_RC=$?
    return 0
  fi
  ZT_BG_RC=124
  return 1
}

# zt_force_teardown MNT [FIFO...]: tear down a mount whose daemon or
# clients may be stuck: give each FIFO a writer for a moment (unblocks a
# daemon thread blocked opening it), detach the mount lazily, then stop
# the daemon (TERM, then KILL): its death aborts the FUSE connection and
# fails every request still waiting in the kernel. Bounded throughout.
zt_force_teardown() {
  local mnt=$1 pid f
  shift
  for f in "$@"; do
    [ -p "$f" ] || continue
    # O_RDWR on a FIFO never blocks; hold it briefly, then close (EOF).
    if exec 9<>"$f"; then
      sleep 0.3
      exec 9>&-
    fi
  done
  pid=$(awk -v m="$mnt" '$3 == m { p = $1 } END { print p }' "$ZT_TMP/mounts")
  if zt_is_mounted "$mnt"; then
    timeout 10 fusermount3 -u -z "$mnt" 2>/dev/null || timeout 10 umount -l "$mnt" 2>/dev/null
  fi
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null
    zt_wait_exit "$pid" 5 || kill -KILL "$pid" 2>/dev/null
    zt_wait_exit "$pid" 5
  fi
  if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
    wait "$pid" 2>/dev/null
    zt_forget "$pid"
  fi
}
