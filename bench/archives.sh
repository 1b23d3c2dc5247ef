#!/bin/bash
# bench/archives.sh - cost that follows the read, not the archive: the rows
# of issue 34, for one or two builds of zarrfs in one run.
#
# Archives (bench/archives.py, written with netCDF4/h5py, xarray and
# zarr-python 2 from Debian; kept in BENCH_DIR between runs):
#   K   a kerchunk reference set of CHUNKS (default 200,000) float32 chunks
#       of (1,25,36), zlib + shuffle, about 3.6 KB each, in six netCDF4 files
#   M   the same layout with 256 chunks of (104,25,36): 24M values
#   T   an xarray group of ROWS (default 10^7) rows x 4 columns (obs.csv)
#   T3  an xarray group of 10^6 rows x 3 columns, chunks of 10^5 (obs.csv)
#   H   10^7 float64 (zarrfs-mkstore, zstd, chunks of 10^6) served by nginx
#   B   a V2 array of 10,000 chunks whose chunk 900 is cut in half, and one
#       of 10 chunks whose chunk 2 is
#   C   a netCDF4 file with one contiguous uncompressed float64 variable of
#       5,000,000 values (40 MB), by kerchunk reference
#
# Every row runs on a fresh mount (page cache dropped where permitted) with
# an index cache of its own (-o index_cache=DIR, emptied before a "fresh"
# row and kept for a "next mount" row). A command that runs past --limit
# seconds is stopped and shown as ">LIMIT". Outputs of the two builds are
# compared (checksums): a row whose builds disagree is marked "DIFFER".
# Memory is the daemon's VmHWM; CPU its user + system time (what a loaded
# machine stretches less than the wall time). "reads" is the nginx access
# log's count.
#
# usage: bash bench/archives.sh [--old BIN] [--new BIN] [--chunks N]
#                               [--rows N] [--limit SECS] [--only LIST]
#   LIST: comma-separated archive letters (K,M,T,T3,H,B,C); default all.
# env: BENCH_DIR (keep archives), ZARRFS_MKSTORE
set -euo pipefail
export LC_ALL=C
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

OLD="" NEW="" CHUNKS=200000 ROWS=10000000 LIMIT=120 ONLY="K,M,T,T3,H,B,C"
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || { echo "bench/archives.sh: $1 needs a value" >&2; exit 2; }
  case $1 in
  --old) OLD=$(readlink -f "$2") ;;
  --new) NEW=$(readlink -f "$2") ;;
  --chunks) CHUNKS=$2 ;;
  --rows) ROWS=$2 ;;
  --limit) LIMIT=$2 ;;
  --only) ONLY=$2 ;;
  *) echo "bench/archives.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
if [ -z "$NEW" ]; then bench_tool ZARRFS_BIN zarrfs; NEW=$(readlink -f "$ZARRFS_BIN"); fi
bench_tool ZARRFS_MKSTORE zarrfs-mkstore
bench_need fusermount3 /usr/bin/python3 /usr/sbin/nginx curl
PY=/usr/bin/python3
GEN="$BENCH_ROOT/bench/archives.py"
bench_workdir zarrfs-archives
bench_traps
A=$WORK/archives
mkdir -p "$A"
BINS=()
[ -n "$OLD" ] && BINS+=("$OLD")
BINS+=("$NEW")
want() { [[ ",$ONLY," == *",$1,"* ]]; }

# ---- archives (made once per parameter set) ----
made() { [ "$(cat "$A/$1.params" 2>/dev/null)" = "$2" ]; }
make_archive() { # NAME PARAMS CMD...
  local name=$1 params=$2
  shift 2
  if ! made "$name" "$params"; then
    echo "writing archive $name ($params)" >&2
    rm -rf "${A:?}/$name" "$A/$name.params"
    "$@"
    echo "$params" >"$A/$name.params"
  fi
}
want K && make_archive K "$CHUNKS" "$PY" "$GEN" kerchunk "$A/K" --chunks "$CHUNKS"
want M && make_archive M 256x104 "$PY" "$GEN" kerchunk "$A/M" --chunks 256 --tchunk 104
want T && make_archive T "$ROWS" "$PY" "$GEN" table "$A/T" --rows "$ROWS"
want T3 && make_archive T3 1000000 "$PY" "$GEN" table3 "$A/T3" --rows 1000000 --chunk 100000
want H && make_archive H 10000000 "$ZARRFS_MKSTORE" numeric "$A/H/f64.zarr" \
  --shape 10000000 --chunk 1000000 --dtype float64 --codec zstd
