#!/bin/bash
# bench/perf.sh - zarrfs text views against their limits, in one run (see
# bench/README.md, "Text views against their limits").
#
# Writes with zarrfs-mkstore N strings of ~15 bytes, a tenth of them (at
# most 1M) a chunk, in three stores (vlen-utf8 + zstd; zarrs.vlen with zstd
# data; zarrs.vlen uncompressed), the ~40-byte zarrs.vlen zstd store of
# bench/run.sh, and N float64 and N int32 (1-D, zstd). Each on fresh mounts
# with the page cache dropped: cat values.txt (seconds, the bytes the daemon
# read against the store's size; the uncompressed store also with its files
# in the page cache), stat values.txt then cat, tail -c 200 of
# the string stores and ls -l c/ of the uncompressed one (seconds and bytes
# read: rchar of /proc/PID/io), the daemon's peak RSS (VmHWM) while it
# serves 10x its cache_size, and ls / ls -l of a K-key kerchunk directory;
# with perf installed, the kernel's page clearing as a share of the
# daemon's samples during one more cat of the vlen-utf8 and float64 stores.
# References timed in the same run: the FUSE limit (bench/memfs serving the
# same text from memory, with zarrfs' FUSE settings), zstd -dc of the
# stores' compressed bytes, zarr-python 2.x dumping the same data as lines,
# ls and ls -l of a local directory of 2K empty files. Prints a markdown table of
# medians with each figure's ratio to its reference and, for information
# only, the targets of bench/README.md. It never fails on speed.
#
# usage: bash bench/perf.sh [--count N] [--runs R] [--keys K] [--cache MIB]
#                           [--limit SECS]
# env:   ZARRFS_BIN, ZARRFS_MKSTORE, ZARRFS_MEMFS (default ./, then build/;
#        bench/memfs is compiled into the work dir when there is none),
#        PYTHON (default /usr/bin/python3), BENCH_DIR (keep the stores there
#        and reuse them; default a temp dir, removed)
set -euo pipefail
export LC_ALL=C
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

COUNT=10000000 RUNS=3 KEYS="" CACHE_MIB=16 LIMIT=60
usage() {
  echo "usage: bash bench/perf.sh [--count N] [--runs R] [--keys K] [--cache MIB] [--limit SECS]" >&2
  exit 2
}
ARGS="$*"
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case $1 in
  --count) COUNT=$2 ;;
  --runs) RUNS=$2 ;;
  --keys) KEYS=$2 ;;
  --cache) CACHE_MIB=$2 ;;
  --limit) LIMIT=$2 ;;
  *) usage ;;
  esac
  shift 2
done
# Kerchunk keys: 1,000,000, or a tenth of a smaller --count.
[ -n "$KEYS" ] || KEYS=$((COUNT >= 10000000 ? 1000000 : COUNT / 10))
for v in "$COUNT" "$RUNS" "$KEYS" "$CACHE_MIB" "$LIMIT"; do
  case $v in '' | *[!0-9]* | 0) usage ;; esac
done
CHUNK=$((COUNT / 10))
[ "$CHUNK" -le 1000000 ] || CHUNK=1000000
[ "$CHUNK" -ge 1 ] || CHUNK=1

bench_tool ZARRFS_BIN zarrfs
bench_tool ZARRFS_MKSTORE zarrfs-mkstore
bench_need zstd fusermount3 timeout cmp awk xargs
PY=${PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3 || echo python3)
bench_workdir zarrfs-perf
bench_traps
D=$WORK/data

say() { echo "perf: $*" >&2; }

if ! bench_find ZARRFS_MEMFS bench/memfs; then
  say "no bench/memfs built: compiling it"
  ZARRFS_MEMFS=$WORK/memfs
  # shellcheck disable=SC2046 # pkg-config's words are separate flags
  cc -O2 -o "$ZARRFS_MEMFS" "$BENCH_ROOT/bench/memfs.c" $(pkg-config --cflags --libs fuse3)
fi

# ---- zarr-python 2.x (installed when missing and we may) ----

