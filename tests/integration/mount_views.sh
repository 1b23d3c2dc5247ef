#!/bin/bash
# mount_views.sh - -o views=beside|tree|none on the example store.
#   none: the mount is the store, byte for byte (diff -r, and the same
#         names: no view anywhere);
#   tree: the root is the store plus /.text (diff -r without .text), and
#         /.text holds the same directories with only the views: each
#         array's values.txt equals EXPECTED, every K.txt of the default
#         placement is there with the same bytes, no stored file is;
#   a store that holds a .text key of its own keeps it (stored keys win),
#   and a bad views= value is refused.
. "$(dirname "$0")/lib.sh"
zt_require_mkstore
export LC_ALL=C

SRC="$ZT_TMP/example.zarr"
t "$ZARRFS_MKSTORE" example "$SRC" >"$ZT_TMP/mkstore.log" 2>&1 || zt_hard_error "zarrfs-mkstore example failed"
names() { (cd "$1" && find . -mindepth 1 ! -path './.text' ! -path './.text/*' | sort); }

# ---- none ----
MN=$(zt_mkdir none)
if zmount "$SRC" "$MN" -o views=none; then
  if diff -r "$SRC" "$MN" >"$ZT_TMP/diff" 2>&1; then
    pass "views=none: diff -r finds the mount equal to the store"
  else
    fail "views=none: diff -r differs:"
    show "$ZT_TMP/diff"
  fi
  assert_eq "views=none: the same names as the store" "$(names "$SRC")" "$(names "$MN")"
  assert_eq "views=none: no .txt view anywhere" "" \
    "$(cd "$MN" && find . -name '*.txt' ! -path './EXPECTED/*')"
  zumount "$MN"
fi

# ---- beside (the default), for the tree to compare with ----
MB=$(zt_mkdir beside)
zmount "$SRC" "$MB" || finish
(cd "$MB" && find . \( -name '*.txt' -o -name rows.csv \) ! -path './EXPECTED/*' | sort) >"$ZT_TMP/views.beside"

# ---- tree ----
MT=$(zt_mkdir tree)
if zmount "$SRC" "$MT" -o views=tree; then
  if diff -r --exclude=.text "$SRC" "$MT" >"$ZT_TMP/diff" 2>&1; then
    pass "views=tree: diff -r (without .text) finds the root equal to the store"
  else
    fail "views=tree: diff -r differs:"
    show "$ZT_TMP/diff"
  fi
  assert_eq "views=tree: the root's names are the store's" "$(names "$SRC")" "$(names "$MT")"
  assert_eq "views=tree: the root lists .text" ".text" "$(ls -A "$MT" | grep -x '.text')"
  for a in matrix counts flags labels_utf8; do
    assert_file_eq "views=tree: .text/$a/values.txt equals EXPECTED" \
      "$SRC/EXPECTED/$a.txt" "$MT/.text/$a/values.txt"
  done
  (cd "$MT/.text" && find . -type f ! -path './EXPECTED/*' | sort) >"$ZT_TMP/views.tree"
  assert_eq "views=tree: /.text holds every view of the default placement, and only them" \
    "$(cat "$ZT_TMP/views.beside")" "$(cat "$ZT_TMP/views.tree")"
  bad=0
  while IFS= read -r v; do
    cmp -s "$MB/$v" "$MT/.text/$v" || { bad=$((bad + 1)); say "differs: $v"; }
  done <"$ZT_TMP/views.beside"
  assert_eq "views=tree: every view has the bytes of the default placement's" 0 "$bad"
  assert_eq "views=tree: no stored file under /.text" "" \
    "$(cd "$MT/.text" && find . -type f ! -name '*.txt' ! -name rows.csv)"
  if [ -e "$MT/.text/matrix/zarr.json" ]; then fail "views=tree: .text/matrix/zarr.json exists"; else
    pass "views=tree: a stored key is not under /.text"
  fi
  assert_eq "views=tree: the directories of /.text are the store's" \
    "$(cd "$SRC" && find . -mindepth 1 -type d | sort)" "$(cd "$MT/.text" && find . -mindepth 1 -type d | sort)"
  zumount "$MT"
fi
zumount "$MB"

# ---- a store with its own .text ----
OWN="$ZT_TMP/own.zarr"
cp -r "$SRC" "$OWN"
mkdir "$OWN/.text" && echo mine >"$OWN/.text/note"
MO=$(zt_mkdir own)
if zmount "$OWN" "$MO" -o views=tree; then
  assert_eq "views=tree: a stored .text wins" "note" "$(ls -A "$MO/.text")"
  assert_eq "views=tree: its file is the stored one" mine "$(cat "$MO/.text/note")"
  zumount "$MO"
fi

# ---- refused value ----
out=$(t "$ZARRFS_BIN" -f -o views=sideways "$SRC" "$(zt_mkdir bad)" 2>&1)
assert_eq "views=sideways: refused" "zarrfs: bad views 'sideways' (beside, tree or none)" "$out"
finish
