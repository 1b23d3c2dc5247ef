#!/bin/bash
# mount_index_trust.sh - the persistent size index (-o index_cache)
# trusts nothing it did not check, through real mounts (issue 32, items 3
# and 5):
#   1. a directory writable by others, or owned by another user, or under
#      a directory others may write, is refused (one log line naming it
#      and why); the mount works without it and writes nothing there;
#   2. an index file replaced by a symbolic link is never written
#      through: the link's target is left as it was, one log line says so;
#   3. a compaction never writes through a link planted where its temp
#      file would be (the names older builds used are planted);
#   4. a chunk replaced by other values of the same size with its mtime
#      kept (cp --preserve=timestamps: same inode, same size, same mtime)
#      gives its new text, not the old record's;
#   5. a kerchunk target rewritten in place (its mtime kept, the
#      reference file untouched) gives its new text;
#   6. a record that lies (its text size changed in the index file, CRC
#      made good) never cuts nor pads a text: `stat` first says the
#      claimed size, then `cat` of values.txt and of the chunk's view give
#      the whole exact text (longer or shorter than claimed), one log
#      line names the chunk, and stat then says the true size.
. "$(dirname "$0")/lib.sh"
zt_require_mkstore

MNT=$(zt_mkdir mnt)
D=$(zt_mkdir stores)
have_py=0
command -v python3 >/dev/null 2>&1 && have_py=1

# mk_store DIR N: a V2 group with an int32 array t of N chunks of 4
# elements, uncompressed (a chunk is 16 bytes: the caller writes them).
mk_store() {
  mkdir -p "$1/t"
  printf '{"zarr_format": 2}' >"$1/.zgroup"
  printf '{"zarr_format": 2, "shape": [%d], "chunks": [4], "dtype": "<i4", "compressor": null, "filters": null, "fill_value": 0, "order": "C"}' \
    $(($2 * 4)) >"$1/t/.zarray"
}
# le4 A B C D: four int32 little-endian.
le4() {
  local v
  for v in "$@"; do
    printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((v & 255)) $(((v >> 8) & 255)) \
      $(((v >> 16) & 255)) $(((v >> 24) & 255)))"
  done
}
# text A B C D...: the values.txt of those values.
text() { printf '%s\n' "$@"; }

# ---- 1. directories that are not safe ----
S1=$D/one.zarr
mk_store "$S1" 1
le4 1 2 3 4 >"$S1/t/0"
text 1 2 3 4 >"$ZT_TMP/one.txt"
# check_refused DESC DIR WHY: a mount with index_cache=DIR serves the
# exact text, says DIR and WHY in its log and writes nothing in DIR.
check_refused() {
  local desc=$1 dir=$2 why=$3
  if zmount "$S1" "$MNT" -o index_cache="$dir"; then
    assert_file_eq "$desc: exact text without the index" "$ZT_TMP/one.txt" "$MNT/t/values.txt"
    zumount "$MNT"
    if grep -F "$dir" "$ZT_LOG" | grep -q "$why"; then
      pass "$desc: refused, the log names it and why"
    else
      fail "$desc: no log line naming $dir and '$why'"
      show "$ZT_LOG"
    fi
    if [ -z "$(find "$dir" -name 'lx*' 2>/dev/null | head -1)" ]; then
      pass "$desc: nothing written there"
    else
      fail "$desc: index files written:"
      find "$dir" -name 'lx*' | show
    fi
  fi
}
W=$ZT_TMP/open
mkdir -p "$W"
chmod 0777 "$W"
check_refused "index directory mode 0777" "$W" "writable by group or others"
O=$ZT_TMP/theirs
mkdir -p "$O"
if [ "$(id -u)" = 0 ]; then
  chown 54321 "$O" && chmod 0700 "$O"
  check_refused "index directory of another user" "$O" "owned by uid 54321"
else
  zt_skip_part "not root: the directory of another user"
