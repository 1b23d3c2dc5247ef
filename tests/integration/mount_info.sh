#!/bin/bash
# mount_info.sh - info.txt in array directories and the live statistics in
# /.zarrfs/stats (fs/views/info.c, fs/engine/stats.c through fs/namespace/namespace.c):
#  1. the example store: info.txt of a plain and a sharded array, with the
#     stored and missing chunk counts and bytes stored computed here from
#     the store on disk; its stat size is the bytes read; `zarrfs cat
#     SOURCE a/info.txt` and `zarrfs info SOURCE a` give the same bytes;
#     groups have none;
#  2. where it is per -o views: beside values.txt, under /.text with
#     views=tree, nowhere with views=none;
#  3. a stored info.txt wins (listed once, its bytes served), as stored
#     keys win over values.txt and K.txt; the text tree still has the view;
#  4. a V2 store and a kerchunk reference file the tests make
#     (tests/writers/own_fixtures.py), and ../shared/fixtures' when there:
#     counts from the listing and from the reference table;
#  5. /.zarrfs/stats: readable in every placement of the views, not listed; bytes read from
#     the store grow by at least a raw chunk's size when it is read, bytes
#     served by what was read; decodes count each stored chunk once (a
#     chunk view then values.txt: the second use is a cache hit); errors
#     count EIO after a corrupt chunk and ENOENT after a missing name; a
#     stored .zarrfs key wins (served, no statistics, one log line);
#  6. names that try to make lines of their own (an attribute, dimension,
#     member directory, data type holding "\nnode_type: group"): written as
#     JSON strings in info.txt, `zarrfs info` and user.zarr.data_type.
. "$(dirname "$0")/lib.sh"
zt_require_mkstore
export LC_ALL=C

SRC="$ZT_TMP/example.zarr"
t "$ZARRFS_MKSTORE" example "$SRC" >"$ZT_TMP/mkstore.log" 2>&1 || zt_hard_error "zarrfs-mkstore example failed"
Z() { t "$ZARRFS_BIN" "$@"; }

# line FILE NAME: the value of "NAME: value" in FILE.
line() { sed -n "s/^$2: //p" "$1"; }
# stored_count DIR: chunk files of the array at DIR (no metadata files).
stored_count() { find "$1" -mindepth 1 -type f ! -name 'zarr.json' ! -name '.z*' ! -name '*.txt' | wc -l; }
# stored_bytes DIR: their sizes summed.
stored_bytes() { find "$1" -mindepth 1 -type f ! -name 'zarr.json' ! -name '.z*' ! -name '*.txt' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }

# check_array NAME MNTDIR SRCDIR NCHUNKS: info.txt's counts against the store.
check_array() {
  local name=$1 m=$2 s=$3 nchunks=$4 n b
  t cat "$m/info.txt" >"$ZT_TMP/info" 2>"$ZT_TMP/info.err" || { fail "$name: cat info.txt failed"; show "$ZT_TMP/info.err"; return; }
  n=$(stored_count "$s")
  b=$(stored_bytes "$s")
  assert_eq "$name: stored_chunks from the listing" "$n" "$(line "$ZT_TMP/info" stored_chunks)"
  assert_eq "$name: missing_chunks" "$((nchunks - n))" "$(line "$ZT_TMP/info" missing_chunks)"
  assert_eq "$name: bytes_stored, the chunks' sizes summed" "$b" "$(line "$ZT_TMP/info" bytes_stored)"
  assert_size_matches "$name: stat size of info.txt is its length" "$m/info.txt"
}

# ---- 1. the example store ----