zarr_version() { "$PY" "$BENCH_ROOT/bench/zarrpy.py" version 2>/dev/null; }
ZV=$(zarr_version) || ZV=""
if [ -z "$ZV" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && [ "$PY" = /usr/bin/python3 ]; then
  say "installing python3-zarr (Debian) for the zarr-python reference"
  timeout 600 env DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-zarr \
    >>"$WORK/apt.log" 2>&1 || true
  ZV=$(zarr_version) || ZV=""
fi
case $ZV in
2.*) PYOK=yes PYNOTE="" ;;
*) PYOK=no PYNOTE="zarr-python 2.x is not available to $PY (${ZV:-no zarr module}): its rows are left out" ;;
esac

# The kerchunk directory (KEYS keys: 2*KEYS names, K and K.txt) and a local
# directory of as many empty files, created in the background while the
# stores are written (creating files is the file system's work).
K=$WORK/kerchunk
KJOB=""
if [ "$(cat "$K/params" 2>/dev/null)" != "keys=$KEYS" ]; then
  say "writing a kerchunk reference file of $KEYS keys and a directory of $((2 * KEYS)) empty files"
  rm -rf "$K"
  mkdir -p "$K/plain"
  head -c 4194304 /dev/urandom >"$K/blob.bin"
  kerchunk_refs "$K/refs.json" 1 1 "$KEYS" 4194304
  seq 0 $((KEYS - 1)) | awk '{ print; print $0 ".txt" }' >"$K/names"
  bench_bg "$K/plain" xargs -a "$K/names" touch
  KJOB=$BG
fi

# ---- data (reused from BENCH_DIR when written with the same parameters) ----

mk() { "$ZARRFS_MKSTORE" "$@" >/dev/null; }
# cat_chunks STORE OUT: the store's chunk files in key order into one file
# (each a zstd frame, so the result is a multi-frame zstd file).
cat_chunks() { find "$1/c" -type f -printf '%f\n' | sort -n | sed "s|^|$1/c/|" | xargs cat >"$2"; }

PARAMS="count=$COUNT chunk=$CHUNK py=$PYOK i32v2=1 mkstore=$(cksum <"$ZARRFS_MKSTORE" | cut -d' ' -f1)"
if [ "$(cat "$D/params" 2>/dev/null)" != "$PARAMS" ]; then
  say "writing the stores: $COUNT elements, $CHUNK a chunk, in $D"
  rm -rf "$D"
  mkdir -p "$D"
  S15=(--count "$COUNT" --chunk "$CHUNK" --strlen 15)
  mk bigstrings "$D/utf8.zarr" "${S15[@]}" --inner utf8 --data zstd --plain "$D/s15.txt"
  if [ "$PYOK" = yes ]; then # zarr-python's own V2 copy, beside the rest
    bench_bg "$D" "$PY" "$BENCH_ROOT/bench/zarrpy.py" write-strings "$D/s15.txt" "$D/strv2.zarr" "$CHUNK"
    PYJOB=$BG
  fi
  mk bigstrings "$D/vzstd.zarr" "${S15[@]}" --data zstd --zst "$D/vzstd.zst"
  mk bigstrings "$D/vnone.zarr" "${S15[@]}" --data none
  mk bigstrings "$D/s40.zarr" --count "$COUNT" --chunk "$CHUNK" --strlen 40 --data zstd \
    --plain "$D/s40.txt" --zst "$D/s40.zst"
  NUM=(--shape "$COUNT" --chunk "$CHUNK" --codec zstd)
  mk numeric "$D/f64.zarr" "${NUM[@]}" --dtype float64 --plain "$D/f64.txt"
  mk numeric "$D/f64v2.zarr" "${NUM[@]}" --dtype float64 --format 2
  mk numeric "$D/i32.zarr" "${NUM[@]}" --dtype int32 --plain "$D/i32.txt"
  mk numeric "$D/i32v2.zarr" "${NUM[@]}" --dtype int32 --format 2
  for s in utf8 f64 i32; do cat_chunks "$D/$s.zarr" "$D/$s.zst"; done
  if [ "$PYOK" = yes ]; then
    wait "$PYJOB" || { echo "perf: zarr-python could not write its copy" >&2; exit 1; }
  fi
  echo "$PARAMS" >"$D/params"
