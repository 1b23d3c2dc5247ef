#!/bin/bash
# bench/ab.sh - two builds of zarrfs against each other on the same stores,
# alternating the binaries on fresh mounts with the page cache dropped, so
# that a change is timed against the build before it in one run (this
# machine's noise between runs is larger than most changes).
#
# Stores (zarrfs-mkstore, N elements, a tenth a chunk or C with --chunk
# C: many small chunks put the per-chunk costs first): 15-byte strings as
# vlen-utf8 + zstd, zarrs.vlen uncompressed and zarrs.vlen + zstd; float64
# and int32 with zstd; `shard`: the same strings in sharding_indexed shards
# of a chunk, inner chunks of a quarter chunk in vlen-utf8 + zstd. For each: `cat values.txt` and, on another fresh
# mount, `stat` then `tail -c 200` of values.txt. Prints, per row, the
# median seconds of each build and B/A.
#
# usage: bash bench/ab.sh A_BIN B_BIN [--count N] [--chunk C] [--runs R]
#                          [--stores "vnone vzstd utf8 f64 i32 shard"]
#        (--stores: the rows to run, of those; default all but shard)
# env:   ZARRFS_MKSTORE (default build/zarrfs-mkstore), BENCH_DIR (stores
#        kept and reused there; default a temp dir, removed)
set -euo pipefail
export LC_ALL=C
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

[ $# -ge 2 ] || { echo "usage: bash bench/ab.sh A_BIN B_BIN [--count N] [--chunk C] [--runs R]" >&2; exit 2; }
A=$(readlink -f "$1") B=$(readlink -f "$2")
shift 2
COUNT=10000000 RUNS=3 CHUNK= STORES="vnone vzstd utf8 f64 i32"
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || { echo "bench/ab.sh: $1 needs a value" >&2; exit 2; }
  case $1 in
  --count) COUNT=$2 ;;
  --runs) RUNS=$2 ;;
  --chunk) CHUNK=$2 ;;
  --stores) STORES=$2 ;;
  *) echo "bench/ab.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
bench_tool ZARRFS_MKSTORE zarrfs-mkstore
bench_workdir zarrfs-ab
bench_traps
CHUNK=${CHUNK:-$((COUNT / 10))}
D=$WORK/stores
if [ "$(cat "$D/params" 2>/dev/null)" != "$COUNT $CHUNK" ]; then
  rm -rf "$D" && mkdir -p "$D"
  mk() { "$ZARRFS_MKSTORE" "$@" >/dev/null; }
  S15=(--count "$COUNT" --chunk "$CHUNK" --strlen 15)
  mk bigstrings "$D/utf8.zarr" "${S15[@]}" --inner utf8 --data zstd
  mk bigstrings "$D/vnone.zarr" "${S15[@]}" --data none
  mk bigstrings "$D/vzstd.zarr" "${S15[@]}" --data zstd
  mk numeric "$D/f64.zarr" --shape "$COUNT" --chunk "$CHUNK" --codec zstd --dtype float64
  mk numeric "$D/i32.zarr" --shape "$COUNT" --chunk "$CHUNK" --codec zstd --dtype int32
  echo "$COUNT $CHUNK" >"$D/params"
fi
case " $STORES " in *" shard "*)
  [ -d "$D/shard.zarr" ] || "$ZARRFS_MKSTORE" bigstrings "$D/shard.zarr" \
    --count "$COUNT" --chunk "$CHUNK" --strlen 15 --shard $((CHUNK / 4)) \
    --inner utf8 --data zstd >/dev/null ;;
esac

# one BIN STORE WHAT: seconds of WHAT (cat | stattail) on a fresh mount.
one() {
  local bin=$1 store=$2 what=$3
  drop_caches
  mount_fs "$bin" "$D/$store.zarr"
  if [ "$what" = cat ]; then
    time_once /dev/null cat "$MNT/values.txt"
  else
    time_once /dev/null sh -c "stat -c %s '$MNT/values.txt' && tail -c 200 '$MNT/values.txt'"
  fi
  unmount_store
  echo "$SECS"
}

printf '| store | what | A (s) | B (s) | B/A |\n|---|---|---|---|---|\n'
for store in $STORES; do
  for what in cat stattail; do
    ta=() tb=()
    for _ in $(seq "$RUNS"); do
      ta+=("$(one "$A" "$store" "$what")")
      tb+=("$(one "$B" "$store" "$what")")
    done
    ma=$(bench_median "${ta[@]}") mb=$(bench_median "${tb[@]}")
    printf '| %s | %s | %s | %s | %s |\n' "$store" "$what" "$ma" "$mb" \
      "$(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.2f", (a > 0 ? b / a : 0) }')"
  done
done
