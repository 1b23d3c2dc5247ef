#!/bin/bash
# bench/remote.sh - zarrfs over HTTP against curl fetching the same bytes,
# in one run (see bench/README.md, "Remote stores").
#
# Builds a store of N strings (~15 bytes, 1M per chunk; zarrs.vlen with
# zstd data, and uncompressed), serves it with nginx on 127.0.0.1 and
# with tests/integration/faultsrv adding LAT ms per request, and times, each on a fresh
# mount: cat values.txt, head -1 values.txt (time to first byte), and 8
# parallel readers of the chunk views. References measured in the same run:
# curl downloading every chunk (the bytes alone, one request each, in
# sequence), and cat of the same text from a local mount.
#
# Latency rows, in the same run: 2,000 small chunks (1,000
# strings each) behind 20 ms per request, zarrfs `cat values.txt` against
# `curl --parallel --parallel-max 32` of the same 2,000 objects (target
# <= 2x); the N-string store behind 50 ms per request against the same cat
# with no delay through the same server (target <= 1.25x), and the bytes
# the server sent for the chunks per cat against their sizes.
#
# usage: bash bench/remote.sh [--count N] [--runs R] [--lat MS] [--latency-only]
# env:   ZARRFS_BUILDDIR  the build tree (default build/); needs zarrfs,
#                         zarrfs-mkstore, tests/integration/faultsrv (make check builds it)
set -euo pipefail
export LC_ALL=C
COUNT=10000000 RUNS=3 LAT=20 ONLY_LAT=0
while [ $# -gt 0 ]; do
  case $1 in
  --count) COUNT=$2 ;;
  --runs) RUNS=$2 ;;
  --lat) LAT=$2 ;;
  --latency-only) ONLY_LAT=1; shift; continue ;;
  *) echo "usage: bash bench/remote.sh [--count N] [--runs R] [--lat MS] [--latency-only]" >&2; exit 2 ;;
  esac
  shift 2
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${ZARRFS_BUILDDIR:-$ROOT/build}
for f in zarrfs zarrfs-mkstore tests/integration/faultsrv; do
  [ -x "$B/$f" ] || { echo "bench/remote.sh: $B/$f missing (make && make check)" >&2; exit 1; }
done
CHUNK=$((COUNT / 10))
[ "$CHUNK" -le 1000000 ] || CHUNK=1000000
W=$(mktemp -d /tmp/zarrfs-bench-remote.XXXXXX)
PIDS=()
cleanup() {
  for m in "$W"/m*; do fusermount3 -u "$m" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$W"
}
trap cleanup EXIT

echo "stores: $COUNT strings, $CHUNK per chunk" >&2
"$B/zarrfs-mkstore" bigstrings "$W/web/zstd.zarr" --count "$COUNT" --chunk "$CHUNK" \
  --strlen 15 --data zstd --plain "$W/plain.txt" >/dev/null
"$B/zarrfs-mkstore" bigstrings "$W/web/none.zarr" --count "$COUNT" --chunk "$CHUNK" \
  --strlen 15 --data none >/dev/null
NCH=$(ls "$W/web/zstd.zarr/c" | wc -l)
"$B/zarrfs-mkstore" bigstrings "$W/web/small.zarr" --count 2000000 --chunk 1000 \
  --strlen 15 --data zstd --plain "$W/small.txt" >/dev/null
NSMALL=$(ls "$W/web/small.zarr/c" | wc -l)

# nginx
mkdir -p "$W/ng/tmp"
PORT=$((20000 + RANDOM % 40000))
cat >"$W/ng/nginx.conf" <<EOF
worker_processes 2;
$( [ "$(id -u)" = 0 ] && echo "user root;")
daemon off;
pid $W/ng/nginx.pid;
error_log $W/ng/error.log;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path $W/ng/tmp; proxy_temp_path $W/ng/tmp;
  fastcgi_temp_path $W/ng/tmp; uwsgi_temp_path $W/ng/tmp; scgi_temp_path $W/ng/tmp;
  sendfile on;
  keepalive_requests 100000;
  server { listen 127.0.0.1:$PORT; root $W/web; }
}
EOF
/usr/sbin/nginx -c "$W/ng/nginx.conf" -p "$W/ng" &
PIDS+=($!)
"$B/tests/integration/faultsrv" --root "$W/web" --port-file "$W/fault.port" \
  --log "$W/fault.log" &
PIDS+=($!)
for i in $(seq 50); do [ -s "$W/fault.port" ] && curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.1; done
NG="http://127.0.0.1:$PORT"
FA="http://127.0.0.1:$(cat "$W/fault.port")/_f/lat=$LAT"
FAULT="http://127.0.0.1:$(cat "$W/fault.port")"

# Seconds one run of CMD takes.
secs() {
  local s e
  s=$(date +%s%N)
  eval "$1" >/dev/null 2>&1 || true
  e=$(date +%s%N)
  awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'
}
# The median of the values on stdin.
med() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# median of RUNS timings of a command (seconds)
median() {
  local i
  for i in $(seq "$RUNS"); do secs "$1"; echo; done | med
}

# on a fresh mount of SRC each run: the median time of CMD (mount at $M)
mount_time() {
  local src=$1 i
  for i in $(seq "$RUNS"); do
    M="$W/m$i"
    mkdir -p "$M"
    "$B/zarrfs" "$src" "$M"
    secs "$2"
    echo
    fusermount3 -u "$M"
  done | med
}

curl_all() { # base store: every chunk, one request each, in sequence
  local i
  for i in $(seq 0 $((NCH - 1))); do curl -s -o /dev/null "$1/$2/c/$i"; done
}
par8() { # 8 readers of the chunk views at once
  local i
  for i in $(seq 0 7); do cat "$M/c/$((i % NCH)).txt" >/dev/null & done
  wait
}

