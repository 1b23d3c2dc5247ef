#!/bin/bash
# mount_cat_once.sh - a fresh `cat` of a view of many small chunks, whose
# text is more than the cache keeps for its own sake, decodes each chunk
# once, by the daemon's decodes counter (never by time), and gives the
# view's exact bytes; on a float64 + zstd store of 3,000 chunks of 100
# values, -o cache_size=4M (3.8 MB of text, a 1 MiB ahead budget) and
# -o size_wait=0 (a stat learns a run of sizes per thread, then shows 0):
#   1. `stat values.txt`, then `cat`: decodes == chunks (the units the
#      stat decoded to learn their sizes are kept for the cat; the rest
#      are learned ahead of the reader by the workers, fs/views/layout.h
#      layout_ahead, and kept until it reads them);
#   2. `cat` alone (the lookup's stat): decodes == chunks;
#   3. `tail -c 100` (every size learned, measured on every core): the
#      view's last bytes, then its exact size;
#   4. a view of few big chunks whose text is over a quarter of the cache
#      but fits in it (10 chunks of 20,000 float64, 2.5 MB of text,
#      -o cache_size=8M): `stat` then `cat`, and `cat` alone, decode each
#      chunk once (the learning keeps what fits in 3/4 of the cache,
#      fs/views/lsize.c run_measures; it decoded 16-17 before).
. "$(dirname "$0")/lib.sh"
export LC_ALL=C
zt_require_mkstore

N=${ZT_CATONCE_CHUNKS:-3000}
C=100
D=$(zt_mkdir stores)
MNT=$(zt_mkdir mnt)
if ! t "$ZARRFS_MKSTORE" numeric "$D/f64.zarr" --shape $((N * C)) --chunk "$C" \
  --dtype float64 --codec zstd --plain "$D/f.txt" >"$ZT_TMP/mk.log" 2>&1; then
  show "$ZT_TMP/mk.log"
  zt_hard_error "zarrfs-mkstore numeric failed"
fi
WANT=$(cksum <"$D/f.txt")
say "view text: $(stat -c %s "$D/f.txt") bytes in $N chunks"

# stat_field KEY: a counter of the mount's /.zarrfs/stats.
stat_field() { t cat "$MNT/.zarrfs/stats" | awk -v k="$1" '$1 == k { print $2 }'; }

# cat_once DESC [stat]: a fresh mount; `stat values.txt` first when asked;
# the cat's bytes and the decodes it took.
cat_once() {
  local desc=$1 first=${2:-}
  zmount "$D/f64.zarr" "$MNT" -o index_cache=none,cache_size=4M,size_wait=0 || return
  [ "$first" = stat ] && say "$desc: stat says $(t stat -c %s "$MNT/values.txt")"
  tb 300 cat "$MNT/values.txt" >"$ZT_TMP/cat.out"
  assert_eq "$desc: cat gives the view's bytes" "$WANT" "$(cksum <"$ZT_TMP/cat.out")"
  assert_eq "$desc: each chunk decoded once" "$N" "$(stat_field decodes)"
  zumount "$MNT"
}

# ---- 1 and 2 ----
cat_once "stat, then cat" stat
cat_once "cat alone"

# ---- 3. every size learned (measured), then a read at the end ----
if zmount "$D/f64.zarr" "$MNT" -o index_cache=none,cache_size=4M,size_wait=0; then
  assert_eq "tail -c 100: the view's last bytes" "$(tail -c 100 "$D/f.txt" | cksum)" \
    "$(tb 300 tail -c 100 "$MNT/values.txt" | cksum)"
  assert_eq "then its exact size" "$(stat -c %s "$D/f.txt")" "$(t stat -c %s "$MNT/values.txt")"
  zumount "$MNT"
fi
# ---- 4. few big chunks, over a quarter of the cache ----
if t "$ZARRFS_MKSTORE" numeric "$D/big.zarr" --shape 200000 --chunk 20000 \
  --dtype float64 --codec zstd --plain "$D/big.txt" >"$ZT_TMP/mk.log" 2>&1; then
  for first in stat cat; do
    zmount "$D/big.zarr" "$MNT" -o index_cache=none,cache_size=8M || continue
    [ "$first" = stat ] && say "big chunks: stat says $(t stat -c %s "$MNT/values.txt")"
    assert_eq "big chunks, $first first: cat gives the view's bytes" "$(cksum <"$D/big.txt")" \
      "$(tb 300 cat "$MNT/values.txt" | cksum)"
    assert_eq "big chunks, $first first: each chunk decoded once" 10 "$(stat_field decodes)"
    zumount "$MNT"
  done
else
  show "$ZT_TMP/mk.log"
  zt_hard_error "zarrfs-mkstore numeric (big chunks) failed"
fi
finish