MNT=$(zt_mkdir mnt)
zmount "$SRC" "$MNT" || finish
t cat "$MNT/matrix/info.txt" >"$ZT_TMP/matrix.info"
assert_eq "matrix: shape" "[7, 5]" "$(line "$ZT_TMP/matrix.info" shape)"
assert_eq "matrix: data_type" float64 "$(line "$ZT_TMP/matrix.info" data_type)"
assert_eq "matrix: chunk_shape" "[3, 2]" "$(line "$ZT_TMP/matrix.info" chunk_shape)"
assert_eq "matrix: chunks" "9 (3 x 3)" "$(line "$ZT_TMP/matrix.info" chunks)"
assert_eq "matrix: fill_value" '"NaN"' "$(line "$ZT_TMP/matrix.info" fill_value)"
assert_eq "matrix: chunk_key_encoding" "default, separator '/'" "$(line "$ZT_TMP/matrix.info" chunk_key_encoding)"
assert_eq "matrix: codecs as in zarr.json" "$(jq -c .codecs "$SRC/matrix/zarr.json" 2>/dev/null || echo no-jq)" \
  "$(command -v jq >/dev/null && line "$ZT_TMP/matrix.info" codecs || echo no-jq)"
assert_eq "matrix: no inner chunk shape (not sharded)" "" "$(line "$ZT_TMP/matrix.info" inner_chunk_shape)"
check_array matrix "$MNT/matrix" "$SRC/matrix" 9
t cat "$MNT/obs_names_sharded/info.txt" >"$ZT_TMP/sh.info"
assert_eq "sharded: chunk_shape is the shard's" "[400]" "$(line "$ZT_TMP/sh.info" chunk_shape)"
inner=$(jq -c '.codecs[0].configuration.chunk_shape | map(tostring) | join(", ") | "[" + . + "]"' -r "$SRC/obs_names_sharded/zarr.json" 2>/dev/null)
assert_eq "sharded: inner_chunk_shape as in zarr.json" "$inner" "$(line "$ZT_TMP/sh.info" inner_chunk_shape)"
shards=$(line "$ZT_TMP/sh.info" chunks | cut -d' ' -f1)
check_array obs_names_sharded "$MNT/obs_names_sharded" "$SRC/obs_names_sharded" "$shards"
assert_file_eq "zarrfs cat SOURCE matrix/info.txt equals the mount's" "$ZT_TMP/matrix.info" <(Z cat "$SRC" matrix/info.txt)
assert_file_eq "zarrfs info SOURCE matrix is the same text" "$ZT_TMP/matrix.info" <(Z info "$SRC" matrix)
assert_eq "zarrfs stat: info-view and its size" "info-view $(wc -c <"$ZT_TMP/matrix.info") matrix/info.txt" "$(Z stat "$SRC" matrix/info.txt)"
if t ls -1A "$MNT/matrix" | grep -cx info.txt >/dev/null; then pass "ls matrix shows info.txt"; else fail "ls matrix does not show info.txt"; fi
if t ls -1A "$MNT" | grep -cx info.txt >/dev/null; then pass "the root group lists an info.txt"; else fail "the root group lists no info.txt"; fi
assert_eq "the root group's info.txt is zarrfs info's summary" "$(Z info "$SRC" /)" "$(t cat "$MNT/info.txt")"
zumount "$MNT"

# ---- 2. per placement of the views ----

MT=$(zt_mkdir tree)
if zmount "$SRC" "$MT" -o views=tree; then
  [ -e "$MT/matrix/info.txt" ] && fail "views=tree: info.txt beside the store's keys" || pass "views=tree: no info.txt in the store's tree"
  assert_file_eq "views=tree: /.text/matrix/info.txt is the same text" "$ZT_TMP/matrix.info" "$MT/.text/matrix/info.txt"
  zumount "$MT"
fi
MN=$(zt_mkdir none)
if zmount "$SRC" "$MN" -o views=none; then
  [ -e "$MN/matrix/info.txt" ] && fail "views=none: info.txt exists" || pass "views=none: no info.txt"
  zumount "$MN"
fi

# ---- 3. a stored info.txt wins ----

COLL="$ZT_TMP/coll.zarr"
cp -r "$SRC" "$COLL"
printf 'stored, not the view\n' >"$COLL/matrix/info.txt"
MC=$(zt_mkdir coll)
if zmount "$COLL" "$MC"; then
  assert_file_eq "collision: the stored info.txt is served" "$COLL/matrix/info.txt" "$MC/matrix/info.txt"
  assert_eq "collision: listed once" 1 "$(t ls -1A "$MC/matrix" | grep -cx info.txt)"
  zumount "$MC"
