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
#     test-repo-v2): main, a branch, a tag and a snapshot read the same;
#  7. virtual chunk checksums and containers, in repositories written by
#     tests/writers/icechunk_writer.py (spec 1 and 2): over s3rver (the
#     container's own endpoint, allowed with -o container_endpoint, not
#     the environment's), a chunk whose ETag
#     or time matches reads byte-exact, an object rewritten after its ETag
#     was recorded or modified after its time is EIO with a log line
#     naming key and URL while the others read; a container whose endpoint
#     is down fails, -o endpoint wins over it, -o target_root still
#     confines; over nginx (ETag and Last-Modified), over faultsrv (a
#     server that ignores If-Match), and local files (mtime, ETag).
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


# ---- 7. virtual chunk checksums ----

# vrepo OUT SPEC CONTAINERS CHUNKS: a repository written by
# tests/writers/icechunk_writer.py whose array /v (int32, one element per
# chunk) has the chunk references CHUNKS (a JSON list of "virtual"
# objects: location, length, etag or last_modified), under the virtual
# chunk containers CONTAINERS (a JSON object url_prefix -> store config).
vrepo() {
  /usr/bin/python3 "$ZARRFS_SRCDIR/tests/writers/icechunk_writer.py" virtual "$1" \
    "$3" "$4" --spec "$2" >/dev/null
}

# i32 N: the 4 bytes of N as a little-endian int32.
i32() { printf "\\x$(printf %02x "$1")\\x00\\x00\\x00"; }
md5etag() { md5sum "$1" | cut -d' ' -f1; }

# logged DESC PATTERN...: one log line holds every pattern.
logged() {
  local desc=$1 l
  shift
  l=$(cat "$ZT_LOG")
  for p in "$@"; do l=$(printf '%s\n' "$l" | grep -F -- "$p"); done
  if [ -n "$l" ]; then pass "$desc"; else fail "$desc"; show "$ZT_LOG"; fi
}

VD=$(zt_mkdir virt)
mkdir -p "$VD/obj"
i32 7 >"$VD/obj/good"
i32 8 >"$VD/obj/stale"
i32 10 >"$VD/obj/lm"
touch -d '2001-01-01 00:00:00 UTC' "$VD/obj/good" "$VD/obj/stale" "$VD/obj/lm"
STALE_MD5=$(md5etag "$VD/obj/stale")
GOOD_MD5=$(md5etag "$VD/obj/good")

