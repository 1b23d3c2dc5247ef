#!/bin/bash
# mount_hostile_remote.sh - servers and repositories that try to send the
# user's credentials elsewhere, lead reads outside what the user allowed,
# or slip in bytes of another version (issue 32), through the real daemon
# and tests/integration/faultsrv: A is the server named, B one elsewhere
# (both log whether a request carried credentials).
#  1. credentials: an Icechunk container whose S3 endpoint_url the user did
#     not configure is refused (EIO, the log names -o container_endpoint)
#     and its server gets no request; -o container_endpoint=URL, or the
#     endpoint configured (AWS_ENDPOINT_URL), let it read. An S3 store whose
#     server redirects to another host: that host gets neither the
#     signature nor the session token, the store's host gets both.
#  2. redirects: an Icechunk virtual chunk under an allowed prefix whose
#     server redirects outside every allowed prefix is EIO and the target
#     gets no request; a redirect that stays under the prefix reads; a
#     kerchunk target may be redirected anywhere but to a link-local
#     address nobody named (needs an address on lo).
#  3. versions without validators: an object that changes between
#     requests on a server with neither ETag nor Last-Modified reads as
#     one version (never two halves); an object whose ETag is known, later
#     answered by a 200 with no ETag, no length and an endless body, is
#     EIO and its other bytes never show; an answer with Content-Encoding:
#     gzip is EIO and none of its bytes is read; an Icechunk chunk recorded
#     with last_modified on a server naming none is EIO, said once.
#  4. listings: an S3 server handing out 1,000 new keys and a new
#     continuation token on every page fails `zarrfs ls` with one line
#     about the bound, in bounded time and memory; one whose pages come
#     slowly fails after ten times -o timeout.
#  5. a server that sends more body than its Content-Length (read as the
#     start of the next answer) still reads exact; a manifest named by an
#     http:// URL reads, names no local file, obeys -o remote_targets=no;
#     -o target_root=file:///DIR allows DIR, file://HOST/ is refused.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"

