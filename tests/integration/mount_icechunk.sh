#!/bin/bash
# mount_icechunk.sh - Icechunk repositories written by Icechunk itself
# (../shared/fixtures/icechunk, see its EXPECTED.md), mounted by the real
# daemon:
#  1. test-repo-v1 (spec 1), test-repo-v2 (spec 2) and test-repo-v2-migrated
#     at the tip of main, at -o ref=my-branch and at the tags "it works!"
#     and "it also works!": the tree (ls), zarr.json byte-identical to the
#     node's metadata, values.txt of group1/small_chunks (inline chunks) and
#     group2/.../inner (no chunk: NaN), the native chunks of
#     group1/big_chunks, and its virtual chunk c/0/0 failing with EIO and a
#     log line naming the URL (not authorized) while the rest serves;
#  2. split-repo-v1 and -v2 (split manifests) at the tip and at the
#     snapshots "write data" and "write data again" (-o snapshot=ID);
#  3. refusals: a deleted tag, an unknown snapshot, -o ref on a Zarr store;
#  4. damaged files in a copy of test-repo-v2: a manifest fails only the
#     array that needs it (EIO, one log line naming the file), a damaged
#     repo file or a repository without branch main is refused at mount;
#  5. the virtual chunk served by s3rver as Icechunk's own tests do (bucket
#     testbucket, key can_read_old/chunk-1, the bytes of the stored chunk
#     c/0/1): read when its prefix is allowed (-o target_root=PREFIX),
#     EIO when another prefix is (skipped without node, jq and s3rver);
#  6. the same repositories over S3 (s3rver: test-repo-v2, split-repo-v1)
#     and HTTP (nginx: test-repo-v1, whose refs cannot be listed there, and
#     test-repo-v2): main, a branch, a tag and a snapshot read the same.
# Absent fixtures skip (exit 77), or fail under CI=true.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"

FIX=${ZARRFS_FIXTURES:-$ZARRFS_SRCDIR/../shared/fixtures}
if [ ! -d "$FIX/icechunk" ]; then
  zt_skip_or_fail "fixtures not found at $FIX/icechunk"
fi
IC="$FIX/icechunk"
MNT=$(zt_mkdir mnt)

# rep N VALUE: VALUE on N lines.
rep() { awk -v n="$1" -v v="$2" 'BEGIN { for (i = 0; i < n; i++) print v }'; }

# values DESC FILE EXPECTED_TEXT
values() {
  printf '%s' "$3" >"$ZT_TMP/values.exp"
  assert_file_eq "$1" "$ZT_TMP/values.exp" "$2"
}

# ls_is DESC DIR NAMES (one line, sorted, space-separated)
ls_is() { assert_eq "$1" "$3" "$(t env LC_ALL=C ls -- "$2" | tr '\n' ' ' | sed 's/ $//')"; }

# ---- 1. the three test repositories ----

for repo in test-repo-v1 test-repo-v2 test-repo-v2-migrated; do
  R="$IC/$repo"
  if zmount "$R" "$MNT"; then
    ls_is "$repo main: root" "$MNT" "group1 info.txt zarr.json"
    ls_is "$repo main: group1" "$MNT/group1" "big_chunks info.txt small_chunks zarr.json"
    if t grep -q '"is a nice group"' "$MNT/group1/zarr.json" &&
      t python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$MNT/group1/zarr.json"; then
      pass "$repo main: group1/zarr.json is the node's metadata"
    else
      fail "$repo main: group1/zarr.json"
      t cat "$MNT/group1/zarr.json" | show
    fi
    values "$repo main: small_chunks values.txt (inline)" \
      "$MNT/group1/small_chunks/values.txt" "$(rep 5 84)
"
    ls_is "$repo main: small_chunks/c" "$MNT/group1/small_chunks/c" \
      "0 0.txt 1 1.txt 2 2.txt 3 3.txt 4 4.txt"
    values "$repo main: big_chunks c/0/1.txt (native)" \
      "$MNT/group1/big_chunks/c/0/1.txt" "$(rep 25 42)
