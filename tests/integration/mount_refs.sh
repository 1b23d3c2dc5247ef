#!/bin/bash
# mount_refs.sh - kerchunk reference files through the real daemon:
# kerchunk references the tests make (tests/writers/own_fixtures.py) and,
# when present, the third-party kerchunk fixtures mount and read with
# ls/cat/stat/wc/grep/tail (the three equivalent spellings v0, v1 and
# v1+templates give identical views; raw keys are exactly the referenced
# bytes, inline text and base64 included; absent chunks read as fill); a generated reference file
# whose zarrs.vlen chunk sits inside a blob serves the same text as the
# plain store and a small `tail` reads only the index and the end (daemon
# rchar); bad references (past the end, negative, non-integer, missing
# target, escaping through `..`, a symlink and an absolute path, a remote
# target on a dead server)
# each fail with EIO and a log line while the rest keeps serving;
# `-o allow_root=DIR` lets the escaping ones read. VirtualiZarr: the example
# store with every chunk moved into one blob at scattered offsets behind
# per-array manifest.json files (one chunk inlined, one entry marked missing)
# serves the same raw keys and views; a manifest that is not JSON or holds a
# negative offset fails only its array.
. "$(dirname "$0")/lib.sh"
zt_require_mkstore

# out_eq DESC EXPECTED CMD...: CMD's output, trailing newlines dropped.
out_eq() {
  local desc=$1 exp=$2 got
  shift 2
  if ! got=$(t "$@" 2>"$ZT_TMP/out.err"); then
    fail "$desc: '$*' failed"; show "$ZT_TMP/out.err"; return 1
  fi
  assert_eq "$desc" "$exp" "$got"
}
io_field() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/io"; }
# save_views NAME MNT: every values.txt of MNT into $ZT_TMP/views/NAME/.
save_views() {
  mkdir -p "$ZT_TMP/views/$1"
  (cd "$2" && for f in */values.txt; do t cat "$f" >"$ZT_TMP/views/$1/${f%%/*}.txt" || echo "cat $f failed"; done) >"$ZT_TMP/cat.err"
  assert_eq "$1: every values.txt reads" "" "$(cat "$ZT_TMP/cat.err")"
}
# same_views BASE NAME...: each NAME's saved views equal BASE's.
same_views() {
  local base=$1 r
  shift
  for r in "$@"; do
    if diff -r "$ZT_TMP/views/$base" "$ZT_TMP/views/$r" >"$ZT_TMP/diff" 2>&1; then
      pass "$r: views identical to $base's"
    else
      fail "$r: views differ from $base's"; show "$ZT_TMP/diff"
    fi
  done
}

# ---- the tests' own kerchunk references (tests/writers/own_fixtures.py) ----

if ! zt_own_fixtures; then
  zt_skip_part "own fixtures not made ($(tail -1 "$ZT_TMP/own-fixtures.log")): the own kerchunk references"
elif ! command -v jq >/dev/null 2>&1; then
  zt_skip_part "jq missing: the own kerchunk references"
