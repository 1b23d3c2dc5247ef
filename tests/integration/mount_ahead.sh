#!/bin/bash
# mount_ahead.sh - decoding ahead and sizes without decoding, through a real
# mount, by results and bytes read, never by time:
#   1. decoding ahead: `cat values.txt` of 10-chunk stores (zarrs.vlen
#      uncompressed and with zstd data, vlen-utf8 + zstd, float64 + zstd)
#      is exact with the default workers, with -o decode_threads=0 and with
#      4 readers at once; a bad decode_threads is refused;
#   2. sizes from index endpoints: on fresh mounts of an uncompressed
#      zarrs.vlen store of 2M strings (also under ASan: these reads are
#      small), `stat values.txt`, `ls -l c/`, `tail -c 200 values.txt` and
#      `tail -c 50000 c/4.txt` make the daemon read under 64 KiB, 1 MiB,
#      256 KiB and 256 KiB (its /proc/PID/io rchar), and are exact. (GNU
#      tail reads a file whole, rather than seek, when it is no larger than
#      st_blksize, 1 MiB here: the chunk views are kept above that);
#   3. one pass reads the store once: `stat` then `cat` of values.txt makes
#      the daemon read 1.00-1.01x the store's bytes (zarrs.vlen stores; the
#      full read also proves the counter sees the daemon's reads).
# rchar counts the daemon's read()s: store files and FUSE requests (small).
. "$(dirname "$0")/lib.sh"
zt_require_mkstore

# 2M strings in ten chunks (400,000 under ASan: the same checks, less time)
N=2000000
zt_daemon_is_asan && N=400000
N=${ZT_AHEAD_COUNT:-$N}
C=$((N / 10))
D=$(zt_mkdir stores)

mk() {
  # A hang guard, not a speed limit: writing 2M strings took 23 s of a
  # 30 s command limit on a loaded 2-core VM.
  if ! timeout -k 5 300 "$ZARRFS_MKSTORE" "$@" >"$ZT_TMP/mkstore.log" 2>&1; then
    show "$ZT_TMP/mkstore.log"
    zt_hard_error "zarrfs-mkstore $* failed"
  fi
}
store_bytes() { find "$1" -type f -exec cat {} + | wc -c; }
rchar() { zt_io_field "$1" rchar; }

mk bigstrings "$D/none.zarr" --count "$N" --chunk "$C" --strlen 15 --data none --plain "$D/s.txt"
mk bigstrings "$D/vz.zarr" --count "$N" --chunk "$C" --strlen 15 --data zstd
mk bigstrings "$D/utf8.zarr" --count "$N" --chunk "$C" --strlen 15 --inner utf8 --data zstd
# Part 2's store: chunk views of ~3.3 MB, above st_blksize (see above).
N2=2000000
C2=$((N2 / 10))
mk bigstrings "$D/big.zarr" --count "$N2" --chunk "$C2" --strlen 15 --data none --plain "$D/big.txt"
mk numeric "$D/f64.zarr" --shape "$N" --chunk "$C" --dtype float64 --codec zstd --plain "$D/f.txt"

# ---- 1. exact with and without workers, and with readers at once ----
MNT=$(zt_mkdir mnt)
for s in none vz utf8 f64; do
  want=$D/s.txt
  [ "$s" = f64 ] && want=$D/f.txt
  for opt in "" "-o decode_threads=0" "-o decode_threads=3"; do
    # shellcheck disable=SC2086
    zmount "$D/$s.zarr" "$MNT" $opt || continue
    t cat "$MNT/values.txt" >"$ZT_TMP/got.txt"
    assert_file_eq "$s ${opt:-default workers}: cat values.txt is exact" "$want" "$ZT_TMP/got.txt"
    zumount "$MNT"
  done
  zmount "$D/$s.zarr" "$MNT" || continue
  pids=()
  for i in 1 2 3 4; do
    t cat "$MNT/values.txt" >"$ZT_TMP/par.$i" &
    pids+=($!)
  done
  wait "${pids[@]}" # not a bare wait: the daemon is a child too
  for i in 1 2 3 4; do
    assert_file_eq "$s: reader $i of 4 at once is exact" "$want" "$ZT_TMP/par.$i"
  done
  zumount "$MNT"
