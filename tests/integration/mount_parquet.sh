#!/bin/bash
# mount_parquet.sh - kerchunk Parquet references (fsspec's
# LazyReferenceMapper format) mounted from a local folder, over HTTP (nginx)
# and from S3 (s3rver). The store is tests/data/parquet-refs/store, written
# by parquet-wasm (arrow-rs) and hyparquet-writer through
# tests/writers/parquet_refs.mjs: a dictionary-encoded and a PLAIN path
# column, null paths (missing chunks), inline raw chunks, a whole-object
# reference, a record file that does not exist, pages uncompressed and in
# SNAPPY, GZIP and ZSTD, data pages v1 and v2, files without a raw column
# and with only one. Checked:
#  1. every array's values.txt equals the writer's expected values, chunk
#     listings name exactly the stored chunks, .zarray is the text of its
#     value in .zmetadata, raw chunks are the bytes referenced;
#  2. bad rows fail alone with EIO and a log line naming the reason (a
#     target outside the allowed roots, a negative offset, a range past
#     the target's end); a record file in DELTA_BYTE_ARRAY is refused
#     naming the encoding; a record file that is not Parquet fails its
#     array's chunks only;
#  3. a record file or an array's folder given as SOURCE is refused naming
#     the folder to mount;
#  4. the same values over HTTP and from S3 (relative targets as URLs).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"

PQ="$ZARRFS_SRCDIR/tests/data/parquet-refs"
ARRAYS="a g/b c z"

# check_values DESC MNT: every array's values.txt equals its expected text.
check_values() {
  local desc=$1 m=$2 v
  for v in $ARRAYS; do
    assert_file_eq "$desc: $v/values.txt" "$PQ/expected/${v//\//_}.txt" \
      "$m/$v/values.txt"
  done
}

# ---- 1. local ----
M=$(zt_mkdir local)
if zmount "$PQ/store" "$M"; then
  check_values local "$M"
  assert_output_eq "a's chunks: those stored (2 missing, 4-7 in no record file)" \
    "$(printf '%s\n' 0 1 3 8 9)"$'\n' sh -c "ls '$M/a' | grep -E '^[0-9]+\$'"
  assert_output_eq "g/b's chunks" "$(printf '%s\n' 0.0 0.1 1.0 1.1 2.0 2.1)"$'\n' \
    sh -c "ls '$M/g/b' | grep -E '^[0-9.]+\$'"
  assert_output_eq "the root: metadata and arrays, no .zmetadata, no record files" \
    "$(printf '%s\n' .zattrs .zgroup a bad c delta g z)"$'\n' \
    sh -c "ls -A '$M' | grep -v -e '\\.csv\$' -e '^info.txt\$'"
  assert_output_eq "a/.zarray: the text of its value in .zmetadata" \
    '{"chunks": [4], "compressor": null, "dtype": "<i4", "fill_value": -1, "filters": null, "order": "C", "shape": [38], "zarr_format": 2}' \
    cat "$M/a/.zarray"
  assert_file_eq "a/8: the whole object whole.bin" "$PQ/store/whole.bin" "$M/a/8"
  assert_eq "a/3: inline raw bytes (16)" 16 "$(t stat -c %s "$M/a/3")"
  assert_output_eq "a/3.txt" "$(printf '%s\n' -14 -11 -8 -5)"$'\n' cat "$M/a/3.txt"
  assert_size_matches "a/values.txt size" "$M/a/values.txt"
  assert_output_eq "z (0-d, raw only)" "-7
" cat "$M/z/0.txt"
  # 2. bad rows fail alone
  assert_fails_with_eio "bad/0: a target outside the allowed roots" "$M/bad/0"
  assert_fails_with_eio "bad/1: a negative offset" "$M/bad/1"
  assert_fails_with_eio "bad/2: a range past the target's end" "$M/bad/2"
  assert_output_eq "bad/3: the good row beside them" \
    "$(printf '%s\n' -50 -47 -44 -41)"$'\n' cat "$M/bad/3.txt"
  assert_fails_with_eio "delta: a record file in DELTA_BYTE_ARRAY" \
    "$M/delta/values.txt"
  check_values "local, after the bad reads" "$M"
  zumount "$M"
  for why in "outside the allowed roots" "row 1: negative offset or size" \
    "runs past the end of the target" \
    "data page in encoding DELTA_BYTE_ARRAY is not supported"; do
    if grep -qF "$why" "$ZT_LOG"; then
      pass "log names: $why"
    else
      fail "log lacks: $why"
      show "$ZT_LOG"
    fi
  done
