#!/bin/bash
# mount_partial.sh - partial decoding: `stat` and `tail -c 200` on a 64 MiB
# zarrs.vlen chunk (data codecs [bytes]) must make the daemon read well
# under 1 MiB, for the chunk view and for values.txt, with the index at the
# start and at the end. A full read afterwards must cost ~64 MiB, which
# proves the counter sees the daemon's reads (else the check is vacuous).
#
# What is measured: /proc/<daemon pid>/io `rchar`, the bytes the daemon got
# from read()/pread() on any fd, summed over all its threads. It also counts
# the FUSE requests the daemon reads from /dev/fuse, but those are small (a
# READ request is ~80 bytes; replies are writes and count in wchar), so a
# handful of lookups/getattrs/reads adds a few KiB. `read_bytes` (storage
# I/O) is useless here: the store was just written and sits in the page
# cache, and dropping caches needs a privilege containers often lack. rchar
# does not depend on the page cache, so it is the measure; read_bytes is
# only printed. What the daemon may legitimately read: the index (32769 x 8
# bytes = 256 KiB) plus the last elements' bytes.
. "$(dirname "$0")/lib.sh"
zt_require_mkstore

COUNT=32768
STRLEN=2048
LIMIT=$((1024 * 1024))

# io_field PID FIELD: one field of /proc/PID/io.
io_field() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/io"; }

drop_caches() { zt_drop_caches 3 || true; }

# measure DESC PID CMD...: run CMD, fail if the daemon's rchar grew >= LIMIT.
measure() {
  local desc=$1 pid=$2 r0 r1 b0 b1
  shift 2
  drop_caches
  r0=$(io_field "$pid" rchar)
  b0=$(io_field "$pid" read_bytes)
  "$@"
  r1=$(io_field "$pid" rchar)
  b1=$(io_field "$pid" read_bytes)
  say "$desc: daemon rchar +$((r1 - r0)) bytes, read_bytes +$((b1 - b0))"
  if [ -z "$r0" ] || [ -z "$r1" ]; then
    fail "$desc: cannot read /proc/$pid/io"
  elif [ $((r1 - r0)) -lt "$LIMIT" ]; then
    pass "$desc: daemon read < 1 MiB"
  else
    fail "$desc: daemon read $((r1 - r0)) bytes (limit $LIMIT): no partial decoding"
  fi
}

# check_tail DESC FILE PLAIN: stat size == size of PLAIN, tail -c 200 equal.
check_tail() {
  local sz
  sz=$(t stat -c %s -- "$2")
  assert_eq "$1: stat size" "$(wc -c <"$3")" "$sz"
  tail -c 200 "$3" >"$ZT_TMP/tail.exp"
  t tail -c 200 -- "$2" >"$ZT_TMP/tail.got"
  assert_file_eq "$1: tail -c 200" "$ZT_TMP/tail.exp" "$ZT_TMP/tail.got"
}

# check_range DESC FILE PLAIN OFFSET LEN: bytes [OFFSET, OFFSET+LEN) equal.
check_range() {
  tail -c +$(($4 + 1)) "$3" | head -c "$5" >"$ZT_TMP/range.exp"
  t sh -c 'tail -c +"$1" "$2" | head -c "$3"' sh $(($4 + 1)) "$2" "$5" >"$ZT_TMP/range.got"
  assert_file_eq "$1" "$ZT_TMP/range.exp" "$ZT_TMP/range.got"
}

for index in start end; do
  SRC="$ZT_TMP/big-$index"
  PLAIN="$ZT_TMP/big-$index.txt"
  if ! t "$ZARRFS_MKSTORE" bigstrings "$SRC" --count $COUNT --strlen $STRLEN \
    --chunk $COUNT --data none --index $index --plain "$PLAIN" >"$ZT_TMP/mkstore.log" 2>&1; then
    show "$ZT_TMP/mkstore.log"
    zt_hard_error "zarrfs-mkstore bigstrings failed"
  fi
  chunk=$(cd "$SRC" && find . -type f ! -name zarr.json | sed 's|^\./||' | head -1)
  say "index $index: chunk $chunk, $(stat -c %s "$SRC/$chunk") bytes stored"
  # Each view measured on a fresh mount, so nothing is cached yet.
  for view in "$chunk.txt" values.txt; do
    MNT=$(zt_mkdir mnt)
    zmount "$SRC" "$MNT" || continue 2
    measure "index $index: cold stat + tail -c 200 of $view" "$ZT_PID" \
      check_tail "index $index: $view" "$MNT/$view" "$PLAIN"
    zt_check_log_clean "$ZT_LOG"
    zumount "$MNT"
  done
  MNT=$(zt_mkdir mnt)
  zmount "$SRC" "$MNT" || continue
  PID=$ZT_PID

  # A ranged read from the middle, too.
  mid=$(($(wc -c <"$PLAIN") / 2))
  measure "index $index: 4 KiB from the middle of values.txt" "$PID" \
    check_range "index $index: 4 KiB at offset $mid" "$MNT/values.txt" "$PLAIN" "$mid" 4096

  # Sanity: a full read must show up in rchar (the counter works).
  r0=$(io_field "$PID" rchar)
  assert_file_eq "index $index: whole values.txt" "$PLAIN" "$MNT/values.txt"
  r1=$(io_field "$PID" rchar)
  if [ $((r1 - r0)) -ge $((COUNT * STRLEN / 2)) ]; then
    pass "index $index: a full read is visible in rchar (+$((r1 - r0)))"
  else
    fail "index $index: full read raised rchar by only $((r1 - r0)): the measurement is blind (mmap?)"
  fi
  zt_check_log_clean "$ZT_LOG"
  zumount "$MNT"
  rm -rf "$SRC" "$PLAIN"