fi

if [ -n "$KJOB" ]; then
  wait "$KJOB" || { echo "perf: writing the kerchunk directory failed" >&2; exit 1; }
  echo "keys=$KEYS" >"$K/params"
fi

# ---- measuring ----

lim() { timeout -k 2 "$LIMIT" "$@"; }
# Bytes the daemon has read so far (rchar: every read(2)/pread(2), its
# store files and /dev/fuse alike); empty with no daemon.
rchar() { if [ -n "$DAEMON" ]; then awk '$1 == "rchar:" { print $2 }' "/proc/$DAEMON/io"; fi; }
# CPU the daemon has used so far, in clock ticks (user + system, all its
# threads: fields 14 and 15 of /proc/PID/stat); empty with no daemon.
TICK=$(getconf CLK_TCK)
cputicks() { if [ -n "$DAEMON" ]; then awk '{ print $14 + $15 }' "/proc/$DAEMON/stat"; fi; }

# The setups a run starts with: a fresh zarrfs mount of STORE (with ZOPTS)
# on a dropped page cache; a fresh memfs of MEMFILE, the page cache dropped
# after it loaded the file; no mount.
ZOPTS=()
fresh_zarrfs() { unmount_store; drop_caches; mount_store "$STORE" "${ZOPTS[@]}"; }
fresh_memfs() { unmount_store; mount_fs "$ZARRFS_MEMFS" "$MEMFILE"; drop_caches; }
no_mount() { unmount_store; drop_caches; }
# A fresh zarrfs mount of STORE with the store's files read into the page
# cache first: zarrfs and memfs both serve from memory, so the ratio is
# zarrfs' own cost against the FUSE limit, without the disk.
fresh_zarrfs_warm() {
  unmount_store
  drop_caches
  find "$STORE" -type f -exec cat {} + >/dev/null
  mount_store "$STORE" "${ZOPTS[@]}"
}

