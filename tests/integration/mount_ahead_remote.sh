#!/bin/bash
# mount_ahead_remote.sh - fetching ahead across chunks on a remote store
# (tests/integration/faultsrv on 127.0.0.1):
#  1. a sequential reader of values.txt has the chunks after the one it
#     reads requested before it gets there: after `head -c` that stays in
#     chunk 0, the server sees the body of chunk 3 requested (waited for,
#     no timing; with decode_threads=0, so that no decoding ahead asks
#     for it), and the text is exact;
#  2. 8 readers of different arrays at once, 20 ms per request: every one
#     reads its exact text (the transfers are shared, none starves);
#  3. `cat values.txt` of chunks large enough to be read in parallel parts
#     (zstd, and uncompressed), 20 ms per request: each byte of each chunk
#     is requested once over the mount's life (the bytes the server sent
#     for the chunks equal their sizes: the decoding's reads take what the
#     prefetch has cached or in flight), and the text is exact;
#  4. a read from the start of values.txt, 300 ms per request: the text is
#     exact, and chunk 0 comes whole at once (every request for it after
#     its first block arrives before any is answered); 4b. the same when
#     the first read of the file is 1 MiB in (the kernel's read-ahead read
#     reaching the daemon before cat's read at 0: the order forced);
#  5. a first chunk whose text is over 64 MiB is not named whole at a read
#     from the start: `head -c 1` of it names no chunk to the store
#     (/.zarrfs/stats store_named_ahead) and costs the bytes it reads
#     (under 1 MiB served), not the 107 MB chunk;
#  6. `tail -n 2` of a lazy view (stat says 0) learns its size at its
#     seek to the end (each chunk decoded once) and reads only the end:
#     a few FUSE reads, not the whole text in reads of 8 KiB; stat then
#     shows the exact size, and the lines are the exact view's.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"
zt_require_mkstore

WEB=$(zt_mkdir web)
PLAIN=$(zt_mkdir plain)
"$ZARRFS_MKSTORE" bigstrings "$WEB/big.zarr" --count 400000 --chunk 50000 \
  --strlen 15 --data none --plain "$PLAIN/big.txt" >/dev/null
printf '{"zarr_format":3,"node_type":"group","attributes":{}}\n' >"$WEB/zarr.json"
for i in 0 1 2 3 4 5 6 7; do
  "$ZARRFS_MKSTORE" bigstrings "$WEB/a$i" --count $((20000 + 1000 * i)) \
    --chunk 2500 --strlen 15 --data zstd --plain "$PLAIN/a$i.txt" >/dev/null
done
for kind in zstd none; do
  "$ZARRFS_MKSTORE" bigstrings "$WEB/once-$kind.zarr" --count 600000 \
    --chunk 150000 --strlen 15 --data "$kind" --plain "$PLAIN/once.txt" >/dev/null
done
"$ZARRFS_MKSTORE" bigstrings "$WEB/first.zarr" --count 400000 --chunk 200000 \
  --strlen 15 --data none --plain "$PLAIN/first.txt" >/dev/null
for c in first-2 first-3 first-b first-b-2 first-b-3; do cp -r "$WEB/first.zarr" "$WEB/$c.zarr"; done
"$ZARRFS_MKSTORE" bigstrings "$WEB/huge.zarr" --count 4500000 --chunk 4500000 \
  --strlen 15 --data none >/dev/null
"$ZARRFS_MKSTORE" numeric "$WEB/lazy.zarr" --shape 1000000 --chunk 100000 \
  --dtype float64 --codec zstd >/dev/null
srv_fault_start "$WEB" --times