else
  K=$OWN/kerchunk/refs
  # refv FILE KEY: the reference of KEY in FILE, as jq prints it.
  refv() { jq -c --arg k "$2" '(if has("version") then .refs else . end)[$k]' "$1"; }
  # The three spellings of one table: version 1 with a template, without,
  # and version 0.
  for r in v1 v1_plain v0_same; do
    MNT=$(zt_mkdir "own_$r")
    zmount "$K/$r.json" "$MNT" || continue
    out_eq "own $r: ls of the root" "a f info.txt" \
      sh -c "cd '$MNT' && ls | tr '\n' ' ' | sed 's/ \$//'"
    read -r off len < <(refv "$K/$r.json" a/0 | jq -r '"\(.[1]) \(.[2])"')
    tail -c +$((off + 1)) "$K/blob.bin" | head -c "$len" >"$ZT_TMP/a0"
    assert_file_eq "own $r: raw range key a/0 is the referenced bytes" "$ZT_TMP/a0" "$MNT/a/0"
    out_eq "own $r: stat of a range key" "$len" stat -c %s "$MNT/a/0"
    refv "$K/$r.json" a/1 | jq -r '.[7:]' | base64 -d >"$ZT_TMP/a1"
    assert_file_eq "own $r: inline base64 key a/1 is its bytes" "$ZT_TMP/a1" "$MNT/a/1"
    jq -r '.files["refs/v1.json"].arrays[] | select(.path == "a") | .values[]' \
      "$OWN/kerchunk/expected_refs.json" >"$ZT_TMP/a.exp"
    assert_file_eq "own $r: a/values.txt (a range, a base64 and a templated chunk)" "$ZT_TMP/a.exp" "$MNT/a/values.txt"
    out_eq "own $r: f/values.txt (zlib) has 8 lines" 8 sh -c "wc -l <'$MNT/f/values.txt'"
    save_views "own_$r" "$MNT"
    zumount "$MNT"
  done
  same_views own_v1 own_v1_plain own_v0_same
  MNT=$(zt_mkdir own_whole)
  if zmount "$K/whole.json" "$MNT"; then
    assert_file_eq "own whole: whole-file key c/0" "$K/chunk_c0" "$MNT/c/0"
    out_eq "own whole: c/values.txt, chunk 1 absent reads as fill" "9 8 7 -1 -1" \
      sh -c "cat '$MNT/c/values.txt' | tr '\n' ' ' | sed 's/ \$//'"
    assert_eq "own whole: absent chunk has no raw key" missing "$([ -e "$MNT/c/1" ] && echo present || echo missing)"
    zumount "$MNT"
  fi
  MNT=$(zt_mkdir own_v0)
  if zmount "$K/v0.json" "$MNT"; then
    out_eq "own v0: inline text, an absent chunk (fill 7), a range" "1 2 7 7 5 6" \
      sh -c "cat '$MNT/b/values.txt' | tr '\n' ' ' | sed 's/ \$//'"
    printf '\001\002' >"$ZT_TMP/b0"
    assert_file_eq "own v0: inline text key b/0 is its bytes" "$ZT_TMP/b0" "$MNT/b/0"
    assert_eq "own v0: absent chunk has no raw key" missing "$([ -e "$MNT/b/1" ] && echo present || echo missing)"
    zumount "$MNT"
  fi
fi

# ---- the third-party kerchunk fixtures (an extra layer when there) ----

if zt_third_party_fixtures && [ -d "$FIX/kerchunk/refs" ]; then
  K=$FIX/kerchunk/refs
  for r in refs_v0 refs_v1 refs_v1_templates; do
    MNT=$(zt_mkdir "$r")
    zmount "$K/$r.json" "$MNT" || continue
    out_eq "$r: ls of the root" "f8_mixed info.txt inline_text_u1 nested_slash strings_vlen zlib_i4" \
      sh -c "cd '$MNT' && ls | tr '\n' ' ' | sed 's/ \$//'"
    tail -c +28 "$K/blob.bin" | head -c 805 >"$ZT_TMP/zlib00"
    assert_file_eq "$r: raw range key zlib_i4/0.0 is the referenced bytes" "$ZT_TMP/zlib00" "$MNT/zlib_i4/0.0"
    out_eq "$r: stat of a range key" 805 stat -c %s "$MNT/zlib_i4/0.0"
    assert_file_eq "$r: whole-file key f8_mixed/2" "$K/whole_chunk.bin" "$MNT/f8_mixed/2"
    out_eq "$r: values.txt of 48x40 int32 has 1920 lines" 1920 sh -c "wc -l <'$MNT/zlib_i4/values.txt'"
    out_eq "$r: f8_mixed: 37 lines, chunk 3 absent reads as fill" "37 0" \
      sh -c "echo \$(wc -l <'$MNT/f8_mixed/values.txt') \$(tail -n 1 '$MNT/f8_mixed/values.txt')"
    assert_eq "$r: absent chunk has no raw key" missing "$([ -e "$MNT/f8_mixed/3" ] && echo present || echo missing)"
    save_views "$r" "$MNT"
    zumount "$MNT"
  done
  same_views refs_v0 refs_v1 refs_v1_templates
  MNT=$(zt_mkdir gen)
  if zmount "$K/refs_v1_gen.json" "$MNT"; then
    out_eq "gen: four generated chunk keys" "0 1 2 3" \
      sh -c "cd '$MNT/gen_i4' && ls | grep -v txt | sort -n | tr '\n' ' ' | sed 's/ \$//'"
    out_eq "gen: 37 values" 37 sh -c "wc -l <'$MNT/gen_i4/values.txt'"
    zumount "$MNT"
  fi
  MNT=$(zt_mkdir v3)
  if zmount "$K/refs_v3.json" "$MNT"; then
    out_eq "v3 references: 13x17 uint32 values" 221 sh -c "wc -l <'$MNT/crc_zstd_u4/values.txt'"
    zumount "$MNT"
  fi
