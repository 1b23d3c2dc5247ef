#!/bin/bash
# mount_s3.sh - stores in S3, served by a real S3 server on 127.0.0.1 that
# verifies SigV4 signatures (@20minutes/s3rver 5.0.0 on Node, installed by
# .ci/run):
#  1. the example store: every values.txt equals EXPECTED; directories list
#     through ListObjectsV2 exactly as the local mount lists them;
#  2. a conformance fixture (zarr-python V3, sharded): the whole
#     tree of the local mount (every name, every file's bytes) equals the
#     S3 mount's;
#  3. keys with spaces, '+' and '=' work (signed and percent-encoded); a
#     0-byte object reads as empty;
#  4. a wrong secret is refused at mount (403 SignatureDoesNotMatch) and the
#     secret appears nowhere in what zarrfs says;
#  5. kerchunk: a local reference file whose targets are rewritten to
#     s3:// URLs, and a reference file read from S3 itself, equal the local
#     mount of the original.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
command -v node >/dev/null 2>&1 || srv_need node
command -v jq >/dev/null 2>&1 || srv_need jq

FIX=${ZARRFS_FIXTURES:-$ZARRFS_SRCDIR/../shared/fixtures}
srv_s3_start "$ZT_TMP/s3data"
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL AWS_REGION
export HOME="$ZT_TMP" # no ~/.aws of the machine's user
EP=(-o "endpoint=$S3_ENDPOINT")

UP=$(zt_mkdir up)
cp -r "$ZARRFS_SRCDIR/examples/example.zarr" "$UP/example.zarr"
mkdir -p "$UP/odd dir+=x"
cp -r "$ZARRFS_SRCDIR/examples/example.zarr" "$UP/odd dir+=x/a b+c=d.zarr"
: >"$UP/odd dir+=x/a b+c=d.zarr/empty.bin" # a 0-byte object
srv_s3_put_tree bkt "$UP"

# ---- 1. the example store ----
M=$(zt_mkdir ex)
L=$(zt_mkdir exl)
if zmount "s3://bkt/example.zarr" "$M" "${EP[@]}"; then
  for f in "$ZARRFS_SRCDIR"/examples/example.zarr/EXPECTED/*.txt; do
    a=$(basename "$f" .txt)
    assert_file_eq "example $a values.txt from S3" "$f" "$M/$a/values.txt"
  done
  if zmount "$ZARRFS_SRCDIR/examples/example.zarr" "$L"; then
    same_tree "example store" "$L" "$M"
    zumount "$L"
  fi
  zumount "$M"
fi

# ---- 2. the fixtures ----
if [ -d "$FIX/zarrita" ]; then
  FUP=$(zt_mkdir fup)
  # One store (sharded, consolidated); mount_http.sh compares all of them.
  S3_STORES="zarr-python-v3/v3_zarr_python_fixtures.zarr"
  for store in $S3_STORES; do
    mkdir -p "$FUP/$(dirname "$store")"
    cp -r "$FIX/$store" "$FUP/$store"
  done
  srv_s3_put_tree fix "$FUP"
  for store in $S3_STORES; do
    L=$(zt_mkdir fl)
    R=$(zt_mkdir fr)
    zmount "$FIX/$store" "$L" || continue
    if zmount "s3://fix/$store" "$R" "${EP[@]}"; then
      same_tree "$store" "$L" "$R"
      zumount "$R"
    fi
    zumount "$L"
  done
else
  zt_skip_part "fixtures not found at $FIX: part 2"
fi

# ---- 3. keys with spaces, + and = ----
M=$(zt_mkdir odd)
if zmount "s3://bkt/odd dir+=x/a b+c=d.zarr" "$M" "${EP[@]}"; then
  assert_file_eq "a store under 'odd dir+=x/a b+c=d.zarr'" \
    "$ZARRFS_SRCDIR/examples/example.zarr/EXPECTED/labels_utf8.txt" \
    "$M/labels_utf8/values.txt"
  assert_eq "a 0-byte object: size 0" 0 "$(stat -c %s "$M/empty.bin")"
  if t cat "$M/empty.bin" >"$ZT_TMP/empty.out"; then
    assert_eq "... reads as nothing" 0 "$(wc -c <"$ZT_TMP/empty.out")"
  else
    fail "a 0-byte object: cat failed"
  fi
  zumount "$M"
fi

# ---- 4. a wrong secret ----
M=$(zt_mkdir wrong)
AWS_SECRET_ACCESS_KEY=WrongSecret123 "$ZARRFS_BIN" -f "${EP[@]}" \
  s3://bkt/example.zarr "$M" >"$ZT_TMP/wrong.out" 2>&1
st=$?
assert_eq "a wrong secret: exit 1" 1 "$st"
assert_eq "... saying 403 SignatureDoesNotMatch" 1 \
  "$(grep -c '403 (SignatureDoesNotMatch)' "$ZT_TMP/wrong.out")"
assert_eq "... and never the secret" 0 \
  "$(grep -c 'WrongSecret123' "$ZT_TMP/wrong.out")"

# ---- 5. kerchunk with S3 targets, and from S3 ----
K="$FIX/kerchunk/refs"
if [ -d "$K" ]; then
  KUP=$(zt_mkdir kup)
  cp "$K"/* "$KUP/"
  srv_s3_put_tree kerchunk "$KUP"
  KL=$(zt_mkdir kl)
  for ref in "$K"/refs_v*.json; do
    b=$(basename "$ref")
    # Targets rewritten: "blob.bin" -> "s3://kerchunk/blob.bin".
    jq 'def s3: if test("^[^/:{}]+$") then "s3://kerchunk/" + . else . end;
        (if .refs then .refs else . end) |= with_entries(
          if (.value | type) == "array" and (.value[0] | type) == "string"
          then .value[0] |= s3 else . end)
        | if .templates then .templates |= map_values(s3) else . end
        | if .gen then .gen |= map(if .url then .url |= s3 else . end)
          else . end' \
      "$ref" >"$KL/$b" || { fail "jq rewrite of $b"; continue; }
    L=$(zt_mkdir rl)
    R=$(zt_mkdir rr)
    U=$(zt_mkdir ru)
    zmount "$ref" "$L" || continue
    if zmount "$KL/$b" "$R" "${EP[@]}"; then
      same_tree "$b with s3:// targets" "$L" "$R"
      zumount "$R"
    fi
    if zmount "s3://kerchunk/$b" "$U" "${EP[@]}"; then
      same_tree "$b read from S3" "$L" "$U"
      zumount "$U"
    fi
    zumount "$L"
  done
else
  zt_skip_part "kerchunk fixtures not found at $K: part 5"
fi

finish
