#!/bin/bash
# mount_names.sh - no request for a name zarrfs makes up: over HTTP
# (tests/integration/faultsrv, whose log has one line per request), ls,
# stat, ls -l, cat info.txt, stat values.txt, stat K.txt, ls /.zarrfs and a
# look-up below values.txt on
#  1. a V3 zarrs.vlen array at the store's root,
#  2. a V2 array at the store's root,
#  3. the example store (a V3 group of arrays),
# make no request for values.txt, info.txt, K.txt, .zarrfs or anything
# below them, no V2 probe of a V3 node (nor the reverse), and no request
# for a path that is not a file of the store (a V2 array's absent .zattrs
# and the index page DIR/ of a directory of the store, its listing,
# aside); and what they show is right.
#  4. sizes from index ends: on a fresh mount of a zarrs.vlen array of 2M
#     strings in 10 chunks (index at the start, data plain), stat of
#     values.txt is exact, ls -l shows it, and stat + tail -c 100 fetch
#     under 1 MiB; with zstd data (the index still plain) stat is exact
#     and fetches no data section; tail of the index-at-end layout reads
#     right.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
zt_require_mkstore

WEB=$(zt_mkdir web)
"$ZARRFS_MKSTORE" bigstrings "$WEB/v3.zarr" --count 1000 --chunk 100 \
  --data none --plain "$ZT_TMP/v3.txt" >/dev/null ||
  zt_hard_error "mkstore bigstrings failed"
"$ZARRFS_MKSTORE" numeric "$WEB/v2.zarr" --shape 100 --chunk 10 --format 2 \
  --plain "$ZT_TMP/v2.txt" >/dev/null || zt_hard_error "mkstore numeric failed"
cp -r "$ZARRFS_SRCDIR/examples/example.zarr" "$WEB/example.zarr"
srv_fault_start "$WEB"

# Request paths of the log so far (the store's prefix /NAME.zarr/ dropped).
paths() { awk '{ print $2 }' "$FAULT_LOG" | sed "s|^/$1/||"; }

# Requests for names zarrfs makes up, or below them.
made_up() {
  paths "$1" | grep -E '(^|/)(values\.txt|info\.txt|\.zarrfs|[^/]*\.txt)(/|$)'
}

# Requests for paths that are no file of the store (except the regex $2).
not_keys() {
  local p
  paths "$1" | sort -u | while IFS= read -r p; do
    [ -f "$WEB/$1/$p" ] && continue
    case $p in '' | */) [ -d "$WEB/$1/$p" ] && continue ;; esac
    [ -n "${2:-}" ] && printf '%s\n' "$p" | grep -Eq "$2" && continue
    printf '%s\n' "$p"
  done
}

# Run the operations of the test on array directory $1 of mount $2 with
# chunk view $3; what they print goes to $ZT_TMP/ops.out.
ops() {
  local m=$2 a=$2${1:+/$1}
  {
    t ls "$a"
    t stat -c '%n %F' "$a"
    t ls -l "$a" | awk '{ print $5, $NF }'
    t cat "$a/info.txt" | head -3
    t stat -c '%n %F' "$a/values.txt"
    t stat -c '%n %F' "$a/$3"
    t ls -a "$m/.zarrfs"
    t stat "$a/values.txt/zarr.json" 2>&1 | grep -c 'No such file\|Not a directory'
    t stat "$a/info.txt/x" 2>&1 | grep -c 'No such file\|Not a directory'
  } >"$ZT_TMP/ops.out" 2>&1
}

# Mount $1 (store name), clear the log, run ops, check the log.
check_store() {
  local store=$1 arr=$2 view=$3 allow=${4:-} M
  M=$(zt_mkdir "m-$store")
  zmount "$FAULT_URL/$store" "$M" || return
  : >"$FAULT_LOG"
  ops "$arr" "$M" "$view"
  assert_eq "$store: info.txt, values.txt and $view resolve" 1 \
    "$(grep -c "values.txt regular" "$ZT_TMP/ops.out")"
  assert_eq "$store: .zarrfs lists stats" 1 "$(grep -cx stats "$ZT_TMP/ops.out")"
  made_up "$store" >"$ZT_TMP/made.out"
  assert_eq "$store: no request for a made-up name" 0 \
    "$(wc -l <"$ZT_TMP/made.out")"
  [ -s "$ZT_TMP/made.out" ] && show "$ZT_TMP/made.out"
  not_keys "$store" "$allow" >"$ZT_TMP/nk.out"
  assert_eq "$store: every request names a file of the store" 0 \
    "$(wc -l <"$ZT_TMP/nk.out")"
  [ -s "$ZT_TMP/nk.out" ] && show "$ZT_TMP/nk.out"
  say "$store: $(wc -l <"$FAULT_LOG") requests for the operations"
  cp "$ZT_TMP/ops.out" "$ZT_TMP/ops-$store.out"
  zumount "$M"
}

# ---- 1. V3 array at the root ----
check_store v3.zarr "" c/0.txt
assert_eq "v3: stat of a chunk view" 1 \
  "$(grep -c 'c/0.txt regular' "$ZT_TMP/ops-v3.zarr.out")"
