#!/bin/bash
# mount_xattr.sh - the user.zarr.* extended attributes of array and group
# directories (fs/views/info.c through getxattr/listxattr), read with getfattr
# on a mount of the example store with -o xattr: every name listed, each value (shape,
# data type, chunk shape, codecs, fill value, the metadata document equal
# to zarr.json's), groups with their own few, files and directories
# without metadata with none ("No such attribute", not "Operation not
# supported"), the size query getfattr makes before reading, and the V2
# fixture store's array (skipped without the fixtures). Without -o xattr
# (the default) there are none, and `ls -l` sends no getxattr request.
. "$(dirname "$0")/lib.sh"
zt_require_mkstore
command -v getfattr >/dev/null || zt_skip_or_fail "getfattr (Debian package attr) is not installed"
command -v jq >/dev/null || zt_skip_or_fail "jq is not installed"

SRC="$ZT_TMP/example.zarr"
t "$ZARRFS_MKSTORE" example "$SRC" >"$ZT_TMP/mkstore.log" 2>&1 || zt_hard_error "zarrfs-mkstore example failed"
MNT=$(zt_mkdir mnt)
zmount "$SRC" "$MNT" -d || finish
out=$(getfattr --absolute-names -n user.zarr.shape "$MNT/matrix" 2>&1)
case $out in *"Operation not supported"*) pass "default: no attributes (Operation not supported)" ;;
*) fail "default: user.zarr.shape says '$out'" ;; esac
t ls -lR "$MNT" >/dev/null
n=$(grep -c "opcode: GETXATTR" "$ZT_LOG")
assert_eq "default: ls -lR sends one getxattr in all (then the kernel stops asking)" 1 "$n"
zumount "$MNT"
zmount "$SRC" "$MNT" -o xattr || finish

val() { getfattr --absolute-names --only-values -n "user.zarr.$2" "$1" 2>&1; }
names() { getfattr --absolute-names -d -m - "$1" 2>/dev/null | sed -n 's/^\(user\.zarr\.[a-z_]*\)=.*/\1/p' | tr '\n' ' ' | sed 's/ $//'; }

assert_eq "array: every attribute listed" \
  "user.zarr.attributes user.zarr.chunks user.zarr.codecs user.zarr.data_type user.zarr.fill_value user.zarr.metadata user.zarr.node_type user.zarr.shape user.zarr.zarr_format" \
  "$(names "$MNT/matrix")"
assert_eq "array: attributes, as in zarr.json" "$(jq -cS .attributes "$SRC/matrix/zarr.json")" \
  "$(val "$MNT/matrix" attributes | jq -cS .)"
assert_eq "array: node_type" array "$(val "$MNT/matrix" node_type)"
assert_eq "array: shape" "[7,5]" "$(val "$MNT/matrix" shape)"
assert_eq "array: chunks" "[3,2]" "$(val "$MNT/matrix" chunks)"
assert_eq "array: data_type" float64 "$(val "$MNT/matrix" data_type)"
assert_eq "array: fill_value" '"NaN"' "$(val "$MNT/matrix" fill_value)"
assert_eq "array: zarr_format" 3 "$(val "$MNT/matrix" zarr_format)"
assert_eq "array: codecs, as in zarr.json" "$(jq -c .codecs "$SRC/matrix/zarr.json")" "$(val "$MNT/matrix" codecs)"
assert_eq "array: metadata is zarr.json's document" "$(jq -cS . "$SRC/matrix/zarr.json")" \
  "$(val "$MNT/matrix" metadata | jq -cS .)"
assert_eq "sharded array: chunks is the shard shape" "[400]" "$(val "$MNT/obs_names_sharded" chunks)"
assert_eq "group: its attributes" "user.zarr.metadata user.zarr.node_type user.zarr.zarr_format" "$(names "$MNT")"
assert_eq "group: node_type" group "$(val "$MNT" node_type)"
assert_eq "a file has none" "" "$(names "$MNT/matrix/zarr.json")"
assert_eq "a view has none" "" "$(names "$MNT/matrix/values.txt")"
assert_eq "a chunk directory has none" "" "$(names "$MNT/matrix/c")"
out=$(val "$MNT/matrix/zarr.json" shape)
case $out in *"No such attribute"*) pass "a file: No such attribute" ;; *) fail "a file's user.zarr.shape: '$out'" ;; esac
out=$(val "$MNT/matrix" nothing)
case $out in *"No such attribute"*) pass "an unknown name: No such attribute" ;; *) fail "user.zarr.nothing: '$out'" ;; esac
out=$(getfattr --absolute-names -n security.selinux "$MNT/matrix" 2>&1)
case $out in *"No such attribute"*) pass "another namespace: No such attribute" ;; *) fail "security.selinux: '$out'" ;; esac
if setfattr -n user.zarr.shape -v x "$MNT/matrix" 2>"$ZT_TMP/set.err"; then
  fail "setfattr succeeded on a read-only mount"
elif grep -q "Read-only file system" "$ZT_TMP/set.err"; then
  pass "setfattr: Read-only file system"
else
  fail "setfattr: $(cat "$ZT_TMP/set.err")"
fi
zumount "$MNT"

FIX=${ZARRFS_FIXTURES:-$ZARRFS_SRCDIR/../shared/fixtures}
V2="$FIX/zarr-python-v2/v2_python.zarr"
if [ -d "$V2" ]; then
  M2=$(zt_mkdir v2)
  if zmount "$V2" "$M2" -o xattr; then
    a=$(cd "$V2" && find . -name .zarray | head -1)
    a=${a#./}
    a=${a%/.zarray}
    assert_eq "V2 array $a: shape as .zarray says" "$(jq -c .shape "$V2/$a/.zarray")" "$(val "$M2/$a" shape)"
    assert_eq "V2 array $a: chunks as .zarray says" "$(jq -c .chunks "$V2/$a/.zarray")" "$(val "$M2/$a" chunks)"
    assert_eq "V2 array $a: zarr_format" 2 "$(val "$M2/$a" zarr_format)"
    zumount "$M2"
  fi
else
  zt_skip_part "fixtures not found at $FIX: the V2 store"
fi
finish