# runs SETUP CMD...: RUNS times SETUP, then CMD timed (output to /dev/null)
# with the daemon's rchar before and after. MED: the median seconds
# (">LIMIT" when a run hit the limit, which ends the runs); READ: the
# median bytes read and CPU: the median CPU seconds the daemon used
# meanwhile (both empty without a daemon). CHECK, when set, runs after
# the first run on the same mount (a correctness check).
runs() {
  local setup=$1 t=() r=() u=() a b ca cb i
  shift
  MED="" READ="" CPU=""
  for i in $(seq "$RUNS"); do
    $setup
    a=$(rchar) ca=$(cputicks)
    time_once /dev/null lim "$@"
    if [ "$TIMEOUT" = yes ]; then
      MED=">$LIMIT"
      unmount_store
      return
    fi
    b=$(rchar) cb=$(cputicks)
    t+=("$SECS")
    if [ -n "$a" ]; then r+=($((b - a))); fi
    if [ -n "$ca" ]; then u+=("$(awk -v a="$ca" -v b="$cb" -v t="$TICK" 'BEGIN { printf "%.3f", (b - a) / t }')"); fi
    if [ "$i" = 1 ] && [ -n "${CHECK:-}" ]; then $CHECK; fi
  done
  MED=$(bench_median "${t[@]}")
  if [ ${#r[@]} -gt 0 ]; then READ=$(bench_median "${r[@]}"); fi
  if [ ${#u[@]} -gt 0 ]; then CPU=$(bench_median "${u[@]}"); fi
}

# check_view: values.txt is the text (same mount: the kernel keeps the
# pages zarrfs served, so this costs little).
check_view() {
  lim cmp -s "$MNT/values.txt" "$PLAIN" ||
    { echo "perf: $STORE: values.txt differs from $PLAIN" >&2; exit 1; }
}
# ---- the table ----

# Human bytes.
bytes() { awk -v b="$1" 'BEGIN { if (b == "") print ""; else if (b >= 1048576) printf "%.1f MiB", b / 1048576; else if (b >= 1024) printf "%.1f KiB", b / 1024; else printf "%d B", b }'; }
# Seconds as shown: "0.123 s", ">60 s".
secs() { case $1 in '') echo "" ;; '>'*) echo "$1 s" ;; *) awk -v s="$1" 'BEGIN { printf "%.3f s", s }' ;; esac; }
# ratio A B: A / B as "1.23x" (">1.2x" when A is a limit hit; "-" when B is not a number).
ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    gt = (substr(a, 1, 1) == ">"); if (gt) a = substr(a, 2)
    if (b == "" || substr(b, 1, 1) == ">" || b + 0 <= 0 || a == "") { print "-"; exit }
    printf "%s%.2fx", gt ? ">" : "", a / b
  }'
}
# met EXPR A B: "met" or "not met" for the awk expression EXPR over a and
# b; "not met" when A hit the limit (">..."), "-" without numbers.
met() {
  awk -v a="$2" -v b="$3" "BEGIN {
    if (substr(a, 1, 1) == \">\") { print \"not met\"; exit }
    if (a == \"\" || b == \"\" || substr(b, 1, 1) == \">\") { print \"-\"; exit }
    print ($1) ? \"met\" : \"not met\"
  }"
}
row() { printf '| %s | %s | %s | %s | %s | %s |\n' "$@"; }

TABLE=$WORK/table.md
: >"$TABLE"
out() { row "$@" >>"$TABLE"; }
ref_row() { out "reference: $1" "$(secs "$2")" "" "" "" ""; }

# ---- references ----

say "references"
declare -A FUSE ZSTD
for t in s15 s40 f64 i32; do
  MEMFILE=$D/$t.txt STORE=memfs PLAIN=$D/$t.txt
  CHECK=check_view runs fresh_memfs cat "$MNT/values.txt"
  FUSE[$t]=$MED
done
unmount_store
for z in utf8 vzstd s40 f64 i32; do
  runs no_mount zstd -dcq "$D/$z.zst"
  ZSTD[$z]=$MED
done
# The uncompressed store's files read cold (index and data, in key order):
# what its cat must read from disk, which memfs does not.
# shellcheck disable=SC2016 # $1 is the inner shell's
runs no_mount sh -c 'find "$1/c" -type f -printf "%f\n" | sort -n | sed "s|^|$1/c/|" | xargs cat' sh "$D/vnone.zarr"
STORE_READ=$MED
TXT_S15=$(stat -c %s "$D/s15.txt")
TXT_S40=$(stat -c %s "$D/s40.txt")
ref_row "FUSE limit: cat of memfs serving the ~15-byte strings' text ($(bytes "$TXT_S15"))" "${FUSE[s15]}"
ref_row "FUSE limit, the ~40-byte strings' text ($(bytes "$TXT_S40"))" "${FUSE[s40]}"
ref_row "FUSE limit, the float64 text ($(bytes "$(stat -c %s "$D/f64.txt")"))" "${FUSE[f64]}"
ref_row "FUSE limit, the int32 text ($(bytes "$(stat -c %s "$D/i32.txt")"))" "${FUSE[i32]}"
ref_row "cat of the uncompressed zarrs.vlen store's chunk files ($(bytes "$(du -sb "$D/vnone.zarr" | cut -f1)")), page cache dropped" "$STORE_READ"
ref_row "zstd -dc of the vlen-utf8 chunks ($(bytes "$(stat -c %s "$D/utf8.zst")"))" "${ZSTD[utf8]}"
ref_row "zstd -dc of the zarrs.vlen data parts, 15 B ($(bytes "$(stat -c %s "$D/vzstd.zst")"))" "${ZSTD[vzstd]}"
ref_row "zstd -dc of the zarrs.vlen data parts, 40 B ($(bytes "$(stat -c %s "$D/s40.zst")"))" "${ZSTD[s40]}"
ref_row "zstd -dc of the float64 chunks ($(bytes "$(stat -c %s "$D/f64.zst")"))" "${ZSTD[f64]}"
ref_row "zstd -dc of the int32 chunks ($(bytes "$(stat -c %s "$D/i32.zst")"))" "${ZSTD[i32]}"

# zarr-python: the dump's own seconds (python and imports excluded), first
# checked against the text: the same lines (strings: the same bytes).
PY_STR="" PY_F64="" PY_I32=""
# pydump STORE KIND: median of RUNS dumps into PYMED; PYOUT: the last
# "LINES CHARACTERS".
pydump() {
  local t=() i o
  PYMED=""
  for i in $(seq "$RUNS"); do
    drop_caches
    o=$(lim "$PY" "$BENCH_ROOT/bench/zarrpy.py" dump "$1" "$2" /dev/null) || { PYMED=">$LIMIT"; return; }
    t+=("${o%% *}")
    PYOUT=${o#* }
  done
  PYMED=$(bench_median "${t[@]}")
}
if [ "$PYOK" = yes ]; then
  pydump "$D/strv2.zarr" strings
  PY_STR=$PYMED
  [ "$PY_STR" = ">$LIMIT" ] || [ "$PYOUT" = "$(wc -l <"$D/s15.txt") $TXT_S15" ] ||
    { echo "perf: zarr-python's strings ($PYOUT lines, characters) differ from the text" >&2; exit 1; }
  pydump "$D/f64v2.zarr" repr
  PY_F64=$PYMED
  [ "$PY_F64" = ">$LIMIT" ] || [ "${PYOUT% *}" = "$COUNT" ] ||
    { echo "perf: zarr-python wrote ${PYOUT% *} float64 lines, want $COUNT" >&2; exit 1; }
  ref_row "zarr-python $ZV: the strings as lines (its own V2 vlen-utf8 zstd copy)" "$PY_STR"
  pydump "$D/i32v2.zarr" repr
  PY_I32=$PYMED
  [ "$PY_I32" = ">$LIMIT" ] || [ "$PYOUT" = "$(wc -l <"$D/i32.txt") $(stat -c %s "$D/i32.txt")" ] ||
    { echo "perf: zarr-python's int32 ($PYOUT lines, characters) differ from the text" >&2; exit 1; }
  ref_row "zarr-python $ZV: the float64 as repr lines (V2 zstd)" "$PY_F64"
  ref_row "zarr-python $ZV: the int32 as repr lines (V2 zstd)" "$PY_I32"
fi

# tail of the plain text with nothing mounted and the page cache dropped:
# what starting tail and reading a file's end cost on this machine.
declare -A TAIL
for t in s15 s40; do
  runs no_mount tail -c 200 "$D/$t.txt"
  TAIL[$t]=$MED
done
ref_row "tail -c 200 of the ~15-byte strings' text file (page cache dropped)" "${TAIL[s15]}"
ref_row "tail -c 200 of the ~40-byte strings' text file (page cache dropped)" "${TAIL[s40]}"

runs no_mount ls "$K/plain"
LS_LOCAL=$MED
ref_row "ls of a local directory of $((2 * KEYS)) empty files" "$LS_LOCAL"
runs no_mount ls -l "$K/plain"
LSL_LOCAL=$MED
ref_row "ls -l of a local directory of $((2 * KEYS)) empty files" "$LSL_LOCAL"

# ---- the stores ----

# store_size DIR: bytes of its files.
store_size() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }

# measure NAME STORE TEXT ZSTD-KEY LABEL: the rows of one store.
measure() {
  local name=$1 z=$3 zkey=$4 label=$5 cat_s cat_read size t_stat t_after r_stat r_after
  STORE=$D/$2 PLAIN=$D/$z.txt
  say "$label"
  size=$(store_size "$STORE")
  CHECK=check_view runs fresh_zarrfs cat "$MNT/values.txt"
  cat_s=$MED cat_read=$READ
  local cat_cpu=$CPU
  local rd
  rd="$(bytes "$cat_read") ($(ratio "$cat_read" "$size") of $(bytes "$size") stored)"
  [ -n "$cat_read" ] || rd=""
  local tgt=""
  out "$label: cat values.txt" "$(secs "$cat_s")" "$rd" "FUSE limit (${FUSE[$z]} s)" "$(ratio "$cat_s" "${FUSE[$z]}")" ""
  if [ "$name" = vnone ]; then
    out "$label: cat values.txt" "$(secs "$cat_s")" "" "cold read of its chunk files ($STORE_READ s)" "$(ratio "$cat_s" "$STORE_READ")" ""
    # The same cat with the store's files in the page cache, against the
    # FUSE limit: memory against memory.
    runs fresh_zarrfs_warm cat "$MNT/values.txt"
    tgt="≤ 1.5x FUSE limit: $(met 'a <= 1.5 * b' "$MED" "${FUSE[$z]}")"
    out "$label: cat values.txt, store files in the page cache" "$(secs "$MED")" "" "FUSE limit (${FUSE[$z]} s)" "$(ratio "$MED" "${FUSE[$z]}")" "$tgt"
  fi
  if [ -n "$zkey" ]; then
    tgt=""
    [ "$name" = utf8 ] && tgt="≤ 0.7x zstd -dc: $(met 'a <= 0.7 * b' "$cat_s" "${ZSTD[$zkey]}")"
    out "$label: cat values.txt" "$(secs "$cat_s")" "" "zstd -dc (${ZSTD[$zkey]} s)" "$(ratio "$cat_s" "${ZSTD[$zkey]}")" "$tgt"
  fi
  # The daemon's CPU against the wall time: above 1x, more than one core
  # at work (the workers decode and render the units, or slices of text,
  # after the one being read). Numbers are the daemon's work, so the
  # target is theirs; strings are shown for the profile.
  tgt=""
  case $name in f64 | i32) tgt="> 1.3x on 2 idle cores: $(met 'a > 1.3 * b' "$cat_cpu" "$cat_s")" ;; esac
  out "$label: daemon CPU (user + system) during cat values.txt" "$(secs "$cat_cpu")" "" "cat values.txt ($cat_s s)" \
    "$(ratio "$cat_cpu" "$cat_s")" "$tgt"
  if [ "$name" = utf8 ] && [ -n "$PY_STR" ]; then
    out "$label: cat values.txt" "$(secs "$cat_s")" "" "zarr-python strings ($PY_STR s)" "$(ratio "$cat_s" "$PY_STR")" ""
  fi
  if [ "$name" = f64 ] && [ -n "$PY_F64" ]; then
    local faster
    faster=$(ratio "$PY_F64" "$cat_s")
    out "$label: cat values.txt" "$(secs "$cat_s")" "" "zarr-python repr ($PY_F64 s)" "$(ratio "$cat_s" "$PY_F64")" \
      "≥ 20x faster: $(met 'b >= 20 * a' "$cat_s" "$PY_F64") ($faster)"
  fi
  if [ "$name" = i32 ] && [ -n "$PY_I32" ]; then
    local faster
    faster=$(ratio "$PY_I32" "$cat_s")
    out "$label: cat values.txt" "$(secs "$cat_s")" "" "zarr-python repr ($PY_I32 s)" "$(ratio "$cat_s" "$PY_I32")" \
      "≥ 15x faster: $(met 'b >= 15 * a' "$cat_s" "$PY_I32") ($faster)"
  fi

  # stat on a fresh mount, then cat on that mount.
  local ts=() ta=() rs=() ra=() i a b c s1
  t_stat="" t_after="" r_stat="" r_after=""
  for i in $(seq "$RUNS"); do
    fresh_zarrfs
    a=$(rchar)
    time_once /dev/null lim stat "$MNT/values.txt"
    [ "$TIMEOUT" = no ] || { t_stat=">$LIMIT"; break; }
    s1=$SECS
    b=$(rchar)
    time_once /dev/null lim cat "$MNT/values.txt"
    [ "$TIMEOUT" = no ] || { t_after=">$LIMIT"; break; }
    c=$(rchar)
    ts+=("$s1") ta+=("$SECS") rs+=($((b - a))) ra+=($((c - b)))
  done
  unmount_store
  if [ -z "$t_stat$t_after" ]; then
    t_stat=$(bench_median "${ts[@]}") t_after=$(bench_median "${ta[@]}")
    r_stat=$(bench_median "${rs[@]}") r_after=$(bench_median "${ra[@]}")
  fi
  tgt=""
  [ "$name" = f64 ] && tgt="≤ 0.3x cat: $(met 'a <= 0.3 * b' "$t_stat" "$cat_s")"
  out "$label: stat values.txt (fresh mount)" "$(secs "$t_stat")" "$(bytes "${r_stat:-}")" "cat values.txt ($cat_s s)" "$(ratio "$t_stat" "$cat_s")" "$tgt"
  out "$label: cat values.txt after that stat" "$(secs "$t_after")" "$(bytes "${r_after:-}")" "cat values.txt ($cat_s s)" "$(ratio "$t_after" "$cat_s")" ""

  case $name in utf8 | vzstd | vnone | s40)
    CHECK="" runs fresh_zarrfs tail -c 200 "$MNT/values.txt"
    # the targets are for the uncompressed store: elsewhere the
    # last chunk's data must be decompressed whole (one zstd frame)
    tgt=""
    [ "$name" = vnone ] && tgt="< 256 KiB read: $(met 'a < b' "$READ" 262144), < 20 ms: $(met 'a < b' "$MED" 0.020)"
    out "$label: tail -c 200 values.txt" "$(secs "$MED")" "$(bytes "$READ")" "cat values.txt ($cat_s s)" "$(ratio "$MED" "$cat_s")" "$tgt"
    out "$label: tail -c 200 values.txt" "$(secs "$MED")" "" "tail -c 200 of the text file (${TAIL[$z]} s)" "$(ratio "$MED" "${TAIL[$z]}")" ""
    ;;
  esac
  if [ "$name" = vnone ]; then
    CHECK="" runs fresh_zarrfs ls -l "$MNT/c"
    out "$label: ls -l c/ ($(find "$STORE/c" -type f | wc -l) chunks)" "$(secs "$MED")" "$(bytes "$READ")" "cat values.txt ($cat_s s)" "$(ratio "$MED" "$cat_s")" \
      "< 1 MiB read: $(met 'a < b' "$READ" 1048576)"
  fi
  unmount_store
}

