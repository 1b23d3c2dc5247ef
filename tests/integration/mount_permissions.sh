#!/bin/bash
# mount_permissions.sh - the modes other users are shown are the modes they
# are held to (issue 32 item 4). With -o allow_other, any of uid=, gid=,
# umask=, fmask=, dmask= makes zarrfs pass default_permissions to libfuse,
# so the kernel checks the owner and mode stat shows; a real user other
# than root (made with useradd when absent, removed again at the end)
# reads through runuser or setpriv:
#  1. allow_other,umask=077: files show -r-------- root:root and the other
#     user cannot read them, nor list a directory; root still reads;
#  2. allow_other,fmask=077: files refused, directories still listed;
#  3. allow_other,uid=THE USER,umask=077: the user reads, nobody does not;
#  4. allow_other,gid=THE USER'S GROUP,umask=027: its group reads;
#  5. allow_other alone (0444): everyone reads, as before;
#  6. -o no_default_permissions opts out: the modes are only shown.
# Without a way to run as another user the script skips (77), and fails
# under CI=true.
. "$(dirname "$0")/lib.sh"
zt_require_mkstore

TUSER=zarrfs-ptest
made_user=
if ! id -u "$TUSER" >/dev/null 2>&1; then
  if command -v useradd >/dev/null &&
    useradd --system --no-create-home --shell /usr/sbin/nologin "$TUSER" 2>"$ZT_TMP/useradd.err"; then
    made_user=1
  else
    zt_skip_or_fail "cannot make a test user $TUSER: $(head -1 "$ZT_TMP/useradd.err" 2>/dev/null)"
  fi
fi
# The user made here goes again when the script ends (whatever way).
drop_user() { [ -n "$made_user" ] && userdel "$TUSER" 2>/dev/null; made_user=; }
trap 'zt_rc=$?; drop_user; (exit "$zt_rc"); zt_cleanup' EXIT
TUID=$(id -u "$TUSER")
TGID=$(id -g "$TUSER")

# as UID GID CMD...: run CMD as that user (no supplementary groups).
as() {
  local u=$1 g=$2
  shift 2
  if command -v setpriv >/dev/null; then
    t setpriv --reuid="$u" --regid="$g" --clear-groups -- "$@"
  else
    t runuser -u "$(id -nu "$u")" -- "$@"
  fi
}
as "$TUID" "$TGID" true 2>"$ZT_TMP/as.err" ||
  zt_skip_or_fail "cannot run as $TUSER: $(head -1 "$ZT_TMP/as.err")"

SRC="$ZT_TMP/example.zarr"
t "$ZARRFS_MKSTORE" example "$SRC" >"$ZT_TMP/mkstore.log" 2>&1 ||
  zt_hard_error "zarrfs-mkstore example failed"
chmod 0711 "$ZT_TMP" # the other users reach the mount points below it
MNT=$(zt_mkdir mnt)
chmod 0755 "$MNT"
F=matrix/values.txt

# can DESC UID GID CMD...: the command run as that user must succeed.
can() {
  local what=$1
  shift
  if as "$@" >/dev/null 2>"$ZT_TMP/as.err"; then pass "$what"; else
    fail "$what: refused ($(head -1 "$ZT_TMP/as.err"))"
  fi
}
# cannot DESC UID GID CMD...: it must fail with "Permission denied".
cannot() {
  local what=$1
  shift
  if as "$@" >/dev/null 2>"$ZT_TMP/as.err"; then
    fail "$what: the other user was let in"
  elif grep -q 'Permission denied' "$ZT_TMP/as.err"; then
    pass "$what"
  else
    fail "$what: failed, but not with EACCES: $(head -1 "$ZT_TMP/as.err")"
  fi
}

# ---- 1. allow_other,umask=077 ----
zmount "$SRC" "$MNT" -o allow_other,umask=077 || finish
assert_eq "umask=077: a file shows 400 root:root" "400 0 0" "$(stat -c '%a %u %g' "$MNT/$F")"
cannot "umask=077: another user cannot read a file" "$TUID" "$TGID" cat "$MNT/$F"
cannot "umask=077: another user cannot list a directory" "$TUID" "$TGID" ls "$MNT/matrix"
if t cat "$MNT/$F" >/dev/null; then pass "umask=077: root still reads"; else fail "umask=077: root cannot read"; fi
assert_eq "umask=077: the daemon says why" 1 "$(grep -c 'default_permissions added' "$ZT_LOG")"
zumount "$MNT"

# ---- 2. allow_other,fmask=077 ----
zmount "$SRC" "$MNT" -o allow_other,fmask=077 || finish
cannot "fmask=077: another user cannot read a file" "$TUID" "$TGID" cat "$MNT/$F"
can "fmask=077: another user lists a directory (0555)" "$TUID" "$TGID" ls "$MNT/matrix"
zumount "$MNT"

# ---- 3. allow_other,uid=THE USER,umask=077 ----
zmount "$SRC" "$MNT" -o "allow_other,uid=$TUID,umask=077" || finish
can "uid=user,umask=077: the owner reads" "$TUID" "$TGID" cat "$MNT/$F"
cannot "uid=user,umask=077: nobody else reads" 65534 65534 cat "$MNT/$F"
zumount "$MNT"

# ---- 4. allow_other,gid=THE USER'S GROUP,umask=027 ----
zmount "$SRC" "$MNT" -o "allow_other,gid=$TGID,umask=027" || finish
can "gid=group,umask=027: the group reads" "$TUID" "$TGID" cat "$MNT/$F"
cannot "gid=group,umask=027: others do not" 65534 65534 cat "$MNT/$F"
zumount "$MNT"

# ---- 5. allow_other alone: 0444, everyone reads ----
zmount "$SRC" "$MNT" -o allow_other || finish
can "allow_other alone: another user reads" "$TUID" "$TGID" cat "$MNT/$F"
assert_eq "allow_other alone: nothing added" 0 "$(grep -c 'default_permissions added' "$ZT_LOG")"
zumount "$MNT"

# ---- 6. the opt-out ----
zmount "$SRC" "$MNT" -o allow_other,umask=077,no_default_permissions || finish
assert_eq "no_default_permissions: the mode is still shown" 400 "$(stat -c '%a' "$MNT/$F")"
can "no_default_permissions: another user reads all the same" "$TUID" "$TGID" cat "$MNT/$F"
zumount "$MNT"

finish
