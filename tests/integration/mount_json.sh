#!/bin/bash
# mount_json.sh - V2 object arrays in the format of numcodecs' JSON object
# codecs (legacy `json`, and `json2`), written by an independent writer
# (numcodecs_json.js: plain JS, Python's json output rules reimplemented),
# mounted with the daemon: values.txt and chunk views byte-exact against
# the writer's expected text (strings with unicode, newlines, quotes, a
# lone surrogate; numbers, NaN, null, nested lists, objects; 1-D to 3-D,
# edge and missing chunks, zlib and gzip), then cat/grep/wc/tail on them;
# chunks that break the format (wrong count, no "|O", a json2 shape given
# to json, ragged nesting) fail with EIO and a log line naming the codec.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C

command -v node >/dev/null 2>&1 || zt_skip_or_fail "node missing (apt-get install nodejs)"
SRC="$ZT_TMP/objects.zarr"
EXP="$ZT_TMP/expected"
if ! t node "$ZT_LIBDIR/numcodecs_json.js" "$SRC" "$EXP" >"$ZT_TMP/writer.log" 2>&1; then
  show "$ZT_TMP/writer.log"
  zt_hard_error "numcodecs_json.js failed"
fi
ARRAYS="strings strings_json2 mixed cube"

# Broken chunks, each in an array of its own with the metadata of
# `strings` (5 elements a chunk, codec json).
broken() {
  mkdir -p "$SRC/$1"
  cp "$SRC/strings/.zarray" "$SRC/$1/.zarray"
  printf '%s' "$2" >"$SRC/$1/0"
}
broken bad_count '["a","b","c","d","|O"]'
broken bad_dtype '["a","b","c","d","e","<U1"]'
broken bad_shape '["a","b","c","d","e","|O",[5]]'
broken bad_json '["a","b","c","d","e,"|O"]'
mkdir -p "$SRC/bad_ragged"
sed 's/"shape": \[/"shape": [2,/; s/"chunks": \[/"chunks": [2,/' \
  "$SRC/strings/.zarray" >"$SRC/bad_ragged/.zarray"
printf '%s' '[[1,2,3,4,5],[6,7],"|O"]' >"$SRC/bad_ragged/0.0"

M=$(zt_mkdir m)
zmount "$SRC" "$M" || finish

for a in $ARRAYS; do
  assert_file_eq "$a/values.txt matches the writer's expected values" \
    "$EXP/$a.txt" "$M/$a/values.txt"
  assert_size_matches "$a/values.txt: stat size is the bytes read" "$M/$a/values.txt"
done

# Chunk views: in-bounds elements of one chunk.
assert_output_eq "strings/0.txt (legacy json)" \
  "plain
null

caf$(printf '\303\251') $(printf '\303\274')ber
two lines
" cat "$M/strings/0.txt"
assert_file_eq "strings_json2/0.txt is strings/0.txt (json2, gzip)" \
  "$M/strings/0.txt" "$M/strings_json2/0.txt"
assert_output_eq "strings/2.txt (edge chunk)" "grep me
last
" cat "$M/strings/2.txt"
assert_output_eq "mixed/0.1.txt (2-D edge chunk, zlib)" \
  '1e-05
1e+20
null
true
text
null
' cat "$M/mixed/0.1.txt"
assert_output_eq "cube/0.1.0.txt (3-D)" 'c3
c4
c5
c9
c10
c11
' cat "$M/cube/0.1.0.txt"

# Ordinary tools on the views.
assert_output_eq "grep -n in strings/values.txt" "11:grep me
" grep -n 'grep' "$M/strings/values.txt"
assert_output_eq "grep -c null in mixed/values.txt (a string and a null item)" "2
" grep -cx null "$M/mixed/values.txt"
assert_output_eq "wc -l of mixed/values.txt" "20
" sh -c "wc -l <'$M/mixed/values.txt'"
assert_output_eq "tail -n 3 of strings_json2/values.txt" \
  "lone $(printf '\357\277\275') surrogate
grep me
last
" tail -n 3 "$M/strings_json2/values.txt"
assert_output_eq "emoji from a surrogate pair" "$(printf '\360\237\230\200') emoji
" grep emoji "$M/strings_json2/values.txt"
assert_output_eq "missing chunk 1 of strings reads as the fill (empty lines)" "




" sed -n '6,10p' "$M/strings/values.txt"

# Raw keys stay byte-identical.
assert_file_eq "raw key mixed/0.0 is the stored bytes" "$SRC/mixed/0.0" "$M/mixed/0.0"

# Broken chunks: EIO, and a log line with the codec and the reason.
for case in "bad_count|json: the nesting holds 4 elements, expected 5" \
  'bad_dtype|json: the dtype item is not "|O"' \
  "bad_shape|json: the list does not end with a dtype string" \
  "bad_json|json: not valid JSON" \
  "bad_ragged|json: a nested list has 2 items"; do
  a=${case%%|*}
  msg=${case#*|}
  assert_fails_with_eio "$a/values.txt fails with EIO" "$M/$a/values.txt"
  if grep -qF -- "$msg" "$ZT_LOG"; then
    pass "$a: the log says '$msg'"
  else
    fail "$a: no log line with '$msg'; log:"
    show "$ZT_LOG"
  fi
done

zumount "$M"
finish
