#!/bin/bash
# mount_index.sh - the persistent size index (-o index_cache) through
# real mounts, by results and bytes read (the daemon's /proc/PID/io rchar),
# never by time, on a float64 + zstd store of ten chunks:
#   1. a first mount's `stat values.txt` decodes the chunks and stores
#      their text sizes; a second mount's reads (almost) no chunk byte
#      and gives the same, exact size; its `cat` is exact;
#   2. index_cache=none: the second mount decodes again;
#   3. a chunk touched (same bytes, another mtime) is decoded again, only
#      it; a chunk rewritten with other values (another size) gives the
#      new exact size, never the stale record's;
#   4. a corrupted index file gives misses, never a wrong size;
#   5. a V2 array's CF view: new .zattrs (another scale_factor, the chunks
#      untouched) give the new exact size of values.cf.txt, never the
#      size recorded under the old attributes.
. "$(dirname "$0")/lib.sh"
zt_require_mkstore

N=1000000
C=$((N / 10))
D=$(zt_mkdir stores)
IDX=$(zt_mkdir index)
MNT=$(zt_mkdir mnt)
if ! t "$ZARRFS_MKSTORE" numeric "$D/f64.zarr" --shape "$N" --chunk "$C" \
  --dtype float64 --codec zstd --plain "$D/f.txt" >"$ZT_TMP/mk.log" 2>&1; then
  show "$ZT_TMP/mk.log"
  zt_hard_error "zarrfs-mkstore numeric failed"
fi
rchar() { zt_io_field "$1" rchar; }
chunk_bytes() { stat -c %s "$D/f64.zarr/c/$1"; }

# stat_read DESC [OPTS...]: mount f64.zarr, stat values.txt; sets SIZE and
# READ (bytes the daemon read for the stat).
stat_read() {
  local desc=$1
  shift
  zmount "$D/f64.zarr" "$MNT" "$@" || return 1
  local r0 r1
  r0=$(rchar "$ZT_PID")
  SIZE=$(t stat -c %s "$MNT/values.txt")
  r1=$(rchar "$ZT_PID")
  READ=$((r1 - r0))
  say "$desc: size $SIZE, daemon read $READ bytes"
  zumount "$MNT"
}

# ---- 1. learned once, known on the next mount ----
want=$(stat -c %s "$D/f.txt")
stat_read "first mount" -o index_cache="$IDX"
assert_eq "first mount: exact size" "$want" "$SIZE"
first=$READ
if [ "$first" -ge "$(chunk_bytes 0)" ]; then
  pass "first mount: stat decodes the chunks"
else
  fail "first mount: stat read only $first bytes"
fi
stat_read "second mount" -o index_cache="$IDX"
assert_eq "second mount: the same exact size" "$want" "$SIZE"
if [ "$READ" -lt 65536 ]; then
  pass "second mount: stat reads under 64 KiB (no chunk)"
else
  fail "second mount: stat read $READ bytes"
fi
zmount "$D/f64.zarr" "$MNT" -o index_cache="$IDX" || true
t cat "$MNT/values.txt" >"$ZT_TMP/got.txt"
assert_file_eq "second mount: cat is exact" "$D/f.txt" "$ZT_TMP/got.txt"
zumount "$MNT"

# ---- 2. none ----
stat_read "index_cache=none" -o index_cache=none
assert_eq "index_cache=none: exact size" "$want" "$SIZE"
if [ "$READ" -ge "$(chunk_bytes 0)" ]; then
  pass "index_cache=none: the chunks are decoded"
else
  fail "index_cache=none: read only $READ bytes"
fi

# ---- 3. stale records ----
touch -d '2001-02-03 04:05:06' "$D/f64.zarr/c/2"
stat_read "chunk 2 touched" -o index_cache="$IDX"
assert_eq "chunk 2 touched: exact size" "$want" "$SIZE"
if [ "$READ" -ge "$(chunk_bytes 2)" ] && [ "$READ" -lt $(($(chunk_bytes 2) + 65536)) ]; then
  pass "chunk 2 touched: it alone is decoded again"
else
  fail "chunk 2 touched: read $READ bytes (chunk 2 has $(chunk_bytes 2))"
fi
# chunk 0 rewritten with chunk 1's values: its text is chunk 1's lines
l0=$(sed -n "1,${C}p" "$D/f.txt" | wc -c)
l1=$(sed -n "$((C + 1)),$((2 * C))p" "$D/f.txt" | wc -c)
if [ "$l0" = "$l1" ]; then
  zt_hard_error "chunks 0 and 1 have texts of one size: the check below would prove nothing"
fi
cp "$D/f64.zarr/c/1" "$D/f64.zarr/c/0"
new=$((want - l0 + l1))
stat_read "chunk 0 rewritten" -o index_cache="$IDX"
assert_eq "chunk 0 rewritten: the new exact size, not the stale one" "$new" "$SIZE"
stat_read "chunk 0 rewritten, again" -o index_cache="$IDX"
assert_eq "chunk 0 rewritten: the new size from the index" "$new" "$SIZE"
if [ "$READ" -lt 65536 ]; then
  pass "chunk 0 rewritten: its new record is used (under 64 KiB read)"
else
  fail "chunk 0 rewritten, again: read $READ bytes"
fi

# ---- 4. a corrupted index file ----
for f in "$IDX"/lx2-*.idx; do
  size=$(stat -c %s "$f")
  # bytes flipped every 37 bytes from 20 on: every record damaged
  python3 - "$f" <<'EOF' 2>/dev/null || dd if=/dev/urandom of="$f" bs=1 count=64 seek=20 conv=notrunc 2>/dev/null
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
for i in range(20, len(b), 37):
    b[i] ^= 0x5a
open(p, "wb").write(bytes(b))
EOF
  say "corrupted $f ($size bytes)"
done
stat_read "index corrupted" -o index_cache="$IDX"
assert_eq "index corrupted: the exact size all the same" "$new" "$SIZE"

# ---- 5. a CF view under new attributes ----
V2=$D/cf2.zarr
mkdir -p "$V2/t"
printf '{"zarr_format": 2}' >"$V2/.zgroup"
printf '%s' '{"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<i2",
  "compressor": null, "filters": null, "fill_value": null, "order": "C"}' \
  >"$V2/t/.zarray"
printf '\001\000\002\000\003\000\004\000' >"$V2/t/0"
printf '{"scale_factor": 0.5}' >"$V2/t/.zattrs"
cf_size() {
  zmount "$V2" "$MNT" -o index_cache="$IDX" || return 1
  CF_SIZE=$(t stat -c %s "$MNT/t/values.cf.txt")
  CF_TEXT=$(t cat "$MNT/t/values.cf.txt" | tr '\n' ' ')
  zumount "$MNT"
}
cf_size && assert_eq "CF view, scale_factor 0.5: values" "0.5 1 1.5 2 " "$CF_TEXT"
printf '{"scale_factor": 0.125}' >"$V2/t/.zattrs"
if cf_size; then
  assert_eq "CF view, new scale_factor: new values" "0.125 0.25 0.375 0.5 " "$CF_TEXT"
  assert_eq "... and their exact size (21 bytes), not the recorded one" 21 "$CF_SIZE"
fi
finish
