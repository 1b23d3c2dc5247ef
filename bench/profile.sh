#!/bin/bash
# bench/profile.sh - where the zarrfs daemon spends its CPU during `cat
# values.txt` of a store (see bench/README.md, "Profile by stage").
#
# Mounts STORE with the daemon running under `perf record` (page cache
# dropped first), cats the view to /dev/null, unmounts, and sorts the
# samples into stages by their call chains: I/O, decompression, rendering,
# FUSE, other. A sample goes to the first frame, from the leaf up, that
# names a stage (rules below, in classify); a frame of the daemon's own
# code ends the walk (its stage by its source file, else "other"), so the
# libfuse frames every request runs under never swallow the daemon's work.
#
# usage: bash bench/profile.sh [--callgraph dwarf|fp|none] [--freq HZ]
#                              [--view PATH] [--out FILE] STORE [ZARRFS-OPTION...]
#   --callgraph  dwarf (default): stacks unwound from copies of the stack,
#                needs no frame pointers; fp: `perf record -g` (frame
#                pointers: Debian's libraries and an -O2 zarrfs have none,
#                so chains stop early and more lands in "other"); none: the
#                leaf frame alone. If perf cannot record a mode, the next
#                one is tried, and the table says which was used.
#   --freq HZ    samples per second per thread (default 999)
#   --view PATH  the file to cat, inside the mount (default values.txt)
#   --out FILE   keep perf.data there (for perf report)
# env:   ZARRFS_BIN (default ./zarrfs, then build/zarrfs)
set -euo pipefail
export LC_ALL=C
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

CG=dwarf FREQ=999 VIEW=values.txt OUT=""
usage() {
  echo "usage: bash bench/profile.sh [--callgraph dwarf|fp|none] [--freq HZ] [--view PATH] [--out FILE] STORE [ZARRFS-OPTION...]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
  --callgraph) CG=${2:-} ;;
  --freq) FREQ=${2:-} ;;
  --view) VIEW=${2:-} ;;
  --out) OUT=${2:-} ;;
  -*) usage ;;
  *) break ;;
  esac
  [ $# -ge 2 ] || usage
  shift 2
done
[ $# -ge 1 ] || usage
STORE=$1
shift
case $CG in dwarf | fp | none) ;; *) usage ;; esac
case $FREQ in '' | *[!0-9]* | 0) usage ;; esac

bench_tool ZARRFS_BIN zarrfs
bench_need perf fusermount3 timeout nm
bench_workdir zarrfs-profile
bench_traps
DATA=${OUT:-$WORK/perf.data}

# perf record's call-graph flags for a mode.
cg_flags() {
  case $1 in
  dwarf) echo "--call-graph dwarf,16384" ;;
  fp) echo "-g" ;;
  none) echo "" ;;
  esac
}
# The first mode from CG on that perf can record here.
for mode in dwarf fp none; do
  case "$CG:$mode" in fp:dwarf | none:dwarf | none:fp) continue ;; esac
  # shellcheck disable=SC2046 # the flags are separate words
  if perf record -q -F "$FREQ" $(cg_flags "$mode") -o "$WORK/probe.data" -- true >/dev/null 2>&1; then
    [ "$mode" = "$CG" ] || echo "profile: perf cannot record --callgraph $CG here; using $mode" >&2
    CG=$mode
    break
  fi
  if [ "$mode" = none ]; then
    echo "profile: perf cannot record here (perf_event_paranoid is $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null))" >&2
    exit 1
  fi
done

# ---- record ----

drop_caches
# shellcheck disable=SC2046
perf record -q -F "$FREQ" $(cg_flags "$CG") -o "$DATA" -- \
  "$ZARRFS_BIN" -f "$@" "$STORE" "$MNT" 2>>"$LOG" &
DAEMON=$! # perf's pid: it ends when the daemon does
up=no
for _ in $(seq 600); do
  if mounted; then up=yes; break; fi
  kill -0 "$DAEMON" 2>/dev/null || break
  sleep 0.05
done
if [ "$up" != yes ]; then
  echo "profile: mounting $STORE failed; log:" >&2
  tail -n 20 "$LOG" >&2
  exit 1
fi
TIMEFORMAT=%R
SECS=$({ time cat "$MNT/$VIEW" >/dev/null; } 2>&1)
BYTES=$(stat -c %s "$MNT/$VIEW")
# Unmount; give perf time to write its data before unmount_store's TERM.
timeout 10 fusermount3 -u "$MNT" 2>/dev/null || true
for _ in $(seq 1200); do kill -0 "$DAEMON" 2>/dev/null || break; sleep 0.05; done
unmount_store

# ---- classify ----

# The daemon's own functions and their source files (needs -g, autotools'
# default; without it the names' prefixes decide).
nm -l --defined-only "$ZARRFS_BIN" 2>/dev/null |
  awk 'NF >= 4 && $2 ~ /^[tT]$/ { f = $4; sub(/:[0-9]+$/, "", f); sub(/.*\.\.\//, "", f); print $3, f }' >"$WORK/own.map"

