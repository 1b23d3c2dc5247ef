#!/bin/bash
# mount_listing.sh - listings of large directories, through the
# real daemon and real tools, on a kerchunk reference file written here
# (awk) whose array d has K keys in one directory (default 100,000; each a
# [url, offset, length] range of one blob, int32 chunks of 4 elements):
#  1. `ls -A` of d shows exactly the 2K+3 names (every key K, its view
#     K.txt, values.txt, info.txt, .zarray), each once, sorted; `ls -f` and `find`
#     count the same; two listings at once agree;
#  2. listing reads no chunk: `ls`, `ls -f` and `find` work with the blob
#     emptied meanwhile and the daemon logs no failed read (readdirplus
#     gives the kernel the attributes of raw keys from the table);
#  3. `ls -l` shows every raw key with its size (16), a whole-file
#     reference with its file's size, and views with the size `wc -c`
#     reads; a second `ls -l` reads no chunk (sizes learned once);
#  4. with -o sizes=lazy, `ls -l` reads no chunk at all and shows views not
#     yet read as 0 bytes, raw keys with their sizes;
#  5. a raw key larger than a FUSE request and its view read back exactly.
. "$(dirname "$0")/lib.sh"

K=${ZT_LISTING_KEYS:-100000}
NAMES=$((2 * K + 3))
W="$ZT_TMP/refs"
mkdir -p "$W"
BLOBSZ=$((4 * 1024 * 1024))
head -c "$BLOBSZ" /dev/urandom >"$W/blob.bin"
# A big raw key: 3 MiB of random uint8 in its own file (one chunk).
BIGSZ=$((3 * 1024 * 1024))
head -c "$BIGSZ" /dev/urandom >"$W/big.bin"
awk -v dk="$K" -v bs="$BLOBSZ" -v big="$BIGSZ" 'BEGIN {
  q = "\\\""
  printf "{\"version\": 1, \"refs\": {\n"
  printf "  \".zgroup\": \"{%szarr_format%s: 2}\",\n", q, q
  printf "  \"d/.zarray\": \"{%schunks%s: [4], %scompressor%s: null, %sdtype%s: %s<i4%s, %sfill_value%s: 0, %sfilters%s: null, %sorder%s: %sC%s, %sshape%s: [%d], %szarr_format%s: 2}\",\n", q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, dk * 4, q, q
  printf "  \"big/.zarray\": \"{%schunks%s: [%d], %scompressor%s: null, %sdtype%s: %s|u1%s, %sfill_value%s: 0, %sfilters%s: null, %sorder%s: %sC%s, %sshape%s: [%d], %szarr_format%s: 2}\",\n", q, q, big, q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, big, q, q
  printf "  \"big/0\": [\"big.bin\", 0, %d],\n", big
  printf "  \"w/whole\": [\"blob.bin\"]"
  n = bs / 16
  for (k = 0; k < dk; k++)
    printf ",\n  \"d/%d\": [\"blob.bin\", %d, 16]", k, ((k * 7919) % n) * 16
  printf "\n}}\n"
}' >"$W/refs.json"
{
  seq 0 $((K - 1))
  seq 0 $((K - 1)) | sed 's/$/.txt/'
  printf '%s\n' values.txt info.txt .zarray
} | sort >"$ZT_TMP/names.exp"

# The blob emptied (same inode: a descriptor the daemon holds sees it
# too) while CMD... runs, then restored: any chunk read fails and says so
# in the daemon's log, so a clean log means nothing was read. Output to
# $ZT_TMP/out.
cp "$W/blob.bin" "$ZT_TMP/blob.save"
without_chunks() {
  : >"$W/blob.bin"
  local l0
  l0=$(wc -l <"$ZT_LOG")
  tb 300 "$@" >"$ZT_TMP/out" 2>"$ZT_TMP/out.err"
  cat "$ZT_TMP/blob.save" >"$W/blob.bin"
  tail -n +$((l0 + 1)) "$ZT_LOG" >"$ZT_TMP/log.new"
}
# without_chunks ran clean: DESC.
assert_no_read() {
  if [ -s "$ZT_TMP/log.new" ] || [ -s "$ZT_TMP/out.err" ]; then
    fail "$1: chunks were read (the emptied blob failed them):"
    cat "$ZT_TMP/out.err" "$ZT_TMP/log.new" | show
  else
    pass "$1"
  fi
}