fi
P=$ZT_TMP/openparent
mkdir -p "$P/idx"
chmod 0777 "$P"
chmod 0700 "$P/idx"
check_refused "index directory under one others may write" "$P/idx" "writable by others"

# ---- 2. a planted symbolic link in place of the index file ----
I2=$(zt_mkdir idx2)
if zmount "$S1" "$MNT" -o index_cache="$I2"; then
  t stat -c %s "$MNT/t/values.txt" >/dev/null
  zumount "$MNT"
fi
f=$(find "$I2" -name 'lx*.idx' | head -1)
if [ -z "$f" ]; then
  fail "symbolic link: the first mount wrote no index file"
else
  printf 'precious\n' >"$ZT_TMP/victim"
  rm -f "$f"
  ln -s "$ZT_TMP/victim" "$f"
  mkdir -p "$S1/u" # another array: records to store
  cp "$S1/t/.zarray" "$S1/u/.zarray"
  le4 5 6 7 8 >"$S1/u/0"
  if zmount "$S1" "$MNT" -o index_cache="$I2"; then
    assert_eq "symbolic link: the text all the same" "$(text 5 6 7 8)" "$(t cat "$MNT/u/values.txt")"
    t stat -c %s "$MNT/t/values.txt" "$MNT/u/values.txt" >/dev/null
    zumount "$MNT"
    assert_eq "symbolic link: its target untouched" "precious" "$(cat "$ZT_TMP/victim")"
    if grep -F "$f" "$ZT_LOG" | grep -q "symbolic link"; then
      pass "symbolic link: one log line names it"
    else
      fail "symbolic link: no log line naming $f"
      show "$ZT_LOG"
    fi
    [ -L "$f" ] && pass "symbolic link: left where it is" ||
      fail "symbolic link: removed or replaced"
  fi
fi

# ---- 3. links planted where a compaction's temp file would be ----
S3=$D/many.zarr
if ! t "$ZARRFS_MKSTORE" numeric "$S3" --shape 12000 --chunk 4 --codec none \
  --plain "$ZT_TMP/many.txt" >"$ZT_TMP/mk3.log" 2>&1; then
  show "$ZT_TMP/mk3.log"
  zt_hard_error "zarrfs-mkstore numeric failed"
fi
probe=$(zt_mkdir probe)
if zmount "$S3" "$MNT" -o index_cache="$probe"; then
  t stat -c %s "$MNT/c/0.txt" >/dev/null
  zumount "$MNT"