measure utf8 utf8.zarr s15 utf8 "15 B strings, vlen-utf8 + zstd"
measure vzstd vzstd.zarr s15 vzstd "15 B strings, zarrs.vlen + zstd"
measure vnone vnone.zarr s15 "" "15 B strings, zarrs.vlen uncompressed"
measure s40 s40.zarr s40 s40 "40 B strings, zarrs.vlen + zstd"
measure f64 f64.zarr f64 f64 "float64, zstd"
measure i32 i32.zarr i32 i32 "int32, zstd"

# ---- the kernel's page clearing in the daemon (perf record) ----

# clear_share STORE: one more fresh-mount cat of STORE's values.txt with
# the daemon under `perf record`; CLEAR: the percentage of its samples in
# the kernel's page clearing (clear_page_*, clear_huge_page, folio_zero_*:
# pages the daemon touched for the first time), empty when perf cannot
# record here.
clear_share() {
  local data=$WORK/clear.data pid
  CLEAR=""
  command -v perf >/dev/null || return 0
  STORE=$1
  fresh_zarrfs
  perf record -q -F 999 -p "$DAEMON" -o "$data" >/dev/null 2>&1 &
  pid=$!
  sleep 0.5
  lim cat "$MNT/values.txt" >/dev/null
  kill -INT "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  unmount_store
  [ -s "$data" ] || return 0
  CLEAR=$(perf report -i "$data" --no-children --sort sym --stdio 2>/dev/null |
    awk '/^ *[0-9.]+%/ { p = $1; sub("%", "", p); t += p
      if ($0 ~ /clear_page|clear_huge_page|folio_zero/) c += p }
      END { if (t > 0) printf "%.1f", 100 * c / t }')
  rm -f "$data"
}
say "page clearing (perf record)"
for t in utf8:"15 B strings, vlen-utf8 + zstd" f64:"float64, zstd"; do
  clear_share "$D/${t%%:*}.zarr"
  [ -n "$CLEAR" ] || continue
  out "${t#*:}: kernel page clearing, share of the daemon's samples during cat values.txt" \
    "$CLEAR%" "" "" "" "< 5%: $(met 'a < 5' "$CLEAR" 1)"
