#!/bin/bash
# soak.sh - soak and model test, through a real mount:
#   1. a generator draws stores from a model, with a seeded random stream:
#      string arrays (zarrs.vlen or vlen-utf8, zstd or plain data, index
#      first or last, sharded or not, missing chunks, fill values of 0-5
#      bytes) and numeric arrays (1-3 dimensions, uint8/int32/int64/float64,
#      no codec, zstd or gzip, missing chunks, fill values), V3 arrays in
#      one group and V2 arrays in another; then truncates one stored chunk
#      of some of them (corrupt chunks). zarrfs-mkstore writes each array
#      and the text its values.txt must show (the model's answer);
#   2. 16 threads (tests/integration/soakread) read random ranges, opening and closing
#      as they go, of every raw key, every values.txt and every chunk view
#      of the 1-D arrays, on both mounts at once, for ZT_SOAK_SECONDS
#      (default 40, 25 under ASan), with -o cache_size=1M,max_decode=64M:
#      zero wrong bytes, raw keys byte-identical to the stored files, views
#      of arrays without corrupt chunks exact, views over a corrupt chunk
#      EIO or exact (never other bytes), every corrupt chunk's own view
#      failing at least once, and each corrupt chunk logged at most twice
#      (once per key and reason) however often it is read;
#   3. the daemon's RSS is sampled through the run: reported, and it must
#      not keep growing (the last third's peak within 1.5x + 16 MiB of the
#      first third's; not checked under ASan, whose quarantine grows);
#   4. SIGTERM, then SIGINT, sent to the daemon while the 16 readers run:
#      it exits 0 and the mount is gone (a 5 s hang bound; the time taken
#      is reported), and no reader saw a wrong byte.
# ZT_SOAK_SEED picks another model (default 20261125); the seed is printed
# so that a failure can be replayed.
ZT_TIMEOUT=${ZT_TIMEOUT:-600}
. "$(dirname "$0")/lib.sh"
zt_require_mkstore

SOAKREAD=${ZARRFS_SOAKREAD:-$ZARRFS_BUILDDIR/tests/integration/soakread}
[ -x "$SOAKREAD" ] || zt_hard_error "tests/integration/soakread is not built ($SOAKREAD)"
SEED=${ZT_SOAK_SEED:-20261125}
SECS=${ZT_SOAK_SECONDS:-40}
zt_daemon_is_asan && SECS=${ZT_SOAK_SECONDS:-25}
say "model seed $SEED, $SECS s of reading"

D=$(zt_mkdir model)
V3=$D/v3
V2=$D/v2
EXP=$D/expected
mkdir -p "$V3" "$V2" "$EXP"
printf '{"zarr_format": 3, "node_type": "group"}\n' >"$V3/zarr.json"
printf '{"zarr_format": 2}\n' >"$V2/.zgroup"