want B && make_archive B 10000x900 sh -c "'$PY' '$GEN' bad '$A/B' --chunks 10000 --bad 900 &&
  '$PY' '$GEN' bad '$A/B/small' --chunks 10 --bad 2"
want C && make_archive C 5000000 "$PY" "$GEN" contiguous "$A/C" --values 5000000

# ---- measuring ----
OUT=$WORK/out
mkdir -p "$OUT"
declare -A RES # "row|bin" -> shown value
ROWS_SEEN=()
note_row() { local r; for r in "${ROWS_SEEN[@]}"; do [ "$r" = "$1" ] && return; done; ROWS_SEEN+=("$1"); }
put() { note_row "$1"; RES["$1|$2"]=$3; }

# fresh BIN INDEXDIR SOURCE [OPT...]: a fresh mount, index cache INDEXDIR
# (emptied unless KEEP_INDEX=yes).
fresh() {
  local bin=$1 idx=$2 src=$3
  shift 3
  unmount_store
  [ "${KEEP_INDEX:-no}" = yes ] || rm -rf "$idx"
  mkdir -p "$idx"
  chmod 700 "$idx"
  drop_caches
  mount_fs "$bin" "$src" -o "index_cache=$idx" "$@"
}
hwm() { awk '/VmHWM/ { printf "%.0f MiB", $2 / 1024 }' "/proc/$DAEMON/status" 2>/dev/null || echo "?"; }
# The daemon's CPU time so far (user + system), which a loaded machine
# stretches less than the wall time.
cpu() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f s", ($14 + $15) / t }' "/proc/$DAEMON/stat" 2>/dev/null || echo "?"; }
stat_of() { awk -v k="$1" '$1 == k { print $2 }' "$MNT/.zarrfs/stats" 2>/dev/null | tail -n 1; }
binid() { echo "$1" | md5sum | cut -c1-8; }
# timed ROW BIN CMD...: time CMD (limit LIMIT seconds) and put it; its
# output's checksum is kept to compare the builds.
timed() {
  local row=$1 bin=$2 f
  shift 2
  f=$OUT/$(echo "$row" | tr -c 'A-Za-z0-9' _).$(binid "$bin")
  time_once "$f.out" timeout -s KILL "$LIMIT" "$@"
  put_time "$row" "$bin"
  md5sum <"$f.out" | cut -c1-12 >"$f.sum"
}
# put_time ROW BIN: put time_once's result. A reader stopped at the limit
# leaves the daemon at work on its request (one that ignores interrupts),
# and the next read of the mount (its stats) would wait for it: the
# daemon is killed, the row is over.
put_time() {
  if [ "$TIMEOUT" = yes ] && [ -n "$DAEMON" ]; then kill -KILL "$DAEMON" 2>/dev/null || true; fi
  if [ "$TIMEOUT" = yes ]; then put "$1" "$2" ">$LIMIT s"; else put "$1" "$2" "$SECS s"; fi
}
# timed_null ROW BIN CMD...: as timed, the output thrown away (for a
# cat of gigabytes, whose writing to a file here would be timed too:
# 2.1 GB of K's text cost 4 s of this VM's two cores).
timed_null() {
  local row=$1 bin=$2
  shift 2
  time_once /dev/null timeout -s KILL "$LIMIT" "$@"
  put_time "$row" "$bin"
}