done

# Sharding: a shard of 64 MiB in inner chunks. With inner zarrs.vlen chunks
# a cold stat + tail reads the shard index, the inner indexes and the last
# bytes only. With inner vlen-utf8 chunks (anndata's layout) the size needs
# every inner chunk once; after that, with a cache too small to keep
# anything, a tail reads the shard index and one 512 KiB inner chunk
# (tests/unit/views/check_shard.c makes the same point for ranges inside the array).
for inner in vlen utf8; do
  SRC="$ZT_TMP/shard-$inner"
  PLAIN="$ZT_TMP/shard-$inner.txt"
  if ! t "$ZARRFS_MKSTORE" bigstrings "$SRC" --count $COUNT --strlen $STRLEN \
    --chunk $COUNT --shard 256 --inner $inner --data none --index end \
    --plain "$PLAIN" >"$ZT_TMP/mkstore.log" 2>&1; then
    show "$ZT_TMP/mkstore.log"
    zt_hard_error "zarrfs-mkstore bigstrings --shard failed"
  fi
  MNT=$(zt_mkdir mnt)
  if [ "$inner" = vlen ]; then
    zmount "$SRC" "$MNT" || continue
    measure "shard, inner zarrs.vlen: cold stat + tail -c 200 of c/0.txt" "$ZT_PID" \
      check_tail "shard, inner zarrs.vlen: c/0.txt" "$MNT/c/0.txt" "$PLAIN"
  else
    zmount "$SRC" "$MNT" -o cache_size=4K || continue
    assert_eq "shard, inner vlen-utf8: stat size" "$(wc -c <"$PLAIN")" \
      "$(t stat -c %s -- "$MNT/c/0.txt")"
    measure "shard, inner vlen-utf8: tail -c 200 of c/0.txt after stat, 4K cache" "$ZT_PID" \
      check_tail "shard, inner vlen-utf8: c/0.txt" "$MNT/c/0.txt" "$PLAIN"
  fi
  zt_check_log_clean "$ZT_LOG"
  zumount "$MNT"
  rm -rf "$SRC" "$PLAIN"
done

# Readahead delivers a sequential read in 128 KiB pieces: a zstd chunk
# (16 MiB of text) must be decoded once, not once per piece. The stored
# chunk is ~0.5 MiB; re-decoding per piece would read it ~130 times.
SRC="$ZT_TMP/zstd-one"
PLAIN="$ZT_TMP/zstd-one.txt"
if t "$ZARRFS_MKSTORE" bigstrings "$SRC" --count 32768 --strlen 512 --chunk 32768 \
  --data zstd --plain "$PLAIN" >"$ZT_TMP/mkstore.log" 2>&1; then
  stored=$(find "$SRC" -type f ! -name zarr.json -exec cat {} + | wc -c)
  MNT=$(zt_mkdir mnt)
  if zmount "$SRC" "$MNT"; then
    r0=$(io_field "$ZT_PID" rchar)
    assert_file_eq "zstd, one 16 MiB chunk: values.txt" "$PLAIN" "$MNT/values.txt"
    r1=$(io_field "$ZT_PID" rchar)
    say "zstd, one chunk: stored $stored bytes, daemon rchar +$((r1 - r0)) for a full sequential read"
    if [ $((r1 - r0)) -lt $((3 * stored + 65536)) ]; then
      pass "zstd, one chunk: a sequential read decodes the chunk once"
    else
      fail "zstd, one chunk: a sequential read made the daemon read $((r1 - r0)) bytes for a $stored-byte chunk (re-decoding per piece)"
    fi
    zumount "$MNT"
  fi
  rm -rf "$SRC" "$PLAIN"
else
  fail "zarrfs-mkstore bigstrings --data zstd failed"
  show "$ZT_TMP/mkstore.log"
fi

# A compressed variant (zstd data, several chunks): correctness only.
SRC="$ZT_TMP/small-zstd"
PLAIN="$ZT_TMP/small-zstd.txt"
if t "$ZARRFS_MKSTORE" bigstrings "$SRC" --count 5000 --strlen 37 --chunk 1024 \
  --data zstd --index end --plain "$PLAIN" >"$ZT_TMP/mkstore.log" 2>&1; then
  MNT=$(zt_mkdir mnt)
  if zmount "$SRC" "$MNT"; then
    assert_file_eq "zstd, 5 chunks: values.txt" "$PLAIN" "$MNT/values.txt"
    check_tail "zstd, 5 chunks: values.txt" "$MNT/values.txt" "$PLAIN"
    zumount "$MNT"
  fi
else
  fail "zarrfs-mkstore bigstrings --data zstd failed"
  show "$ZT_TMP/mkstore.log"
fi

finish
