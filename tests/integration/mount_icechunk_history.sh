#!/bin/bash
# mount_icechunk_history.sh - the history of an Icechunk repository as
# files below /.zarrfs (fs/namespace/history.h), on the repositories written by
# Icechunk itself (../shared/fixtures/icechunk, see its EXPECTED.md):
#  1. test-repo-v1, -v2 and -v2-migrated: /.zarrfs lists its four
#     directories and stats; branches/ and tags/ list the refs (names with
#     a space and '!' as they are, the deleted tag not shown); the logs of
#     main and of the tags give the commit messages newest first, one
#     "ID<TAB>TIME<TAB>MESSAGE" line each; the trees at a branch, at the
#     tag "it works!" and at a snapshot read their values;
#  2. split-repo-v1 and -v2: the snapshot "write data", in the middle of
#     main's history, found through the log, reads 120 and 0;
#  3. the FUSE-free CLI (zarrfs ls|cat) on the same paths;
#  4. a Zarr store (not Icechunk) keeps /.zarrfs with stats alone;
#  5. over HTTP (nginx): test-repo-v2 lists and reads the same; test-repo-v1,
#     whose refs/ cannot be listed there, lists no ref but each ref and
#     log still resolves by name (skipped without nginx).
# Absent fixtures skip (exit 77), or fail under CI=true.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"

FIX=${ZARRFS_FIXTURES:-$ZARRFS_SRCDIR/../shared/fixtures}
if [ ! -d "$FIX/icechunk" ]; then
  zt_skip_or_fail "fixtures not found at $FIX/icechunk"
fi
IC="$FIX/icechunk"
MNT=$(zt_mkdir mnt)
TAB=$(printf '\t')

# rep N VALUE: VALUE on N lines.
rep() { awk -v n="$1" -v v="$2" 'BEGIN { for (i = 0; i < n; i++) print v }'; }

# values DESC FILE EXPECTED_TEXT
values() {
  printf '%s' "$3" >"$ZT_TMP/values.exp"
  assert_file_eq "$1" "$ZT_TMP/values.exp" "$2"
}

# ls_is DESC DIR NAMES (one line, sorted, space-separated)
ls_is() { assert_eq "$1" "$3" "$(t env LC_ALL=C ls -- "$2" | tr '\n' ' ' | sed 's/ $//')"; }

# messages FILE: the third fields of a log, joined by '|'.
messages() { t cut -f3 "$1" | tr '\n' '|' | sed 's/|$//'; }

# log_ok DESC FILE: every line is ID<TAB>ISO time<TAB>message.
log_ok() {
  if ! t grep -qvE "^[0-9A-HJKMNP-TV-Z]{20}$TAB[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$TAB[^$TAB]*\$" "$2"; then
    pass "$1"
  else
    fail "$1: a line is not ID<TAB>TIME<TAB>MESSAGE"
    show "$2"
  fi
}

MAIN_LOG="set virtual chunk|fill data|empty structure|Repository initialized"

# ---- 1. the three test repositories ----

for repo in test-repo-v1 test-repo-v2 test-repo-v2-migrated; do
  R="$IC/$repo"
  zmount "$R" "$MNT" || continue
  H="$MNT/.zarrfs"
  ls_is "$repo: /.zarrfs" "$H" "branches log snapshots stats tags"
  ls_is "$repo: branches" "$H/branches" "main my-branch"
  ls_is "$repo: tags (odd names, no deleted)" "$H/tags" "it also works! it works!"
  ls_is "$repo: log" "$H/log" \
    "branch.main.txt branch.my-branch.txt tag.it also works!.txt tag.it works!.txt"
  if [ -e "$H/tags/deleted" ] || [ -e "$H/log/tag.deleted.txt" ]; then
    fail "$repo: the deleted tag is offered"
  else
    pass "$repo: the deleted tag is not offered"
  fi
  assert_eq "$repo: log of main, newest first" "$MAIN_LOG" \
    "$(messages "$H/log/branch.main.txt")"
  assert_eq "$repo: log of main has 4 lines" 4 "$(t wc -l <"$H/log/branch.main.txt")"
  log_ok "$repo: log lines are ID, time, message" "$H/log/branch.main.txt"
  assert_eq "$repo: log of tag 'it works!'" "delete a chunk|$MAIN_LOG" \
    "$(messages "$H/log/tag.it works!.txt")"
  assert_eq "$repo: log of tag 'it also works!'" \
    "some more structure|delete a chunk|$MAIN_LOG" \
    "$(messages "$H/log/tag.it also works!.txt")"
  assert_eq "$repo: log of my-branch" \
    "some more structure|delete a chunk|$MAIN_LOG" \
    "$(messages "$H/log/branch.my-branch.txt")"
  values "$repo: tags/it works!/group1/small_chunks/values.txt" \
    "$H/tags/it works!/group1/small_chunks/values.txt" "$(rep 4 84)
8
"
  values "$repo: branches/main/group1/small_chunks/values.txt" \
    "$H/branches/main/group1/small_chunks/values.txt" "$(rep 5 84)
"
  ls_is "$repo: branches/my-branch root" "$H/branches/my-branch" \
    "group1 group2 info.txt zarr.json"
  values "$repo: branches/my-branch inner values.txt (NaN)" \
    "$H/branches/my-branch/group2/group3/group4/group5/inner/values.txt" \
    "$(rep 100 nan)
