#!/bin/bash
# mount_azure.sh - stores in Azure Blob Storage (az://), served by Azurite,
# Microsoft's Azure Storage emulator (npm, installed by .ci/run), which
# verifies Shared Key signatures and SAS tokens. Uploads go through
# tests/integration/azput.js (Node's own crypto, not zarrfs's signing).
#  1. Shared Key (AZURE_STORAGE_ACCOUNT + AZURE_STORAGE_KEY): the example
#     store's values.txt equal EXPECTED, and the whole tree (every name,
#     every file's bytes) equals the local mount's; ranged reads (dd at an
#     offset, tail) equal the local file's bytes;
#  2. a public container read anonymously: the same tree; a private one
#     anonymously: refused at mount with the 403 and the settings to check;
#  3. a SAS token (AZURE_STORAGE_SAS_TOKEN), and a connection string
#     (AZURE_STORAGE_CONNECTION_STRING with BlobEndpoint, no -o endpoint);
#  4. a missing chunk reads as the fill value, as the local store without
#     that chunk file;
#  5. keys with spaces, '+' and '='; a directory of 1,050 blobs lists whole
#     (List Blobs pages of 1,000, NextMarker);
#  6. a wrong key is refused at mount (exit 1, 403, the settings to check)
#     and the key appears nowhere in what zarrfs says;
#  7. a blob rewritten while mounted: its next range read fails with EIO
#     (ETag, If-Match), never bytes of two versions;
#  8. a kerchunk reference file read from Azure whose targets are az://
#     URLs equals the local mount of the original.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"

srv_azurite_start
unset AZURE_STORAGE_CONNECTION_STRING AZURE_STORAGE_SAS_TOKEN
export AZURE_STORAGE_ACCOUNT=$AZ_ACCOUNT AZURE_STORAGE_KEY=$AZ_KEY
EP=(-o "endpoint=$AZ_ENDPOINT")
EX="$ZARRFS_SRCDIR/examples/example.zarr"

UP=$(zt_mkdir up)
cp -r "$EX" "$UP/example.zarr"
mkdir -p "$UP/odd dir+=x"
cp -r "$EX" "$UP/odd dir+=x/a b+c=d.zarr"
# 4: the example store without chunk 1 of labels_utf8
cp -r "$EX" "$UP/holes.zarr"
rm "$UP/holes.zarr/labels_utf8/c/1"
# 7: an object large enough that its end is another range
head -c 4194304 /dev/urandom >"$UP/big.bin"
srv_az_container priv
srv_az_container pub public
srv_az_put_tree priv "$UP"
srv_az_put_tree pub "$UP"