# nginx on 127.0.0.1 serving ROOT, with an access log: NGINX_URL, NGINX_LOG.
nginx_start() {
  local d=$WORK/nginx port
  mkdir -p "$d/tmp"
  port=$((20000 + RANDOM % 40000))
  NGINX_LOG=$d/access.log
  : >"$NGINX_LOG"
  cat >"$d/nginx.conf" <<EOF
worker_processes 2;
$([ "$(id -u)" = 0 ] && echo "user root;")
daemon off;
pid $d/nginx.pid;
error_log $d/error.log;
events { worker_connections 512; }
http {
  access_log $NGINX_LOG;
  client_body_temp_path $d/tmp; proxy_temp_path $d/tmp;
  fastcgi_temp_path $d/tmp; uwsgi_temp_path $d/tmp; scgi_temp_path $d/tmp;
  sendfile on;
  keepalive_requests 100000;
  server { listen 127.0.0.1:$port; root $1; }
}
EOF
  bench_bg "$d" /usr/sbin/nginx -c "$d/nginx.conf" -p "$d"
  NGINX_PID=$BG
  NGINX_URL=http://127.0.0.1:$port
  for _ in $(seq 100); do curl -s -o /dev/null "$NGINX_URL/" && return 0; sleep 0.05; done
  echo "bench: nginx did not start" >&2
  exit 1
}
nginx_stop() { kill -TERM -- "-$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true; }

for bin in "${BINS[@]}"; do
  IDX=$WORK/idx.$(echo "$bin" | md5sum | cut -c1-8)
  if want K; then
    fresh "$bin" "$IDX" "$A/K/refs.json"
    timed "K: stat values.txt (size)" "$bin" stat -c %s "$MNT/t2m/values.txt"
    put "K: stat values.txt (size)" "$bin" "$(stat -c %s "$MNT/t2m/values.txt") (${RES["K: stat values.txt (size)|$bin"]})"
    timed "K: fresh tail -n 1 values.txt" "$bin" tail -n 1 "$MNT/t2m/values.txt"
    put "K: VmHWM after tail" "$bin" "$(hwm)"
    put "K: daemon CPU after tail (stat + tail)" "$bin" "$(cpu)"
    KEEP_INDEX=yes fresh "$bin" "$IDX" "$A/K/refs.json"
    timed "K: next mount tail -n 1" "$bin" tail -n 1 "$MNT/t2m/values.txt"
    fresh "$bin" "$IDX" "$A/K/refs.json"
    timed "K: fresh cat values.txt" "$bin" cat "$MNT/t2m/values.txt"
    put "K: VmHWM after cat (bound cache+64M = 320 MiB)" "$bin" "$(hwm)"
    put "K: daemon CPU in cat" "$bin" "$(cpu)"
    put "K: decodes in cat" "$bin" "$(stat_of decodes)"
    fresh "$bin" "$IDX" "$A/K/refs.json"
    timed_null "K: fresh cat values.txt > /dev/null" "$bin" cat "$MNT/t2m/values.txt"
    put "K: daemon CPU in cat > /dev/null" "$bin" "$(cpu)"
  fi
  if want M; then
    fresh "$bin" "$IDX" "$A/M/refs.json"
    timed "M: fresh head -c 100 values.txt (24M values, 256 chunks)" "$bin" head -c 100 "$MNT/t2m/values.txt"
  fi
  if want T; then
    G=$A/T/group.zarr
    fresh "$bin" "$IDX" "$G"
    timed "T: first ls -l (10^7 rows)" "$bin" ls -l "$MNT"
    KEEP_INDEX=yes fresh "$bin" "$IDX" "$G"
    timed "T: next mount ls -l" "$bin" ls -l "$MNT"
    fresh "$bin" "$IDX" "$G"
    timed "T: fresh head -3 obs.csv" "$bin" head -3 "$MNT/obs.csv"
    fresh "$bin" "$IDX" "$G"
    timed "T: fresh cat obs.csv" "$bin" cat "$MNT/obs.csv"
    put "T: VmHWM of cat obs.csv (bound 320 MiB)" "$bin" "$(hwm)"
    # A table's size is learned by the reader that needs it (not in the
    # background by a stat: docs/reference.md) and kept by the index.
    KEEP_INDEX=yes fresh "$bin" "$IDX" "$G"
    timed "T: next mount ls -l, after that cat" "$bin" ls -l "$MNT"
    fresh "$bin" "$IDX" "$G"
    timed "T: reference: paste -d, of the 4 values.txt" "$bin" paste -d, "$MNT/obs/values.txt" \
      "$MNT/x/values.txt" "$MNT/y/values.txt" "$MNT/k/values.txt"
    fresh "$bin" "$IDX" "$G" -o cache_size=16M
    timed "T: cat obs.csv at cache_size=16M" "$bin" cat "$MNT/obs.csv"
    put "T: VmHWM at 16M (bound 80 MiB)" "$bin" "$(hwm)"
    put "T: store bytes read at 16M (store $(du -sb "$G" | cut -f1) B)" "$bin" "$(stat_of store_bytes_read)"
  fi
  if want T3; then
    for c in 256M 4M 1M; do
      fresh "$bin" "$IDX" "$A/T3/group.zarr" -o cache_size=$c
      timed "T3: wc -l obs.csv at cache $c" "$bin" wc -l "$MNT/obs.csv"
      put "T3: decodes / store bytes at $c" "$bin" "$(stat_of decodes) / $(stat_of store_bytes_read)"
    done
  fi
  if want H; then
    nginx_start "$A/H"
    fresh "$bin" "$IDX" "$NGINX_URL/f64.zarr"
    timed "H: remote cat values.txt (10^7 float64)" "$bin" cat "$MNT/values.txt"
    fresh "$bin" "$IDX" "$NGINX_URL/f64.zarr"
    n0=$(wc -l <"$NGINX_LOG")
    timed "H: remote tail -n 2 values.txt" "$bin" tail -n 2 "$MNT/values.txt"
    put "H: requests in tail" "$bin" "$(($(wc -l <"$NGINX_LOG") - n0))"
    put "H: FUSE reads in tail" "$bin" "$(stat_of requests_read)"
    nginx_stop
  fi
  if want B; then
    fresh "$bin" "$IDX" "$A/B/small/bad.zarr"
    timed "B: head -3 counts/values.txt (chunk 2 bad)" "$bin" head -3 "$MNT/counts/values.txt"
    put "B: head -3 counts/values.txt (chunk 2 bad)" "$bin" "$(head -3 "$MNT/counts/values.txt" 2>&1 | tr '\n' ' ' | cut -c1-40)"
    fresh "$bin" "$IDX" "$A/B/bad.zarr" -o sizes=lazy
    timed "B: lazy cat | wc -l (10,000 chunks, 900 bad)" "$bin" sh -c "cat '$MNT/counts/values.txt' | wc -l"
    put "B: lazy cat | wc -l (10,000 chunks, 900 bad)" "$bin" "$(tail -n 1 "$OUT"/B__lazy*."$(binid "$bin")".out | tr -d ' ') lines"
  fi
  if want C; then
    fresh "$bin" "$IDX" "$A/C/refs.json"
    timed "C: cat of a 40 MB contiguous variable" "$bin" cat "$MNT/v/values.txt"
    put "C: VmHWM of that cat" "$bin" "$(hwm)"
    fresh "$bin" "$IDX" "$A/C/refs.json" -o cache_size=16M
    timed "C: cat at cache_size=16M" "$bin" cat "$MNT/v/values.txt"
    put "C: VmHWM of that cat (bound 80 MiB)" "$bin" "$(hwm)"
    fresh "$bin" "$IDX" "$A/C/refs.json" -o max_decode=16M
    timed "C: the same at max_decode=16M" "$bin" sh -c "cat '$MNT/v/values.txt' | wc -l"
    put "C: lines read at max_decode=16M (of 5000000)" "$bin" "$(tail -n 1 "$OUT"/C__the_same*."$(binid "$bin")".out)"
  fi
  unmount_store
done

# ---- the table ----
printf '\n| what |'
for bin in "${BINS[@]}"; do printf ' %s |' "$bin"; done
printf '\n|---|'
for _ in "${BINS[@]}"; do printf -- '---|'; done
echo
for r in "${ROWS_SEEN[@]}"; do
  printf '| %s |' "$r"
  for bin in "${BINS[@]}"; do printf ' %s |' "${RES["$r|$bin"]:--}"; done
  echo
done
# Outputs the builds disagree on (checksums of each timed command's output).
if [ ${#BINS[@]} -eq 2 ]; then
  a=$(binid "${BINS[0]}") b=$(binid "${BINS[1]}")
  for f in "$OUT"/*."$a".sum; do
    g=${f%."$a".sum}.$b.sum
    [ -f "$g" ] && ! cmp -s "$f" "$g" && echo "DIFFER: $(basename "${f%."$a".sum}")"
  done
fi
exit 0