"
  values "$repo: branches/main big_chunks c/1/1.txt (native)" \
    "$H/branches/main/group1/big_chunks/c/1/1.txt" "$(rep 25 42)
"
  # the snapshot "fill data": the tree of main before its virtual chunk
  id=$(t awk -F'\t' '$3 == "fill data" { print $1 }' "$H/log/branch.main.txt")
  if [ -n "$id" ] && [ -d "$H/snapshots/$id" ]; then
    pass "$repo: snapshots/ID of 'fill data' is a directory"
    values "$repo: snapshot 'fill data' small_chunks values.txt" \
      "$H/snapshots/$id/group1/small_chunks/values.txt" "$(rep 5 84)
"
  else
    fail "$repo: no snapshot directory for 'fill data' ($id)"
    t ls "$H/snapshots" | show
  fi
  assert_eq "$repo: snapshots/ lists every snapshot" 6 "$(t ls "$H/snapshots" | wc -l)"
  if [ -e "$H/snapshots/00000000000000000000" ]; then
    fail "$repo: an unknown snapshot id resolves"
  else
    pass "$repo: an unknown snapshot id is no such file"
  fi
  zumount "$MNT"
done

# ---- 2. a snapshot in the middle of a history (split manifests) ----

for repo in split-repo-v1 split-repo-v2; do
  zmount "$IC/$repo" "$MNT" || continue
  H="$MNT/.zarrfs"
  assert_eq "$repo: log of main" \
    "write data again with more splits|write data again|write data|empty structure|Repository initialized" \
    "$(messages "$H/log/branch.main.txt")"
  id=$(t awk -F'\t' '$3 == "write data" { print $1 }' "$H/log/branch.main.txt")
  values "$repo: snapshot 'write data' split values.txt" \
    "$H/snapshots/$id/group1/split/values.txt" "$(rep 100 120)
"
  values "$repo: snapshot 'write data' small_chunks values.txt" \
    "$H/snapshots/$id/group1/small_chunks/values.txt" "$(rep 5 0)
"
  values "$repo: tip split values.txt unchanged" \
    "$MNT/group1/split/values.txt" "$(rep 100 14)
"
  zumount "$MNT"
done

# ---- 3. the FUSE-free CLI ----

R="$IC/test-repo-v2"
assert_eq "cli: ls /.zarrfs/tags" "it also works!|it works!" \
  "$(t "$ZARRFS_BIN" ls "$R" /.zarrfs/tags | tr '\n' '|' | sed 's/|$//')"
t "$ZARRFS_BIN" cat "$R" /.zarrfs/log/branch.main.txt >"$ZT_TMP/cli.log"
assert_eq "cli: cat the log of main" "$MAIN_LOG" "$(messages "$ZT_TMP/cli.log")"
values "cli: cat tags/it works!/.../values.txt" \
  "$(t "$ZARRFS_BIN" cat "$R" "/.zarrfs/tags/it works!/group1/small_chunks/values.txt" >"$ZT_TMP/cli.v"; echo "$ZT_TMP/cli.v")" \
  "$(rep 4 84)
8
"
id=$(t awk -F'\t' '$3 == "write data" { print $1 }' <(t "$ZARRFS_BIN" cat "$IC/split-repo-v1" /.zarrfs/log/branch.main.txt))
t "$ZARRFS_BIN" cat "$IC/split-repo-v1" "/.zarrfs/snapshots/$id/group1/small_chunks/values.txt" >"$ZT_TMP/cli.s"
values "cli: cat a snapshot in the middle of the history" "$ZT_TMP/cli.s" "$(rep 5 0)
"

# ---- 4. a Zarr store keeps /.zarrfs as it was ----

zt_require_mkstore
t "$ZARRFS_MKSTORE" example "$ZT_TMP/plain" >/dev/null 2>&1 || true
if [ -d "$ZT_TMP/plain" ] && zmount "$ZT_TMP/plain" "$MNT"; then
  ls_is "zarr store: /.zarrfs has stats alone" "$MNT/.zarrfs" "stats"
  if [ -e "$MNT/.zarrfs/branches" ]; then
    fail "zarr store: /.zarrfs/branches exists"
  else
    pass "zarr store: no history"
  fi
  zumount "$MNT"
fi

# ---- 5. over HTTP ----

if [ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1; then
  srv_nginx_start "$IC"
  if zmount "$NGINX_URL/test-repo-v2" "$MNT"; then
    H="$MNT/.zarrfs"
    ls_is "http test-repo-v2: tags" "$H/tags" "it also works! it works!"
    assert_eq "http test-repo-v2: log of main" "$MAIN_LOG" \
      "$(messages "$H/log/branch.main.txt")"
    values "http test-repo-v2: tags/it works!/.../values.txt" \
      "$H/tags/it works!/group1/small_chunks/values.txt" "$(rep 4 84)
8
"
    zumount "$MNT"
  fi
  if zmount "$NGINX_URL/test-repo-v1" "$MNT"; then
    H="$MNT/.zarrfs"
    assert_eq "http test-repo-v1: log of tag 'it works!' by name" \
      "delete a chunk|$MAIN_LOG" "$(messages "$H/log/tag.it works!.txt")"
    values "http test-repo-v1: branches/my-branch by name" \
      "$H/branches/my-branch/group1/small_chunks/values.txt" "$(rep 4 84)
8
"
    zumount "$MNT"
  fi
else
  zt_skip_part "nginx missing: the history over HTTP"
fi

finish
