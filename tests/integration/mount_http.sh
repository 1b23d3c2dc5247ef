#!/bin/bash
# mount_http.sh - stores over HTTP, served by a real nginx on 127.0.0.1
# (range requests on; its access log counts requests and bytes):
#  1. the example store: every values.txt equals EXPECTED, chunk views and
#     raw chunks of named keys equal the local mount's;
#  2. the stores the tests make (tests/writers/own_fixtures.py: zarr-python
#     2 and xarray) and, when there, the
#     third-party fixtures (zarrita, zarr-python V2 and V3): every
#     values.txt and metadata file of the local mount is byte-identical over
#     HTTP, named by path (plain HTTP cannot list; mount_s3.sh compares
#     whole trees, raw chunks and chunk views included);
#  3. partial decoding over the network: stat + tail -c 200 of the view of
#     a 64 MiB uncompressed zarrs.vlen chunk fetch under 1 MiB in at most 3
#     GETs of the chunk;
#  4. ls -l of the directory of a 10,000-chunk array makes no GET of a
#     chunk; a chunk the server answers 404 for is the fill value;
#  5. a missing store, and a link-local source named explicitly.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
zt_require_mkstore
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || srv_need nginx

WEB=$(zt_mkdir web)
cp -r "$ZARRFS_SRCDIR/examples/example.zarr" "$WEB/example.zarr"
"$ZARRFS_MKSTORE" bigstrings "$WEB/big.zarr" --count 1000 --chunk 1000 \
  --strlen 65536 --data none --plain "$ZT_TMP/big.txt" >/dev/null ||
  zt_hard_error "mkstore bigstrings failed"
"$ZARRFS_MKSTORE" numeric "$WEB/wide.zarr" --shape 10000 --chunk 1 \
  --dtype int32 --missing 7 --plain "$ZT_TMP/wide.txt" >/dev/null ||
  zt_hard_error "mkstore numeric failed"
# The stores the tests make, and the third-party fixtures when there.
STORES=
if zt_own_fixtures; then
  ln -s "$OWN" "$WEB/own"
  STORES="own/zarr-python-v2/v2_python.zarr"
  [ -d "$OWN/xarray/xarray_v2.zarr" ] && STORES="$STORES own/xarray/xarray_v2.zarr"
else
  zt_skip_part "own fixtures not made ($(tail -1 "$ZT_TMP/own-fixtures.log")): part 2"
fi
if zt_third_party_fixtures && [ -d "$FIX/zarrita" ]; then
  ln -s "$FIX" "$WEB/fixtures"
  STORES="$STORES fixtures/zarrita/v3_zarrita.zarr
    fixtures/zarr-python-v2/v2_python.zarr
    fixtures/zarr-python-v3/v3_zarr_python_fixtures.zarr"
fi
srv_nginx_start "$WEB"

