#!/bin/bash
# mount_badchunk.sh - a bad chunk closes only itself. Stores xarray and
# zarr-python write (Debian's python3-xarray), and a twin of each with one
# chunk replaced by garbage:
#   grp.zarr  counts (int32), temp (int16 packed with scale_factor: CF
#             views) along obs, 10 chunks of 100, chunk 2 of both bad;
#             grid (20 x 10 int32, chunks of 5 x 10), chunk 1.0 bad
#   big.zarr  counts of 10,000 chunks of 100 int32, chunk 900 bad
# Every view (values.txt, values.cf.txt, rows.csv, obs.csv, K.txt,
# K.cf.txt) of the bad store must stay openable: stat shows its size, or 0
# where the size needed the bad chunk (the lazy rule: read with direct
# I/O); a read returns the text before the bad chunk exactly (the good
# twin's); the read that reaches it fails with EIO, with at most one log
# line naming the chunk's key (at least one in all). With exact sizes and
# with -o sizes=lazy; over HTTP (nginx); an Icechunk repository whose
# virtual chunk is not authorized (group1/big_chunks c/0/0). A size
# learned past a bad chunk is not kept in the persistent index (the next
# mount of the bad store is the same; of the repaired store, exact), and a
# chunk repaired while mounted is read once its remembered failure has
# expired (docs/reference.md, Errors and logging).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"

PY=/usr/bin/python3 # Debian's: its xarray is python3-xarray
"$PY" -c 'import xarray, zarr, numpy' 2>/dev/null ||
  zt_skip_or_fail "no xarray/zarr for $PY (Debian package python3-xarray)"

GOOD="$ZT_TMP/good"
BAD="$ZT_TMP/bad"
cat >"$ZT_TMP/w.py" <<'EOF'
import sys

import numpy as np
import xarray as xr
import zarr

d = sys.argv[1]
n = 1000
ds = xr.Dataset({
    "counts": ("obs", np.arange(n, dtype="<i4")),
    "temp": ("obs", (np.arange(n) % 97) * 0.5 - 10.0),
    "grid": (("y", "x"), np.arange(200, dtype="<i4").reshape(20, 10)),
})
ds.to_zarr(d + "/grp.zarr", mode="w", encoding={
    "counts": {"chunks": (100,)},
    "temp": {"chunks": (100,), "dtype": "int16", "scale_factor": 0.5},
    "grid": {"chunks": (5, 10)},
})
z = zarr.open(d + "/big.zarr", mode="w")
a = z.create_dataset("counts", shape=(1000000,), chunks=(100,), dtype="<i4")
a[:] = np.arange(1000000, dtype="<i4")
EOF
if ! "$PY" "$ZT_TMP/w.py" "$GOOD" >"$ZT_TMP/w.log" 2>&1; then
  show "$ZT_TMP/w.log"
  zt_hard_error "writing the stores failed"
fi
cp -r "$GOOD" "$BAD"
BADKEYS="grp.zarr/counts/2 grp.zarr/temp/2 grp.zarr/grid/1.0 big.zarr/counts/900"
for k in $BADKEYS; do
  printf 'garbage, not a chunk: %s\n' "$k" >"$BAD/$k"
done

# ---- expected texts: the good twin's ----
EXP=$(zt_mkdir exp)
MNT=$(zt_mkdir mnt)
GVIEWS="counts/values.txt counts/values.cf.txt counts/1.txt counts/2.txt
  temp/values.txt temp/values.cf.txt temp/1.cf.txt temp/2.cf.txt
  grid/values.txt grid/rows.csv grid/0.0.txt obs.csv"
zmount "$GOOD/grp.zarr" "$MNT" || finish
for v in $GVIEWS; do
  [ -e "$MNT/$v" ] || continue # (counts has no CF views unless xarray says)
  t cat "$MNT/$v" >"$EXP/$(echo "$v" | tr / _)" ||
    zt_hard_error "the good twin's $v does not read"
