#!/bin/bash
# mount_s3.sh - stores in S3, served by a real S3 server on 127.0.0.1 that
# verifies SigV4 signatures (@20minutes/s3rver 5.0.0 on Node, installed by
# .ci/run):
#  1. the example store: every values.txt equals EXPECTED; directories list
#     through ListObjectsV2 exactly as the local mount lists them;
#  2. stores the tests make (a sharded V3 store, zarr-python 2's nested
#     groups) and, when there, a third-party fixture (zarr-python V3,
#     sharded): the whole tree of the local mount (every name, every
#     file's bytes) equals the S3 mount's;
#  3. keys with spaces, '+' and '=' work (signed and percent-encoded); a
#     0-byte object reads as empty;
#  4. a wrong secret is refused at mount (403 SignatureDoesNotMatch) and the
#     secret appears nowhere in what zarrfs says;
#  5. kerchunk (the tests' own references, the third-party ones when
#     there): a local reference file whose targets are rewritten to
#     s3:// URLs, and a reference file read from S3 itself, equal the local
#     mount of the original.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
command -v node >/dev/null 2>&1 || srv_need node
command -v jq >/dev/null 2>&1 || srv_need jq
zt_require_mkstore

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
# Stores the tests make: a sharded V3 store (zarrfs-mkstore), zarr-python
# 2's nested groups with "/" keys and consolidated metadata
# (tests/writers/own_fixtures.py); and one third-party store (zarr-python
# V3, sharded, consolidated) when the fixtures are there. mount_http.sh
# compares all of them by path.
FUP=$(zt_mkdir fup)
S3_STORES=
mkdir -p "$FUP/own"
"$ZARRFS_MKSTORE" bigstrings "$FUP/own/sharded.zarr" --count 300 --chunk 100 \
  --shard 25 --missing 3 >/dev/null 2>"$ZT_TMP/mkstore.err" ||
  zt_hard_error "mkstore bigstrings --shard failed: $(cat "$ZT_TMP/mkstore.err")"
S3_STORES="own/sharded.zarr"
if zt_own_fixtures; then
  cp -r "$OWN/zarr-python-v2/v2_python.zarr" "$FUP/own/v2_python.zarr"
  S3_STORES="$S3_STORES own/v2_python.zarr"
else
  zt_skip_part "own fixtures not made ($(tail -1 "$ZT_TMP/own-fixtures.log")): part 2's zarr-python store"
fi
if zt_third_party_fixtures && [ -d "$FIX/zarr-python-v3" ]; then
  mkdir -p "$FUP/zarr-python-v3"
  cp -r "$FIX/zarr-python-v3/v3_zarr_python_fixtures.zarr" "$FUP/zarr-python-v3/"
  S3_STORES="$S3_STORES zarr-python-v3/v3_zarr_python_fixtures.zarr"
fi
srv_s3_put_tree fix "$FUP"
for store in $S3_STORES; do
  L=$(zt_mkdir fl)
  R=$(zt_mkdir fr)
  zmount "$FUP/$store" "$L" || continue
  if zmount "s3://fix/$store" "$R" "${EP[@]}"; then
    same_tree "$store" "$L" "$R"
    zumount "$R"
  fi
  zumount "$L"
done

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
# kerchunk_s3 BUCKET K FILE...: each reference file FILE of directory K,
# with K uploaded to bucket BUCKET.
kerchunk_s3() {
  local B=$1 K=$2 KUP KL ref b L R U
  shift 2
  KUP=$(zt_mkdir kup)
  cp "$K"/* "$KUP/"
  srv_s3_put_tree "$B" "$KUP"
  KL=$(zt_mkdir kl)
  for ref in "$@"; do
    ref=$K/$ref
    b=$(basename "$ref")
    # Targets rewritten: "blob.bin" -> "s3://BUCKET/blob.bin".
    jq --arg b "$B" 'def s3: if test("^[^/:{}]+$") then "s3://" + $b + "/" + . else . end;
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
    if zmount "s3://$B/$b" "$U" "${EP[@]}"; then
      same_tree "$b read from S3" "$L" "$U"
      zumount "$U"
    fi
    zumount "$L"
  done
}
if zt_own_fixtures; then
  kerchunk_s3 ownrefs "$OWN/kerchunk/refs" v0.json v1.json v1_plain.json whole.json
else
  zt_skip_part "own fixtures not made ($(tail -1 "$ZT_TMP/own-fixtures.log")): part 5"
fi
if zt_third_party_fixtures && [ -d "$FIX/kerchunk/refs" ]; then
  (cd "$FIX/kerchunk/refs" && ls refs_v*.json) >"$ZT_TMP/krefs"
  mapfile -t krefs <"$ZT_TMP/krefs"
  kerchunk_s3 kerchunk "$FIX/kerchunk/refs" "${krefs[@]}"
fi

finish