M=$(zt_mkdir v3b)
if zmount "$FAULT_URL/v3.zarr" "$M"; then
  assert_file_eq "v3: values.txt" "$ZT_TMP/v3.txt" "$M/values.txt"
  zumount "$M"
fi

# ---- 2. V2 array at the root (its .zattrs may be absent) ----
check_store v2.zarr "" 0.txt '^\.zattrs$'
M=$(zt_mkdir v2b)
if zmount "$FAULT_URL/v2.zarr" "$M"; then
  : >"$FAULT_LOG"
  t stat "$M/values.txt" >/dev/null
  t ls "$M" >/dev/null
  assert_eq "v2: no zarr.json probe once .zarray is found" 0 \
    "$(paths v2.zarr | grep -c 'zarr\.json')"
  assert_file_eq "v2: values.txt" "$ZT_TMP/v2.txt" "$M/values.txt"
  zumount "$M"
fi

# ---- 3. a V3 group of arrays ----
check_store example.zarr labels_utf8 c/0.txt
assert_eq "example: no V2 probe of a V3 node" 0 \
  "$(paths example.zarr | grep -Ec '\.(zarray|zgroup|zattrs|zmetadata)$')"

# ---- 4. sizes from index ends ----
for v in none zstd end; do
  case $v in
  end) args="--data none --index end" ;;
  *) args="--data $v" ;;
  esac
  # shellcheck disable=SC2086
  "$ZARRFS_MKSTORE" bigstrings "$WEB/s-$v.zarr" --count 2000000 \
    --chunk 200000 --strlen 15 $args --plain "$ZT_TMP/s-$v.txt" >/dev/null ||
    zt_hard_error "mkstore bigstrings $v failed"
done
M=$(zt_mkdir s-none)
if zmount "$FAULT_URL/s-none.zarr" "$M"; then
  : >"$FAULT_LOG"
  assert_eq "none: stat of values.txt is exact on a fresh mount" \
    "$(stat -c %s "$ZT_TMP/s-none.txt")" "$(t stat -c %s "$M/values.txt")"
  t tail -c 100 "$M/values.txt" >"$ZT_TMP/tail.out"
  tail -c 100 "$ZT_TMP/s-none.txt" >"$ZT_TMP/tail.exp"
  assert_file_eq "none: tail -c 100 of values.txt" "$ZT_TMP/tail.exp" \
    "$ZT_TMP/tail.out"
  bytes=$(awk '{ s += $NF } END { print s + 0 }' "$FAULT_LOG")
  say "none: stat + tail -c 100: $(wc -l <"$FAULT_LOG") requests, $bytes bytes"
  assert_eq "none: stat + tail -c 100 fetch under 1 MiB" 1 \
    "$([ "$bytes" -lt 1048576 ] && echo 1)"
  assert_eq "none: ls -l shows the exact size" \
    "$(stat -c %s "$ZT_TMP/s-none.txt")" \
    "$(t ls -l "$M" | awk '$NF == "values.txt" { print $5 }')"
  zumount "$M"
fi
M=$(zt_mkdir s-zstd)
if zmount "$FAULT_URL/s-zstd.zarr" "$M"; then
  : >"$FAULT_LOG"
  assert_eq "zstd: stat of values.txt is exact on a fresh mount" \
    "$(stat -c %s "$ZT_TMP/s-zstd.txt")" "$(t stat -c %s "$M/values.txt")"
  bytes=$(awk '{ s += $NF } END { print s + 0 }' "$FAULT_LOG")
  say "zstd: stat: $(wc -l <"$FAULT_LOG") requests, $bytes bytes"
  assert_eq "zstd: stat fetched at most 2 blocks per chunk (no data)" 1 \
    "$([ "$bytes" -le $((10 * 2 * 65536)) ] && echo 1)"
  t tail -c 100 "$M/values.txt" >"$ZT_TMP/tail.out"
  tail -c 100 "$ZT_TMP/s-zstd.txt" >"$ZT_TMP/tail.exp"
  assert_file_eq "zstd: tail -c 100 of values.txt" "$ZT_TMP/tail.exp" \
    "$ZT_TMP/tail.out"
  zumount "$M"
fi
M=$(zt_mkdir s-end)
if zmount "$FAULT_URL/s-end.zarr" "$M"; then
  : >"$FAULT_LOG"
  assert_eq "end: stat of values.txt is exact on a fresh mount" \
    "$(stat -c %s "$ZT_TMP/s-end.txt")" "$(t stat -c %s "$M/values.txt")"
  t tail -c 1000 "$M/values.txt" >"$ZT_TMP/tail.out"
  tail -c 1000 "$ZT_TMP/s-end.txt" >"$ZT_TMP/tail.exp"
  assert_file_eq "end: tail -c 1000 of values.txt" "$ZT_TMP/tail.exp" \
    "$ZT_TMP/tail.out"
  bytes=$(awk '{ s += $NF } END { print s + 0 }' "$FAULT_LOG")
  say "end: stat + tail -c 1000: $(wc -l <"$FAULT_LOG") requests, $bytes bytes"
  assert_eq "end: K.txt size exact" \
    "$(head -400000 "$ZT_TMP/s-end.txt" | tail -200000 | wc -c)" \
    "$(t stat -c %s "$M/c/1.txt")"
  zumount "$M"
fi

finish