done

# ---- peak RSS while serving 10x cache_size (one run) ----

say "peak RSS"
CACHE_KB=$((CACHE_MIB * 1024))
# A smaller cache when the text is not 10x the asked one (small --count).
if [ $((CACHE_KB * 10240)) -gt "$TXT_S40" ]; then CACHE_KB=$((TXT_S40 / 10240)); fi
[ "$CACHE_KB" -ge 64 ] || CACHE_KB=64
STORE=$D/s40.zarr ZOPTS=(-o "cache_size=${CACHE_KB}K")
fresh_zarrfs
a=$(rchar)
time_once /dev/null lim cat "$MNT/values.txt"
b=$(rchar)
HWM_KB=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$DAEMON/status")
unmount_store
ZOPTS=()
RSS_LIMIT_KB=$((CACHE_KB + 65536))
out "40 B strings: daemon peak RSS (VmHWM) over a cat of $(bytes "$TXT_S40"), cache_size $(bytes $((CACHE_KB * 1024)))" \
  "$(bytes $((HWM_KB * 1024)))" "$(bytes $((b - a)))" "cache_size + 64 MiB ($(bytes $((RSS_LIMIT_KB * 1024))))" \
  "$(ratio "$HWM_KB" "$RSS_LIMIT_KB")" "≤ cache_size + 64 MiB: $(met 'a <= b' "$HWM_KB" "$RSS_LIMIT_KB")"