fi

# ---- a zarrs.vlen chunk inside a blob, partial reads through it ----

SRC=$ZT_TMP/big
PLAIN=$ZT_TMP/big.txt
t "$ZARRFS_MKSTORE" bigstrings "$SRC" --count 32768 --strlen 2048 --chunk 32768 \
  --data none --index start --plain "$PLAIN" >"$ZT_TMP/mkstore.log" 2>&1 ||
  { show "$ZT_TMP/mkstore.log"; zt_hard_error "zarrfs-mkstore bigstrings failed"; }
chunk=$(cd "$SRC" && find . -type f ! -name zarr.json | sed 's|^\./||' | head -1)
R=$ZT_TMP/refs
mkdir -p "$R"
head -c 4096 /dev/urandom >"$R/blob.bin"
cat "$SRC/$chunk" >>"$R/blob.bin"
head -c 100 /dev/urandom >>"$R/blob.bin"
cp "$SRC/zarr.json" "$R/meta.json"
CSIZE=$(stat -c %s "$SRC/$chunk")
printf '{"version": 1, "refs": {"zarr.json": ["meta.json"], "%s": ["blob.bin", 4096, %s]}}\n' "$chunk" "$CSIZE" >"$R/refs.json"
MNT=$(zt_mkdir big)
if zmount "$R/refs.json" "$MNT"; then
  assert_file_eq "big: raw chunk through the reference" "$SRC/$chunk" "$MNT/$chunk"
  r0=$(io_field "$ZT_PID" rchar)
  t tail -c 200 "$MNT/$chunk.txt" >"$ZT_TMP/tail.got"
  r1=$(io_field "$ZT_PID" rchar)
  tail -c 200 "$PLAIN" >"$ZT_TMP/tail.exp"
  assert_file_eq "big: tail of the view" "$ZT_TMP/tail.exp" "$ZT_TMP/tail.got"
  say "big: stat + tail -c 200 of a $CSIZE-byte chunk through a reference: daemon rchar +$((r1 - r0))"
  if [ $((r1 - r0)) -lt $((CSIZE / 16)) ]; then
    pass "big: partial read through the reference"
  else
    fail "big: tail read $((r1 - r0)) bytes of a $CSIZE-byte chunk"
  fi
  assert_file_eq "big: values.txt equals the plain text" "$PLAIN" "$MNT/values.txt"
  zumount "$MNT"
fi

# ---- bad references ----

B=$ZT_TMP/bad
mkdir -p "$B/in" "$B/out"
printf '0123456789' >"$B/in/blob.bin"
printf 'SECRET' >"$B/out/secret.bin"
ln -s "$B/out/secret.bin" "$B/in/link.bin"
cat >"$B/in/refs.json" <<JSON
{"version": 1, "refs": {
 "good": ["blob.bin", 2, 3],
 "past": ["blob.bin", 8, 3],
 "neg": ["blob.bin", -1, 3],
 "frac": ["blob.bin", 0, 1.5],
 "gone": ["nothere.bin", 0, 1],
 "dotdot": ["../out/secret.bin", 0, 6],
 "symlink": ["link.bin", 0, 6],
 "absolute": ["$B/out/secret.bin", 0, 6],
 "remote": ["http://127.0.0.1:1/x.bin", 0, 6]
}}
JSON
MNT=$(zt_mkdir bad)
if zmount "$B/in/refs.json" "$MNT" -o retries=0; then
  for k in past neg frac gone dotdot symlink absolute remote; do
    assert_fails_with_eio "bad reference '$k': EIO" "$MNT/$k"
  done
  out_eq "the good key still reads" 234 cat "$MNT/good"
  for pat in "runs past the end" "non-negative integers" "nothere.bin" "target_root" "127.0.0.1:1/x.bin.*connect to server"; do
    if grep -qE -- "$pat" "$ZT_LOG"; then pass "log says '$pat'"; else fail "log lacks '$pat'"; show "$ZT_LOG"; fi
  done
  if grep -q SECRET "$ZT_TMP/eio.out" 2>/dev/null; then fail "escaping reference served bytes"; fi
  zumount "$MNT"
fi
MNT=$(zt_mkdir allowed)
if zmount "$B/in/refs.json" "$MNT" -o target_root="$B/out"; then
  for k in dotdot symlink absolute; do
    out_eq "-o target_root: '$k' reads" SECRET cat "$MNT/$k"
  done
  zumount "$MNT"