fi
name=$(find "$probe" -name 'lx*.idx' -printf '%f\n' | head -1)
hash=${name#*-}
hash=${hash%.idx}
I3=$(zt_mkdir idx3)
printf 'precious\n' >"$ZT_TMP/victim3"
if [ -z "$name" ]; then
  fail "compaction: no index file to learn the store's hash from"
elif zmount "$S3" "$MNT" -o index_cache="$I3" -o index_cache_size=64K; then
  for p in lx lx2; do # the names of format 1 and 2, with the daemon's pid
    ln -s "$ZT_TMP/victim3" "$I3/$p-$hash.idx.$ZT_PID.tmp"
  done
  size=$(t stat -c %s "$MNT/values.txt")
  assert_eq "compaction: exact size" "$(stat -c %s "$ZT_TMP/many.txt")" "$size"
  zumount "$MNT"
  assert_eq "compaction: no planted link written through" "precious" "$(cat "$ZT_TMP/victim3")"
  total=$(find "$I3" -type f -name 'lx*' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
  if [ "$total" -gt 0 ] && [ "$total" -le 65536 ]; then
    pass "compaction: the index kept within its cap ($total bytes)"
  else
    fail "compaction: index files hold $total bytes (cap 64K)"
  fi
fi

# ---- 4. a chunk rewritten with its size and mtime kept ----
S4=$D/same.zarr
mk_store "$S4" 1
le4 1 2 3 4 >"$S4/t/0"
I4=$(zt_mkdir idx4)
if zmount "$S4" "$MNT" -o index_cache="$I4"; then
  assert_eq "same size and mtime: first mount" "$(text 1 2 3 4 | wc -c)" "$(t stat -c %s "$MNT/t/values.txt")"
  zumount "$MNT"
fi
before=$(stat -c '%s %Y %i' "$S4/t/0")
le4 1000000000 2000000000 -2000000000 123456789 >"$ZT_TMP/new0"
touch -r "$S4/t/0" "$ZT_TMP/new0"
cp --preserve=timestamps "$ZT_TMP/new0" "$S4/t/0"
after=$(stat -c '%s %Y %i' "$S4/t/0")
[ "$before" = "$after" ] || zt_hard_error "the rewrite changed size, mtime or inode: $before / $after"
want=$(text 1000000000 2000000000 -2000000000 123456789)
if zmount "$S4" "$MNT" -o index_cache="$I4"; then
  assert_eq "same size and mtime: the new size" "$(printf '%s\n' "$want" | wc -c)" "$(t stat -c %s "$MNT/t/values.txt")"
  assert_eq "same size and mtime: the new text" "$want" "$(t cat "$MNT/t/values.txt")"
  assert_eq "same size and mtime: the chunk's view" "$want" "$(t cat "$MNT/t/0.txt")"
  zumount "$MNT"
fi

# ---- 5. a kerchunk target rewritten in place ----
K=$D/kerchunk
mkdir -p "$K"
le4 1 2 3 4 >"$K/blob.bin"
le4 5 6 7 8 >>"$K/blob.bin"
cat >"$K/refs.json" <<'JSON'
{"version": 1, "refs": {
 ".zgroup": "{\"zarr_format\": 2}",
 "t/.zarray": "{\"zarr_format\": 2, \"shape\": [8], \"chunks\": [4], \"dtype\": \"<i4\", \"compressor\": null, \"filters\": null, \"fill_value\": 0, \"order\": \"C\"}",
 "t/0": ["blob.bin", 0, 16],
 "t/1": ["blob.bin", 16, 16]}}
JSON
I5=$(zt_mkdir idx5)
if zmount "$K/refs.json" "$MNT" -o index_cache="$I5"; then
  assert_eq "kerchunk: first mount" "$(text 1 2 3 4 5 6 7 8 | wc -c)" "$(t stat -c %s "$MNT/t/values.txt")"
  zumount "$MNT"
fi
refs_before=$(stat -c '%Y %s' "$K/refs.json")
le4 1 2 3 4 >"$ZT_TMP/blob.new"
le4 -1000000 -2000000 -3000000 -4000000 >>"$ZT_TMP/blob.new"
touch -r "$K/blob.bin" "$ZT_TMP/blob.new"
cp --preserve=timestamps "$ZT_TMP/blob.new" "$K/blob.bin"
[ "$refs_before" = "$(stat -c '%Y %s' "$K/refs.json")" ] || zt_hard_error "the reference file changed"
want=$(text 1 2 3 4 -1000000 -2000000 -3000000 -4000000)
if zmount "$K/refs.json" "$MNT" -o index_cache="$I5"; then
  assert_eq "kerchunk target rewritten: the new size" "$(printf '%s\n' "$want" | wc -c)" "$(t stat -c %s "$MNT/t/values.txt")"
  assert_eq "kerchunk target rewritten: the new text" "$want" "$(t cat "$MNT/t/values.txt")"
  zumount "$MNT"
fi

# ---- 6. a record that lies ----
if [ "$have_py" = 0 ]; then
  zt_skip_part "no python3: the records that lie"
  finish
fi
# lie FILE KEY DELTA: add DELTA to the text size of KEY's records in the
# index file FILE (either format), with their CRC made good; prints how
# many.
lie() {
  python3 - "$@" <<'EOF'
import struct, sys, zlib
path, key, delta = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3])
b = bytearray(open(path, "rb").read())
i = n = 0
while True:
    i = b.find(b"LXr", i)
    if i < 0:
        break
    ln = struct.unpack_from("<I", b, i + 4)[0]
    if ln < 60 or i + ln > len(b):
        i += 1
        continue
    ll, kl = struct.unpack_from("<HH", b, i + 32)
    if bytes(b[i + 60 + ll:i + 60 + ll + kl]) == key:
        ts = struct.unpack_from("<Q", b, i + 12)[0]
        struct.pack_into("<Q", b, i + 12, ts + delta)
        struct.pack_into("<I", b, i + 8, zlib.crc32(bytes(b[i + 12:i + ln])) & 0xffffffff)
        n += 1
    i += ln
open(path, "wb").write(bytes(b))
print(n)
EOF
}
S6=$D/lie.zarr
mk_store "$S6" 3
le4 1 2 3 4 >"$S6/t/0"
le4 -55555 66666 -77777 88888 >"$S6/t/1"
le4 9 10 11 12 >"$S6/t/2"
want=$(text 1 2 3 4 -55555 66666 -77777 88888 9 10 11 12)
text -55555 66666 -77777 88888 >"$ZT_TMP/t1.txt"
printf '%s\n' "$want" >"$ZT_TMP/lie.txt"
wsize=$(stat -c %s "$ZT_TMP/lie.txt")
I6=$(zt_mkdir idx6)
if zmount "$S6" "$MNT" -o index_cache="$I6"; then
  assert_eq "lying record: first mount" "$wsize" "$(t stat -c %s "$MNT/t/values.txt")"
  zumount "$MNT"
