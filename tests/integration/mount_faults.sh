#!/bin/bash
# mount_faults.sh - a store behind tests/integration/faultsrv, the project's
# fault-injecting HTTP server on 127.0.0.1, through the real daemon:
#  1. transient failures (500 twice, 429 with Retry-After, latency, a
#     server that ignores Range) are retried or handled: exact bytes;
#  2. a server that answers 503 forever: the read fails with EIO within the
#     time bound, one log line names the URL, the status and the attempts;
#     the mount keeps serving and, once the server recovers, the same read
#     returns the right bytes (failures are not remembered);
#  3. short bodies, resets and a stalled transfer fail with EIO within the
#     bound (never wrong bytes, never a hang);
#  4. SIGTERM while a request hangs: the daemon exits promptly;
#  5. link-local targets (169.254.0.0/16) named by a reference are refused
#     unless -o allow_root=URL names them (needs an address on lo);
#  6. S3 listings (faultsrv's ListObjectsV2): keys no file system can name
#     (a control character, "..", a NUL byte, a segment over 255 bytes, an
#     empty segment) are skipped with one log line each, the rest listed;
#     a server that repeats its continuation token, or hands out new ones
#     forever, fails the listing with EIO and one line, within a bound;
#  7. an object that changes while mounted (a server naming a new ETag on
#     every answer; a file rewritten between two reads on a server that
#     honours If-Match) is EIO with one log line, never bytes of two
#     versions;
#  8. a shard refused for holding too many inner chunks (more than
#     max_decode allows to lay out) is EIO with one log line per view.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
zt_require_mkstore

WEB=$(zt_mkdir web)
cp -r "$ZARRFS_SRCDIR/examples/example.zarr" "$WEB/ex.zarr"
EXP="$ZARRFS_SRCDIR/examples/example.zarr/EXPECTED"
srv_fault_start "$WEB"
# Quick retries, short bounds: the test is about behaviour, not defaults.
FAST=(-o retries=3 -o stall_timeout=1 -o timeout=8)

# elapsed_ok DESC START_MS MAX_S: the operation ended within MAX_S seconds
# (a bound against hangs, far above what it needs).
elapsed_ok() {
  local ms=$(($(zt_now_ms) - $2))
  assert_eq "$1 (ended after ${ms} ms)" 1 "$([ "$ms" -lt $(($3 * 1000)) ] && echo 1)"
}

# ---- 1. transient failures, handled ----
for mode in 500x2 429 lat=50 norange lat=20,norange; do
  M=$(zt_mkdir m)
  if zmount "$FAULT_URL/_f/$mode/ex.zarr" "$M" "${FAST[@]}"; then
    for a in labels_utf8 matrix names_start; do
      assert_file_eq "$mode: $a/values.txt exact" "$EXP/$a.txt" "$M/$a/values.txt"
    done
    zumount "$M"
  fi
done

# ---- 2. 503 forever, then recovery ----
M=$(zt_mkdir m503)
if zmount "$FAULT_URL/ex.zarr" "$M" "${FAST[@]}"; then
  srv_fault_mode 503
  start=$(zt_now_ms)
  assert_fails_with_eio "503 forever: values.txt is EIO" "$M/names_start/values.txt"
  elapsed_ok "503 forever: bounded" "$start" 30
  if grep -E "names_start.*HTTP 503 \(after 4 attempts" "$ZT_LOG" >/dev/null; then
    pass "503: one log line with the URL, status and attempts"
  else
    fail "503: no log line naming the status and attempts:"
    show "$ZT_LOG"
  fi
  srv_fault_mode ok
  assert_file_eq "after recovery: values.txt exact" "$EXP/names_start.txt" \
    "$M/names_start/values.txt"
  assert_file_eq "the rest kept serving" "$EXP/counts.txt" "$M/counts/values.txt"
  zumount "$M"
fi

# ---- 3. short bodies, resets, stalls: EIO, bounded ----
for mode in short reset stall; do
  M=$(zt_mkdir "m$mode")
  if zmount "$FAULT_URL/ex.zarr" "$M" "${FAST[@]}"; then
    srv_fault_mode "$mode"
    start=$(zt_now_ms)
    assert_fails_with_eio "$mode: values.txt is EIO" "$M/labels_utf8/values.txt"
    elapsed_ok "$mode: bounded" "$start" 30
    srv_fault_mode ok
    assert_file_eq "$mode: exact after recovery" "$EXP/labels_utf8.txt" \
      "$M/labels_utf8/values.txt"
    zumount "$M"
  fi
done

