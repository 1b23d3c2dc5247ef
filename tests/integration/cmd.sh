#!/bin/bash
# cmd.sh - zarrfs without FUSE (`zarrfs ls|cat|stat|info SOURCE [PATH]`,
# fs/cmd.c) against the mount of the same store, byte for byte: for every
# directory of the mount, `zarrfs ls` equals `LC_ALL=C ls -1A`; for every
# file, `zarrfs cat` equals the file read through the mount and `zarrfs
# stat` gives its kind and `stat -c %s` size. Stores: the example store
# (always), the stores the tests make (tests/writers/own_fixtures.py: a V2
# store of zarr-python, one of xarray, a kerchunk reference file), and from
# ../shared/fixtures when there a V3 store of zarr-python, a V2 store, the
# zarrita store and a kerchunk reference file. Then: errors and exit statuses,
# `info` of an array and a group, and the commands with /dev/fuse hidden
# in a private mount namespace.
. "$(dirname "$0")/lib.sh"
zt_require_mkstore
export LC_ALL=C

SRC="$ZT_TMP/example.zarr"
if ! t "$ZARRFS_MKSTORE" example "$SRC" >"$ZT_TMP/mkstore.log" 2>&1; then
  show "$ZT_TMP/mkstore.log"
  zt_hard_error "zarrfs-mkstore example failed"
fi
Z() { t "$ZARRFS_BIN" "$@"; }

# compare NAME SOURCE: mount SOURCE and compare every name under it, with
# a few processes whatever the store's size: the mount's names, kinds and
# sizes (one find) against one `zarrfs stat` of every path; the bytes of
# every file read through the mount (one cat) against one `zarrfs cat` of
# the same files (the sizes agree already, so equal concatenations are
# equal files); the files the mount cannot read (cat names them) must fail
# in `zarrfs cat` too; `zarrfs ls` of up to 40 directories against `ls -1A`.
# keep EXPR FILE: the lines of FILE whose path (awk EXPR) is not in
# $ZT_TMP/unreadable.
keep() {
  awk -v list="$ZT_TMP/unreadable" 'BEGIN { while ((getline l <list) > 0) skip[l] = 1 }
    !(('"$1"') in skip)' "$2"
}
PATH_OF='substr($0, index($0, " ") + 1)'

compare() {
  local name=$1 src=$2 mnt rel bad=0 nd=0 y s p
  mnt=$(zt_mkdir "$name")
  zmount "$src" "$mnt" || return
  : >"$ZT_TMP/paths"
  : >"$ZT_TMP/want.stat"
  : >"$ZT_TMP/files"
  while IFS=$'\t' read -r y s p; do
    rel=/$p
    [ -n "$p" ] || rel=/
    printf '%s\n' "$rel" >>"$ZT_TMP/paths"
    if [ "$y" = d ]; then
      echo "dir $rel" >>"$ZT_TMP/want.stat"
      if [ "$nd" -lt 40 ]; then
        nd=$((nd + 1))
        if ! diff <(ls -1A "$mnt$rel") <(Z ls "$src" "$rel") >"$ZT_TMP/diff" 2>&1; then
          bad=$((bad + 1))
          fail "$name: zarrfs ls $rel differs from ls of the mount"
          show "$ZT_TMP/diff"
        fi
      fi
    else
      echo "$s $rel" >>"$ZT_TMP/want.stat"
      printf '%s\n' "$rel" >>"$ZT_TMP/files"
    fi
  done < <(find "$mnt" -printf '%y\t%s\t%P\n' 2>"$ZT_TMP/find.err")
  mapfile -t paths <"$ZT_TMP/paths"
  mapfile -t files <"$ZT_TMP/files"
  # what the mount cannot read (cat names it and goes on)
  (cd "$mnt" && cat -- "${files[@]/#\//./}") >/dev/null 2>"$ZT_TMP/cat.err"
  { sed -n 's|^cat: \./\(.*\): [A-Z][a-z/ ]*$|/\1|p' "$ZT_TMP/cat.err"
    sed -n "s|^find: '$mnt\\(.*\\)': [A-Z][a-z/ ]*\$|\\1|p" "$ZT_TMP/find.err"; } >"$ZT_TMP/unreadable"
  mapfile -t bad_files <"$ZT_TMP/unreadable"
  mapfile -t files < <(keep '$0' "$ZT_TMP/files")
  # stat: kinds and sizes of every readable path
  Z stat "$src" "${paths[@]}" 2>/dev/null |
    sed -E 's/^directory 0 /dir /; s/^(file|chunk-view|array-view|info-view|table) //' >"$ZT_TMP/got.stat"
  if diff <(keep "$PATH_OF" "$ZT_TMP/want.stat") <(keep "$PATH_OF" "$ZT_TMP/got.stat") >"$ZT_TMP/diff"; then
    pass "$name: zarrfs stat of ${#paths[@]} paths agrees with the mount"
  else
    bad=$((bad + 1))
    fail "$name: zarrfs stat differs from the mount's stat"
    show "$ZT_TMP/diff"
  fi
  # cat: every readable file at once
  (cd "$mnt" && cat -- "${files[@]/#\//./}") >"$ZT_TMP/m"
  if Z cat "$src" "${files[@]}" >"$ZT_TMP/c" 2>"$ZT_TMP/e" && cmp -s "$ZT_TMP/m" "$ZT_TMP/c"; then
    pass "$name: zarrfs cat of ${#files[@]} files equals the mount's bytes ($(wc -c <"$ZT_TMP/m") bytes)"
  else
    bad=$((bad + 1))
    fail "$name: zarrfs cat of the ${#files[@]} files differs from the mount's bytes"
    show "$ZT_TMP/e"
  fi
  for rel in "${bad_files[@]}"; do
    if Z cat "$src" "$rel" >/dev/null 2>&1; then
      bad=$((bad + 1))
      fail "$name: $rel fails through the mount but zarrfs cat reads it"
    fi
  done
  zumount "$mnt"
  say "$name: ${#paths[@]} paths, ${#files[@]} files read, ${#bad_files[@]} unreadable, $nd directories listed"
  [ "${#files[@]}" -gt 0 ] || fail "$name: no file found under the mount"
}

