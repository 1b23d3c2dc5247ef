#!/bin/bash
# mount_inodes.sh - inode numbers are stable: the example store mounted
# twice (daemon restarted) shows every path with the same st_ino; the
# d_ino of a plain readdir (ls -i, without readdirplus attributes) is the
# st_ino stat gives; all paths have distinct numbers; and a path forgotten
# by the kernel (drop_caches) gets its number back.
. "$(dirname "$0")/lib.sh"
zt_require_mkstore
export LC_ALL=C

SRC="$ZT_TMP/example.zarr"
t "$ZARRFS_MKSTORE" example "$SRC" >"$ZT_TMP/mkstore.log" 2>&1 || zt_hard_error "zarrfs-mkstore example failed"
inodes() { (cd "$1" && find . -mindepth 1 -printf '%i %P\n' | sort -k2); }

M=$(zt_mkdir m)
zmount "$SRC" "$M" || finish
inodes "$M" >"$ZT_TMP/first"
n=$(wc -l <"$ZT_TMP/first")
assert_eq "every path has its own inode number" "$n" "$(cut -d' ' -f1 "$ZT_TMP/first" | sort -u | wc -l)"
# ls -i of a directory (d_ino) against stat
bad=0
while read -r ino name; do
  s=$(stat -c %i "$M/matrix/$name")
  [ "$s" = "$ino" ] || { bad=$((bad + 1)); say "matrix/$name: d_ino $ino, st_ino $s"; }
done < <(ls -i -1 "$M/matrix" | awk '{ print $1, $2 }')
assert_eq "ls -i (d_ino) agrees with stat (st_ino) in matrix/" 0 "$bad"
before=$(stat -c %i "$M/matrix/c/0/0.txt")
sync
echo 2 >/proc/sys/vm/drop_caches 2>/dev/null || true
assert_eq "a path's number comes back after the kernel forgot it" "$before" "$(stat -c %i "$M/matrix/c/0/0.txt")"
zumount "$M"

zmount "$SRC" "$M" || finish
# Meet the paths in the opposite order first: numbers handed out in order
# of lookup would differ.
cut -d' ' -f2- "$ZT_TMP/first" | tac | (cd "$M" && xargs -d '\n' stat -c %i >/dev/null)
inodes "$M" >"$ZT_TMP/second"
zumount "$M"
if diff "$ZT_TMP/first" "$ZT_TMP/second" >"$ZT_TMP/diff"; then
  pass "a second mount shows the same inode number for each of the $n paths"
else
  fail "inode numbers changed across mounts:"
  show "$ZT_TMP/diff"
fi
finish