WEB=$(zt_mkdir web)
OTHER=$(zt_mkdir other)
MNT=$(zt_mkdir mnt)
srv_fault_start "$OTHER" --log-auth
B_URL=$FAULT_URL B_LOG=$FAULT_LOG B_HP=${FAULT_URL#http://}
srv_fault_start "$WEB" --log-auth
A_URL=$FAULT_URL A_LOG=$FAULT_LOG
export AWS_SHARED_CREDENTIALS_FILE=/nonexistent AWS_CONFIG_FILE=/nonexistent
unset AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_PROFILE AWS_SESSION_TOKEN
export AWS_ACCESS_KEY_ID=AKIDHOSTILETEST AWS_SECRET_ACCESS_KEY=secret
ZL() { t "$ZARRFS_BIN" "$@"; }

# i32 N: the 4 bytes of N as a little-endian int32.
i32() { printf "\\x$(printf %02x "$1")\\x00\\x00\\x00"; }
# b_requests PATTERN: requests B logged whose line holds PATTERN.
b_requests() { grep -cF -- "$1" "$B_LOG"; }
# logged DESC PATTERN: a line of the last daemon's log holds PATTERN.
logged() {
  if grep -qF -- "$2" "$ZT_LOG"; then pass "$1"; else
    fail "$1: no log line with '$2':"
    show "$ZT_LOG"
  fi
}
# refs DIR JSON: a kerchunk reference file DIR/refs.json.
refs() { mkdir -p "$1" && printf '%s\n' "$2" >"$1/refs.json"; }

# vrepo OUT CONTAINERS CHUNKS: a spec 2 Icechunk repository with array v
# of int32 chunks, one per virtual reference (tests/writers: virtual).
HAVE_WRITER=1
/usr/bin/python3 -c 'import flatbuffers' 2>/dev/null || HAVE_WRITER=0
vrepo() {
  /usr/bin/python3 "$ZARRFS_SRCDIR/tests/writers/icechunk_writer.py" virtual "$1" \
    "$2" "$3" --spec 2 >/dev/null
}

mkdir -p "$WEB/testbucket"
i32 42 >"$WEB/testbucket/chunk"
i32 42 >"$WEB/vchunk"
i32 99 >"$OTHER/vchunk"
i32 42 >"$ZT_TMP/42"

# ---- 1. credentials ----
if [ "$HAVE_WRITER" = 1 ]; then
  CT='{"s3://testbucket/": {"s3_compatible": {"endpoint_url": "'$B_URL'", "region": "us-east-1"}}}'
  vrepo "$ZT_TMP/ep" "$CT" '[{"location": "s3://testbucket/chunk", "length": 4}]'
  cp -r "$WEB/testbucket" "$OTHER/"
  if zmount "$ZT_TMP/ep" "$MNT" -o target_root=s3://testbucket/ -o retries=0; then
    assert_fails_with_eio "a container's endpoint nobody configured: EIO" "$MNT/v/c/0"
    logged "the log names the option that allows it" "-o container_endpoint=$B_URL"
    zumount "$MNT"
  fi
  assert_eq "the repository's endpoint got no request (no credentials)" 0 \
    "$(b_requests /testbucket/chunk)"
  if zmount "$ZT_TMP/ep" "$MNT" -o target_root=s3://testbucket/ \
    -o "container_endpoint=$B_URL/"; then
    assert_file_eq "-o container_endpoint=URL: the chunk reads" "$ZT_TMP/42" "$MNT/v/c/0"
    zumount "$MNT"
  fi
  assert_eq "allowed: the credentials went there" 1 \
    "$(grep -F /testbucket/chunk "$B_LOG" | grep -c 'auth=yes$')"
  if AWS_ENDPOINT_URL=$B_URL zmount "$ZT_TMP/ep" "$MNT" -o target_root=s3://testbucket/; then
    assert_file_eq "the endpoint the user configured: the chunk reads" "$ZT_TMP/42" "$MNT/v/c/0"
    zumount "$MNT"
  fi
else
  zt_skip_part "python3-flatbuffers missing: Icechunk repositories"
fi
mkdir -p "$WEB/bkt" "$OTHER/bkt"
cp -r "$ZARRFS_SRCDIR/examples/example.zarr" "$WEB/bkt/ex.zarr"
cp -r "$ZARRFS_SRCDIR/examples/example.zarr" "$OTHER/bkt/ex.zarr"
EXP="$ZARRFS_SRCDIR/examples/example.zarr/EXPECTED"
: >"$B_LOG"
if AWS_SESSION_TOKEN=tokentest zmount s3://bkt/ex.zarr "$MNT" \
  -o "endpoint=$A_URL/_f/redir=$B_HP"; then
  assert_file_eq "an S3 store redirected to another host reads" \
    "$EXP/labels_utf8.txt" "$MNT/labels_utf8/values.txt"
  zumount "$MNT"
fi
assert_eq "the other host got no signature and no token" 0 "$(grep -c 'auth=yes$' "$B_LOG")"
assert_eq "the store's host got them" 0 \
  "$(grep -F /_f/redir= "$A_LOG" | grep -c 'auth=no$')"

# ---- 2. redirects ----
if [ "$HAVE_WRITER" = 1 ]; then
  CT='{"'$A_URL'/": {"http": {}}}'
  vrepo "$ZT_TMP/rd" "$CT" '[{"location": "'$A_URL'/_f/redir='$B_HP'/vchunk", "length": 4},
    {"location": "'$A_URL'/_f/redir=./vchunk", "length": 4}]'
  if zmount "$ZT_TMP/rd" "$MNT" -o "target_root=$A_URL/" -o retries=0; then
    assert_fails_with_eio "a virtual chunk redirected outside the allowed prefix: EIO" \
      "$MNT/v/c/0"
    logged "the log says where it was redirected" "redirected to $B_URL/vchunk: refused"
    assert_file_eq "a redirect under the allowed prefix reads" "$ZT_TMP/42" "$MNT/v/c/1"
    zumount "$MNT"
  fi
  assert_eq "the target outside got no request" 0 "$(b_requests /vchunk)"
fi
refs "$ZT_TMP/kr" '{".zgroup": "{\"zarr_format\": 2}", "raw": ["'$A_URL'/_f/redir='$B_HP'/vchunk", 0, 4]}'
i32 99 >"$ZT_TMP/99"
if zmount "$ZT_TMP/kr/refs.json" "$MNT"; then
  assert_file_eq "a kerchunk target may be redirected to another host" "$ZT_TMP/99" "$MNT/raw"
  zumount "$MNT"