compare example "$SRC"
# A corrupt chunk: its view and the array's values.txt fail through the
# mount, and must fail in zarrfs cat too; the rest still compares.
BAD="$ZT_TMP/bad.zarr"
cp -r "$SRC" "$BAD"
printf 'not gzip at all' >"$BAD/matrix/c/0/0"
compare corrupt "$BAD"
if grep -qx /matrix/c/0/0.txt "$ZT_TMP/unreadable" &&
  grep -qx /matrix/values.txt "$ZT_TMP/unreadable"; then
  pass "corrupt: the corrupt chunk's view and values.txt were unreadable"
else
  fail "corrupt: expected matrix/c/0/0.txt and matrix/values.txt unreadable; got:"
  show "$ZT_TMP/unreadable"
fi
# The stores the tests make (tests/writers/own_fixtures.py), then the
# third-party fixtures on top when they are there.
if zt_own_fixtures; then
  compare own-zarr-python-v2 "$OWN/zarr-python-v2/v2_python.zarr"
  if [ -d "$OWN/xarray/xarray_v2.zarr" ]; then
    compare own-xarray "$OWN/xarray/xarray_v2.zarr"
  else
    zt_skip_part "own fixtures hold no xarray store (python3-xarray missing): that store"
  fi
  compare own-kerchunk-refs "$OWN/kerchunk/refs/v1.json"
else
  zt_skip_part "own fixtures not made ($(tail -1 "$ZT_TMP/own-fixtures.log")): the fixture stores"
fi
if zt_third_party_fixtures && [ -d "$FIX/zarr-python-v3" ]; then
  compare zarr-python-v3 "$FIX/zarr-python-v3/v3_zarr_python_fixtures.zarr"
  compare zarr-python-v2 "$FIX/zarr-python-v2/v2_python.zarr"
  compare zarrita "$FIX/zarrita/v3_zarrita.zarr"
  compare kerchunk-refs "$FIX/kerchunk/refs/refs_v1.json"
fi

# ---- exit statuses and messages ----

expect_status() { # DESCRIPTION STATUS PATTERN CMD...
  local what=$1 want=$2 pat=$3 rc
  shift 3
  "$@" >"$ZT_TMP/out" 2>"$ZT_TMP/err"
  rc=$?
  if [ "$rc" = "$want" ] && grep -q -- "$pat" "$ZT_TMP/err"; then
    pass "$what"
  else
    fail "$what: status $rc (want $want), stderr:"
    show "$ZT_TMP/err"
  fi
}
expect_status "a missing PATH: status 1, named" 1 "zarrfs: nope: No such file" \
  Z stat "$SRC" matrix nope