done
zumount "$MNT"
[ -s "$EXP/obs.csv" ] && [ -s "$EXP/temp_values.cf.txt" ] && [ -s "$EXP/grid_rows.csv" ] ||
  zt_hard_error "the good twin lacks obs.csv, temp/values.cf.txt or grid/rows.csv"
exp() { echo "$EXP/$(echo "$1" | tr / _)"; }

# Log lines naming key K (as "...: K: reason").
log_count() { grep -cF ": $1: " "$ZT_LOG"; }

# bad_view DESC FILE EXPECTED LINES KEY: FILE opens and stats; reading it
# whole gives the first LINES lines of EXPECTED exactly, then fails with
# EIO; head -n LINES reads; at most one new log line names KEY.
bad_view() {
  local desc=$1 f=$2 e=$3 lines=$4 key=$5 before after rc
  if t stat -c %s "$f" >"$ZT_TMP/st.out" 2>"$ZT_TMP/st.err"; then
    pass "$desc: stat works"
  else
    fail "$desc: stat fails"
    show "$ZT_TMP/st.err"
  fi
  if t sh -c 'exec 3<"$1"' sh "$f" 2>"$ZT_TMP/open.err"; then
    pass "$desc: opens"
  else
    fail "$desc: open fails"
    show "$ZT_TMP/open.err"
  fi
  before=$(log_count "$key")
  t cat "$f" >"$ZT_TMP/got" 2>"$ZT_TMP/got.err"
  rc=$?
  after=$(log_count "$key")
  if [ "$rc" -ne 0 ] && grep -q 'Input/output error' "$ZT_TMP/got.err"; then
    pass "$desc: the read that reaches $key fails with EIO"
  else
    fail "$desc: cat exited $rc, not with EIO"
    show "$ZT_TMP/got.err"
  fi
  head -n "$lines" "$e" >"$ZT_TMP/want"
  assert_file_eq "$desc: the text before $key" "$ZT_TMP/want" "$ZT_TMP/got"
  if [ $((after - before)) -le 1 ] && [ "$after" -ge 1 ]; then
    pass "$desc: one log line names $key"
  else
    fail "$desc: $((after - before)) new log lines name $key ($after in all)"
    show "$ZT_LOG"
  fi
  [ "$lines" -ge 3 ] && head3 "$desc" "$e" "$f"
}

# head3 DESC EXPECTED FILE: head -n 3 of FILE works and is EXPECTED's.
head3() {
  head -n 3 "$2" >"$ZT_TMP/want3"
  if t head -n 3 "$3" >"$ZT_TMP/got3" 2>"$ZT_TMP/got3.err"; then
    assert_file_eq "$1: head -3" "$ZT_TMP/want3" "$ZT_TMP/got3"
  else
    fail "$1: head -3 fails"
    show "$ZT_TMP/got3.err"
  fi
}

# good_view DESC FILE EXPECTED: reads exactly, stat says its size.
good_view() {
  assert_file_eq "$1" "$3" "$2"
  assert_size_matches "$1: stat size == bytes read" "$2"
}