if [ -n "${S3_ENDPOINT:-}" ]; then
  srv_s3_put_tree vbkt "$VD/obj"
  i32 9 >"$VD/s3stale"
  srv_s3_curl -T "$VD/s3stale" -o /dev/null "$S3_ENDPOINT/vbkt/stale"
  CT='{"s3://vbkt/": {"s3_compatible": {"region": "us-east-1", "endpoint_url": "'$S3_ENDPOINT'", "force_path_style": true, "anonymous": false, "allow_http": true}}}'
  CH='[{"location": "s3://vbkt/good", "length": 4, "etag": "\"'$GOOD_MD5'\""},
       {"location": "s3://vbkt/stale", "length": 4, "etag": "'$STALE_MD5'"},
       {"location": "s3://vbkt/lm", "length": 4, "last_modified": 1000000000},
       {"location": "s3://vbkt/good", "length": 4, "last_modified": 4294111232},
       {"location": "s3://vbkt/good", "length": 4}]'
  for spec in 1 2; do
    vrepo "$ZT_TMP/vs3-$spec" "$spec" "$CT" "$CH"
    # the container's endpoint is used (not the environment's) once the
    # user allowed it
    if AWS_ENDPOINT_URL=http://127.0.0.1:9 zmount "$ZT_TMP/vs3-$spec" "$MNT" \
      -o target_root=s3://vbkt -o "container_endpoint=$S3_ENDPOINT"; then
      assert_file_eq "s3 spec $spec: a chunk whose ETag matches reads byte-exact" \
        "$VD/obj/good" "$MNT/v/c/0"
      assert_fails_with_eio "s3 spec $spec: an object rewritten after its ETag was recorded" \
        "$MNT/v/c/1"
      logged "s3 spec $spec: one log line names the key and the URL" "v/c/1" "s3://vbkt/stale"
      assert_fails_with_eio "s3 spec $spec: an object modified after its recorded time" \
        "$MNT/v/c/2"
      logged "s3 spec $spec: the log names the key and the URL (last modified)" \
        "v/c/2" "s3://vbkt/lm"
      assert_file_eq "s3 spec $spec: a chunk not modified since its time reads" \
        "$VD/obj/good" "$MNT/v/c/3"
      assert_file_eq "s3 spec $spec: a chunk without checksum reads" \
        "$VD/obj/good" "$MNT/v/c/4"
      assert_fails_with_eio "s3 spec $spec: the stale chunk fails again" "$MNT/v/c/1"
      zumount "$MNT"
    fi
  done
  # a container whose endpoint answers nothing: its chunks fail, though the
  # environment names a server that has them; an endpoint given with -o
  # endpoint wins over the container's
  CT='{"s3://vbkt/": {"s3": {"endpoint_url": "http://127.0.0.1:9", "region": "eu-west-1", "force_path_style": true}}}'
  vrepo "$ZT_TMP/vs3-off" 2 "$CT" '[{"location": "s3://vbkt/good", "length": 4}]'
  if AWS_ENDPOINT_URL=$S3_ENDPOINT zmount "$ZT_TMP/vs3-off" "$MNT" -o target_root=s3://vbkt \
    -o container_endpoint=http://127.0.0.1:9; then
    assert_fails_with_eio "s3: a chunk under a container whose endpoint is down" "$MNT/v/c/0"
    logged "s3: the log names the key and the URL" "v/c/0" "s3://vbkt/good"
    zumount "$MNT"
  fi
  if zmount "$ZT_TMP/vs3-off" "$MNT" -o "endpoint=$S3_ENDPOINT" -o target_root=s3://vbkt; then
    assert_file_eq "s3: -o endpoint wins over the container's" "$VD/obj/good" "$MNT/v/c/0"
    zumount "$MNT"
  fi
  # an anonymous container: requests unsigned, as Icechunk sends them
  CT='{"s3://vbkt/": {"s3_compatible": {"endpoint_url": "'$S3_ENDPOINT'", "anonymous": true}}}'
  vrepo "$ZT_TMP/vs3-anon" 1 "$CT" '[{"location": "s3://vbkt/good", "length": 4}]'
  if zmount "$ZT_TMP/vs3-anon" "$MNT" -o target_root=s3://vbkt \
    -o "container_endpoint=$S3_ENDPOINT"; then
    assert_file_eq "s3: a chunk of an anonymous container" "$VD/obj/good" "$MNT/v/c/0"
    zumount "$MNT"
  fi
  # a container that allows another bucket than the one authorized
  CT='{"s3://vbkt/": {"s3_compatible": {"endpoint_url": "'$S3_ENDPOINT'"}}}'
  vrepo "$ZT_TMP/vs3-auth" 2 "$CT" '[{"location": "s3://vbkt/good", "length": 4}]'
  if zmount "$ZT_TMP/vs3-auth" "$MNT" -o target_root=s3://otherbkt; then
    assert_fails_with_eio "s3: a container's chunk not authorized by -o target_root" "$MNT/v/c/0"
    zumount "$MNT"
  fi
else
  zt_skip_part "s3rver missing: virtual chunk checksums over S3"
fi

if [ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1; then
  srv_nginx_start "$VD/obj"
  ETAG_GOOD=$(curl -sI "$NGINX_URL/good" | tr -d '\r' | sed -n 's/^[Ee][Tt]ag: //p')
  ETAG_STALE=$(curl -sI "$NGINX_URL/stale" | tr -d '\r' | sed -n 's/^[Ee][Tt]ag: //p')
  i32 11 >"$VD/obj/stale"
  CT='{"'$NGINX_URL'/": {"http": {}}}'
  CH='[{"location": "'$NGINX_URL'/good", "length": 4, "etag": '"$(printf '%s' "$ETAG_GOOD" | jq -R .)"'},
       {"location": "'$NGINX_URL'/stale", "length": 4, "etag": '"$(printf '%s' "$ETAG_STALE" | jq -R .)"'},
       {"location": "'$NGINX_URL'/lm", "length": 4, "last_modified": 900000000},
       {"location": "'$NGINX_URL'/lm", "length": 4, "last_modified": 1000000000}]'
  vrepo "$ZT_TMP/vhttp" 2 "$CT" "$CH"
  if zmount "$ZT_TMP/vhttp" "$MNT" -o "target_root=$NGINX_URL"; then
    assert_file_eq "http: a chunk whose ETag matches reads byte-exact" \
      "$VD/obj/good" "$MNT/v/c/0"
    assert_fails_with_eio "http: a file rewritten after its ETag was recorded" "$MNT/v/c/1"
    logged "http: one log line names the key and the URL" "v/c/1" "$NGINX_URL/stale"
    assert_fails_with_eio "http: a file modified after its recorded time" "$MNT/v/c/2"
    assert_file_eq "http: a file not modified since its recorded time reads" \
      "$VD/obj/lm" "$MNT/v/c/3"
    zumount "$MNT"
  fi