# ---- 1. the example store ----
M=$(zt_mkdir ex)
if zmount "$NGINX_URL/example.zarr" "$M"; then
  for f in "$ZARRFS_SRCDIR"/examples/example.zarr/EXPECTED/*.txt; do
    a=$(basename "$f" .txt)
    assert_file_eq "example $a values.txt over HTTP" "$f" "$M/$a/values.txt"
  done
  L=$(zt_mkdir exl)
  if zmount "$ZARRFS_SRCDIR/examples/example.zarr" "$L"; then
    for k in labels_utf8/c/0 labels_utf8/c/0.txt counts/zarr.json; do
      assert_file_eq "example $k over HTTP" "$L/$k" "$M/$k"
    done
    zumount "$L"
  fi
  assert_eq "stat of a chunk directory implied by the key encoding" \
    directory "$(stat -c %F "$M/labels_utf8/c" 2>&1)"
  assert_eq "a name the server does not have" 1 \
    "$(t stat "$M/labels_utf8/nothere" >/dev/null 2>&1; echo $?)"
  zumount "$M"
fi

# ---- 2. the conformance fixtures, local mount against HTTP mount ----
if [ -n "$STORES" ]; then
  n=0
  for store in $STORES; do
    L=$(zt_mkdir fl)
    R=$(zt_mkdir fr)
    zmount "$WEB/$store" "$L" || continue
    zmount "$NGINX_URL/$store" "$R" || {
      zumount "$L"
      continue
    }
    # Every file of the local mount, by path (values.txt, K.txt, raw keys);
    # views that fail locally (unsupported codecs) must fail remotely too.
    bad=0
    while IFS= read -r -d '' f; do
      rel=${f#"$L"/}
      if t cat "$f" >"$ZT_TMP/l.out" 2>/dev/null; then
        if ! t cat "$R/$rel" 2>/dev/null | cmp -s - "$ZT_TMP/l.out"; then
          say "differs over HTTP: $store/$rel"
          bad=$((bad + 1))
        fi
      elif t cat "$R/$rel" >/dev/null 2>&1; then
        say "fails locally but reads over HTTP: $store/$rel"
        bad=$((bad + 1))
      fi
      n=$((n + 1))
    done < <(find "$L" -type f \( -name values.txt -o -name zarr.json \
      -o -name .zarray -o -name .zattrs -o -name .zgroup \) -print0)
    assert_eq "$store: every file identical over HTTP" 0 "$bad"
    zumount "$R"
    zumount "$L"
  done
  say "compared $n files of the fixtures over HTTP"
fi

# ---- 3. partial decoding over the network ----
M=$(zt_mkdir big)
if zmount "$NGINX_URL/big.zarr" "$M"; then
  srv_nginx_log_reset
  size=$(t stat -c %s "$M/c/0.txt")
  assert_eq "stat of the 64 MiB chunk's view is exact" \
    "$(stat -c %s "$ZT_TMP/big.txt")" "$size"
  t tail -c 200 "$M/c/0.txt" >"$ZT_TMP/tail.out"
  tail -c 200 "$ZT_TMP/big.txt" >"$ZT_TMP/tail.exp"
  assert_file_eq "tail -c 200 of the view" "$ZT_TMP/tail.exp" "$ZT_TMP/tail.out"
  reqs=$(srv_nginx_requests ' /big.zarr/c/0 ')
  bytes=$(srv_nginx_bytes ' /big.zarr/c/0 ')
  say "stat + tail -c 200: $reqs GETs of the chunk, $bytes bytes"
  assert_eq "at most 3 GETs of the chunk" 1 "$([ "$reqs" -le 3 ] && echo 1)"
  assert_eq "under 1 MiB fetched" 1 "$([ "$bytes" -lt 1048576 ] && echo 1)"
  zumount "$M"
fi

# ---- 4. ls -l of a 10,000-chunk array: no chunk GET ----
M=$(zt_mkdir wide)
if zmount "$NGINX_URL/wide.zarr" "$M"; then
  srv_nginx_log_reset
  t ls -l "$M" >"$ZT_TMP/ls.out" 2>&1
  assert_eq "ls -l lists the array directory" 1 \
    "$(grep -c ' values.txt$' "$ZT_TMP/ls.out")"
  assert_eq "ls -l made no GET of a chunk" 0 \
    "$(srv_nginx_requests ' /wide.zarr/c/')"
  assert_file_eq "values.txt (404 chunks are the fill value)" \
    "$ZT_TMP/wide.txt" "$M/values.txt"
  zumount "$M"
fi

# ---- 5. refusals ----
M=$(zt_mkdir none)
"$ZARRFS_BIN" -f "$NGINX_URL/nothere.zarr" "$M" >"$ZT_TMP/none.out" 2>&1
st=$?
assert_eq "a store the server does not have: exit 1" 1 "$st"
assert_eq "... with one zarrfs: line" 1 "$(grep -c '^zarrfs: ' "$ZT_TMP/none.out")"

finish