# ---- 1. Shared Key ----
M=$(zt_mkdir ex)
L=$(zt_mkdir exl)
zmount "$EX" "$L" || finish
if zmount "az://priv/example.zarr" "$M" "${EP[@]}"; then
  for f in "$EX"/EXPECTED/*.txt; do
    a=$(basename "$f" .txt)
    assert_file_eq "shared key: $a values.txt" "$f" "$M/$a/values.txt"
  done
  same_tree "shared key: example store" "$L" "$M"
  # ranged reads: a window of a chunk, the end of a view
  for f in labels_utf8/c/0 labels_utf8/values.txt; do
    assert_eq "shared key: bytes 3..10 of $f" \
      "$(dd if="$L/$f" bs=1 skip=3 count=8 2>/dev/null | od -An -tx1)" \
      "$(t dd if="$M/$f" bs=1 skip=3 count=8 2>/dev/null | od -An -tx1)"
    assert_eq "shared key: tail -c 5 of $f" "$(tail -c 5 "$L/$f" | od -An -tx1)" \
      "$(t tail -c 5 "$M/$f" | od -An -tx1)"
  done
  zumount "$M"
fi

# ---- 2. anonymous ----
M=$(zt_mkdir pub)
if AZURE_STORAGE_KEY='' zmount "az://pub/example.zarr" "$M" "${EP[@]}"; then
  same_tree "anonymous, public container" "$L" "$M"
  zumount "$M"
fi
M=$(zt_mkdir anon)
AZURE_STORAGE_KEY='' t "$ZARRFS_BIN" -f "${EP[@]}" az://priv/example.zarr "$M" \
  >"$ZT_TMP/anon.out" 2>&1
assert_eq "anonymous, private container: exit 1" 1 "$?"
assert_eq "... saying 403 and what to check" 1 \
  "$(grep -c 'HTTP 403.*AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN' "$ZT_TMP/anon.out")"

# ---- 3. a SAS token, a connection string ----
SAS=$(srv_az_sas)
M=$(zt_mkdir sas)
if AZURE_STORAGE_KEY='' AZURE_STORAGE_SAS_TOKEN=$SAS \
  zmount "az://priv/example.zarr" "$M" "${EP[@]}"; then
  same_tree "SAS token" "$L" "$M"
  zumount "$M"
fi
M=$(zt_mkdir cs)
CS="DefaultEndpointsProtocol=http;AccountName=$AZ_ACCOUNT;AccountKey=$AZ_KEY;BlobEndpoint=$AZ_ENDPOINT;"
if AZURE_STORAGE_ACCOUNT='' AZURE_STORAGE_KEY='' \
  AZURE_STORAGE_CONNECTION_STRING=$CS zmount "az://priv/example.zarr" "$M"; then
  assert_file_eq "connection string: counts values.txt" \
    "$EX/EXPECTED/counts.txt" "$M/counts/values.txt"
  zumount "$M"
fi
zumount "$L"

# ---- 4. a missing chunk ----
H=$(zt_mkdir holes)
L=$(zt_mkdir holesl)
if zmount "$UP/holes.zarr" "$L" && zmount "az://priv/holes.zarr" "$H" "${EP[@]}"; then
  assert_file_eq "a missing chunk: labels_utf8 values.txt as the local store's" \
    "$L/labels_utf8/values.txt" "$H/labels_utf8/values.txt"
  assert_eq "... and c/1 is not listed" 0 "$(t ls "$H/labels_utf8/c" | grep -cx 1)"
  zumount "$H"
  zumount "$L"
fi

# ---- 5. odd keys, long listings ----
M=$(zt_mkdir odd)
if zmount "az://priv/odd dir+=x/a b+c=d.zarr" "$M" "${EP[@]}"; then
  assert_file_eq "a store under 'odd dir+=x/a b+c=d.zarr'" \
    "$EX/EXPECTED/labels_utf8.txt" "$M/labels_utf8/values.txt"
  zumount "$M"
fi
MANY=$(zt_mkdir many)
mkdir -p "$MANY/many/d"
cp "$EX/zarr.json" "$MANY/many/zarr.json"
for i in $(seq 1 1050); do : >"$MANY/many/d/f$i"; done
srv_az_put_tree priv "$MANY"
M=$(zt_mkdir manym)
if zmount "az://priv/many" "$M" "${EP[@]}"; then
  assert_eq "1,050 blobs in one directory: all listed" 1050 "$(t ls "$M/d" | wc -l)"
  assert_eq "... the last of them too" 1 "$(t ls "$M/d" | grep -cx f1050)"
  zumount "$M"
fi

# ---- 6. a wrong key ----
M=$(zt_mkdir wrong)
WRONG=$(printf 'WrongKey%.0s' 1 2 3 4 | base64 -w0)
AZURE_STORAGE_KEY=$WRONG t "$ZARRFS_BIN" -f "${EP[@]}" az://priv/example.zarr \
  "$M" >"$ZT_TMP/wrong.out" 2>&1
assert_eq "a wrong key: exit 1" 1 "$?"
assert_eq "... saying 403 and what to check" 1 \
  "$(grep -c 'HTTP 403 (Authorization\(Failure\)\?\|AuthenticationFailed).*check the Azure credentials' "$ZT_TMP/wrong.out")"
assert_eq "... and never the key" 0 "$(grep -c "$WRONG" "$ZT_TMP/wrong.out")"
[ "$(grep -c 'HTTP 403' "$ZT_TMP/wrong.out")" = 1 ] || show "$ZT_TMP/wrong.out"

# ---- 7. a blob rewritten while mounted ----
C=$(zt_mkdir chg)
mkdir -p "$C/chg"
cp "$EX/zarr.json" "$C/chg/zarr.json"
cp "$UP/big.bin" "$C/chg/big.bin"
srv_az_put_tree priv "$C"
M=$(zt_mkdir chgm)
if zmount "az://priv/chg" "$M" "${EP[@]}" -o readahead=0; then
  t head -c 16 "$M/big.bin" >"$ZT_TMP/head.out"
  assert_eq "a blob: its first bytes" "$(head -c 16 "$UP/big.bin" | od -An -tx1)" \
    "$(od -An -tx1 <"$ZT_TMP/head.out")"
  head -c 4194304 /dev/urandom >"$ZT_TMP/big2.bin"
  srv_az_js put "$AZ_ENDPOINT" "$AZ_ACCOUNT" "$AZ_KEY" priv chg/big.bin "$ZT_TMP/big2.bin"
  assert_fails_with_eio "rewritten while mounted: reading its end fails" "$M/big.bin"
  assert_eq "... with one log line saying so" 1 \
    "$(grep -c 'object changed while mounted' "$ZT_LOG")"
  zumount "$M"
fi

# ---- 8. kerchunk: references read from Azure, targets az:// ----
FIX=${ZARRFS_FIXTURES:-$ZARRFS_SRCDIR/../shared/fixtures}
K="$FIX/kerchunk/refs"
if [ -f "$K/refs_v1.json" ] && command -v jq >/dev/null 2>&1; then
  KUP=$(zt_mkdir kup)
  cp "$K"/* "$KUP/"
  # Targets rewritten: "blob.bin" -> "az://kerchunk/blob.bin".
  jq '.refs |= with_entries(if (.value | type) == "array" and
        (.value[0] | test("^[^/:{}]+$")) then .value[0] |= "az://kerchunk/" + .
        else . end)' "$K/refs_v1.json" >"$KUP/refs_az.json"
  srv_az_container kerchunk
  srv_az_put_tree kerchunk "$KUP"
  RL=$(zt_mkdir rl)
  R=$(zt_mkdir rr)
  if zmount "$K/refs_v1.json" "$RL"; then
    if zmount "az://kerchunk/refs_az.json" "$R" "${EP[@]}"; then
      same_tree "kerchunk from Azure, az:// targets" "$RL" "$R"
      zumount "$R"
    fi
    zumount "$RL"
  fi
else
  zt_skip_part "kerchunk fixtures or jq missing: part 8"
fi

finish
