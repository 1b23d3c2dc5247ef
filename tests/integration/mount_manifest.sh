#!/bin/bash
# mount_manifest.sh - manifest-backed stores, through the real
# daemon and real tools:
#  1. every kerchunk reference file the tests make (tests/writers/
#     own_fixtures.py), and those of $ZARRFS_FIXTURES/kerchunk/refs when
#     the third-party fixtures are there, mounts;
#     each raw key is exactly the referenced bytes (inline text, base64,
#     [url], [url, offset, length], templates), values.txt and every chunk
#     view equal kerchunk/expected_refs.json (needs jq);
#  2. a VirtualiZarr-style store built here from the example store: every
#     chunk copied at a scattered offset into ONE blob, manifest.json +
#     zarr.json with the chunk-manifest-json storage transformer (relative,
#     absolute and file:// paths; one chunk missing, one `path: ""`, inlined
#     chunks; a bare NaN in one zarr.json): the mount shows exactly the files
#     of the plain store, byte for byte, views too;
#  3. partial decoding reaches through a manifest: tail/head of the view of a
#     64 MiB zarrs.vlen chunk makes the daemon read well under 1 MiB;
#  4. bad input, one case per array (table below), for manifests and for a
#     kerchunk file: EIO on that key plus a log line saying why, escapes
#     (`..`, symlink) say how to allow them and read after `-o allow_root`,
#     remote targets on a dead server fail after the retries, naming the
#     URL (gs:// too), an ftp:// URL is refused naming the schemes read; the
#     mount keeps serving.
. "$(dirname "$0")/lib.sh"
zt_require_mkstore

# io_field PID FIELD: one field of /proc/PID/io.
io_field() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/io"; }

# Log lines of LOG that name NAME (an array or key) in the key field.
log_for() { grep -F -- "$2" "$1" | grep '^zarrfs: ' || true; }

# A storage-transformer zarr.json: SRC's object with the transformer added.
add_transformer() {
  {
    printf '{"storage_transformers": [{"name": "chunk-manifest-json", '
    printf '"configuration": {"manifest": "./manifest.json"}}],'
    tail -c +2 "$1"
  } >"$2"
}

# Append GAP random bytes (1..2048) and then FILE to BLOB; print FILE's offset.
blob_append() {
  local blob=$1 file=$2 off
  head -c $((RANDOM % 2048 + 1)) /dev/urandom >>"$blob"
  off=$(stat -c %s -- "$blob")
  cat -- "$file" >>"$blob"
  echo "$off"
}

# ======================================================================
# 1. kerchunk fixtures
# ======================================================================
KDIRS=
if zt_own_fixtures; then
  KDIRS="$OWN/kerchunk"
else
  zt_skip_part "own fixtures not made ($(tail -1 "$ZT_TMP/own-fixtures.log")): the own kerchunk references"
fi
if zt_third_party_fixtures && [ -f "$FIX/kerchunk/expected_refs.json" ]; then
  KDIRS="$KDIRS $FIX/kerchunk"
fi
if ! command -v jq >/dev/null 2>&1; then
  zt_skip_part "jq missing: the kerchunk fixture part"