# The whole bad group, on a mount of it made with OPTS.
check_group() {
  local m=$1 mode=$2
  bad_view "$mode counts/values.txt" "$m/counts/values.txt" "$(exp counts/values.txt)" 200 counts/2
  bad_view "$mode temp/values.txt" "$m/temp/values.txt" "$(exp temp/values.txt)" 200 temp/2
  bad_view "$mode temp/values.cf.txt" "$m/temp/values.cf.txt" "$(exp temp/values.cf.txt)" 200 temp/2
  bad_view "$mode grid/values.txt" "$m/grid/values.txt" "$(exp grid/values.txt)" 50 grid/1.0
  bad_view "$mode grid/rows.csv" "$m/grid/rows.csv" "$(exp grid/rows.csv)" \
    $(($(head -n 1 "$(exp grid/rows.csv)" | grep -c '[a-z]') + 5)) grid/1.0
  bad_view "$mode counts/2.txt" "$m/counts/2.txt" /dev/null 0 counts/2
  bad_view "$mode temp/2.cf.txt" "$m/temp/2.cf.txt" /dev/null 0 temp/2
  bad_view "$mode grid/1.0.txt" "$m/grid/1.0.txt" /dev/null 0 grid/1.0
  # obs.csv: its header and the rows before the bad chunks' (its block
  # of rows rendered in part)
  bad_view "$mode obs.csv" "$m/obs.csv" "$(exp obs.csv)" 201 counts/2
  # the good views beside them
  good_view "$mode counts/1.txt" "$m/counts/1.txt" "$(exp counts/1.txt)"
  good_view "$mode temp/1.cf.txt" "$m/temp/1.cf.txt" "$(exp temp/1.cf.txt)"
  good_view "$mode grid/0.0.txt" "$m/grid/0.0.txt" "$(exp grid/0.0.txt)"
  # ls -l: every name has attributes
  if t ls -l "$m/counts" "$m/grid" "$m/temp" "$m" >"$ZT_TMP/ls" 2>"$ZT_TMP/ls.err" &&
    ! grep -q '?' "$ZT_TMP/ls"; then
    pass "$mode: ls -l shows every name"
  else
    fail "$mode: ls -l"
    cat "$ZT_TMP/ls.err" "$ZT_TMP/ls" | show
  fi
}

IDX=$(zt_mkdir idx)
chmod 700 "$IDX"

# ---- 1. exact sizes (the default for local stores) ----
if zmount "$BAD/grp.zarr" "$MNT" -o "index_cache=$IDX"; then
  check_group "$MNT" exact
  assert_eq "exact: values.txt shows 0 (its size needs the bad chunk)" 0 \
    "$(t stat -c %s "$MNT/counts/values.txt")"
  zumount "$MNT"
fi

# ---- 2. the next mount: nothing learned past the bad chunk was kept ----
if zmount "$BAD/grp.zarr" "$MNT" -o "index_cache=$IDX"; then
  assert_eq "next mount: values.txt still 0" 0 "$(t stat -c %s "$MNT/counts/values.txt")"
  bad_view "next mount: counts/values.txt" "$MNT/counts/values.txt" \
    "$(exp counts/values.txt)" 200 counts/2
  zumount "$MNT"
fi

# ---- 3. lazy sizes ----
if zmount "$BAD/grp.zarr" "$MNT" -o sizes=lazy -o "index_cache=$IDX"; then
  check_group "$MNT" lazy
  zumount "$MNT"
fi

# ---- 4. 10,000 chunks, chunk 900 bad ----
for mode in exact lazy; do
  opt=sizes=$mode
  if zmount "$BAD/big.zarr" "$MNT" -o "$opt" -o "index_cache=$IDX"; then
    assert_eq "big $mode: cat | wc -l is the lines before chunk 900" 90000 \
      "$(t sh -c 'cat "$1" | wc -l' sh "$MNT/counts/values.txt" 2>/dev/null)"
    assert_eq "big $mode: stat shows 0" 0 "$(t stat -c %s "$MNT/counts/values.txt")"
    printf '0\n1\n2\n' >"$ZT_TMP/big3"
    head3 "big $mode" "$ZT_TMP/big3" "$MNT/counts/values.txt"
    assert_eq "big $mode: chunk 901 reads" 100 "$(t cat "$MNT/counts/901.txt" | wc -l)"
    assert_eq "big $mode: one log line names counts/900" 1 "$(log_count counts/900)"
    zumount "$MNT"
  fi
done

# ---- 5. the store repaired: the next mount reads it whole ----
for k in $BADKEYS; do
  cp "$GOOD/$k" "$BAD/$k.new" && mv "$BAD/$k.new" "$BAD/$k"
