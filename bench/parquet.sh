#!/bin/bash
# bench/parquet.sh - kerchunk Parquet references against the same
# references as a kerchunk JSON file, measured in the same run through the
# FUSE-free CLI: one 1-D int32 array of N chunks (default 100,000; one
# element each, every chunk a range of one local blob), record_size R
# (default 10,000, fsspec's), record files by parquet-wasm (ZSTD,
# dictionary-encoded paths, as pandas writes them). Times (median of 3):
# `zarrfs ls` of the array (every record file read) and `zarrfs cat` of its
# values.txt, for both; prints the Parquet/JSON ratio and the sizes on
# disk. Not part of `make check`: it never fails on speed.
#
# usage: bash bench/parquet.sh [N [R]]
# env:  ZARRFS_BIN      the binary (default ./zarrfs, then build/zarrfs)
#       ZARRFS_PQW_DIR  the npm writers' node_modules (default
#                       /opt/zarrfs-pqw/node_modules; see tests/writers)
#       BENCH_DIR       where the files go (kept); default a temp dir
set -euo pipefail
export LC_ALL=C
N=${1:-100000}
R=${2:-10000}
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN=${ZARRFS_BIN:-}
[ -n "$BIN" ] || for b in ./zarrfs build/zarrfs "$SRC/build/zarrfs"; do
  [ -x "$b" ] && BIN=$b && break
done
[ -x "${BIN:-}" ] || { echo "parquet.sh: no zarrfs binary (ZARRFS_BIN)" >&2; exit 2; }
PQW=${ZARRFS_PQW_DIR:-/opt/zarrfs-pqw/node_modules}
[ -d "$PQW/parquet-wasm" ] || { echo "parquet.sh: no npm writers in $PQW (tests/writers/README.md)" >&2; exit 2; }
if [ -n "${BENCH_DIR:-}" ]; then
  W=$BENCH_DIR
  mkdir -p "$W"
else
  W=$(mktemp -d /tmp/zarrfs-bench-parquet.XXXXXX)
  trap 'rm -rf "$W"' EXIT
fi

mkdir -p "$W/pq"
head -c $((N * 4)) /dev/urandom >"$W/pq/blob.bin"
# The spec for parquet_refs.mjs and the same references as JSON.
node - "$N" "$R" "$W" <<'EOF'
const fs = require('fs')
const [n, r, w] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4]]
const zarray = { chunks: [1], compressor: null, dtype: '<i4', fill_value: 0, filters: null, order: 'C', shape: [n], zarr_format: 2 }
const rows = []
const refs = { '.zgroup': JSON.stringify({ zarr_format: 2 }), 'big/.zarray': JSON.stringify(zarray) }
for (let i = 0; i < n; i++) {
  rows.push(['blob.bin', i * 4, 4, null])
  refs['big/' + i] = ['blob.bin', i * 4, 4]
}
fs.writeFileSync(w + '/spec.json', JSON.stringify({
  record_size: r, metadata: { '.zgroup': { zarr_format: 2 }, 'big/.zarray': zarray },
  vars: { big: { rows, records: [{ writer: 'wasm', codec: 'ZSTD', dict: true, version: 1 }] } },
}))
fs.writeFileSync(w + '/pq/refs.json', JSON.stringify({ version: 1, refs }))
EOF
ZARRFS_PQW_DIR=$PQW node "$SRC/tests/writers/parquet_refs.mjs" spec "$W/spec.json" "$W/pq"

# median_ms CMD...: the median wall time of 3 runs, in milliseconds.
median_ms() {
  local i t0 t1 ts=()
  for i in 1 2 3; do
    t0=$(date +%s%N)
    "$@" >/dev/null
    t1=$(date +%s%N)
    ts+=($(((t1 - t0) / 1000000)))
  done
  printf '%s\n' "${ts[@]}" | sort -n | sed -n 2p
}
lines() { "$BIN" "$@" | wc -l; }
[ "$(lines cat "$W/pq" big/values.txt)" = "$N" ] || { echo "parquet.sh: wrong line count" >&2; exit 1; }
[ "$(lines cat "$W/pq/refs.json" big/values.txt)" = "$N" ] || exit 1
pq_ls=$(median_ms "$BIN" ls "$W/pq" big)
js_ls=$(median_ms "$BIN" ls "$W/pq/refs.json" big)
pq_cat=$(median_ms "$BIN" cat "$W/pq" big/values.txt)
js_cat=$(median_ms "$BIN" cat "$W/pq/refs.json" big/values.txt)
pq_bytes=$(du -cb "$W"/pq/big/*.parq "$W/pq/.zmetadata" | tail -1 | cut -f1)
js_bytes=$(stat -c %s "$W/pq/refs.json")
printf '%-24s %12s %12s %8s\n' "$N chunks, R=$R" Parquet JSON ratio
printf '%-24s %10s ms %10s ms %8s\n' "ls big" "$pq_ls" "$js_ls" \
  "$(awk -v a="$pq_ls" -v b="$js_ls" 'BEGIN { printf "%.2f", a / (b ? b : 1) }')"
printf '%-24s %10s ms %10s ms %8s\n' "cat big/values.txt" "$pq_cat" "$js_cat" \
  "$(awk -v a="$pq_cat" -v b="$js_cat" 'BEGIN { printf "%.2f", a / (b ? b : 1) }')"
printf '%-24s %12s %12s %8s\n' "bytes of references" "$pq_bytes" "$js_bytes" \
  "$(awk -v a="$pq_bytes" -v b="$js_bytes" 'BEGIN { printf "%.3f", a / b }')"