else
 for KDIR in $KDIRS; do
  EXPJ="$KDIR/expected_refs.json"
  for refs in "$KDIR"/refs/*.json; do
    rel="refs/$(basename "$refs")"
    rdir=$(dirname "$refs")
    if lib=$(zt_lacks_codec "$refs"); then
      zt_skip_part "$rel: zarrfs was built without $lib"
      continue
    fi
    MNT=$(zt_mkdir kmnt)
    zmount "$refs" "$MNT" || continue

    # Raw keys: "TYPE<TAB>KEY[<TAB>URL[<TAB>OFF<TAB>LEN]]", templates expanded.
    jq -r '(.templates // {}) as $t
      | (if has("version") then .refs else . end) | to_entries[] | .key as $k | .value
      | if type == "string" then
          (if startswith("base64:") then "b\t\($k)" else "s\t\($k)" end)
        elif type == "array" then
          ((.[0] | gsub("\\{\\{(?<n>[A-Za-z0-9_]+)\\}\\}"; $t[.n])) as $u
           | if length == 1 then "w\t\($k)\t\($u)" else "r\t\($k)\t\($u)\t\(.[1])\t\(.[2])" end)
        else "?\t\($k)" end' "$refs" >"$ZT_TMP/kkeys" ||
      zt_hard_error "jq cannot read $refs"
    nk=0
    while IFS=$'\t' read -r typ key url off len; do
      nk=$((nk + 1))
      case $typ in
      s) jq -j --arg k "$key" '(if has("version") then .refs else . end)[$k]' "$refs" >"$ZT_TMP/kexp" ;;
      b) jq -j --arg k "$key" '(if has("version") then .refs else . end)[$k][7:]' "$refs" |
        base64 -d >"$ZT_TMP/kexp" ;;
      w) cat -- "$rdir/$url" >"$ZT_TMP/kexp" ;;
      r) tail -c +$((off + 1)) -- "$rdir/$url" | head -c "$len" >"$ZT_TMP/kexp" ;;
      *)
        fail "$rel: key $key has a value this test does not understand"
        continue
        ;;
      esac
      assert_file_eq "$rel: raw key $key ($typ)" "$ZT_TMP/kexp" "$MNT/$key"
    done <"$ZT_TMP/kkeys"
    [ "$nk" -gt 0 ] || fail "$rel: no reference keys found by jq"

    # Arrays: values.txt, wc -l, tail -n 1, stat size, every chunk view.
    fmt=$(jq -r --arg f "$rel" '.files[$f].zarr_format' "$EXPJ")
    jq -r --arg f "$rel" '.files[$f].arrays[].path' "$EXPJ" >"$ZT_TMP/karrays"
    [ -s "$ZT_TMP/karrays" ] || fail "$rel: no arrays in expected_refs.json"
    while IFS= read -r p; do
      jq -r --arg f "$rel" --arg p "$p" '.files[$f].arrays[] | select(.path == $p)
        | (.dtype // .data_type) as $d | .values[]
        | if ($d | test("^[<>|]?f[248]$|^float")) then
            (if . == "NaN" then "nan" elif . == "Infinity" then "inf"
             elif . == "-Infinity" then "-inf" elif . == "-0.0" then "-0" else . end)
          elif type == "string" then gsub("\n"; " ")
          else . end' "$EXPJ" >"$ZT_TMP/kvals"
      n=$(jq -r --arg f "$rel" --arg p "$p" '.files[$f].arrays[] | select(.path == $p) | .values | length' "$EXPJ")
      assert_file_eq "$rel: $p/values.txt" "$ZT_TMP/kvals" "$MNT/$p/values.txt"
      assert_size_matches "$rel: $p/values.txt stat size" "$MNT/$p/values.txt"
      assert_eq "$rel: wc -l $p/values.txt" "$n" "$(t wc -l <"$MNT/$p/values.txt")"
      assert_eq "$rel: tail -n 1 $p/values.txt" "$(tail -n 1 "$ZT_TMP/kvals")" \
        "$(t tail -n 1 -- "$MNT/$p/values.txt")"
      shape=$(jq -r --arg f "$rel" --arg p "$p" '.files[$f].arrays[] | select(.path == $p) | .shape | map(tostring) | join(",")' "$EXPJ")
      if [ "$fmt" = 2 ]; then
        chunks=$(jq -r --arg f "$rel" --arg p "$p" '.files[$f].arrays[] | select(.path == $p) | .chunks | map(tostring) | join(",")' "$EXPJ")
        enc=v2
        sep=$(t jq -r '.dimension_separator // "."' "$MNT/$p/.zarray")
      else
        chunks=$(jq -r --arg f "$rel" --arg p "$p" '.files[$f].arrays[] | select(.path == $p) | .chunk_shape | map(tostring) | join(",")' "$EXPJ")
        enc=$(jq -r --arg f "$rel" --arg p "$p" '.files[$f].arrays[] | select(.path == $p) | .chunk_key_encoding.name' "$EXPJ")
        sep=$(jq -r --arg f "$rel" --arg p "$p" '.files[$f].arrays[] | select(.path == $p) | .chunk_key_encoding.configuration.separator // "/"' "$EXPJ")
      fi
      nviews=0
      while read -r key idx; do
        if [ -e "$MNT/$p/$key" ]; then
          zt_chunk_lines "$shape" "$chunks" "$idx" >"$ZT_TMP/klines"
          zt_select_lines "$ZT_TMP/klines" "$ZT_TMP/kvals" >"$ZT_TMP/kchunk"
          assert_file_eq "$rel: $p/$key.txt" "$ZT_TMP/kchunk" "$MNT/$p/$key.txt"
          nviews=$((nviews + 1))
        elif [ -e "$MNT/$p/$key.txt" ]; then
          fail "$rel: $p/$key.txt exists but its chunk $p/$key does not"
        fi
      done < <(zt_chunk_keys "$shape" "$chunks" "$enc" "$sep")
      [ "$nviews" -gt 0 ] || fail "$rel: $p: no chunk key found on the mount ($enc '$sep')"
    done <"$ZT_TMP/karrays"
    zt_check_log_clean "$ZT_LOG"
    zumount "$MNT"
  done
 done
fi

# ======================================================================
# 2. a VirtualiZarr-style store: chunks at scattered offsets in one blob
# ======================================================================
PLAIN="$ZT_TMP/plain.zarr"
VIRT="$ZT_TMP/virt.zarr"
if ! t "$ZARRFS_MKSTORE" example "$PLAIN" >"$ZT_TMP/mkstore.log" 2>&1; then
  show "$ZT_TMP/mkstore.log"
  zt_hard_error "zarrfs-mkstore example failed"
fi
rm -rf "$PLAIN/EXPECTED"
# A copy of matrix whose virtual zarr.json says `"fill_value": NaN` (bare
# token, as old VirtualiZarr wrote it).
cp -r "$PLAIN/matrix" "$PLAIN/matrix_bare_nan"
# Missing chunks on both sides: names_start c/2 has no manifest entry,
# labels_utf8 c/1 has `"path": ""`.
rm -f "$PLAIN/names_start/c/2" "$PLAIN/labels_utf8/c/1"
EMPTY_PATH="labels_utf8 c/1"
# Inlined chunks: {"path": "__inlined__", "data": base64}.
INLINE="matrix c/0/1|counts 1|names_end c.3"

mkdir -p "$VIRT"
cp "$PLAIN/zarr.json" "$VIRT/zarr.json"
BLOB="$VIRT/blob.bin"
: >"$BLOB"
narr=0
while IFS= read -r zj; do
  d=${zj%/zarr.json}
  a=${d#"$PLAIN/"}
  IFS='|' read -r nt shape chunks enc sep < <(zt_meta "$zj")
  [ "$nt" = array ] || continue
  narr=$((narr + 1))
  mkdir -p "$VIRT/$a"
  add_transformer "$zj" "$VIRT/$a/zarr.json"
  if [ "$a" = matrix_bare_nan ]; then
    sed -i 's/"fill_value": *"NaN"/"fill_value": NaN/' "$VIRT/$a/zarr.json"
    grep -q '"fill_value": NaN' "$VIRT/$a/zarr.json" || zt_hard_error "bare NaN not written"
  fi
  # The path form rotates: relative to the manifest, absolute, file://.
  up=$(printf '%s' "$a" | awk -F/ '{ s = ""; for (i = 1; i <= NF; i++) s = s "../"; printf "%s", s }')
  case $((narr % 3)) in
  0) bpath="${up}blob.bin" ;;
  1) bpath="$BLOB" ;;
  2) bpath="file://$BLOB" ;;
  esac
  {
    echo "{"
    first=1
    while read -r key idx; do
      mkey=${idx//,/.}
      entry=
      if [ "$a $key" = "$EMPTY_PATH" ]; then
        entry='{"path": "", "offset": 0, "length": 0}'
      elif [ -f "$d/$key" ]; then
        case "|$INLINE|" in
        *"|$a $key|"*)
          entry="{\"path\": \"__inlined__\", \"offset\": 0, \"length\": $(stat -c %s "$d/$key"), \"data\": \"$(base64 -w0 "$d/$key")\"}"
          ;;
        *)
          off=$(blob_append "$BLOB" "$d/$key")
          entry="{\"path\": \"$bpath\", \"offset\": $off, \"length\": $(stat -c %s "$d/$key")}"
          ;;
        esac
      fi
      [ -n "$entry" ] || continue
      [ "$first" = 1 ] || echo ","
      first=0
      printf '  "%s": %s' "$mkey" "$entry"
    done < <(zt_chunk_keys "$shape" "$chunks" "$enc" "$sep")
    echo
    echo "}"
  } >"$VIRT/$a/manifest.json"
done < <(find "$PLAIN" -name zarr.json -type f | sort)
head -c 1000 /dev/urandom >>"$BLOB"
[ "$narr" -ge 6 ] || zt_hard_error "example store: only $narr arrays found"
say "virtual store: $narr arrays, blob $(stat -c %s "$BLOB") bytes"

MP=$(zt_mkdir plainmnt)
MV=$(zt_mkdir virtmnt)
if zmount "$PLAIN" "$MP"; then
  if zmount "$VIRT" "$MV"; then
    VLOG=$ZT_LOG
    (cd "$MP" && t find . -mindepth 1 | sort) >"$ZT_TMP/list.plain"
    (cd "$MV" && t find . -mindepth 1 | sort) | grep -v -e '^\./blob\.bin$' -e '/manifest\.json$' \
      >"$ZT_TMP/list.virt"
    assert_file_eq "virtual store lists the same files and views as the plain store" \
      "$ZT_TMP/list.plain" "$ZT_TMP/list.virt"
    grep -q 'names_start/c/0\.txt$' "$ZT_TMP/list.plain" || fail "plain mount lists no chunk views"
    for f in ./names_start/c/2 ./labels_utf8/c/1 ./labels_utf8/c/1.txt; do
      if grep -qxF "$f" "$ZT_TMP/list.virt"; then fail "missing chunk $f is listed"; else pass "missing chunk $f not listed"; fi
    done
    nf=0
    while IFS= read -r f; do
      [ -f "$MP/$f" ] || continue
      nf=$((nf + 1))
      if [ "$(basename "$f")" = zarr.json ] && [ "$f" != ./zarr.json ]; then
        assert_file_eq "virtual: raw $f is the stored zarr.json" "$VIRT/$f" "$MV/$f"
      else
        assert_file_eq "virtual: $f identical" "$MP/$f" "$MV/$f"
      fi
    done <"$ZT_TMP/list.plain"
    say "virtual store: compared $nf files"
    assert_file_eq "virtual: raw manifest.json served as stored" \
      "$VIRT/matrix/manifest.json" "$MV/matrix/manifest.json"
    for v in names_start/values.txt matrix/values.txt labels_utf8/values.txt; do
      assert_size_matches "virtual: stat size of $v" "$MV/$v"
    done
    # Real tools on virtual data.
    assert_eq "virtual: grep -c unknown labels_utf8/values.txt" \
      "$(t grep -c unknown "$MP/labels_utf8/values.txt")" "$(t grep -c unknown "$MV/labels_utf8/values.txt")"
    assert_eq "virtual: tail -n 2 names_end/values.txt" \
      "$(t tail -n 2 "$MP/names_end/values.txt")" "$(t tail -n 2 "$MV/names_end/values.txt")"
    if [ -n "$(log_for "$VLOG" zarrfs)" ]; then
      fail "virtual store: the daemon logged errors:"
      show "$VLOG"
    else
      pass "virtual store: nothing logged"
    fi
    zt_check_log_clean "$VLOG"
    zumount "$MV"
  fi
  zumount "$MP"
fi
rm -rf "$PLAIN" "$VIRT"

# ======================================================================
# 3. partial decoding through a manifest
# ======================================================================
COUNT=32768
STRLEN=2048
LIMIT=$((1024 * 1024))
BIG="$ZT_TMP/big.zarr"
BIGTXT="$ZT_TMP/big.txt"
VBIG="$ZT_TMP/vbig.zarr"
if ! t "$ZARRFS_MKSTORE" bigstrings "$BIG" --count $COUNT --strlen $STRLEN --chunk $COUNT \
  --data none --index end --plain "$BIGTXT" >"$ZT_TMP/mkstore.log" 2>&1; then
  show "$ZT_TMP/mkstore.log"
  zt_hard_error "zarrfs-mkstore bigstrings failed"
fi
chunk=$(cd "$BIG" && find . -type f ! -name zarr.json | sed 's|^\./||' | head -1)
csize=$(stat -c %s "$BIG/$chunk")
mkdir -p "$VBIG/data"
add_transformer "$BIG/zarr.json" "$VBIG/zarr.json"
head -c 4099 /dev/urandom >"$VBIG/data/big.bin"
cat "$BIG/$chunk" >>"$VBIG/data/big.bin"
head -c 777 /dev/urandom >>"$VBIG/data/big.bin"
printf '{"0": {"path": "data/big.bin", "offset": 4099, "length": %s}}\n' "$csize" >"$VBIG/manifest.json"
rm -rf "$BIG"
say "partial: chunk $chunk, $csize bytes, inside data/big.bin at offset 4099"

# measure DESC PID CMD...: run CMD; the daemon's rchar must grow < LIMIT.
measure() {
  local desc=$1 pid=$2 r0 r1
  shift 2
  r0=$(io_field "$pid" rchar)
  "$@"
  r1=$(io_field "$pid" rchar)
  say "$desc: daemon rchar +$((r1 - r0)) bytes (chunk $csize)"
  if [ -z "$r0" ] || [ -z "$r1" ]; then
    fail "$desc: cannot read /proc/$pid/io"
  elif [ $((r1 - r0)) -lt "$LIMIT" ]; then
    pass "$desc: daemon read < 1 MiB"
  else
    fail "$desc: daemon read $((r1 - r0)) bytes (limit $LIMIT): no partial read through the manifest"
  fi
}
check_tail_line() {
  assert_eq "partial: tail -n 1 $1" "$(tail -n 1 "$BIGTXT")" "$(t tail -n 1 -- "$1")"
}
check_head() {
  assert_eq "partial: head -c 100 $1" "$(head -c 100 "$BIGTXT")" "$(t head -c 100 -- "$1")"
}
for view in "$chunk.txt" values.txt; do
  MNT=$(zt_mkdir pmnt)
  zmount "$VBIG" "$MNT" || continue
  measure "partial: cold tail -n 1 of $view" "$ZT_PID" check_tail_line "$MNT/$view"
  measure "partial: head -c 100 of $view" "$ZT_PID" check_head "$MNT/$view"
  if [ "$view" = values.txt ]; then
    assert_eq "partial: stat size of values.txt" "$(stat -c %s "$BIGTXT")" "$(t stat -c %s -- "$MNT/$view")"
    r0=$(io_field "$ZT_PID" rchar)
    assert_file_eq "partial: whole values.txt" "$BIGTXT" "$MNT/values.txt"
    r1=$(io_field "$ZT_PID" rchar)
    if [ $((r1 - r0)) -ge $((csize / 2)) ]; then
      pass "partial: a full read is visible in rchar (+$((r1 - r0)))"
    else
      fail "partial: a full read raised rchar by only $((r1 - r0)): the measurement is blind"
    fi
  fi
  zt_check_log_clean "$ZT_LOG"
  zumount "$MNT"
done
rm -rf "$VBIG" "$BIGTXT"

# ======================================================================
# 4. bad input
# ======================================================================
# Layout: $BAD/store is both a Zarr V3 store (one array per case, each with
# a manifest) and the home of refs.json (one V2 array per case). Chunk 0 of
# every array is good; chunk 1 carries the case. Targets: store/blob.bin
# (16 bytes A..P), $BAD/outside/blob.bin (outside every default root) and
# store/link.bin, a symbolic link to it.
BAD="$ZT_TMP/bad"
# s3:// and gs:// targets go to a dead local endpoint (no network here, and
# no wait on a name lookup).
export AWS_ENDPOINT_URL=http://127.0.0.1:1 CPL_GS_ENDPOINT=http://127.0.0.1:1
BS="$BAD/store"
OUT="$BAD/outside"
mkdir -p "$BS" "$OUT"
printf 'ABCDEFGHIJKLMNOP' >"$BS/blob.bin"
printf 'abcdefghijklmnop' >"$OUT/blob.bin"
ln -s ../outside/blob.bin "$BS/link.bin"
OUTREAL=$(cd "$OUT" && pwd -P)/blob.bin

# The case table: NAME | chunk 1 reference, kerchunk form, with @ for the
# relative prefix | the same as a manifest entry | what the log line must
# contain (extended regex) | "allow" when -o allow_root=$OUT must make it read
# (as the outside bytes e..h).
CASES="$ZT_TMP/cases"
cat >"$CASES" <<'EOF'
past_end|["@blob.bin", 10, 10]|{"path": "@blob.bin", "offset": 10, "length": 10}|blob\.bin|
offset_negative|["@blob.bin", -4, 4]|{"path": "@blob.bin", "offset": -4, "length": 4}|offset|
length_negative|["@blob.bin", 4, -4]|{"path": "@blob.bin", "offset": 4, "length": -4}|length|
offset_fraction|["@blob.bin", 1.5, 4]|{"path": "@blob.bin", "offset": 1.5, "length": 4}|offset|
length_string|["@blob.bin", 4, "4"]|{"path": "@blob.bin", "offset": 4, "length": "4"}|length|
missing_target|["@nope.bin", 4, 4]|{"path": "@nope.bin", "offset": 4, "length": 4}|nope\.bin|
escape_dotdot|["@../outside/blob.bin", 4, 4]|{"path": "@../outside/blob.bin", "offset": 4, "length": 4}|target_root|allow
escape_symlink|["@link.bin", 4, 4]|{"path": "@link.bin", "offset": 4, "length": 4}|target_root|allow
escape_whole|["@../outside/blob.bin"]|{"path": "@../outside/blob.bin", "offset": 0, "length": 16}|target_root|
remote_https|["https://127.0.0.1:1/data.bin", 4, 4]|{"path": "https://127.0.0.1:1/data.bin", "offset": 4, "length": 4}|127\.0\.0\.1:1/data\.bin.*connect to server|
remote_http_whole|["http://127.0.0.1:1/data.bin"]|{"path": "http://127.0.0.1:1/data.bin", "offset": 0, "length": 4}|127\.0\.0\.1:1/data\.bin.*connect to server|
remote_s3|["s3://bucket/data.bin", 4, 4]|{"path": "s3://bucket/data.bin", "offset": 4, "length": 4}|s3://bucket/data\.bin.*connect to server|
remote_gs|["gs://bucket/data.bin", 4, 4]|{"path": "gs://bucket/data.bin", "offset": 4, "length": 4}|gs://bucket/data\.bin.*connect to server|
remote_ftp|["ftp://127.0.0.1:1/data.bin", 4, 4]|{"path": "ftp://127.0.0.1:1/data.bin", "offset": 4, "length": 4}|not an http://, https://, s3://, gs:// or az:// URL|
EOF

ZARRAY='{"chunks": [4], "compressor": null, "dtype": "|u1", "fill_value": 0, "filters": null, "order": "C", "shape": [8], "zarr_format": 2}'
zarray_str() { printf '%s' "$ZARRAY" | sed 's/"/\\"/g'; }
v3_array() {
  mkdir -p "$BS/$1"
  cat >"$BS/$1/zarr.json" <<'EOF'
{"zarr_format": 3, "node_type": "array", "shape": [8], "data_type": "uint8",
 "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
 "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
 "fill_value": 0, "codecs": [{"name": "bytes"}],
 "storage_transformers": [{"name": "chunk-manifest-json", "configuration": {"manifest": "./manifest.json"}}]}
EOF
}

# The V3 side.
echo '{"zarr_format": 3, "node_type": "group", "attributes": {}}' >"$BS/zarr.json"
v3_array good
printf '{"0": {"path": "../blob.bin", "offset": 0, "length": 4}, "1": {"path": "../blob.bin", "offset": 4, "length": 4}}\n' \
  >"$BS/good/manifest.json"
while IFS='|' read -r name kref mref logre allow; do
  v3_array "$name"
  printf '{"0": {"path": "../blob.bin", "offset": 0, "length": 4},\n "1": %s}\n' "${mref//@/../}" \
    >"$BS/$name/manifest.json"
done <"$CASES"
v3_array notjson
printf '{"0": {"path": "../blob.bin", "offset": 0, "length": 4},\n "1": {"path": ' >"$BS/notjson/manifest.json"
v3_array dupkey
printf '{"0": {"path": "../blob.bin", "offset": 0, "length": 4},\n "1": {"path": "../blob.bin", "offset": 4, "length": 4},\n "1": {"path": "../blob.bin", "offset": 8, "length": 4}}\n' \
  >"$BS/dupkey/manifest.json"

# The kerchunk side (separate files for the whole-file cases).
{
  printf '{"version": 1, "refs": {\n  ".zgroup": "{\\"zarr_format\\": 2}",\n'
  printf '  "good/.zarray": "%s",\n  "good/0": ["blob.bin", 0, 4],\n  "good/1": ["blob.bin", 4, 4]' "$(zarray_str)"
  while IFS='|' read -r name kref mref logre allow; do
    printf ',\n  "%s/.zarray": "%s",\n  "%s/0": ["blob.bin", 0, 4],\n  "%s/1": %s' \
      "$name" "$(zarray_str)" "$name" "$name" "${kref//@/}"
  done <"$CASES"
  printf '\n}}\n'
} >"$BS/refs.json"
printf '{"version": 1, "refs": {".zgroup": "{\\"zarr_format\\": 2}", "a/.zarray": "%s",\n' "$(zarray_str)" >"$BS/notjson.json"
printf '{"version": 1, "refs": {".zgroup": "{\\"zarr_format\\": 2}", "dupkey/.zarray": "%s",\n "dupkey/0": ["blob.bin", 0, 4], "dupkey/1": ["blob.bin", 4, 4], "dupkey/1": ["blob.bin", 8, 4]}}\n' \
  "$(zarray_str)" >"$BS/dupkey.json"

# bad_case KIND LOG MNT NAME KEY1 LOGRE: chunk 1 fails with EIO and the log
# names the array with LOGRE in the line.
bad_case() {
  local kind=$1 log=$2 mnt=$3 name=$4 key1=$5 logre=$6
  assert_fails_with_eio "$kind $name: $key1 fails with EIO" "$mnt/$name/$key1"
  if log_for "$log" "$name/" | grep -qE -- "$logre"; then
    pass "$kind $name: log line names the key and says /$logre/"
  else
    fail "$kind $name: no log line naming $name/ matching /$logre/; lines naming it:"
    log_for "$log" "$name/" | show
  fi
  assert_fails_with_eio "$kind $name: values.txt fails with EIO" "$mnt/$name/values.txt"
  # Informational: is the good chunk 0 of the same array still served?
  if t cat -- "$mnt/$name/${key1%1}0" >/dev/null 2>&1; then
    say "$kind $name: chunk 0 of the same array still reads"
  else
    say "$kind $name: chunk 0 of the same array fails too (the whole table was refused)"
  fi
}

# still_serving KIND MNT KEY0 KEY1: the good array reads, the daemon lives.
still_serving() {
  printf 'ABCD' >"$ZT_TMP/good0"
  assert_file_eq "$1: good/$3 still reads" "$ZT_TMP/good0" "$2/good/$3"
  assert_output_eq "$1: good/values.txt still reads" $'65\n66\n67\n68\n69\n70\n71\n72\n' \
    cat "$2/good/values.txt"
}

# check_allowed KIND SRC KEY1: with -o allow_root=$OUT the escape cases read
# the outside bytes e..h.
check_allowed() {
  local kind=$1 src=$2 key1=$3 name
  local mnt
  mnt=$(zt_mkdir amnt)
  zmount "$src" "$mnt" -o allow_root="$OUT" -o retries=0 || return
  printf 'efgh' >"$ZT_TMP/efgh"
  while IFS='|' read -r name kref mref logre allow; do
    [ "$allow" = allow ] || continue
    assert_file_eq "$kind $name: reads with -o allow_root" "$ZT_TMP/efgh" "$mnt/$name/$key1"
  done <"$CASES"
  # Still refused: remote targets, and what stays outside.
  assert_fails_with_eio "$kind remote_s3 still EIO with allow_root" "$mnt/remote_s3/$key1"
  still_serving "$kind (allow_root)" "$mnt" "${key1%1}0"
  zt_check_log_clean "$ZT_LOG"
  zumount "$mnt"
}

# -- manifests --
MNT=$(zt_mkdir bmnt)
if zmount "$BS" "$MNT" -o retries=0; then
  BLOG=$ZT_LOG
  still_serving "manifest" "$MNT" c/0
  while IFS='|' read -r name kref mref logre allow; do
    bad_case manifest "$BLOG" "$MNT" "$name" c/1 "$logre"
    case $logre in allow_root)
      if log_for "$BLOG" "$name/" | grep -qF -- "$OUTREAL"; then
        pass "manifest $name: log names the refused path $OUTREAL"
      else
        fail "manifest $name: log does not name the refused path $OUTREAL"
        log_for "$BLOG" "$name/" | show
      fi
      ;;
    esac
  done <"$CASES"
  t ls "$MNT/remote_gs/c" >"$ZT_TMP/ls.remote" 2>&1
  if grep -qx 1 "$ZT_TMP/ls.remote"; then pass "manifest: a remote chunk is listed"; else
    fail "manifest: remote chunk c/1 not listed:"
    show "$ZT_TMP/ls.remote"
  fi
  bad_case manifest "$BLOG" "$MNT" notjson c/1 'manifest|JSON|json'
  bad_case manifest "$BLOG" "$MNT" dupkey c/1 '[Dd]uplicate'
  still_serving "manifest (after the bad input)" "$MNT" c/0
  if kill -0 "$ZT_PID" 2>/dev/null; then pass "manifest: daemon alive after the bad input"; else fail "manifest: daemon died"; fi
  zt_check_log_clean "$BLOG"
  zumount "$MNT"
fi
check_allowed manifest "$BS" c/1

# -- kerchunk --
MNT=$(zt_mkdir kbmnt)
if zmount "$BS/refs.json" "$MNT" -o retries=0; then
  KLOG=$ZT_LOG
  still_serving "kerchunk" "$MNT" 0
  while IFS='|' read -r name kref mref logre allow; do
    bad_case kerchunk "$KLOG" "$MNT" "$name" 1 "$logre"
  done <"$CASES"
  t ls "$MNT/remote_gs" >"$ZT_TMP/ls.remote" 2>&1
  if grep -qx 1 "$ZT_TMP/ls.remote"; then pass "kerchunk: a remote key is listed"; else
    fail "kerchunk: remote key remote_gs/1 not listed:"
    show "$ZT_TMP/ls.remote"
  fi
  still_serving "kerchunk (after the bad input)" "$MNT" 0
  zt_check_log_clean "$KLOG"
  zumount "$MNT"
fi
check_allowed kerchunk "$BS/refs.json" 1

# A reference file that is not JSON, or has a duplicate key: refused at
# mount time (exit 1, one line naming the problem), or, for the duplicate,
# the key fails with EIO and the log says so.
MNT=$(zt_mkdir njmnt)
t "$ZARRFS_BIN" "$BS/notjson.json" "$MNT" >"$ZT_TMP/nj.out" 2>"$ZT_TMP/nj.err"
rc=$?
if zt_is_mounted "$MNT"; then
  fail "kerchunk: a reference file that is not JSON mounted"
  timeout 10 fusermount3 -u "$MNT"
elif [ "$rc" = 1 ] && grep -q '^zarrfs: .*notjson\.json' "$ZT_TMP/nj.err"; then
  pass "kerchunk: not JSON: refused with exit 1 and a line naming the file"
else
  fail "kerchunk: not JSON: exit $rc (expected 1 and a 'zarrfs: ...notjson.json...' line)"
  show "$ZT_TMP/nj.err"
fi
MNT=$(zt_mkdir dupmnt)
t "$ZARRFS_BIN" "$BS/dupkey.json" "$MNT" >"$ZT_TMP/dup.out" 2>"$ZT_TMP/dup.err"
rc=$?
if zt_is_mounted "$MNT"; then
  timeout 10 fusermount3 -u "$MNT"
  if zmount "$BS/dupkey.json" "$MNT"; then
    bad_case kerchunk "$ZT_LOG" "$MNT" dupkey 1 '[Dd]uplicate'
    zumount "$MNT"
  fi
elif [ "$rc" = 1 ] && grep -q '^zarrfs: .*[Dd]uplicate' "$ZT_TMP/dup.err"; then
  pass "kerchunk: duplicate key: refused with exit 1 and a line saying so"
else
  fail "kerchunk: duplicate key: exit $rc, no 'duplicate' line"
  show "$ZT_TMP/dup.err"
fi

finish