fi
LL=169.254.77.78
if ip addr add "$LL/32" dev lo 2>/dev/null; then
  d=$(zt_mkdir ll)
  "$ZARRFS_BUILDDIR/tests/integration/faultsrv" --root "$OTHER" --port-file "$d/port" \
    --bind "$LL" >"$d/out" 2>&1 &
  srv_track $!
  if port=$(srv_wait_port "$d/port"); then
    refs "$d/r" '{".zgroup": "{\"zarr_format\": 2}", "raw": ["'$A_URL'/_f/redir='$LL:$port'/vchunk", 0, 4]}'
    if zmount "$d/r/refs.json" "$MNT" -o retries=0; then
      assert_fails_with_eio "a target redirected to a link-local address: EIO" "$MNT/raw"
      logged "the log says why" "link-local"
      zumount "$MNT"
    fi
    if zmount "$d/r/refs.json" "$MNT" -o "target_root=http://$LL:$port/"; then
      assert_file_eq "... read when -o target_root names it" "$ZT_TMP/99" "$MNT/raw"
      zumount "$MNT"
    fi
  fi
  ip addr del "$LL/32" dev lo 2>/dev/null
else
  zt_skip_part "cannot add $LL to lo (not root?): link-local redirects"
fi

# ---- 3. versions without validators ----
head -c 65536 /dev/urandom >"$WEB/flip.bin"
head -c 65536 /dev/urandom >"$WEB/flip.bin.alt"
head -c 8192 /dev/urandom >"$WEB/endl.bin"
head -c 8192 /dev/urandom >"$WEB/endl.bin.alt"
printf 'ABCDEFGHIJKLMNOP' >"$WEB/blob"
refs "$ZT_TMP/ver" '{".zgroup": "{\"zarr_format\": 2}",
 "flip": ["'$A_URL'/_f/novalid,flip/flip.bin", 0, 65536],
 "e0": ["'$A_URL'/_f/etag,endless,flip/endl.bin", 0, 4096],
 "e1": ["'$A_URL'/_f/etag,endless,flip/endl.bin", 4096, 4096],
 "gz": ["'$A_URL'/_f/gzip/blob", 0, 16]}'
if zmount "$ZT_TMP/ver/refs.json" "$MNT" -o block_size=4096 -o max_request=8192 -o retries=1; then
  for i in 1 2; do
    t cat "$MNT/flip" >"$ZT_TMP/flip.out"
    if cmp -s "$ZT_TMP/flip.out" "$WEB/flip.bin" || cmp -s "$ZT_TMP/flip.out" "$WEB/flip.bin.alt"; then
      pass "no validator, content changing between requests: one version ($i)"
    else
      fail "no validator, content changing between requests: bytes of two versions ($i)"
    fi
  done
  head -c 4096 "$WEB/endl.bin" >"$ZT_TMP/e0"
  assert_file_eq "an object pinned by its ETag reads" "$ZT_TMP/e0" "$MNT/e0"
  assert_fails_with_eio "then a 200 with no ETag, no length, endless: EIO" "$MNT/e1"
  if [ -s "$ZT_TMP/eio.out" ] && ! cmp -s -n "$(wc -c <"$ZT_TMP/eio.out")" \
    "$ZT_TMP/eio.out" <(tail -c 4096 "$WEB/endl.bin"); then
    fail "... bytes of the other version were read"
  else
    pass "... no byte of the other version was read"
  fi
  assert_fails_with_eio "Content-Encoding: gzip: EIO" "$MNT/gz"
  assert_eq "... none of its bytes read" 0 "$(wc -c <"$ZT_TMP/eio.out")"
  logged "... the log says why" "Content-Encoding: gzip"
  zumount "$MNT"
fi
if [ "$HAVE_WRITER" = 1 ]; then
  CT='{"'$A_URL'/": {"http": {}}}'
  vrepo "$ZT_TMP/lm" "$CT" '[{"location": "'$A_URL'/_f/novalid/vchunk", "length": 4, "last_modified": 4000000000}]'
  if zmount "$ZT_TMP/lm" "$MNT" -o "target_root=$A_URL/"; then
    assert_fails_with_eio "last_modified on a server naming none: EIO" "$MNT/v/c/0"
    logged "... the log says the checksum cannot be checked" "cannot be checked"
    zumount "$MNT"
  fi
fi

# ---- 4. listings ----
S3O=(-o no_sign_request -o retries=1)
start=$(zt_now_ms)
if [ -x /usr/bin/time ]; then
  /usr/bin/time -f %M -o "$ZT_TMP/rss" timeout 120 "$ZARRFS_BIN" ls \
    -o "endpoint=$A_URL/_f/s3many\\,s3endless" "${S3O[@]}" s3://bkt/ex.zarr \
    >/dev/null 2>"$ZT_TMP/many.err"
  rss=$(tail -n 1 "$ZT_TMP/rss")
  assert_eq "new keys forever: memory bounded (${rss} KB)" 1 \
    "$([ "${rss:-0}" -lt 400000 ] && echo 1)"