# ---- 4. SIGTERM while a request hangs ----
M=$(zt_mkdir mterm)
if zmount "$FAULT_URL/ex.zarr" "$M" -o stall_timeout=60 -o timeout=120; then
  srv_fault_mode stallhdr
  (cat "$M/flags/values.txt" >/dev/null 2>&1 &)
  sleep 1
  start=$(zt_now_ms)
  kill -TERM "$ZT_PID"
  if zt_wait_exit "$ZT_PID" 10; then
    pass "SIGTERM during a hung request: the daemon exited"
    elapsed_ok "SIGTERM: promptly" "$start" 5
  else
    fail "SIGTERM during a hung request: still running after 10 s"
  fi
  zt_wait_unmounted "$M" 10 || true
  zt_forget "$ZT_PID"
  srv_fault_mode ok
fi

# ---- 5. link-local targets ----
LL=169.254.77.77
if ip addr add "$LL/32" dev lo 2>/dev/null; then
  trap_ll() { ip addr del "$LL/32" dev lo 2>/dev/null; }
  d=$(zt_mkdir ll)
  printf 'ABCDEFGHIJKLMNOP' >"$WEB/blob.bin"
  "$ZARRFS_BUILDDIR/tests/integration/faultsrv" --root "$WEB" --port-file "$d/port" \
    --bind "$LL" >"$d/out" 2>&1 &
  srv_track $!
  if port=$(srv_wait_port "$d/port"); then
    R="$d/refs"
    mkdir -p "$R"
    printf '{".zgroup": "{\\"zarr_format\\": 2}", "raw": ["http://%s:%s/blob.bin", 2, 4]}\n' \
      "$LL" "$port" >"$R/refs.json"
    M=$(zt_mkdir mll)
    if zmount "$R/refs.json" "$M" -o retries=0; then
      assert_fails_with_eio "link-local target refused" "$M/raw"
      if grep -q "link-local" "$ZT_LOG"; then pass "link-local: the log says why"; else
        fail "link-local: no log line:"
        show "$ZT_LOG"
      fi
      zumount "$M"
    fi
    M=$(zt_mkdir mll2)
    if zmount "$R/refs.json" "$M" -o "allow_root=http://$LL:$port/"; then
      assert_eq "link-local target read with -o allow_root=URL" CDEF "$(t cat "$M/raw")"
      zumount "$M"
    fi
  else
    fail "faultsrv on $LL did not start"
  fi
  trap_ll
else
  say "cannot add $LL to lo (not root?): part 5 skipped"
fi

# ---- 6. S3 listings ----
mkdir -p "$WEB/bkt"
cp -r "$ZARRFS_SRCDIR/examples/example.zarr" "$WEB/bkt/ex.zarr"
S3O=(-o no_sign_request -o retries=1)
{ ls "$ZARRFS_SRCDIR/examples/example.zarr"; echo info.txt; } | sort >"$ZT_TMP/s3.expected"
M=$(zt_mkdir ms3bad)
if zmount "s3://bkt/ex.zarr" "$M" -o "endpoint=$FAULT_URL/_f/s3bad" "${S3O[@]}"; then
  t ls "$M" >"$ZT_TMP/s3.got" 2>"$ZT_TMP/s3.err"
  assert_eq "odd keys: ls succeeds" 0 "$?"
  t ls "$M" >/dev/null 2>&1
  if cmp -s "$ZT_TMP/s3.expected" "$ZT_TMP/s3.got"; then
    pass "odd keys: skipped, every other entry listed"
  else
    fail "odd keys: the listing differs:"
    diff "$ZT_TMP/s3.expected" "$ZT_TMP/s3.got" | show
  fi
  assert_file_eq "odd keys: the array under them still reads" \
    "$EXP/labels_utf8.txt" "$M/labels_utf8/values.txt"
  for why in "a control character" "'..' path segment" "a NUL byte" \
    "over 255 bytes" "an empty path segment"; do
    assert_eq "odd keys: one log line for $why" 1 \
      "$(grep -F "s3://bkt/ex.zarr/: listing: skipped" "$ZT_LOG" | grep -cF -- "$why")"
  done
  zumount "$M"
fi
M=$(zt_mkdir ms3loop)
if zmount "s3://bkt/ex.zarr" "$M" -o "endpoint=$FAULT_URL/_f/s3loop" "${S3O[@]}"; then
  start=$(zt_now_ms)
  t ls "$M" >/dev/null 2>"$ZT_TMP/s3loop.err"
  rc=$?
  elapsed_ok "repeated token: bounded" "$start" 20
  if [ "$rc" -ne 0 ] && grep -q "Input/output error" "$ZT_TMP/s3loop.err"; then
    pass "repeated token: ls fails with EIO"
  else
    fail "repeated token: ls exited $rc:"
    show "$ZT_TMP/s3loop.err"
  fi
  t ls "$M" >/dev/null 2>&1
  assert_eq "repeated token: one log line" 1 \
    "$(grep -c "repeated a continuation token" "$ZT_LOG")"
  zumount "$M"