# ---- 1. chunks requested before the reader reaches them ----
M=$(zt_mkdir m1)
if zmount "$FAULT_URL/big.zarr" "$M" -o decode_threads=0; then
  # 600,000 bytes: past the 256 KiB after which a reader counts as
  # sequential, within chunk 0 (50,000 lines of about 16 bytes).
  # The file stays open (fd 3) while the server is watched: a reader that
  # closes lets go of what it asked to be fetched ahead.
  exec 3<"$M/values.txt"
  t head -c 600000 <&3 >/dev/null
  seen=0
  for _ in $(seq 300); do
    # the layout reads at most two blocks of each chunk (its start, and
    # the end of its index when the data's length does not give it): more
    # than two blocks' bytes served is the body fetched ahead
    if [ "$(srv_log_lines "$FAULT_LOG" 'big.zarr/c/3 ' |
      awk '{ s += $NF } END { print s + 0 }')" -gt 131072 ]; then
      seen=1
      break
    fi
    sleep 0.1
  done
  exec 3<&-
  [ "$seen" = 1 ] || srv_log_lines "$FAULT_LOG" 'big.zarr/c/3 ' | sed 's/^/    | /' >&2
  assert_eq "chunk 3 fetched ahead of a reader in chunk 0" 1 "$seen"
  assert_file_eq "values.txt exact" "$PLAIN/big.txt" "$M/values.txt"
  zumount "$M"
fi

# ---- 2. eight readers of different arrays at once ----
M=$(zt_mkdir m2)
if zmount "$FAULT_URL/_f/lat=20" "$M"; then
  OUT=$(zt_mkdir out)
  pids=()
  for i in 0 1 2 3 4 5 6 7; do
    t cat "$M/a$i/values.txt" >"$OUT/a$i.txt" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || true; done
  for i in 0 1 2 3 4 5 6 7; do
    assert_file_eq "reader $i of 8: a$i/values.txt exact" "$PLAIN/a$i.txt" "$OUT/a$i.txt"
  done
  zumount "$M"
fi

