#!/bin/bash
# tests/fuzz/seeds.sh OUT [FIXTURES] - seed corpora for the fuzz targets,
# one directory per target: OUT/NAME/. Inputs come from the conformance
# fixtures (FIXTURES, else $ZARRFS_FIXTURES, else ../shared/fixtures beside
# the checkout): zarr.json and .zarray documents, .zmetadata and
# consolidated groups, kerchunk reference files, and for each codec target
# METADATA NUL CHUNK files made of an array's metadata and its stored
# chunks (see tests/fuzz/fuzz.h). The committed seeds
# (tests/fuzz/seeds/NAME/: what the fixtures lack, such as VirtualiZarr
# manifests and namespace paths) are always added. Without the fixtures,
# examples/example.zarr stands in for them (and this script says so).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:?usage: seeds.sh OUT [FIXTURES]}
FIX=${2:-${ZARRFS_FIXTURES:-$SRC/../shared/fixtures}}
MAX_SEEDS=${FUZZ_MAX_SEEDS:-150} # per target and kind, to start fast
MAX_CHUNK=262144                 # bytes; larger chunks are skipped

TARGETS="meta_v3 meta_v2 consolidated kerchunk kerchunk_render jdup jlex manifest
vlen vlen_interleaved sharding blosc packbits optional json2 msgpack zfp namespace
icechunk listxml parquet strtext cf cfgroup htindex sizeindex url"
for t in $TARGETS; do
  mkdir -p "$OUT/$t"
  if [ -d "$SRC/tests/fuzz/seeds/$t" ]; then
    cp "$SRC/tests/fuzz/seeds/$t"/* "$OUT/$t/" 2>/dev/null || true
  fi
done

if [ -d "$FIX" ]; then
  ROOTS=("$FIX")
else
  echo "seeds.sh: no fixtures at $FIX: seeding from examples/example.zarr" \
    "and the committed seeds only" >&2
  ROOTS=("$SRC/examples")
fi

# add TARGET FILE...: copy files into OUT/TARGET (as seed-N), at most
# MAX_SEEDS per call; empty files are skipped.
seq_no=0
add() {
  local t=$1 f n=0
  shift
  for f in "$@"; do
    [ "$n" -ge "$MAX_SEEDS" ] && break
    [ -s "$f" ] || continue
    seq_no=$((seq_no + 1))
    cp "$f" "$OUT/$t/seed-$seq_no"
    n=$((n + 1))
  done
}

# files NAME: every file called NAME under the roots, NUL-separated.
files() { find "${ROOTS[@]}" -type f -name "$1" -size -1048576c -print0 | sort -z; }

mapfile -d '' v3 < <(files zarr.json)
mapfile -d '' v2 < <(files .zarray)
mapfile -d '' zmeta < <(files .zmetadata)
mapfile -d '' refs < <(find "${ROOTS[@]}" -path '*kerchunk*' -name '*.json' \
  -type f -size -1048576c -print0 | sort -z)
add meta_v3 "${v3[@]}"
add meta_v2 "${v2[@]}"
add consolidated "${zmeta[@]}"
mapfile -t cons < <(printf '%s\0' "${v3[@]}" |
  xargs -0 grep -l consolidated_metadata 2>/dev/null || true)
add consolidated "${cons[@]}"
add kerchunk "${refs[@]}"
add jdup "${refs[@]}" "${zmeta[@]}"
add jlex "${refs[@]}" "${zmeta[@]}" "${v3[@]}"

# Codec targets: METADATA NUL CHUNK for arrays whose metadata names the
# codec (up to 3 chunks each, and the metadata with an empty chunk).
chunks() { # TARGET PATTERN
  local t=$1 pat=$2 meta dir c n=0 k
  local -a metas
  mapfile -t metas < <(printf '%s\0' "${v3[@]}" "${v2[@]}" |
    xargs -0 grep -l -- "$pat" 2>/dev/null | head -n "$MAX_SEEDS")
  for meta in "${metas[@]}"; do
    dir=$(dirname "$meta")
    k=0
    seq_no=$((seq_no + 1))
    { cat "$meta"; printf '\0'; } >"$OUT/$t/seed-$seq_no"
    while IFS= read -r -d '' c; do
      [ "$k" -ge 3 ] && break
      seq_no=$((seq_no + 1))
      { cat "$meta"; printf '\0'; cat "$c"; } >"$OUT/$t/seed-$seq_no"
      k=$((k + 1))
    done < <(find "$dir" -type f ! -name 'zarr.json' ! -name '.z*' \
      ! -name '*.json' -size -"$MAX_CHUNK"c -print0 | sort -z)
  done
}
chunks vlen '"zarrs.vlen'
chunks vlen_interleaved '"vlen-'
chunks sharding '"sharding_indexed"'
chunks blosc '"blosc"'
chunks packbits '"packbits"'
chunks optional 'optional"'
chunks json2 'json2"'
chunks zfp 'zfp'

# icechunk: the metadata files of the Icechunk repositories as they are
# (zstd payloads), and again with the payload decompressed (compression
# byte 0), which the fuzzer mutates far better.
mapfile -d '' ice < <(find "${ROOTS[@]}" -path '*icechunk*' -type f \
  \( -path '*/snapshots/*' -o -path '*/manifests/*' -o -name repo \) \
  -size -1048576c -print0 | sort -z)
add icechunk "${ice[@]}"
if command -v zstd >/dev/null 2>&1; then
  n=0
  for f in "${ice[@]}"; do
    [ "$n" -ge "$MAX_SEEDS" ] && break
    seq_no=$((seq_no + 1))
    o="$OUT/icechunk/seed-$seq_no"
    if { head -c 38 "$f"; printf '\0'; tail -c +40 "$f" | zstd -dc; } >"$o" 2>/dev/null; then
      n=$((n + 1))
    else
      rm -f "$o"
    fi
  done
fi

for t in $TARGETS; do
  printf '%s: %s seeds\n' "$t" "$(find "$OUT/$t" -type f | wc -l)"
done