done
if zmount "$BAD/grp.zarr" "$MNT" -o "index_cache=$IDX"; then
  for v in counts/values.txt temp/values.cf.txt grid/rows.csv counts/2.txt obs.csv; do
    good_view "repaired: $v" "$MNT/$v" "$(exp "$v")"
  done
  zumount "$MNT"
fi

# ---- 6. a chunk repaired while mounted ----
printf 'garbage again\n' >"$BAD/grp.zarr/counts/2"
if zmount "$BAD/grp.zarr" "$MNT" -o "index_cache=$IDX"; then
  assert_fails_with_eio "while mounted: values.txt fails at the bad chunk" "$MNT/counts/values.txt"
  cp "$GOOD/grp.zarr/counts/2" "$BAD/grp.zarr/counts/2.new" &&
    mv "$BAD/grp.zarr/counts/2.new" "$BAD/grp.zarr/counts/2"
  if zt_poll 40 cmp -s "$(exp counts/values.txt)" "$MNT/counts/values.txt"; then
    pass "while mounted: the repaired chunk is read (its failure was not kept)"
    good_view "while mounted: values.txt" "$MNT/counts/values.txt" "$(exp counts/values.txt)"
  else
    fail "while mounted: values.txt still fails 40 s after the repair"
    show "$ZT_LOG"
  fi
  zumount "$MNT"
fi

# ---- 7. over HTTP ----
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
  WEB=$(zt_mkdir web)
  cp -r "$BAD/grp.zarr" "$WEB/grp.zarr"
  printf 'garbage, not a chunk\n' >"$WEB/grp.zarr/counts/2"
  srv_nginx_start "$WEB"
  if zmount "$NGINX_URL/grp.zarr" "$MNT"; then
    bad_view "http counts/values.txt" "$MNT/counts/values.txt" "$(exp counts/values.txt)" 200 counts/2
    bad_view "http counts/2.txt" "$MNT/counts/2.txt" /dev/null 0 counts/2
    assert_file_eq "http counts/1.txt" "$(exp counts/1.txt)" "$MNT/counts/1.txt"
    assert_file_eq "http temp/values.cf.txt" "$(exp temp/values.cf.txt)" "$MNT/temp/values.cf.txt"
    zumount "$MNT"
  fi
else
  zt_skip_part "nginx missing: over HTTP"
fi

# ---- 8. Icechunk: a virtual chunk not authorized ----
FIX=${ZARRFS_FIXTURES:-$ZARRFS_SRCDIR/../shared/fixtures}
IC="$FIX/icechunk/test-repo-v2"
if [ ! -d "$IC" ]; then
  zt_icechunk_standins "$ZT_TMP/own" && IC="$ZT_TMP/own/own-v2"
fi
if [ -d "$IC" ] && zmount "$IC" "$MNT"; then
  B="$MNT/group1/big_chunks"
  for v in values.txt rows.csv c/0/0.txt; do
    if t stat -c %s "$B/$v" >/dev/null 2>"$ZT_TMP/st.err" &&
      t sh -c 'exec 3<"$1"' sh "$B/$v" 2>>"$ZT_TMP/st.err"; then
      pass "icechunk big_chunks/$v: stat and open work"
    else
      fail "icechunk big_chunks/$v: stat or open fails"
      show "$ZT_TMP/st.err"
    fi
    assert_fails_with_eio "icechunk big_chunks/$v: the virtual chunk's read" "$B/$v"
  done
  if grep -q 'not authorized' "$ZT_LOG"; then
    pass "icechunk: the log says the virtual chunk is not authorized"
  else
    fail "icechunk: no log line for the virtual chunk"
    show "$ZT_LOG"
  fi
  assert_output_eq "icechunk big_chunks c/0/1.txt still reads" \
    "$(awk 'BEGIN { for (i = 0; i < 25; i++) print 42 }')
" cat "$B/c/0/1.txt"
  zumount "$MNT"
else
  zt_skip_part "no Icechunk repository ($IC)"
fi

finish