fi
# (-o timeout=2: the listing's time bound, 20 s, ends it on a slow machine
# before its 10,000 pages do)
start=$(zt_now_ms)
t "$ZARRFS_BIN" ls -o "endpoint=$FAULT_URL/_f/s3endless" "${S3O[@]}" -o timeout=2 \
  s3://bkt/ex.zarr >/dev/null 2>"$ZT_TMP/s3endless.err"
rc=$?
elapsed_ok "endless tokens: bounded" "$start" 60
assert_eq "endless tokens: ls fails" 1 "$rc"
if grep -qE "still truncated after (10000 pages|[0-9.]+ s)" "$ZT_TMP/s3endless.err"; then
  pass "endless tokens: the page or time cap says so"
else
  fail "endless tokens: no line about the page cap:"
  show "$ZT_TMP/s3endless.err"
fi

# ---- 7. objects that change while mounted ----
d=$(zt_mkdir chg)
head -c 8000000 /dev/urandom >"$WEB/blob.bin"
cp "$WEB/blob.bin" "$d/old.bin"
for mode in etagreq etag; do
  mkdir -p "$d/$mode"
  printf '{".zgroup": "{\\"zarr_format\\": 2}", "raw": ["%s/_f/%s/blob.bin", 0, 8000000]}\n' \
    "$FAULT_URL" "$mode" >"$d/$mode/refs.json"
done
M=$(zt_mkdir mchg1)
if zmount "$d/etagreq/refs.json" "$M" "${FAST[@]}" -o block_size=4096 -o max_request=16384; then
  assert_fails_with_eio "new ETag per request: EIO" "$M/raw"
  if cmp -s -n "$(wc -c <"$ZT_TMP/eio.out")" "$ZT_TMP/eio.out" "$d/old.bin"; then
    pass "new ETag per request: what was read is one version"
  else
    fail "new ETag per request: mixed bytes"
  fi
  assert_fails_with_eio "new ETag per request: EIO again" "$M/raw"
  assert_eq "new ETag per request: one log line" 1 \
    "$(grep -c "blob.bin: object changed while mounted" "$ZT_LOG")"
  zumount "$M"
fi
M=$(zt_mkdir mchg2)
if zmount "$d/etag/refs.json" "$M" "${FAST[@]}" -o block_size=4096 \
  -o max_request=16384 -o readahead=65536; then
  t dd if="$M/raw" of=/dev/null bs=4096 count=1 status=none
  head -c 8000000 /dev/urandom >"$WEB/blob.bin"
  touch -d '+1 minute' "$WEB/blob.bin"
  t dd if="$M/raw" of=/dev/null bs=4096 skip=1500 count=1 status=none \
    2>"$ZT_TMP/dd.err"
  if grep -q "Input/output error" "$ZT_TMP/dd.err"; then
    pass "rewritten (412): a read of bytes not cached is EIO"
  else
    fail "rewritten (412): a read of bytes not cached did not fail"
  fi
  assert_fails_with_eio "rewritten (412): every later read is EIO" "$M/raw"
  if cmp -s -n "$(wc -c <"$ZT_TMP/eio.out")" "$ZT_TMP/eio.out" "$d/old.bin"; then
    pass "rewritten (412): what was read is the old version only"
  else
    fail "rewritten (412): mixed bytes"
  fi
  assert_eq "rewritten (412): one log line" 1 \
    "$(grep -c "blob.bin: object changed while mounted" "$ZT_LOG")"
  zumount "$M"
fi

# ---- 8. a shard with too many inner chunks ----
S=$(zt_mkdir shard)
mkdir -p "$S/a.zarr/c"
cat >"$S/a.zarr/zarr.json" <<'EOF'
{"zarr_format":3,"node_type":"array","shape":[262144],"data_type":"uint8",
 "chunk_grid":{"name":"regular","configuration":{"chunk_shape":[262144]}},
 "chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},
 "fill_value":0,"codecs":[{"name":"sharding_indexed","configuration":{
 "chunk_shape":[1],"codecs":[{"name":"bytes"}],
 "index_codecs":[{"name":"bytes","configuration":{"endian":"little"}}],
 "index_location":"end"}}]}
EOF
head -c 4194304 /dev/zero | tr '\0' '\377' >"$S/a.zarr/c/0"
M=$(zt_mkdir mshard)
if zmount "$S/a.zarr" "$M" -o max_decode=1M; then
  for i in 1 2; do
    assert_fails_with_eio "too many inner chunks: c/0.txt is EIO ($i)" "$M/c/0.txt"
    assert_fails_with_eio "too many inner chunks: values.txt is EIO ($i)" "$M/values.txt"
  done
  assert_eq "too many inner chunks: one log line naming the shard" 1 \
    "$(grep -c ": c/0: view: the shard holds 262144 inner chunks, too many" "$ZT_LOG")"
  assert_eq "too many inner chunks: one log line for the array view" 1 \
    "$(grep -c "too many stored chunks to lay out" "$ZT_LOG")"
  zumount "$M"
fi

finish