else
  zt_skip_part "nginx missing: virtual chunk checksums over HTTP"
fi

FSRV=${ZARRFS_BUILDDIR:-.}/tests/integration/faultsrv
if [ -x "$FSRV" ]; then
  srv_fault_start "$VD/obj"
  # a server that ignores If-Match: the answer's ETag is checked
  CT='{"'$FAULT_URL'/": {"http": {}}}'
  CH='[{"location": "'$FAULT_URL'/_f/etagreq/good", "length": 4, "etag": "req-recorded"},
       {"location": "'$FAULT_URL'/good", "length": 4},
       {"location": "'$FAULT_URL'/good", "length": 4, "etag": "x\r\nX-Evil: 1"}]'
  vrepo "$ZT_TMP/vfault" 2 "$CT" "$CH"
  if zmount "$ZT_TMP/vfault" "$MNT" -o "target_root=$FAULT_URL"; then
    assert_fails_with_eio "http: a server ignoring If-Match answers another ETag: EIO" \
      "$MNT/v/c/0"
    assert_file_eq "http: the same object without a checksum reads" \
      "$VD/obj/good" "$MNT/v/c/1"
    assert_fails_with_eio "http: an ETag that cannot go in a header: EIO" "$MNT/v/c/2"
    zumount "$MNT"
  fi
else
  zt_skip_part "faultsrv not built: a server that ignores If-Match"
fi

# a container whose settings cannot be trusted is refused whole, in the
# repo file (FlexBuffers) as in config.yaml
CT='{"s3://vbkt/": {"s3_compatible": {"endpoint_url": "ftp://127.0.0.1/", "region": "us-east-1"}}}'
for spec in 1 2; do
  vrepo "$ZT_TMP/vbad-$spec" "$spec" "$CT" '[{"location": "s3://vbkt/good", "length": 4}]'
  if zmount "$ZT_TMP/vbad-$spec" "$MNT" -o target_root=s3://vbkt; then
    assert_fails_with_eio "spec $spec: a container with an ftp:// endpoint is unusable" "$MNT/v/c/0"
    logged "spec $spec: the log names the key, the URL and why" "v/c/0" "s3://vbkt/good" \
      "endpoint_url is not an http:// or https:// URL"
    zumount "$MNT"
  fi
done

# local files: Icechunk's local store compares the file's mtime
cp "$VD/obj/good" "$VD/local"
touch -d '2001-01-01 00:00:00 UTC' "$VD/local"
CT='{"file://'$VD'/": {"local_file_system": ""}}'
# and its ETag, INODE-MTIME(us)-SIZE in hexadecimal (object_store's)
LTAG=$(/usr/bin/python3 -c 'import os,sys; s=os.stat(sys.argv[1]); print("%x-%x-%x" % (s.st_ino, s.st_mtime_ns // 1000, s.st_size))' "$VD/local")
CH='[{"location": "file://'$VD'/local", "length": 4, "last_modified": 1000000000},
     {"location": "file://'$VD'/local", "length": 4, "last_modified": 900000000},
     {"location": "file://'$VD'/local", "length": 4, "etag": "'$LTAG'"},
     {"location": "file://'$VD'/local", "length": 4, "etag": "1-2-4"}]'
vrepo "$ZT_TMP/vlocal" 2 "$CT" "$CH"
if zmount "$ZT_TMP/vlocal" "$MNT" -o "target_root=$VD"; then
  assert_file_eq "file: a file not modified since its recorded time reads" \
    "$VD/local" "$MNT/v/c/0"
  assert_fails_with_eio "file: a file modified after its recorded time" "$MNT/v/c/1"
  logged "file: the log names the key and the path" "v/c/1" "file://$VD/local"
  assert_file_eq "file: a file whose Icechunk ETag matches reads" "$VD/local" "$MNT/v/c/2"
  assert_fails_with_eio "file: a file whose Icechunk ETag differs" "$MNT/v/c/3"
  logged "file: the log names the key, the path and the ETag" "v/c/3" "file://$VD/local" '"1-2-4"'
  zumount "$MNT"
fi

finish