fi
if zmount "$COLL" "$MC" -o views=tree; then
  assert_file_eq "collision, views=tree: the store's tree serves the stored file" "$COLL/matrix/info.txt" "$MC/matrix/info.txt"
  if grep -q '^stored_chunks: ' "$MC/.text/matrix/info.txt"; then pass "collision, views=tree: /.text has the view"; else fail "collision, views=tree: /.text/matrix/info.txt is not the view"; fi
  zumount "$MC"
fi

# ---- 4. a V2 store and a kerchunk reference file ----
# The tests' own (tests/writers/own_fixtures.py: zarr-python 2, and
# references with ranges, inline base64 and a template), then the
# third-party fixtures' on top when they are there.

# v2_store NAME STORE: the first array of a V2 store.
v2_store() {
  local a M2 nch
  a=$(cd "$2" && find . -name .zarray | sort | head -1)
  a=${a#./}
  a=${a%/.zarray}
  M2=$(zt_mkdir v2)
  if zmount "$2" "$M2"; then
    assert_eq "$1 V2 $a: zarr_format" 2 "$(t cat "$M2/$a/info.txt" | line /dev/stdin zarr_format)"
    nch=$(t cat "$M2/$a/info.txt" | line /dev/stdin chunks | cut -d' ' -f1)
    check_array "$1 V2 $a" "$M2/$a" "$2/$a" "$nch"
    zumount "$M2"
  fi
}

# refs_file NAME REFS ARRAY...: counts of each ARRAY from the reference
# table (bytes: a range's length, an inline chunk's bytes; unknown when a
# whole-file reference is among them).
refs_file() {
  local name=$1 refs=$2 MK a n whole want
  shift 2
  MK=$(zt_mkdir refs)
  zmount "$refs" "$MK" || return
  for a in "$@"; do
    t cat "$MK/$a/info.txt" >"$ZT_TMP/k.info"
    n=$(jq -r --arg a "$a/" '.refs | keys[] | select(startswith($a)) | select(test("/\\.z") | not)' "$refs" | wc -l)
    assert_eq "$name kerchunk $a: stored_chunks from the reference table" "$n" "$(line "$ZT_TMP/k.info" stored_chunks)"
    whole=$(jq --arg a "$a/" '[.refs | to_entries[] | select(.key | startswith($a)) | select(.value | type == "array" and length == 1)] | length' "$refs")
    if [ "$whole" -gt 0 ]; then
      want=unknown
    else
      want=$(jq --arg a "$a/" '[.refs | to_entries[] | select(.key | startswith($a)) | select(.key | test("/\\.z") | not) | .value
        | if type == "array" then .[2]
          elif startswith("base64:") then .[7:] | (length / 4 * 3) - (if endswith("==") then 2 elif endswith("=") then 1 else 0 end)
          else utf8bytelength end] | add' "$refs")
    fi
    assert_eq "$name kerchunk $a: bytes_stored ($whole whole-file references)" "$want" "$(line "$ZT_TMP/k.info" bytes_stored)"
    assert_size_matches "$name kerchunk $a: stat size of info.txt" "$MK/$a/info.txt"
  done
  zumount "$MK"
}

if ! command -v jq >/dev/null; then
  zt_skip_part "jq missing: the V2 store and the kerchunk reference file"
else
  if zt_own_fixtures; then
    v2_store own "$OWN/zarr-python-v2/v2_python.zarr"
    refs_file own "$OWN/kerchunk/refs/v1.json" a f
  else
    zt_skip_part "own fixtures not made ($(tail -1 "$ZT_TMP/own-fixtures.log")): the V2 store and the kerchunk reference file"
  fi
  if zt_third_party_fixtures; then
    [ -d "$FIX/zarr-python-v2/v2_python.zarr" ] && v2_store third-party "$FIX/zarr-python-v2/v2_python.zarr"
    [ -f "$FIX/kerchunk/refs/refs_v1.json" ] && refs_file third-party "$FIX/kerchunk/refs/refs_v1.json" zlib_i4 f8_mixed
  fi
fi

# ---- 5. /.zarrfs/stats ----

MS=$(zt_mkdir stats)
zmount "$SRC" "$MS" || finish
# st NAME: the current value of counter NAME.
st() { t cat "$MS/.zarrfs/stats" | awk -v k="$1" '$1 == k { print $2 }'; }
t cat "$MS/.zarrfs/stats" >"$ZT_TMP/stats0"
for k in requests requests_lookup requests_getattr requests_readdir requests_open requests_read \
  bytes_served store_bytes_read cache_hits cache_misses cache_waits decodes decode_ms errors errors_eio \
  errors_enoent errors_enomem errors_eintr errors_other kernel_forgets; do
  if grep -qE "^$k [0-9]+$" "$ZT_TMP/stats0"; then pass "stats: a '$k N' line"; else fail "stats: no '$k N' line"; fi
done
assert_eq "stats: stat size 0 (read without trusting it)" 0 "$(stat -c %s "$MS/.zarrfs/stats")"
if t ls -1A "$MS" | grep -cx .zarrfs >/dev/null; then fail "stats: /.zarrfs is listed"; else pass "stats: /.zarrfs is not listed"; fi
assert_eq "stats: ls /.zarrfs" stats "$(t ls -1A "$MS/.zarrfs")"

size=$(stat -c %s "$SRC/matrix/c/0/0")
b0=$(st store_bytes_read) s0=$(st bytes_served) r0=$(st requests_read)
t cat "$MS/matrix/c/0/0" >/dev/null
b1=$(st store_bytes_read) s1=$(st bytes_served) r1=$(st requests_read)
[ $((b1 - b0)) -ge "$size" ] && pass "stats: store_bytes_read grew by at least the raw chunk's $size bytes ($b0 -> $b1)" ||
  fail "stats: store_bytes_read $b0 -> $b1 after reading $size bytes"
[ $((s1 - s0)) -ge "$size" ] && pass "stats: bytes_served grew by at least $size ($s0 -> $s1)" ||
  fail "stats: bytes_served $s0 -> $s1 after reading $size bytes"
[ "$r1" -gt "$r0" ] && pass "stats: requests_read grew" || fail "stats: requests_read $r0 -> $r1"

d0=$(st decodes)
assert_eq "stats: nothing decoded yet" 0 "$d0"
t cat "$MS/matrix/c/1/0.txt" >/dev/null
h1=$(st cache_hits)
assert_eq "stats: one chunk view, one decode" 1 "$(st decodes)"
t cat "$MS/matrix/values.txt" >/dev/null
h2=$(st cache_hits)
assert_eq "stats: values.txt decoded each stored chunk once (c/1/0 came from the cache)" \
  "$(stored_count "$SRC/matrix")" "$(st decodes)"
[ "$h2" -gt "$h1" ] && pass "stats: cache_hits grew on the second use ($h1 -> $h2)" || fail "stats: cache_hits $h1 -> $h2"

n0=$(st errors_enoent)
[ -e "$MS/no-such-name-$$" ] && fail "a missing name exists"
[ "$(st errors_enoent)" -gt "$n0" ] && pass "stats: errors_enoent grew after a missing name" || fail "stats: errors_enoent stayed $n0"
assert_eq "stats: zarrfs cat SOURCE .zarrfs/stats answers (its own engine: no request)" \
  "requests 0" "$(Z cat "$SRC" .zarrfs/stats | grep '^requests ')"
zumount "$MS"

BAD="$ZT_TMP/bad.zarr"
cp -r "$SRC" "$BAD"
printf 'not gzip at all' >"$BAD/matrix/c/0/0"
if zmount "$BAD" "$MS"; then
  e0=$(st errors_eio)
  assert_fails_with_eio "corrupt chunk: its view fails" "$MS/matrix/c/0/0.txt"
  e1=$(st errors_eio)
  [ "$e1" -gt "$e0" ] && pass "stats: errors_eio grew after the corrupt chunk ($e0 -> $e1)" || fail "stats: errors_eio stayed $e0"
  zumount "$MS"
fi

for v in tree none; do
  if zmount "$SRC" "$MS" -o views=$v; then
    t cat "$MS/.zarrfs/stats" >"$ZT_TMP/stats.$v" 2>&1
    if grep -q '^requests_read ' "$ZT_TMP/stats.$v"; then pass "views=$v: /.zarrfs/stats"; else fail "views=$v: no /.zarrfs/stats"; show "$ZT_TMP/stats.$v"; fi
    zumount "$MS"
  fi
done

OWN="$ZT_TMP/own.zarr"
cp -r "$SRC" "$OWN"
printf 'a key of the store\n' >"$OWN/.zarrfs"
if zmount "$OWN" "$MS"; then
  assert_file_eq "a stored .zarrfs wins" "$OWN/.zarrfs" "$MS/.zarrfs"
  [ -e "$MS/.zarrfs/stats" ] && fail "stored .zarrfs: statistics still shown" || pass "stored .zarrfs: no statistics"
  if grep -q '\.zarrfs: the store holds this key' "$ZT_LOG"; then pass "stored .zarrfs: the log says so"; else fail "stored .zarrfs: no log line"; show "$ZT_LOG"; fi
  zumount "$MS"
fi

# ---- 6. names that try to make lines of their own (issue 32) ----
# An attribute, a dimension, a member directory and a data type named with
# a newline and "node_type: group": info.txt, `zarrfs info` and the
# extended attribute write each as a JSON string, so no line is added.
EVIL="$ZT_TMP/evil.zarr"
mkdir -p "$EVIL/a" "$EVIL/b" "$EVIL/m
node_type: group"
E='evil\nnode_type: group'
printf '{"zarr_format":3,"node_type":"group","attributes":{"%s":1}}' "$E" >"$EVIL/zarr.json"
printf '{"zarr_format":3,"node_type":"group"}' >"$EVIL/m
node_type: group/zarr.json"
printf '{"zarr_format":3,"node_type":"array","shape":[2],"data_type":"int8","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[2]}},"chunk_key_encoding":{"name":"default"},"fill_value":0,"codecs":[{"name":"bytes"}],"dimension_names":["%s"],"attributes":{"%s":1,"plain name":2}}' "$E" "$E" >"$EVIL/a/zarr.json"
printf '{"zarr_format":3,"node_type":"array","shape":[2],"data_type":"int8\\nnode_type: group","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[2]}},"chunk_key_encoding":{"name":"default"},"fill_value":0,"codecs":[{"name":"bytes"}]}' >"$EVIL/b/zarr.json"
if zmount "$EVIL" "$MS" -o xattr; then
  t cat "$MS/a/info.txt" >"$ZT_TMP/evil.a" 2>&1
  assert_eq "hostile names: a/info.txt has one node_type line" 1 "$(grep -c '^node_type:' "$ZT_TMP/evil.a")"
  assert_eq "hostile names: the attribute name as a JSON string" \
    '  "evil\nnode_type: group": 1' "$(grep -F '  "evil' "$ZT_TMP/evil.a")"
  assert_eq "hostile names: a plain name stays bare" '  plain name: 2' "$(grep -F 'plain name' "$ZT_TMP/evil.a")"
  t cat "$MS/b/info.txt" >"$ZT_TMP/evil.b" 2>&1
  assert_eq "hostile names: b/info.txt (a data type named so) has one node_type line" 1 \
    "$(grep -c '^node_type:' "$ZT_TMP/evil.b")"
  assert_eq "hostile names: the data type as a JSON string" 'data_type: "int8\nnode_type: group"' \
    "$(grep '^data_type:' "$ZT_TMP/evil.b")"
  assert_eq "hostile names: user.zarr.data_type as info.txt shows it" '"int8\nnode_type: group"' \
    "$(t getfattr --absolute-names --only-values -n user.zarr.data_type "$MS/b" 2>&1)"
  zumount "$MS"
fi
Z info "$EVIL" >"$ZT_TMP/evil.root" 2>/dev/null
assert_eq "hostile names: zarrfs info of the group has one node_type line" 1 \
  "$(grep -c '^node_type:' "$ZT_TMP/evil.root")"
for want in '  "evil\nnode_type: group" = 2' '  a("evil\nnode_type: group")' \
  '  "m\nnode_type: group"' '    data_type: "int8\nnode_type: group"'; do
  if grep -qxF "$want" "$ZT_TMP/evil.root"; then pass "zarrfs info: the line $want"; else
    fail "zarrfs info: no line $want:"
    show "$ZT_TMP/evil.root"
  fi
done
finish