mk() {
  # A hang guard, not a speed limit: writing 2M strings took 23 s of a
  # 30 s command limit on a loaded 2-core VM.
  if ! timeout -k 5 300 "$ZARRFS_MKSTORE" "$@" >"$ZT_TMP/mkstore.log" 2>&1; then
    show "$ZT_TMP/mkstore.log"
    zt_hard_error "zarrfs-mkstore $* failed"
  fi
}
# The model's random stream: an LCG in this shell (bash reseeds RANDOM in
# every $(...) subshell, so RANDOM would not replay from the seed). Both
# set R rather than print, so that no subshell is needed.
ZS_STATE=$SEED
next() { ZS_STATE=$(((ZS_STATE * 6364136223846793005 + 1442695040888963407) & 0x7fffffffffffffff)); }
rnd() { # rnd LO HI: R in [LO, HI]
  next
  R=$(($1 + (ZS_STATE >> 16) % ($2 - $1 + 1)))
}
pick() { # pick WORD...: R is one of the words
  local a=("$@")
  rnd 0 $((${#a[@]} - 1))
  R=${a[$R]}
}

# The model: what each array is, one line each in $D/arrays:
# "NAME ROOT NDIM N CHUNK" (CHUNK: elements a chunk, 1-D only).
: >"$D/arrays"
for k in $(seq 0 11); do
  name=a$k
  if [ $((k % 2)) -eq 0 ]; then
    rnd 1 60000
    n=$R
    rnd 1 $((n < 20000 ? n : 20000))
    c=$R
    rnd 8 40
    args=(bigstrings "$V3/$name" --count "$n" --chunk "$c" --strlen "$R")
    pick zstd none
    args+=(--data "$R")
    rnd 0 5
    args+=(--fill-len "$R" --plain "$EXP/$name.txt")
    pick vlen vlen utf8
    inner=$R
    args+=(--inner "$inner")
    if [ "$inner" = vlen ]; then
      pick start end
      args+=(--index "$R")
    fi
    pick 0 0 2 3 5
    [ "$R" -gt 0 ] && args+=(--missing "$R")
    sharded=no
    rnd 0 3
    if [ "$R" -eq 0 ]; then
      # inner chunks: c / d for the largest d <= 2..8 that divides c
      rnd 2 8
      d=$R
      while [ $((c % d)) -ne 0 ]; do d=$((d - 1)); done
      args+=(--shard $((c / d)))
      sharded=yes
    fi
    mk "${args[@]}"
    [ "$sharded" = yes ] && c=0 # chunk views of shards: not modelled here
    echo "$name $V3 1 $n $c" >>"$D/arrays"
  else
    pick 3 3 2
    fmt=$R
    root=$V3
    [ "$fmt" = 2 ] && root=$V2
    rnd 1 3
    nd=$R
    shape="" chunk=""
    for _ in $(seq 1 "$nd"); do
      rnd 1 $((nd == 1 ? 200000 : nd == 2 ? 400 : 60))
      s=$R
      rnd 1 "$s"
      shape="$shape,$s"
      chunk="$chunk,$R"
    done
    shape=${shape#,} chunk=${chunk#,}
    pick uint8 int32 int64 float64
    dt=$R
    pick 0 7
    [ "$dt" = float64 ] && pick 0 nan -1.5
    fill=$R
    pick none zstd gzip
    args=(numeric "$root/$name" --shape "$shape" --chunk "$chunk" --dtype "$dt"
      --codec "$R" --format "$fmt" --fill "$fill" --plain "$EXP/$name.txt")
    pick 0 0 2 4
    [ "$R" -gt 0 ] && args+=(--missing "$R")
    mk "${args[@]}"
    c=0
    [ "$nd" = 1 ] && c=$chunk
    n=${shape%%,*}
    echo "$name $root $nd $n $c" >>"$D/arrays"
  fi
done

# Corrupt chunks: in every third array, one stored chunk file cut to half
# its size (truncation is always detectable: a cut frame, a short chunk,
# offsets past the data). $D/corrupt lists "NAME KEY".
: >"$D/corrupt"
while read -r name root nd n c; do
  [ $((${name#a} % 3)) -eq 1 ] || continue
  rnd 1 3
  key=$(cd "$root/$name" && find . -type f ! -name 'zarr.json' ! -name '.z*' |
    sed 's|^\./||' | sort | head -n "$R" | tail -n 1)
  [ -n "$key" ] || continue
  sz=$(stat -c %s "$root/$name/$key")
  truncate -s $((sz / 2)) "$root/$name/$key"
  echo "$name $key" >>"$D/corrupt"
done <"$D/arrays"
say "model: $(wc -l <"$D/arrays") arrays, corrupt chunks: $(tr '\n' ' ' <"$D/corrupt")"

MV3=$(zt_mkdir mv3)
MV2=$(zt_mkdir mv2)

# The spec soakread follows: every raw key against its stored file, every
# values.txt against the model's text, every chunk view of a 1-D array
# against its lines of that text.
spec() {
  local spec=$D/spec
  : >"$spec"
  while read -r name root nd n c; do
    local mnt=$MV3
    [ "$root" = "$V2" ] && mnt=$MV2
    local bad=""
    bad=$(awk -v a="$name" '$1 == a { print $2 }' "$D/corrupt")
    (cd "$root/$name" && find . -type f | sed 's|^\./||' | sort) |
      while read -r key; do
        echo "exact $mnt/$name/$key $root/$name/$key"
      done >>"$spec"
    if [ -n "$bad" ]; then
      echo "either $mnt/$name/values.txt $EXP/$name.txt" >>"$spec"
    else
      echo "exact $mnt/$name/values.txt $EXP/$name.txt" >>"$spec"
    fi
    # Chunk views of 1-D arrays (stored chunks only: c/K or K keys).
    if [ "$nd" = 1 ] && [ "$c" -gt 0 ]; then
      (cd "$root/$name" && find . -type f ! -name 'zarr.json' ! -name '.z*' |
        sed 's|^\./||') | while read -r key; do
        local i=${key##*/} i0 i1
        i0=$((i * c + 1)) i1=$(((i + 1) * c))
        [ "$i1" -le "$n" ] || i1=$n
        sed -n "${i0},${i1}p" "$EXP/$name.txt" >"$EXP/$name.$i.txt"
        if [ "$key" = "$bad" ]; then
          echo "corrupt $mnt/$name/$key.txt $EXP/$name.$i.txt"
        else
          echo "exact $mnt/$name/$key.txt $EXP/$name.$i.txt"
        fi
      done >>"$spec"
    fi
  done <"$D/arrays"
  echo "$spec"
}

OPTS=(-o cache_size=1M,max_decode=64M)
zmount "$V3" "$MV3" "${OPTS[@]}" || finish
PID3=$ZT_PID LOG3=$ZT_LOG
zmount "$V2" "$MV2" "${OPTS[@]}" || finish
PID2=$ZT_PID LOG2=$ZT_LOG
SPEC=$(spec)
say "spec: $(wc -l <"$SPEC") files ($(grep -c '^exact' "$SPEC") exact, $(grep -c -v '^exact' "$SPEC") over corrupt chunks)"

# ---- 2 and 3: the soak, with RSS samples ----
rss_kb() { zt_status_kb "$1" VmRSS; }
: >"$ZT_TMP/rss"
timeout -k 5 $((SECS + 120)) "$SOAKREAD" --threads 16 --seconds "$SECS" --seed "$SEED" \
  "$SPEC" >"$ZT_TMP/soak.out" 2>"$ZT_TMP/soak.err" &
rpid=$!
while kill -0 "$rpid" 2>/dev/null; do
  echo "$(rss_kb "$PID3") $(rss_kb "$PID2")" >>"$ZT_TMP/rss"
  sleep 0.5
done
wait "$rpid"
st=$?
say "$(cat "$ZT_TMP/soak.out")"
if [ "$st" -eq 0 ]; then
  pass "16 readers for $SECS s: no wrong byte, no unexpected error"
else
  fail "soakread exited $st:"
  show "$ZT_TMP/soak.err"
fi
reads=$(sed -n 's/.* \([0-9]*\) reads.*/\1/p' "$ZT_TMP/soak.out")
if [ "${reads:-0}" -gt 1000 ]; then
  pass "the readers made $reads reads"
else
  fail "the readers made only ${reads:-0} reads"
fi

# Each corrupt chunk: named in the log once per reason (at most two: the
# partial read of a plain index and the whole decode may each meet it),
# however many reads met it; repeats are only counted, in lines that say
# "(repeated N more times ...)". With a 1 MiB cache the remembered failure
# is evicted like any entry, so a corrupt chunk is decoded again, but the
# log stays bounded.
while read -r name key; do
  log=$LOG3
  [ "$(awk -v a="$name" '$1 == a { print $2 }' "$D/arrays")" = "$V2" ] && log=$LOG2
  nl=$(grep -F "$name/$key:" "$log" | grep -c -v '(repeated [0-9]* more times')
  if [ "$nl" -ge 1 ] && [ "$nl" -le 2 ]; then
    pass "corrupt $name/$key: logged $nl time(s) (repeats counted: $(grep -F "$name/$key:" "$log" | grep -c '(repeated'))"
  else
    fail "corrupt $name/$key: $nl log lines naming it (want 1 or 2)"
    grep -F "$name/" "$log" | show
  fi
done <"$D/corrupt"

# RSS: the peak, and no growth from the first third to the last.
awk -v p3="$PID3" '
  { v = $1 + $2; r[NR] = v; if (v > peak) peak = v }
  END {
    n = NR; a = int(n / 3); e = 0; l = 0
    for (i = 1; i <= a; i++) if (r[i] > e) e = r[i]
    for (i = n - a + 1; i <= n; i++) if (r[i] > l) l = r[i]
    printf "%d %d %d %d\n", n, peak, e, l
  }' "$ZT_TMP/rss" >"$ZT_TMP/rss.sum"
read -r nsamp peak early late <"$ZT_TMP/rss.sum"
say "daemons' RSS (both mounts): peak $((peak / 1024)) MiB over $nsamp samples; first third $((early / 1024)) MiB, last third $((late / 1024)) MiB"
if zt_daemon_is_asan; then
  say "note: ASan daemon: RSS growth not checked (its quarantine grows)"
elif [ "$late" -le $((early * 3 / 2 + 16384)) ]; then
  pass "RSS flat: last third within 1.5x + 16 MiB of the first"
else
  fail "RSS grew: first third $early KiB, last third $late KiB"
fi

# ---- 4. signals under load ----
sig_under_load() {
  local sig=$1 pid=$2 mnt=$3 log=$4 r0
  r0=$(zt_rchar "$pid")
  timeout -k 5 60 "$SOAKREAD" --threads 16 --seconds 30 --seed "$SEED" \
    "$SPEC" >"$ZT_TMP/sig.out" 2>"$ZT_TMP/sig.err" &
  local r=$!
  # under load: until the daemon has read 4 MiB for the readers, bounded
  loaded() { ! kill -0 "$r" 2>/dev/null || [ $(($(zt_rchar "$pid") - r0)) -ge 4194304 ]; }
  zt_poll 20 loaded
  local t0 t1
  t0=$(zt_now_ms)
  kill "-$sig" "$pid"
  if zt_wait_exit "$pid" 5; then
    t1=$(zt_now_ms)
    wait "$pid"
    local st=$?
    say "SIG$sig under 16 readers: daemon exited in $((t1 - t0)) ms"
    pass "SIG$sig under 16 readers: daemon exited"
    assert_eq "SIG$sig under load: exit status" 0 "$st"
  else
    fail "SIG$sig under load: daemon still running 5 s later"
  fi
  if zt_wait_unmounted "$mnt" 2; then
    pass "SIG$sig under load: mount gone"
  else
    fail "SIG$sig under load: still mounted"
  fi
  zt_forget "$pid"
  kill -TERM "$r" 2>/dev/null
  zt_wait_exit "$r" 10 || kill -KILL "$r" 2>/dev/null
  wait "$r" 2>/dev/null
  if grep -q 'WRONG BYTES\|wrong size' "$ZT_TMP/sig.err"; then
    fail "SIG$sig under load: a reader saw wrong bytes:"
    grep 'WRONG BYTES\|wrong size' "$ZT_TMP/sig.err" | show
  else
    pass "SIG$sig under load: no reader saw a wrong byte"
  fi
  zt_check_log_clean "$log" && pass "SIG$sig: daemon log clean"
}
sig_under_load TERM "$PID3" "$MV3" "$LOG3"
zumount "$MV2"
zmount "$V3" "$MV3" "${OPTS[@]}" || finish
sig_under_load INT "$ZT_PID" "$MV3" "$ZT_LOG"

finish