fi

# A record file that is not Parquet: its chunks fail, the rest serves.
CP=$(zt_mkdir copy)
cp -r "$PQ/store/." "$CP/"
printf 'not parquet at all' >"$CP/g/b/refs.1.parq"
M=$(zt_mkdir broken)
if zmount "$CP" "$M"; then
  assert_fails_with_eio "g/b with a record file that is not Parquet" \
    "$M/g/b/values.txt"
  assert_file_eq "a beside it" "$PQ/expected/a.txt" "$M/a/values.txt"
  assert_output_eq "g/b/0.0.txt (in the good record file)" \
    "$(printf '%s\n' 0 1000000007 2000000014 3000000021 100000000700 \
      101000000707 102000000714 103000000721)"$'\n' cat "$M/g/b/0.0.txt"
  zumount "$M"
  if grep -q "g/b/refs.1.parq: not a Parquet file" "$ZT_LOG"; then
    pass "the log names the record file and why"
  else
    fail "the log does not name g/b/refs.1.parq"
    show "$ZT_LOG"
  fi
fi

# ---- 3. a part of the references given as SOURCE ----
for part in a/refs.0.parq a; do
  t "$ZARRFS_BIN" ls "$PQ/store/$part" / >"$ZT_TMP/part.out" 2>&1
  rc=$?
  if [ "$rc" -ne 0 ] && grep -q "Parquet.*mount their folder .*parquet-refs/store" \
    "$ZT_TMP/part.out"; then
    pass "SOURCE $part: refused, naming the folder to mount"
  else
    fail "SOURCE $part: exit $rc"
    show "$ZT_TMP/part.out"
  fi
done

# ---- 4. HTTP and S3 ----
srv_nginx_start "$PQ"
M=$(zt_mkdir http)
if zmount "$NGINX_URL/store" "$M"; then
  srv_nginx_log_reset
  t cat "$M/a/0.txt" >/dev/null
  assert_eq "http: a/0 read one record file (requests for a/refs.0.parq)" 1 \
    "$(srv_nginx_requests 'a/refs.0.parq')"
  assert_eq "http: ... and no other (requests for other record files)" 0 \
    "$(srv_log_lines "$NGINX_LOG" .parq | grep -vc 'a/refs.0.parq')"
  check_values http "$M"
  assert_output_eq "http: a's chunks" "$(printf '%s\n' 0 1 3 8 9)"$'\n' \
    sh -c "ls '$M/a' | grep -E '^[0-9]+\$'"
  assert_file_eq "http: a/8, a whole object" "$PQ/store/whole.bin" "$M/a/8"
  assert_fails_with_eio "http: bad/0, a local target of remote references" \
    "$M/bad/0"
  zumount "$M"
fi
if [ "$(srv_nginx_requests 'refs.1.parq')" -ge 1 ]; then
  pass "http: the absent record file a/refs.1.parq was asked for (404)"
else
  fail "http: a/refs.1.parq never asked for"
fi

command -v node >/dev/null 2>&1 || srv_need node
srv_s3_start "$ZT_TMP/s3data"
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL AWS_REGION
export HOME="$ZT_TMP"
srv_s3_put_tree bkt "$PQ"
M=$(zt_mkdir s3)
if zmount "s3://bkt/store" "$M" -o "endpoint=$S3_ENDPOINT"; then
  check_values s3 "$M"
  assert_output_eq "s3: g/b's chunks" "$(printf '%s\n' 0.0 0.1 1.0 1.1 2.0 2.1)"$'\n' \
    sh -c "ls '$M/g/b' | grep -E '^[0-9.]+\$'"
  zumount "$M"
fi
finish