assert_eq "the PATHs before and after a missing one are still served" \
  "directory 0 matrix" "$(head -n 1 "$ZT_TMP/out")"
expect_status "cat of a directory: status 1" 1 "zarrfs: matrix: Is a directory" \
  Z cat "$SRC" matrix
expect_status "info of a file: status 1" 1 "Not a directory" \
  Z info "$SRC" matrix/zarr.json
expect_status "a FUSE option: refused" 1 "'-f' is an option of mounts" \
  Z ls -f "$SRC"
expect_status "two PATHs for ls: refused" 1 "takes one PATH" Z ls "$SRC" a b
expect_status "cat without PATH: refused" 1 "needs a PATH" Z cat "$SRC"
expect_status "a missing SOURCE: refused" 1 "zarrfs:" Z ls "$ZT_TMP/nothing-here"
expect_status "a bad -o value: refused" 1 "bad cache_size" \
  Z cat -o cache_size=abc "$SRC" matrix/values.txt
if (Z cat "$SRC" matrix/values.txt >&-) 2>"$ZT_TMP/err"; then
  fail "cat to a closed standard output: status 0"
else
  pass "cat to a closed standard output: not status 0"
fi

# ---- info ----

Z info "$SRC" /matrix >"$ZT_TMP/info" 2>&1
for want in "node_type: array" "shape: [7, 5]" "data_type: float64" \
  "chunk_shape: [3, 2]" "chunks: 9 (3 x 3)" "fill_value: \"NaN\"" \
  '"name":"gzip"' "views: yes"; do
  if grep -qF -- "$want" "$ZT_TMP/info"; then
    pass "info matrix: $want"
  else
    fail "info matrix lacks '$want':"
    show "$ZT_TMP/info"
  fi
done
out=$(Z info "$SRC" obs_names_sharded | grep '^inner_chunk_shape')
assert_eq "info of a sharded array: the inner chunk shape" "inner_chunk_shape: [50]" "$out"
out=$(Z info "$SRC" | head -n 2 | tr '\n' ' ')
assert_eq "info of the root group" "path: / node_type: group " "$out"

# ---- progress on a terminal ----

# zarrfs cat shows a progress line on stderr only when stderr is a
# terminal (script(1) gives it one; ZARRFS_PROGRESS_MS=0 shows a line at
# every piece), and erases it when the file is done.
Z cat "$SRC" names_start/values.txt >"$ZT_TMP/plain.out" 2>"$ZT_TMP/plain.err"
assert_eq "zarrfs cat to a file and a pipe: nothing on stderr" 0 \
  "$(wc -c <"$ZT_TMP/plain.err")"
if command -v script >/dev/null 2>&1; then
  ZARRFS_PROGRESS_MS=0 t script -qec "'$ZARRFS_BIN' cat '$SRC' names_start/values.txt >'$ZT_TMP/tty.out'" \
    /dev/null >"$ZT_TMP/tty.err" 2>&1
  size=$(Z stat "$SRC" names_start/values.txt | cut -d' ' -f2)
  if grep -q "zarrfs: names_start/values.txt: .* of .* (100%)" "$ZT_TMP/tty.err"; then
    pass "zarrfs cat on a terminal: a progress line with the size ($size bytes)"
  else
    fail "zarrfs cat on a terminal: no progress line"
    show "$ZT_TMP/tty.err"
  fi
  assert_eq "the progress line is erased at the end" 1 \
    "$(tail -c 6 "$ZT_TMP/tty.err" | od -An -c | grep -c '033   \[   K')"
  assert_file_eq "the data is the same with a terminal" "$ZT_TMP/plain.out" "$ZT_TMP/tty.out"
else
  zt_skip_part "no script(1): the progress line on a terminal"
fi

# ---- no /dev/fuse at all ----

if command -v unshare >/dev/null && [ -e /dev/fuse ] &&
  unshare -m true 2>/dev/null; then
  out=$(t unshare -m sh -c 'mount --bind /dev/null /dev/fuse &&
    "$1" cat "$2" matrix/values.txt | wc -l' sh "$ZARRFS_BIN" "$SRC" 2>&1)
  assert_eq "with /dev/fuse unusable, zarrfs cat still reads the view" \
    "$(wc -l <"$SRC/EXPECTED/matrix.txt")" "$out"
else
  zt_skip_part "no private mount namespace here (unshare -m): the /dev/fuse-less run"
fi

finish