fi
idx6=$(find "$I6" -name 'lx*.idx' | head -1)
# one_lie DELTA: chunk t/1's record claims DELTA bytes more than its text.
one_lie() {
  local delta=$1 got
  cp "$idx6" "$ZT_TMP/pristine.idx"
  got=$(lie "$idx6" t/1 "$delta")
  [ "$got" -ge 1 ] 2>/dev/null || zt_hard_error "no record of t/1 in $idx6 ($got)"
  if zmount "$S6" "$MNT" -o index_cache="$I6"; then
    assert_eq "record $delta bytes off: stat says the claim" $((wsize + delta)) "$(t stat -c %s "$MNT/t/values.txt")"
    t stat -c %s "$MNT/t/1.txt" >/dev/null
    t cat "$MNT/t/values.txt" >"$ZT_TMP/got.txt"
    assert_file_eq "record $delta bytes off: cat values.txt is the whole text" "$ZT_TMP/lie.txt" "$ZT_TMP/got.txt"
    t cat "$MNT/t/1.txt" >"$ZT_TMP/got1.txt"
    assert_file_eq "record $delta bytes off: cat t/1.txt is the whole text" "$ZT_TMP/t1.txt" "$ZT_TMP/got1.txt"
    assert_eq "record $delta bytes off: stat then says the truth" "$wsize" "$(t stat -c %s "$MNT/t/values.txt")"
    zumount "$MNT"
    if [ "$(grep -c 't/1.*claimed by the size index' "$ZT_LOG")" = 1 ]; then
      pass "record $delta bytes off: one log line names the chunk"
    else
      fail "record $delta bytes off: not one log line about t/1; log:"
      show "$ZT_LOG"
    fi
  fi
  cp "$ZT_TMP/pristine.idx" "$idx6"
}
one_lie -9 # the text is longer than the record says
one_lie 7  # shorter
# the record, once contradicted, is replaced by the truth
lie "$idx6" t/1 -9 >/dev/null
if zmount "$S6" "$MNT" -o index_cache="$I6"; then
  t cat "$MNT/t/values.txt" >/dev/null
  zumount "$MNT"
fi
if zmount "$S6" "$MNT" -o index_cache="$I6"; then
  assert_eq "contradicted record: replaced by the truth" "$wsize" "$(t stat -c %s "$MNT/t/values.txt")"
  zumount "$MNT"
fi
finish