MNT=$(zt_mkdir mnt)
if zmount "$W/refs.json" "$MNT"; then
  # ---- 1 and 2: complete, exact, and no chunk read ----
  without_chunks ls -A "$MNT/d"
  assert_file_eq "ls -A of $K keys: exactly the $NAMES names, sorted" "$ZT_TMP/names.exp" "$ZT_TMP/out"
  assert_no_read "ls of $K keys reads no chunk"
  without_chunks ls -f "$MNT/d"
  assert_eq "ls -f: $NAMES names and . .." $((NAMES + 2)) "$(wc -l <"$ZT_TMP/out")"
  assert_eq "ls -f: each name once" "$((NAMES + 2))" "$(sort -u "$ZT_TMP/out" | wc -l)"
  assert_no_read "ls -f reads no chunk"
  without_chunks find "$MNT/d" -type f
  assert_eq "find -type f: $NAMES files" "$NAMES" "$(wc -l <"$ZT_TMP/out")"
  assert_no_read "find -type f reads no chunk"
  zt_bg "$ZT_TMP/par1" ls -A "$MNT/d"
  p1=$ZT_BG_PID
  zt_bg "$ZT_TMP/par2" ls -A "$MNT/d"
  p2=$ZT_BG_PID
  zt_bg_wait "$p1" 300
  zt_bg_wait "$p2" 300
  if cmp -s "$ZT_TMP/par1" "$ZT_TMP/names.exp" && cmp -s "$ZT_TMP/par2" "$ZT_TMP/names.exp"; then
    pass "two listings at once: both complete and exact"
  else
    fail "two listings at once differ from the expected names ($(wc -l <"$ZT_TMP/par1"), $(wc -l <"$ZT_TMP/par2") lines)"
  fi

  # ---- 3: ls -l ----
  tb 300 ls -l "$MNT/d" >"$ZT_TMP/long1"
  awk 'NF >= 9 && $NF ~ /^[0-9]+$/ { n++; if ($5 != 16) bad++ } END { print n + 0, bad + 0 }' \
    "$ZT_TMP/long1" >"$ZT_TMP/raw.count"
  assert_eq "ls -l: $K raw keys, each 16 bytes" "$K 0" "$(cat "$ZT_TMP/raw.count")"
  for k in 0 1 4999 $((K - 1)); do
    exp=$(t wc -c <"$MNT/d/$k.txt")
    got=$(awk -v n="$k.txt" '$NF == n { print $5 }' "$ZT_TMP/long1")
    assert_eq "ls -l: d/$k.txt shows the size read ($exp)" "$exp" "$got"
  done
  assert_eq "ls -l: values.txt shown once" 1 "$(awk '$NF == "values.txt"' "$ZT_TMP/long1" | wc -l)"
  without_chunks ls -l "$MNT/d"
  assert_file_eq "a second ls -l shows the same" "$ZT_TMP/long1" "$ZT_TMP/out"
  assert_no_read "a second ls -l reads no chunk (sizes learned once)"
  assert_eq "ls -l of w: the whole-file reference has the blob's size" "$BLOBSZ" \
    "$(t ls -l "$MNT/w" | awk '$NF == "whole" { print $5 }')"
  assert_eq "stat of w/whole after the listing" "$BLOBSZ" "$(t stat -c %s "$MNT/w/whole")"
  assert_eq "stat of d/7 after the listing" 16 "$(t stat -c %s "$MNT/d/7")"
  assert_size_matches "stat of d/7.txt = bytes read" "$MNT/d/7.txt"

  # ---- 5: big raw key and view ----
  assert_file_eq "big/0: a 3 MiB raw key reads back exactly" "$W/big.bin" "$MNT/big/0"
  od -An -v -tu1 -w1 "$W/big.bin" | tr -d ' ' >"$ZT_TMP/big.exp"
  assert_file_eq "big/0.txt: its view (11 MB of text) reads back exactly" "$ZT_TMP/big.exp" "$MNT/big/0.txt"
  zumount "$MNT"
fi

# ---- 4: lazy sizes ----
MNT=$(zt_mkdir lazymnt)
if zmount "$W/refs.json" "$MNT" -o sizes=lazy; then
  without_chunks ls -l "$MNT/d"
  assert_no_read "sizes=lazy: ls -l reads no chunk"
  awk 'NF >= 9 { if ($NF ~ /^[0-9]+$/) { r++; if ($5 != 16) rb++ } else if ($NF ~ /^[0-9]+\.txt$/) { v++; if ($5 != 0) vb++ } }
    END { print r + 0, rb + 0, v + 0, vb + 0 }' "$ZT_TMP/out" >"$ZT_TMP/lazy.count"
  assert_eq "sizes=lazy: ls -l shows $K raw keys of 16 bytes and $K views of 0" \
    "$K 0 $K 0" "$(cat "$ZT_TMP/lazy.count")"
  assert_eq "sizes=lazy: d/3.txt (shown as 0 bytes) reads its 4 lines" 4 \
    "$(t cat "$MNT/d/3.txt" | wc -l)"
  zumount "$MNT"
fi

finish
