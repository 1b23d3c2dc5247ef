#!/bin/bash
# mount_owner.sh - ownership, permissions and df: by default every file
# shows the mounting user, 0444 (directories 0555); -o uid=,gid= and
# -o umask= (fmask=, dmask= over it) change what stat shows; with
# -o default_permissions the kernel enforces them. df on a mount of a
# local store shows the bytes and files the store holds.
. "$(dirname "$0")/lib.sh"
zt_require_mkstore

SRC="$ZT_TMP/example.zarr"
t "$ZARRFS_MKSTORE" example "$SRC" >"$ZT_TMP/mkstore.log" 2>&1 || zt_hard_error "zarrfs-mkstore example failed"
MNT=$(zt_mkdir mnt)
me="$(id -u) $(id -g)"

# ---- defaults: today's behaviour ----
zmount "$SRC" "$MNT" || finish
assert_eq "default: a file is the mounting user's, 0444" "$me 444" "$(stat -c '%u %g %a' "$MNT/matrix/values.txt")"
assert_eq "default: a directory is the mounting user's, 0555" "$me 555" "$(stat -c '%u %g %a' "$MNT/matrix")"
assert_eq "default: the root too" "$me 555" "$(stat -c '%u %g %a' "$MNT")"

# df: the store's bytes (every file under SRC), in 4 KiB blocks.
want_bytes=$(find "$SRC" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
want_files=$(find "$SRC" -type f | wc -l)
blocks=$(stat -f -c '%b' "$MNT")
bsize=$(stat -f -c '%S' "$MNT")
assert_eq "df: blocks hold the store's bytes" "$(((want_bytes + 4095) / 4096))" "$blocks"
assert_eq "df: 4 KiB blocks" 4096 "$bsize"
assert_eq "df: the store's files" "$want_files" "$(stat -f -c '%c' "$MNT")"
assert_eq "df: nothing free (read-only)" 0 "$(stat -f -c '%f' "$MNT")"
used=$(df -B1 --output=used "$MNT" | tail -n 1 | tr -d ' ')
if [ "${used:-0}" -gt 0 ]; then pass "df: used is not 0 ($used bytes)"; else fail "df: used is '$used'"; fi
zumount "$MNT"

# ---- uid, gid, umask ----
zmount "$SRC" "$MNT" -o uid=1234,gid=5678,umask=027 || finish
assert_eq "uid,gid,umask=027: a file" "1234 5678 440" "$(stat -c '%u %g %a' "$MNT/matrix/values.txt")"
assert_eq "uid,gid,umask=027: a directory" "1234 5678 550" "$(stat -c '%u %g %a' "$MNT/matrix")"
assert_eq "uid,gid,umask=027: the root" "1234 5678 550" "$(stat -c '%u %g %a' "$MNT")"
assert_eq "uid,gid,umask=027: ls -ln agrees (readdirplus)" "-r--r----- 1234 5678" \
  "$(ls -ln "$MNT/matrix" | awk '$NF == "values.txt" { print $1, $3, $4 }')"
zumount "$MNT"

# ---- fmask and dmask over umask ----
zmount "$SRC" "$MNT" -o umask=077,fmask=0,dmask=022 || finish
assert_eq "fmask=0 over umask: a file" "444" "$(stat -c '%a' "$MNT/matrix/values.txt")"
assert_eq "dmask=022 over umask: a directory" "555" "$(stat -c '%a' "$MNT/matrix")"
zumount "$MNT"
zmount "$SRC" "$MNT" -o fmask=0444,dmask=0005 || finish
assert_eq "fmask=0444: a file shows no bits" "0" "$(stat -c '%a' "$MNT/matrix/values.txt")"
assert_eq "dmask=0005: a directory" "550" "$(stat -c '%a' "$MNT/matrix")"
zumount "$MNT"

# ---- enforced with default_permissions: another user is kept out ----
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
  zmount "$SRC" "$MNT" -o allow_other,default_permissions,uid=0,gid=0,umask=077 || finish
  if t setpriv --reuid=65534 --regid=65534 --clear-groups cat "$MNT/matrix/values.txt" >/dev/null 2>&1; then
    fail "umask=077 with default_permissions: another user still reads"
  else
    pass "umask=077 with default_permissions: another user is refused"
  fi
  if t cat "$MNT/matrix/values.txt" >/dev/null; then pass "the owner still reads"; else fail "the owner cannot read"; fi
  zumount "$MNT"
else
  zt_skip_part "default_permissions check needs root and setpriv"
fi

# ---- a bad value is refused with one line ----
timeout -k 2 10 "$ZARRFS_BIN" -f -o umask=8 "$SRC" "$MNT" >/dev/null 2>"$ZT_TMP/bad.err" </dev/null
assert_eq "umask=8: exit status" 1 "$?"
assert_one_refusal "umask=8: one line" "$ZT_TMP/bad.err" "bad umask '8'"

finish
