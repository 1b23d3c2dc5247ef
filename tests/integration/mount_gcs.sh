#!/bin/bash
# mount_gcs.sh - stores in Google Cloud Storage (gs://) through its
# S3-compatible XML API. No Cloud Storage emulator speaks that API, so an
# S3 server that verifies SigV4 signatures (@20minutes/s3rver, installed by
# .ci/run) stands in for storage.googleapis.com, as the reference says
# (same wire format; signed in region "auto"):
#  1. HMAC keys (GS_ACCESS_KEY_ID, GS_SECRET_ACCESS_KEY) with -o endpoint:
#     the example store's values.txt equal EXPECTED and the whole tree
#     equals the local mount's (ListObjectsV2 listings, ranged reads);
#  2. anonymous (no GS keys): the AWS keys of the environment are not used
#     for gs:// (a wrong AWS secret changes nothing), and the endpoint may
#     come from CPL_GS_ENDPOINT;
#  3. a wrong secret is refused at mount (exit 1, 403
#     SignatureDoesNotMatch, the settings to check), the secret never
#     shown;
#  4. kerchunk: a local reference file whose targets are gs:// URLs equals
#     the local mount of the original;
#  5. a SOURCE of a scheme zarrfs does not read (file://, ftp://) is
#     refused naming the scheme and what is read.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
command -v jq >/dev/null 2>&1 || srv_need jq

FIX=${ZARRFS_FIXTURES:-$ZARRFS_SRCDIR/../shared/fixtures}
srv_s3_start "$ZT_TMP/s3data"
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE \
  AWS_ENDPOINT_URL AWS_REGION CPL_GS_ENDPOINT
export HOME="$ZT_TMP" # no ~/.aws of the machine's user
export GS_ACCESS_KEY_ID=S3RVER GS_SECRET_ACCESS_KEY=S3RVER
EP=(-o "endpoint=$S3_ENDPOINT")
EX="$ZARRFS_SRCDIR/examples/example.zarr"

UP=$(zt_mkdir up)
cp -r "$EX" "$UP/example.zarr"
srv_s3_put_tree gbkt "$UP"

# ---- 1. HMAC keys ----
L=$(zt_mkdir exl)
zmount "$EX" "$L" || finish
M=$(zt_mkdir ex)
if zmount "gs://gbkt/example.zarr" "$M" "${EP[@]}"; then
  for f in "$EX"/EXPECTED/*.txt; do
    a=$(basename "$f" .txt)
    assert_file_eq "HMAC keys: $a values.txt" "$f" "$M/$a/values.txt"
  done
  same_tree "HMAC keys: example store" "$L" "$M"
  zumount "$M"
fi

# ---- 2. anonymous; the AWS keys stay with S3 ----
M=$(zt_mkdir anon)
if GS_ACCESS_KEY_ID='' GS_SECRET_ACCESS_KEY='' AWS_ACCESS_KEY_ID=S3RVER \
  AWS_SECRET_ACCESS_KEY=WrongAwsSecret CPL_GS_ENDPOINT=$S3_ENDPOINT/ \
  zmount "gs://gbkt/example.zarr" "$M"; then
  same_tree "anonymous, endpoint from CPL_GS_ENDPOINT, AWS keys unused" "$L" "$M"
  zumount "$M"
fi

# ---- 3. a wrong secret ----
M=$(zt_mkdir wrong)
GS_SECRET_ACCESS_KEY=WrongGsSecret123 t "$ZARRFS_BIN" -f "${EP[@]}" \
  gs://gbkt/example.zarr "$M" >"$ZT_TMP/wrong.out" 2>&1
assert_eq "a wrong secret: exit 1" 1 "$?"
assert_eq "... saying 403 SignatureDoesNotMatch and what to check" 1 \
  "$(grep -c '403 (SignatureDoesNotMatch).*GS_ACCESS_KEY_ID' "$ZT_TMP/wrong.out")"
assert_eq "... and never the secret" 0 "$(grep -c 'WrongGsSecret123' "$ZT_TMP/wrong.out")"

# ---- 4. kerchunk with gs:// targets ----
K="$FIX/kerchunk/refs"
if [ -d "$K" ]; then
  KUP=$(zt_mkdir kup)
  cp "$K"/* "$KUP/"
  srv_s3_put_tree gkerchunk "$KUP"
  KL=$(zt_mkdir kl)
  ref="$K/refs_v1.json"
  [ -f "$ref" ] || ref=$(ls "$K"/refs_v*.json | head -1)
  b=$(basename "$ref")
  jq 'def gs: if test("^[^/:{}]+$") then "gs://gkerchunk/" + . else . end;
      (if .refs then .refs else . end) |= with_entries(
        if (.value | type) == "array" and (.value[0] | type) == "string"
        then .value[0] |= gs else . end)
      | if .templates then .templates |= map_values(gs) else . end
      | if .gen then .gen |= map(if .url then .url |= gs else . end)
        else . end' "$ref" >"$KL/$b" || fail "jq rewrite of $b"
  grep -q 'gs://gkerchunk/' "$KL/$b" || fail "$b: no target rewritten to gs://"
  RL=$(zt_mkdir rl)
  R=$(zt_mkdir rr)
  if zmount "$ref" "$RL"; then
    # A local SOURCE: -o endpoint is S3's, Cloud Storage's comes from
    # CPL_GS_ENDPOINT.
    if CPL_GS_ENDPOINT=$S3_ENDPOINT zmount "$KL/$b" "$R"; then
      same_tree "$b with gs:// targets" "$RL" "$R"
      zumount "$R"
    fi
    zumount "$RL"
  fi
else
  zt_skip_part "kerchunk fixtures not found at $K: part 4"
fi
zumount "$L"

# ---- 5. schemes zarrfs does not read ----
t "$ZARRFS_BIN" ls file:///tmp/x.zarr >"$ZT_TMP/file.out" 2>&1
assert_eq "file:// SOURCE: exit 1" 1 "$?"
assert_eq "... naming the scheme and the path to give" 1 \
  "$(grep -c 'file:///tmp/x.zarr: the file:// scheme is not supported: give the path itself (/tmp/x.zarr)' "$ZT_TMP/file.out")"
t "$ZARRFS_BIN" ls ftp://127.0.0.1/x.zarr >"$ZT_TMP/ftp.out" 2>&1
assert_eq "ftp:// SOURCE: exit 1" 1 "$?"
assert_eq "... naming the scheme and the schemes read" 1 \
  "$(grep -c 'the ftp:// scheme is not supported .*http://, https://, s3://, gs:// or az:// URL' "$ZT_TMP/ftp.out")"

finish