else
  timeout 120 "$ZARRFS_BIN" ls -o "endpoint=$A_URL/_f/s3many\\,s3endless" "${S3O[@]}" \
    s3://bkt/ex.zarr >/dev/null 2>"$ZT_TMP/many.err"
fi
ms=$(($(zt_now_ms) - start))
assert_eq "new keys forever: ls ends (${ms} ms)" 1 "$([ "$ms" -lt 100000 ] && echo 1)"
if grep -q "listing: more than 2000000 entries or 64 MiB" "$ZT_TMP/many.err"; then
  pass "new keys forever: one line about the bound"
else
  fail "new keys forever: no line about the bound:"
  show "$ZT_TMP/many.err"
fi
ZL ls -o "endpoint=$A_URL/_f/lat=200\\,s3endless" -o timeout=1 "${S3O[@]}" \
  s3://bkt/ex.zarr >/dev/null 2>"$ZT_TMP/slow.err"
if grep -q "still truncated after .* at most ten times -o timeout" "$ZT_TMP/slow.err"; then
  pass "slow pages forever: the listing ends after ten times -o timeout"
else
  fail "slow pages forever: no line about the time bound:"
  show "$ZT_TMP/slow.err"
fi

# ---- 5. more body than Content-Length; manifests by URL; file:// roots ----
refs "$ZT_TMP/ex" '{".zgroup": "{\"zarr_format\": 2}",
 "a": ["'$A_URL'/_f/excess/blob", 0, 16], "b": ["'$A_URL'/_f/excess/flip.bin", 0, 65536]}'
cat "$WEB/blob" "$WEB/flip.bin" >"$ZT_TMP/ex.exp"
ZL cat "$ZT_TMP/ex/refs.json" a b >"$ZT_TMP/ex.got" 2>"$ZT_TMP/ex.err"
assert_file_eq "more body than Content-Length: what follows reads exact" \
  "$ZT_TMP/ex.exp" "$ZT_TMP/ex.got" || show "$ZT_TMP/ex.err"
MS=$(zt_mkdir mstore)
mkdir -p "$MS/m" "$WEB/man"
echo '{"zarr_format": 3, "node_type": "group", "attributes": {}}' >"$MS/zarr.json"
cat >"$MS/m/zarr.json" <<EOF
{"zarr_format": 3, "node_type": "array", "shape": [8], "data_type": "uint8",
 "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
 "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
 "fill_value": 0, "codecs": [{"name": "bytes"}],
 "storage_transformers": [{"name": "chunk-manifest-json", "configuration": {"manifest": "$A_URL/man/manifest.json"}}]}
EOF
printf 'LOCALBYTES' >"$MS/local.bin"
printf '{"0": {"path": "../blob", "offset": 4, "length": 4}, "1": {"path": "%s", "offset": 0, "length": 4}}\n' \
  "$MS/local.bin" >"$WEB/man/manifest.json"
if zmount "$MS" "$MNT"; then
  assert_output_eq "a manifest named by an http:// URL: its relative target reads" \
    "EFGH" cat "$MNT/m/c/0"
  assert_fails_with_eio "... it names no local file" "$MNT/m/c/1"
  logged "... the log says why" "a remote reference cannot read local files"
  zumount "$MNT"
fi
if zmount "$MS" "$MNT" -o remote_targets=no; then
  assert_fails_with_eio "... -o remote_targets=no forbids it" "$MNT/m/c/0"
  zumount "$MNT"
fi
OUT=$(zt_mkdir outside)
printf 'ROOTBYTES' >"$OUT/data.bin"
refs "$ZT_TMP/fr" '{".zgroup": "{\"zarr_format\": 2}", "raw": ["'$OUT'/data.bin", 4, 5]}'
if zmount "$ZT_TMP/fr/refs.json" "$MNT" -o "target_root=file://$OUT"; then
  assert_output_eq "-o target_root=file:///DIR allows DIR" "BYTES" cat "$MNT/raw"
  zumount "$MNT"
fi
ZL ls -o target_root=file://host/x "$ZT_TMP/fr/refs.json" >/dev/null 2>"$ZT_TMP/fh.err"
if grep -q "a directory (DIR or file:///DIR) is expected" "$ZT_TMP/fh.err"; then
  pass "-o target_root=file://HOST/...: refused, saying a directory is expected"
else
  fail "-o target_root=file://HOST/...: no clear refusal:"
  show "$ZT_TMP/fh.err"
fi

finish