row() { printf '| %s | %s s | %s |\n' "$1" "$2" "$3"; }
# Bytes the fault server sent for STORE's chunks since the log was
# emptied, per run, against the chunks' sizes (each byte asked for once:
# 1.000x).
served() {
  local sent size
  sent=$(grep -F -- "/$1/c/" "$W/fault.log" | awk -v r="$RUNS" '{ s += $NF } END { printf "%d", s / r }')
  size=$(cat "$W/web/$1"/c/* | wc -c)
  printf '| bytes served per cat of %s, +50 ms | %s of %s | %s |\n' "$1" "$sent" "$size" \
    "$(awk -v a="$sent" -v b="$size" 'BEGIN { printf "%.3fx", a / b }')"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }

curl_par() { # every small chunk through 20 ms per request, 32 at once
  local i
  for i in $(seq 0 $((NSMALL - 1))); do
    printf 'url = "%s/_f/lat=20/small.zarr/c/%d"\noutput = "/dev/null"\n' "$FAULT" "$i"
  done >"$W/curl-small.cfg"
  curl -s --parallel --parallel-max 32 -K "$W/curl-small.cfg"
}

# Correctness first: the text over HTTP is the text, with latency too.
mkdir -p "$W/mcheck"
"$B/zarrfs" "$NG/zstd.zarr" "$W/mcheck"
cmp "$W/mcheck/values.txt" "$W/plain.txt" || { echo "bench/remote.sh: values.txt over HTTP differs" >&2; exit 1; }
fusermount3 -u "$W/mcheck"
"$B/zarrfs" "$FAULT/_f/lat=20/small.zarr" "$W/mcheck"
cmp "$W/mcheck/values.txt" "$W/small.txt" || { echo "bench/remote.sh: small values.txt at 20 ms differs" >&2; exit 1; }
fusermount3 -u "$W/mcheck"

echo "| what | median of $RUNS | ratio |"
echo "|---|---|---|"
latency_rows() {
  local ref t
  ref=$(median curl_par)
  row "curl --parallel --parallel-max 32, the $NSMALL small chunks, +20 ms per request" "$ref" "1.00x (reference D)"
  t=$(mount_time "$FAULT/_f/lat=20/small.zarr" 'cat "$M/values.txt"')
  row "zarrfs, +20 ms, cat values.txt of the $NSMALL small chunks" "$t" "$(ratio "$t" "$ref") of D (target <= 2x)"
  ref=$(mount_time "$FAULT/zstd.zarr" 'cat "$M/values.txt"')
  row "zarrfs through the fault server, no delay, cat values.txt ($NCH chunks, zstd)" "$ref" "1.00x (reference E)"
  : >"$W/fault.log"
  t=$(mount_time "$FAULT/_f/lat=50/zstd.zarr" 'cat "$M/values.txt"')
  row "zarrfs, +50 ms, cat values.txt ($NCH chunks, zstd)" "$t" "$(ratio "$t" "$ref") of E (target <= 1.25x)"
  served zstd.zarr
  ref=$(mount_time "$FAULT/none.zarr" 'cat "$M/values.txt"')
  row "zarrfs through the fault server, no delay, cat values.txt ($NCH chunks, uncompressed)" "$ref" "1.00x (reference F)"
  : >"$W/fault.log"
  t=$(mount_time "$FAULT/_f/lat=50/none.zarr" 'cat "$M/values.txt"')
  row "zarrfs, +50 ms, cat values.txt ($NCH chunks, uncompressed)" "$t" "$(ratio "$t" "$ref") of F (target <= 1.25x)"
  served none.zarr
}
if [ "$ONLY_LAT" = 1 ]; then
  latency_rows
  exit 0
fi
ref_local=$(mount_time "$W/web/zstd.zarr" 'cat "$M/values.txt"')
row "local mount, cat values.txt (zstd)" "$ref_local" "1.00x (reference A)"
ref_curl=$(median "curl_all $NG zstd.zarr")
row "curl of the $NCH chunks, nginx" "$ref_curl" "1.00x (reference B)"
t=$(mount_time "$NG/zstd.zarr" 'cat "$M/values.txt"')
row "zarrfs over nginx, cat values.txt (zstd)" "$t" "$(ratio "$t" "$ref_local") of A"
t=$(mount_time "$NG/none.zarr" 'cat "$M/values.txt"')
row "zarrfs over nginx, cat values.txt (uncompressed)" "$t" "$(ratio "$t" "$ref_local") of A"
t=$(mount_time "$NG/zstd.zarr" 'head -1 "$M/values.txt"')
row "zarrfs over nginx, head -1 values.txt (first byte)" "$t" "-"
t=$(mount_time "$NG/zstd.zarr" 'par8')
row "zarrfs over nginx, 8 parallel readers of chunk views" "$t" "-"
ref_curl_lat=$(median "curl_all $FA zstd.zarr")
row "curl of the $NCH chunks, +${LAT} ms per request" "$ref_curl_lat" "1.00x (reference C)"
t=$(mount_time "$FA/none.zarr" 'cat "$M/values.txt"')
row "zarrfs, +${LAT} ms, cat values.txt (uncompressed)" "$t" "$(ratio "$t" "$ref_curl_lat") of C"
t=$(mount_time "$FA/zstd.zarr" 'cat "$M/values.txt"')
row "zarrfs, +${LAT} ms, cat values.txt (zstd)" "$t" "$(ratio "$t" "$ref_curl_lat") of C"
t=$(mount_time "$FA/zstd.zarr" 'head -1 "$M/values.txt"')
row "zarrfs, +${LAT} ms, head -1 values.txt (first byte)" "$t" "-"
latency_rows