# ---- a kerchunk directory of KEYS keys against a local one ----

say "kerchunk directory of $KEYS keys"
NAMES_WANT=$((2 * KEYS + 3)) # K and K.txt per key, values.txt, info.txt, .zarray
# check_names: ls shows every name.
check_names() {
  local n
  n=$(lim ls -f "$MNT/d" | grep -vc '^\.\.\?$' || true)
  [ "$n" = "$NAMES_WANT" ] || { echo "perf: ls of the kerchunk d/ shows $n names, want $NAMES_WANT" >&2; exit 1; }
}
STORE=$K/refs.json
MOUNT_WAIT=120
CHECK=check_names runs fresh_zarrfs ls "$MNT/d"
out "kerchunk, $KEYS keys: ls d/ ($NAMES_WANT names)" "$(secs "$MED")" "$(bytes "$READ")" "local ls ($LS_LOCAL s)" \
  "$(ratio "$MED" "$LS_LOCAL")" "≤ 3x local ls: $(met 'a <= 3 * b' "$MED" "$LS_LOCAL")"
CHECK="" runs fresh_zarrfs ls -l "$MNT/d"
out "kerchunk, $KEYS keys: ls -l d/" "$(secs "$MED")" "$(bytes "$READ")" "local ls ($LS_LOCAL s)" \
  "$(ratio "$MED" "$LS_LOCAL")" "≤ 3x local ls: $(met 'a <= 3 * b' "$MED" "$LS_LOCAL")"