"
    values "$repo main: big_chunks c/1/1.txt (native)" \
      "$MNT/group1/big_chunks/c/1/1.txt" "$(rep 25 42)
"
    assert_eq "$repo main: c/0/1 raw is 19 bytes" 19 \
      "$(t stat -c %s "$MNT/group1/big_chunks/c/0/1")"
    assert_fails_with_eio "$repo main: virtual chunk c/0/0 without authorization" \
      "$MNT/group1/big_chunks/c/0/0"
    if grep -q 's3://testbucket/can_read_old/chunk-1' "$ZT_LOG" &&
      grep -q 'not authorized' "$ZT_LOG"; then
      pass "$repo main: the log names the virtual chunk's URL"
    else
      fail "$repo main: no log line naming the virtual chunk"
      show "$ZT_LOG"
    fi
    values "$repo main: c/1/0.txt still reads after the failure" \
      "$MNT/group1/big_chunks/c/1/0.txt" "$(rep 25 42)
"
    zumount "$MNT"
  fi
  if zmount "$R" "$MNT" -o ref=my-branch; then
    ls_is "$repo my-branch: root" "$MNT" "group1 group2 info.txt zarr.json"
    values "$repo my-branch: small_chunks values.txt (last chunk deleted)" \
      "$MNT/group1/small_chunks/values.txt" "$(rep 4 84)
8
"
    values "$repo my-branch: inner values.txt (no chunk: NaN)" \
      "$MNT/group2/group3/group4/group5/inner/values.txt" "$(rep 100 nan)
"
    if t grep -q '"is a nice array"' "$MNT/group2/group3/group4/group5/inner/zarr.json"; then
      pass "$repo my-branch: inner/zarr.json"
    else
      fail "$repo my-branch: inner/zarr.json lacks its attributes"
    fi
    zumount "$MNT"
  fi
  for tag in "it works!" "it also works!"; do
    if zmount "$R" "$MNT" -o "ref=$tag"; then
      values "$repo tag '$tag': small_chunks values.txt" \
        "$MNT/group1/small_chunks/values.txt" "$(rep 4 84)
8
"
      zumount "$MNT"
    fi
  done
done

# ---- 2. split manifests ----

# split_check DESC SPLIT SMALL [OPTIONS...]: every element of group1/split
# is SPLIT, of group1/small_chunks SMALL.
split_check() {
  local desc=$1 sp=$2 sm=$3 repo=$4
  shift 4
  if zmount "$IC/$repo" "$MNT" "$@"; then
    values "$desc: split values.txt" "$MNT/group1/split/values.txt" "$(rep 100 "$sp")
"
    values "$desc: small_chunks values.txt" "$MNT/group1/small_chunks/values.txt" \
      "$(rep 5 "$sm")
"
    ls_is "$desc: split/c" "$MNT/group1/split/c" "0 1 2 3"
    zumount "$MNT"
  fi
}
split_check "split-repo-v1 main" 14 3 split-repo-v1
split_check "split-repo-v2 main" 14 3 split-repo-v2
split_check "split-repo-v1 'write data'" 120 0 split-repo-v1 -o snapshot=W1ZXYGWWEXKXS2J6TQGG
split_check "split-repo-v1 'write data again'" 12 1 split-repo-v1 -o snapshot=X8NA4KMB3XYEDM2FAJEG
split_check "split-repo-v2 'write data'" 120 0 split-repo-v2 -o snapshot=BHM2GW0JP18X3W3TGDS0
split_check "split-repo-v2 'write data again'" 12 1 split-repo-v2 -o snapshot=K0XMGARRMG0X6XN2WZA0

# ---- 3. refusals: one line, no mount; the FUSE-free CLI ----

assert_output_eq "cli: zarrfs cat -o ref=my-branch" "$(rep 4 84)
8
" "$ZARRFS_BIN" cat -o ref=my-branch "$IC/test-repo-v1" group1/small_chunks/values.txt
assert_output_eq "cli: zarrfs ls -o snapshot=ID" "group1
info.txt
zarr.json
" "$ZARRFS_BIN" ls -o snapshot=GC4YVH5SKBPEZCENYQE0 "$IC/test-repo-v1"