fi
printf '{"version": 1, "refs": ' >"$B/in/notjson.json"
if "$ZARRFS_BIN" -f "$B/in/notjson.json" "$MNT" 2>"$ZT_TMP/nj.err"; then
  fail "a reference file that is not JSON mounted"
  zumount "$MNT"
else
  out_eq "not JSON: one line naming the file" 1 sh -c "grep -c 'not a kerchunk reference file' '$ZT_TMP/nj.err'"
fi

# ---- VirtualiZarr chunk manifests: the example store, virtualised ----

EX=$ZARRFS_SRCDIR/examples/example.zarr
V=$ZT_TMP/virtual
mkdir -p "$V/data"
cp "$EX/zarr.json" "$V/"
: >"$V/data/blob.bin"
inlined=
for arr in counts flags labels_utf8 matrix names_end names_start obs_names_sharded; do
  mkdir -p "$V/$arr"
  sed '0,/{/s//{"storage_transformers": [{"name": "chunk-manifest-json", "configuration": {"manifest": ".\/manifest.json"}}],/' \
    "$EX/$arr/zarr.json" >"$V/$arr/zarr.json"
  {
    printf '{'
    sepc=
    for f in $(cd "$EX/$arr" && find . -type f ! -name zarr.json | sed 's|^\./||' | sort); do
      mkey=$(printf '%s' "$f" | sed 's|^c[./]||; s|[./]|.|g')
      if [ -z "$inlined" ]; then
        inlined=$arr/$f
        printf '%s"%s": {"path": "__inlined__", "data": "%s"}' "$sepc" "$mkey" "$(base64 -w0 <"$EX/$arr/$f")"
      else
        head -c $((RANDOM % 977 + 1)) /dev/urandom >>"$V/data/blob.bin"
        off=$(stat -c %s "$V/data/blob.bin")
        cat "$EX/$arr/$f" >>"$V/data/blob.bin"
        printf '%s"%s": {"path": "../data/blob.bin", "offset": %s, "length": %s}' "$sepc" "$mkey" "$off" "$(stat -c %s "$EX/$arr/$f")"
      fi
      sepc=', '
    done
    [ "$arr" = labels_utf8 ] && printf '%s"99": {"path": "", "offset": 0, "length": 0}' "$sepc"
    printf '}\n'
  } >"$V/$arr/manifest.json"
done
MNT=$(zt_mkdir vplain)
MNT2=$(zt_mkdir virtual)
if zmount "$EX" "$MNT"; then
  if zmount "$V" "$MNT2"; then
    for arr in counts flags labels_utf8 matrix names_end names_start obs_names_sharded; do
      assert_file_eq "virtual $arr: values.txt" "$MNT/$arr/values.txt" "$MNT2/$arr/values.txt"
      for f in $(cd "$EX/$arr" && find . -type f ! -name zarr.json | sed 's|^\./||'); do
        assert_file_eq "virtual $arr/$f: raw key" "$EX/$arr/$f" "$MNT2/$arr/$f"
        assert_file_eq "virtual $arr/$f.txt: chunk view" "$MNT/$arr/$f.txt" "$MNT2/$arr/$f.txt"
      done
    done
    out_eq "virtual: ls of an array lists its chunk tree" "c info.txt manifest.json values.txt zarr.json" \
      sh -c "cd '$MNT2/names_start' && ls | tr '\n' ' ' | sed 's/ \$//'"
    say "virtual: inlined chunk $inlined"
    zumount "$MNT2"
  fi
  zumount "$MNT"
fi
# Bad manifests: one array's manifest is not JSON, one entry is negative;
# the other arrays keep serving.
printf '{"0": ' >"$V/counts/manifest.json"
sed -i 's/"offset": [0-9]*/"offset": -5/' "$V/flags/manifest.json"
MNT2=$(zt_mkdir vbad)
if zmount "$V" "$MNT2"; then
  assert_fails_with_eio "manifest not JSON: values.txt EIO" "$MNT2/counts/values.txt"
  assert_fails_with_eio "negative offset: values.txt EIO" "$MNT2/flags/values.txt"
  out_eq "other arrays still serve" "$(wc -l <"$EX/EXPECTED/matrix.txt")" sh -c "wc -l <'$MNT2/matrix/values.txt'"
  for pat in "not valid JSON" "non-negative integers"; do
    if grep -q -- "$pat" "$ZT_LOG"; then pass "log says '$pat'"; else fail "log lacks '$pat'"; show "$ZT_LOG"; fi
  done
  zumount "$MNT2"
fi

finish