# ---- 3. each byte of each chunk requested once ----
for kind in zstd none; do
  M=$(zt_mkdir "m3$kind")
  if zmount "$FAULT_URL/_f/lat=20/once-$kind.zarr" "$M"; then
    OUT=$(zt_mkdir "out3$kind")
    t cat "$M/values.txt" >"$OUT/values.txt"
    assert_file_eq "once-$kind: values.txt exact" "$PLAIN/once.txt" "$OUT/values.txt"
    zumount "$M"
    size=$(cat "$WEB/once-$kind.zarr"/c/* | wc -c)
    served=$(srv_log_lines "$FAULT_LOG" "once-$kind.zarr/c/" |
      awk '{ s += $NF } END { print s + 0 }')
    [ "$served" = "$size" ] ||
      srv_log_lines "$FAULT_LOG" "once-$kind.zarr/c/" | sed 's/^/    | /' >&2
    assert_eq "once-$kind: chunk bytes served once each (bytes served = sizes)" "$size" "$served"
  fi
done

# ---- 4. the first chunk whole in one round trip ----
# one_wave PAT: "one" when every request logged for PAT (ARRIVED DONE GET
# PATH RANGE STATUS BYTES) after its first block (bytes=0-, the size's
# request, made before the read) arrived before any of them was answered.
one_wave() {
  srv_log_lines "$FAULT_LOG" "$1" |
    awk '$5 !~ /^bytes=0-/ { n++; if ($1 > a) a = $1; if (d == "" || $2 < d) d = $2 }
         END { print (n > 0 && a < d) ? "one" : "several" }'
}
# wave_tries DESC STORE READ...: mount STORE (300 ms a request), READ its
# values.txt into $OUT/got, check it against $OUT/want, and ask one_wave
# of its chunk 0; a try whose requests came in several waves is made
# again on a copy (STORE-2, STORE-3): the 300 ms the daemon has to send
# them all is a margin a machine at load 10 ate once. A daemon that sends
# them one after another (the defect) gives several waves every time.
wave_tries() {
  local desc=$1 base=$2 try store waves=several
  shift 2
  for try in 1 2 3; do
    store=$base
    [ "$try" = 1 ] || store=$base-$try
    M=$(zt_mkdir "m.$store")
    zmount "$FAULT_URL/_f/lat=300/$store.zarr" "$M" || return
    t "$@" <"$M/values.txt" >"$OUT/got"
    assert_file_eq "$store.zarr: $desc: the text exact" "$OUT/want" "$OUT/got"
    zumount "$M"
    waves=$(one_wave "$store.zarr/c/0 ")
    [ "$waves" = one ] && break
    say "$store.zarr: chunk 0 requested in several waves (try $try):"
    srv_log_lines "$FAULT_LOG" "$store.zarr/c/0 " | sed 's/^/    | /' >&2
  done
  assert_eq "$desc: chunk 0 requested in one round trip" one "$waves"
}
OUT=$(zt_mkdir out4)
cp "$PLAIN/first.txt" "$OUT/want"
wave_tries "a read from the start" first cat

# ---- 4b. the kernel's read-ahead read first ----
# cat's first read and the kernel's read-ahead after it reach the daemon
# together, in either order: a first read 1 MiB into the text, alone (no
# timing: the order forced), names chunk 0 whole as the read at 0 does.
dd bs=1M skip=1 count=1 status=none <"$PLAIN/first.txt" >"$OUT/want"
wave_tries "a first read at 1 MiB" first-b dd bs=1M skip=1 count=1 status=none

# ---- 5. a first chunk over 64 MiB of text: not fetched whole by a head ----
M=$(zt_mkdir m5)
if zmount "$FAULT_URL/huge.zarr" "$M"; then
  assert_eq "huge.zarr: head -c 1" "r" "$(head -c 1 "$M/values.txt")"
  # a chunk is named to the store before the read that names it is
  # served: the count says at once whether one was (no waiting)
  assert_eq "huge.zarr: head -c 1 names no chunk to fetch whole" 0 \
    "$(awk '$1 == "store_named_ahead" { print $2 }' "$M/.zarrfs/stats")"
  zumount "$M"
  served=$(srv_log_lines "$FAULT_LOG" "huge.zarr/c/" | awk '{ s += $NF } END { print s + 0 }')
  [ "$served" -lt 1048576 ] || say "  served $served bytes of huge.zarr/c/0"
  assert_eq "huge.zarr: head -c 1 serves under 1 MiB of the chunk" 1 \
    "$([ "$served" -lt 1048576 ] && echo 1 || echo 0)"
fi

# ---- 6. a reader of a lazy view with small reads ----
# `tail -n 2` of a view whose size is not known yet (stat says 0) seeks to
# its end: the kernel asks the size through the open file, which learns it
# as a first stat of exact sizes does (every chunk decoded once, on the
# workers), so tail reads the end alone instead of the whole text from the
# start in reads of 8 KiB (16,000 FUSE requests for 10^7 float64).
M=$(zt_mkdir m6)
L=$(zt_mkdir l6)
if zmount "$FAULT_URL/lazy.zarr" "$M" -o sizes=lazy; then
  assert_eq "lazy.zarr: values.txt's size is not known yet" 0 "$(stat -c %s "$M/values.txt")"
  got=$(t tail -n 2 "$M/values.txt")
  st() { awk -v k="$1" '$1 == k { print $2 }' "$M/.zarrfs/stats"; }
  assert_eq "lazy.zarr: tail -n 2 decodes each of the 10 chunks once" 10 "$(st decodes)"
  reads=$(st requests_read)
  [ "$reads" -le 4 ] || say "  tail -n 2 made $reads reads"
  assert_eq "lazy.zarr: tail -n 2 reads the end alone (<= 4 reads)" 1 \
    "$([ "$reads" -le 4 ] && echo 1 || echo 0)"
  lazy_size=$(stat -c %s "$M/values.txt")
  zumount "$M"
  if zmount "$WEB/lazy.zarr" "$L"; then
    assert_eq "lazy.zarr: tail -n 2 as the exact view's" "$(tail -n 2 "$L/values.txt")" "$got"
    assert_eq "lazy.zarr: the size learned at the seek is the exact one" \
      "$(stat -c %s "$L/values.txt")" "$lazy_size"
    zumount "$L"
  fi
fi

finish