out "kerchunk, $KEYS keys: ls -l d/" "$(secs "$MED")" "$(bytes "$READ")" "local ls -l ($LSL_LOCAL s)" \
  "$(ratio "$MED" "$LSL_LOCAL")" ""
unmount_store

# ---- print ----

echo "zarrfs perf: $COUNT elements, $CHUNK a chunk, $KEYS kerchunk keys; median of $RUNS runs"
echo
echo "| measure | median | daemon read | reference (same run) | ratio | target (info) |"
echo "|---|---|---|---|---|---|"
cat "$TABLE"
echo
if [ "$DROP" = yes ]; then
  echo "Each run on a fresh mount with the page cache dropped (memfs: dropped after it loaded its file)."
else
  echo "Each run on a fresh mount; the page cache could not be dropped here, so store files may be cached."
fi
echo "daemon read: rchar of /proc/PID/io (store files and /dev/fuse alike). Limit ${LIMIT} s a run (>${LIMIT} s: stopped there)."
[ -z "$PYNOTE" ] || echo "$PYNOTE"
echo "Machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end."
echo "zarrfs: $ZARRFS_BIN; memfs: $ZARRFS_MEMFS${BENCH_DIR:+; data kept in $WORK}"
echo "reproduce: bash bench/perf.sh${ARGS:+ $ARGS}"
if [ -s "$LOG" ]; then
  echo "daemon log (last lines):" >&2
  tail -n 5 "$LOG" >&2
fi