done
if t "$ZARRFS_BIN" -f -o decode_threads=many "$D/none.zarr" "$MNT" 2>"$ZT_TMP/bad.err"; then
  fail "decode_threads=many was accepted"
  zumount "$MNT"
else
  assert_eq "decode_threads=many is refused with a message" 1 \
    "$(grep -c "bad decode_threads 'many'" "$ZT_TMP/bad.err")"
fi

# ---- 2. sizes and tails from the index's ends ----
# under LIMIT DESC CMD...: on a fresh mount of big.zarr, run CMD (output to
# $ZT_TMP/out) and check the daemon read less than LIMIT bytes.
under() {
  local limit=$1 desc=$2
  shift 2
  zmount "$D/big.zarr" "$MNT" || return 1
  local r0 r1
  r0=$(rchar "$ZT_PID")
  t "$@" >"$ZT_TMP/out" 2>&1
  r1=$(rchar "$ZT_PID")
  say "$desc: daemon read $((r1 - r0)) bytes"
  if [ $((r1 - r0)) -lt "$limit" ]; then
    pass "$desc reads under $limit bytes"
  else
    fail "$desc read $((r1 - r0)) bytes, not under $limit"
  fi
  zumount "$MNT"
}
under 65536 "stat values.txt" stat -c %s "$MNT/values.txt"
assert_eq "stat values.txt: the text's size" "$(stat -c %s "$D/big.txt")" "$(cat "$ZT_TMP/out")"
under 1048576 "ls -l c/" ls -l "$MNT/c/"
assert_eq "ls -l c/: ten chunks and their views" 20 "$(awk 'NF >= 9' "$ZT_TMP/out" | wc -l)"
exp_sizes=$(for i in $(seq 0 9); do sed -n "$((i * C2 + 1)),$(((i + 1) * C2))p" "$D/big.txt" | wc -c; done | tr '\n' ' ')
got_sizes=$(awk '$NF ~ /\.txt$/ { print $5 }' "$ZT_TMP/out" | tr '\n' ' ')
assert_eq "ls -l c/: the views' sizes" "$exp_sizes" "$got_sizes"
under 262144 "tail -c 200 values.txt" tail -c 200 "$MNT/values.txt"
tail -c 200 "$D/big.txt" >"$ZT_TMP/tail.want"
assert_file_eq "tail -c 200 values.txt is exact" "$ZT_TMP/tail.want" "$ZT_TMP/out"
under 262144 "tail -c 50000 c/4.txt" tail -c 50000 "$MNT/c/4.txt"
sed -n "$((4 * C2 + 1)),$((5 * C2))p" "$D/big.txt" | tail -c 50000 >"$ZT_TMP/tail.want"
assert_file_eq "tail -c 50000 c/4.txt is exact" "$ZT_TMP/tail.want" "$ZT_TMP/out"

# ---- 3. stat then cat: the store read once ----
for s in none vz; do
  zmount "$D/$s.zarr" "$MNT" || continue
  r0=$(rchar "$ZT_PID")
  t stat "$MNT/values.txt" >/dev/null
  t cat "$MNT/values.txt" >"$ZT_TMP/got.txt"
  r1=$(rchar "$ZT_PID")
  zumount "$MNT"
  assert_file_eq "$s: stat then cat is exact" "$D/s.txt" "$ZT_TMP/got.txt"
  b=$(store_bytes "$D/$s.zarr")
  ratio=$(awk -v a=$((r1 - r0)) -v b="$b" 'BEGIN { printf "%.4f", a / b }')
  say "$s: stat + cat read $((r1 - r0)) bytes of a $b-byte store (${ratio}x)"
  if awk -v r="$ratio" 'BEGIN { exit !(r >= 1.0 && r <= 1.01) }'; then
    pass "$s: stat + cat reads the store once (1.00-1.01x)"
  else
    fail "$s: stat + cat read ${ratio}x the store"
  fi
done
finish