t "$ZARRFS_BIN" -f -o ref=deleted "$IC/test-repo-v1" "$MNT" >/dev/null 2>"$ZT_TMP/r1.err" </dev/null
assert_one_refusal "a deleted tag is refused" "$ZT_TMP/r1.err" "no branch or tag named 'deleted'"
t "$ZARRFS_BIN" -f -o snapshot=00000000000000000000 "$IC/test-repo-v2" "$MNT" >/dev/null \
  2>"$ZT_TMP/r2.err" </dev/null
assert_one_refusal "an unknown snapshot is refused" "$ZT_TMP/r2.err" "no snapshot 00000000000000000000"
t "$ZARRFS_BIN" -f -o ref=main "$ZARRFS_SRCDIR/examples/example.zarr" "$MNT" >/dev/null \
  2>"$ZT_TMP/r3.err" </dev/null
assert_one_refusal "-o ref on a Zarr store is refused" "$ZT_TMP/r3.err" "Icechunk repositories only"
if zt_is_mounted "$MNT"; then fail "a refused source mounted"; zumount "$MNT"; fi

# ---- 4. damaged files fail alone ----

BAD=$(zt_mkdir bad)
cp -r "$IC/test-repo-v2" "$BAD/repo2"
# Damage every manifest's payload, then check which views fail: each array
# of main has its own manifest, so both arrays fail and the groups serve.
for f in "$BAD/repo2"/manifests/*; do
  printf 'XXXXXXXX' | dd of="$f" bs=1 seek=60 conv=notrunc status=none
done
if zmount "$BAD/repo2" "$MNT"; then
  assert_fails_with_eio "damaged manifest: small_chunks values.txt is EIO" \
    "$MNT/group1/small_chunks/values.txt"
  if grep -q 'manifests/' "$ZT_LOG"; then
    pass "damaged manifest: the log names the manifest file"
  else
    fail "damaged manifest: no log line naming the manifest"
    show "$ZT_LOG"
  fi
  ls_is "damaged manifest: the tree still lists" "$MNT/group1" \
    "big_chunks info.txt small_chunks zarr.json"
  if t grep -q '"is a nice group"' "$MNT/group1/zarr.json"; then
    pass "damaged manifest: group metadata still reads"
  else
    fail "damaged manifest: group1/zarr.json"
  fi
  zumount "$MNT"
fi
cp -r "$IC/test-repo-v2" "$BAD/repo3"
printf 'XXXXXXXX' | dd of="$BAD/repo3/repo" bs=1 seek=50 conv=notrunc status=none
t "$ZARRFS_BIN" -f "$BAD/repo3" "$MNT" >/dev/null 2>"$ZT_TMP/r4.err" </dev/null
assert_one_refusal "a damaged repo file is refused" "$ZT_TMP/r4.err" "repo:"
cp -r "$IC/test-repo-v1" "$BAD/repo4"
rm -r "$BAD/repo4/refs/branch.main"
t "$ZARRFS_BIN" -f "$BAD/repo4" "$MNT" >/dev/null 2>"$ZT_TMP/r5.err" </dev/null
assert_one_refusal "a spec 1 repository without main is refused" "$ZT_TMP/r5.err" "zarrfs:"
if zt_is_mounted "$MNT"; then fail "a refused source mounted"; zumount "$MNT"; fi

# ---- 5. the virtual chunk, authorized ----

S3RVER_JS=${ZARRFS_S3RVER_DIR:-/opt/zarrfs-test/node_modules/@20minutes/s3rver}/lib/s3rver.js
if ! command -v node >/dev/null 2>&1 || ! command -v jq >/dev/null 2>&1 ||
  [ ! -f "$S3RVER_JS" ]; then
  zt_skip_part "node, jq or s3rver missing: the authorized virtual chunk"
else
  UP=$(zt_mkdir up)
  mkdir -p "$UP/can_read_old"
  srv_s3_start "$ZT_TMP/s3data"
  export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
  unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL AWS_REGION
  export HOME="$ZT_TMP"
  if zmount "$IC/test-repo-v1" "$MNT"; then
    t cat "$MNT/group1/big_chunks/c/0/1" >"$UP/can_read_old/chunk-1"
    zumount "$MNT"
  fi
  srv_s3_put_tree testbucket "$UP"
  for repo in test-repo-v1 test-repo-v2 test-repo-v2-migrated; do
    R="$IC/$repo"
    if zmount "$R" "$MNT" -o "endpoint=$S3_ENDPOINT" \
      -o target_root=s3://testbucket/can_read_old; then
      values "$repo: virtual chunk c/0/0.txt, authorized" \
        "$MNT/group1/big_chunks/c/0/0.txt" "$(rep 25 42)
"
      assert_file_eq "$repo: c/0/0 raw is the object's bytes" \
        "$UP/can_read_old/chunk-1" "$MNT/group1/big_chunks/c/0/0"
      values "$repo: big_chunks values.txt" "$MNT/group1/big_chunks/values.txt" \
        "$(rep 100 42)
"
      zumount "$MNT"
    fi
    if zmount "$R" "$MNT" -o "endpoint=$S3_ENDPOINT" -o target_root=s3://otherbucket; then
      assert_fails_with_eio "$repo: virtual chunk under another allowed prefix" \
        "$MNT/group1/big_chunks/c/0/0"
      zumount "$MNT"
    fi
  done
  # ---- 6a. repositories in S3 ----
  RUP=$(zt_mkdir rup)
  cp -r "$IC/test-repo-v2" "$IC/split-repo-v1" "$RUP/"
  srv_s3_put_tree icebkt "$RUP"
  S3=(-o "endpoint=$S3_ENDPOINT")
  if zmount s3://icebkt/test-repo-v2 "$MNT" "${S3[@]}" -o "ref=it works!"; then
    values "s3 test-repo-v2 'it works!': small_chunks values.txt" \
      "$MNT/group1/small_chunks/values.txt" "$(rep 4 84)
8
"
    values "s3 test-repo-v2: big_chunks c/1/1.txt" \
      "$MNT/group1/big_chunks/c/1/1.txt" "$(rep 25 42)
"
    zumount "$MNT"
  fi
  if zmount s3://icebkt/split-repo-v1 "$MNT" "${S3[@]}"; then
    values "s3 split-repo-v1: split values.txt" "$MNT/group1/split/values.txt" \
      "$(rep 100 14)
"
    zumount "$MNT"
  fi
  if zmount s3://icebkt/split-repo-v1 "$MNT" "${S3[@]}" -o snapshot=W1ZXYGWWEXKXS2J6TQGG; then
    values "s3 split-repo-v1 'write data': split values.txt" \
      "$MNT/group1/split/values.txt" "$(rep 100 120)
"
    zumount "$MNT"
  fi
fi

# ---- 6b. repositories over HTTP ----

if [ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1; then
  srv_nginx_start "$IC"
  for repo in test-repo-v1 test-repo-v2; do
    if zmount "$NGINX_URL/$repo" "$MNT" -o "ref=it works!"; then
      values "http $repo 'it works!': small_chunks values.txt" \
        "$MNT/group1/small_chunks/values.txt" "$(rep 4 84)
8
"
      ls_is "http $repo: small_chunks/c" "$MNT/group1/small_chunks/c" \
        "0 0.txt 1 1.txt 2 2.txt 3 3.txt"
      zumount "$MNT"
    fi
    if zmount "$NGINX_URL/$repo" "$MNT"; then
      values "http $repo main: small_chunks values.txt" \
        "$MNT/group1/small_chunks/values.txt" "$(rep 5 84)
"
      zumount "$MNT"
    fi
  done
  t "$ZARRFS_BIN" -f -o ref=deleted "$NGINX_URL/test-repo-v1" "$MNT" >/dev/null \
    2>"$ZT_TMP/r6.err" </dev/null
  assert_one_refusal "http: a deleted tag is refused" "$ZT_TMP/r6.err" "deleted"
else
  zt_skip_part "nginx missing: repositories over HTTP"
fi

finish