# Samples: a header line (the tid), then one frame a line, leaf first:
# "ADDR SYMBOL (DSO)". Without call chains, one line a sample.
perf script -i "$DATA" -F tid,ip,sym,dso 2>/dev/null |
  awk -v map="$WORK/own.map" -v own="$(readlink -f "$ZARRFS_BIN")" -v chains="$([ "$CG" = none ] && echo 0 || echo 1)" '
  # The stage of a frame: "" when it names none. Own frames: by source
  # file (else by name prefix). Others: by library or symbol name.
  function stage(sym, dso, is_own,   f) {
    if (is_own) {
      f = (sym in file) ? file[sym] : ""
      if (sym ~ /_(destroy|free|unref)$/) return "other"  # freeing memory, in any module
      if (f ~ /^fs\/text\/(render|rnum|dtoa|dtoa_exact|rsplit|text|textread)\.c$/ || (f == "" && sym ~ /^(render_|rnum_|dtoa_|fmt_|text_)/)) return "rendering"
      if (f ~ /^src\/(io\/(bytesrc|fdpool)|store\/store[a-z_]*|net\/(http|remote|rblock|rflight|rstream|rversion|s3))\.c$/ || (f == "" && sym ~ /^(bytesrc_|fdpool_|store_|remote_|http_|s3_)/)) return "I/O"
      if (f ~ /^codecs\/(zstd|gzip|blosc|numcodecs)\.c$/ || (f == "" && sym ~ /^(zstd_|gzip_|blosc_)/)) return "decompression"
      if (f ~ /^fs\/fuse_(ops|ctx)\.c$/ || (f == "" && sym ~ /^zfs_/)) return "FUSE"
      return "other"
    }
    if (dso ~ /lib(zstd|blosc2?|z|lz4|bz2)\.so/ || sym ~ /^(ZSTD_|HUF_|FSE_|inflate|blosc|LZ4_|BZ2_)/) return "decompression"
    if (dso ~ /libfuse/ || sym ~ /^fuse_/) return "FUSE"
    if (dso ~ /lib(curl|ssl|crypto|nghttp2)\.so/ || sym ~ /pread|^Curl_|^curl_/) return "I/O"
    if (sym ~ /^(render_|rnum_|dtoa_|fmt_|text_)/) return "rendering"
    return ""
  }
  function frame(line,   dso, sym, is_own, s) {
    sub(/^[ \t]*/, "", line)
    if (!match(line, / \([^()]*\)$/)) return ""
    dso = substr(line, RSTART + 2, RLENGTH - 3)
    line = substr(line, 1, RSTART - 1)
    sym = line; sub(/^[0-9a-f]+ /, "", sym)
    if (leaf == "") leaf = sym
    is_own = (dso == own)
    # An inlined frame: its name may tell, but it never ends the walk.
    s = stage(sym, dso, is_own && dso != "inlined")
    if (s != "") { where = sym; if (sym == "[unknown]") { where = dso; sub(/.*\//, "", where) } }
    return s
  }
  function done(st) {
    if (st == "") { st = "other"; where = "-" }
    n[st]++; total++
    top[st SUBSEP leaf]++
    at[st SUBSEP where]++
  }
  # The three names with most samples of stage st in counts c, as text.
  function top3(c, st,   m, k, p, best, bn, t, used) {
    t = ""
    for (m = 0; m < 3; m++) {
      best = ""; bn = 0
      for (k in c) { split(k, p, SUBSEP); if (p[1] == st && c[k] > bn && !(k in used)) { best = k; bn = c[k] } }
      if (best == "") break
      used[best] = 1; split(best, p, SUBSEP)
      t = t (t == "" ? "" : ", ") sprintf("%s %.0f%%", p[2], 100 * bn / total)
    }
    return t
  }
  BEGIN { while ((getline l < map) > 0) { split(l, w, " "); file[w[1]] = w[2] } }
  chains == 0 {
    leaf = ""; where = ""; line = $0; sub(/^ *[0-9]+ +/, "", line)
    done(frame(line)); next
  }
  /^[ \t]*[0-9]+ *$/ { if (open) done(cur); open = 1; cur = ""; leaf = ""; where = ""; decided = 0; next }
  /^$/ { next }
  { if (!decided) { s = frame($0); if (s != "") { cur = s; decided = 1 } } }
  END {
    if (open) done(cur)
    if (!total) { print "profile: no samples" > "/dev/stderr"; exit 1 }
    split("I/O decompression rendering FUSE other", order, " ")
    for (i = 1; i <= 5; i++) {
      st = order[i]
      printf "| %s | %d | %.1f%% | %s | %s |\n", st, n[st], 100 * n[st] / total, top3(at, st), top3(top, st)
    }
  }' >"$WORK/stages.md"

echo "zarrfs profile: cat $VIEW of $STORE ($BYTES bytes) in $SECS s; perf --callgraph $CG, $FREQ Hz"
echo
echo "| stage | samples | share | deciding frames (share of all) | leaf symbols (share of all) |"
echo "|---|---|---|---|---|"
cat "$WORK/stages.md"
echo
echo "The daemon's whole life (mount, the stat before the read, the read, unmount)."
echo "zarrfs: $ZARRFS_BIN${OUT:+; perf data: $OUT (perf report -i $OUT)}"
