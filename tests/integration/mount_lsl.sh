#!/bin/bash
# mount_lsl.sh - `ls -l` of a large directory through the real daemon, by
# results and request counts (never by time), on a kerchunk reference file
# written here (awk) whose array d has K keys in one directory (default
# 20,000; each a 16-byte range of one blob, int32 chunks of 4 elements), so
# 2K+3 names, more than one readdirplus reply holds:
#  1. `ls -li` shows for every name what a stat of that name alone shows on
#     a fresh mount (a LOOKUP each, no listing): the same inode number,
#     mode, links, owner, group, size and time; K.txt's size is the bytes
#     a read gives;
#  2. `ls -l` costs few requests: readdirplus past its first reply carries
#     the views' sizes (the caller stats every name), so LOOKUPs and
#     GETATTRs stay under one per hundred names (a LOOKUP per view not
#     learned yet otherwise: here the views of the reply that held
#     values.txt, whose stat learns every chunk's size, about 6,000; past
#     65,536 chunks, when values.txt defers its size, every view);
#  3. a plain `ls` and `find` decode nothing (only a caller that stats
#     gets readdirplus past the first reply).
# The count of 2 depends on the kernel keeping what readdirplus gave it
# until ls stats each name; nothing in zarrfs's timing changes it (3
# LOOKUPs and 1 GETATTR on an idle and on a loaded machine alike). A
# kernel that drops its dentries and inodes meanwhile (echo 2 or 3 >
# /proc/sys/vm/drop_caches, run by mount_inodes.sh and mount_partial.sh
# beside this under make -j, or memory pressure) sends a LOOKUP for each
# name dropped, and (fuse's evict_ctr, kernels since late 2024) a GETATTR
# for each inode made from a reply or LOOKUP that was under way while any
# inode of the mount was evicted (its attributes are marked possibly
# stale): thousands of each. Every
# eviction reaches the daemon as a FORGET (kernel_forgets in the stats), so
# an attempt during which any came is done again on a fresh mount (at most
# ZT_LSL_TRIES, 5), and only an undisturbed one is counted.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C

K=${ZT_LSL_KEYS:-20000}
NAMES=$((2 * K + 3))
W="$ZT_TMP/refs"
mkdir -p "$W"
BLOBSZ=$((1024 * 1024))
head -c "$BLOBSZ" /dev/urandom >"$W/blob.bin"
awk -v dk="$K" -v bs="$BLOBSZ" 'BEGIN {
  q = "\\\""
  printf "{\"version\": 1, \"refs\": {\n"
  printf "  \".zgroup\": \"{%szarr_format%s: 2}\",\n", q, q
  printf "  \"d/.zarray\": \"{%schunks%s: [4], %scompressor%s: null, %sdtype%s: %s<i4%s, %sfill_value%s: 0, %sfilters%s: null, %sorder%s: %sC%s, %sshape%s: [%d], %szarr_format%s: 2}\"", q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, q, dk * 4, q, q
  n = bs / 16
  for (k = 0; k < dk; k++)
    printf ",\n  \"d/%d\": [\"blob.bin\", %d, 16]", k, ((k * 7919) % n) * 16
  printf "\n}}\n"
}' >"$W/refs.json"
{
  seq 0 $((K - 1))
  seq 0 $((K - 1)) | sed 's/$/.txt/'
  printf '%s\n' values.txt info.txt .zarray
} | sort >"$ZT_TMP/names"

# stat_field MNT KEY: a counter of MNT's /.zarrfs/stats.
stat_field() { t cat "$1/.zarrfs/stats" | awk -v k="$2" '$1 == k { print $2 }'; }

# ---- 1 and 2: ls -li against stat, and its requests ----
# An attempt the kernel dropped cached entries during (kernel_forgets grew:
# a drop_caches by a test beside this one, memory pressure) is done again
# on a fresh mount: its counts say what the kernel forgot, not what
# zarrfs gives (see the header).
tries=0 counted=0
while [ "$counted" = 0 ] && [ "$tries" -lt "${ZT_LSL_TRIES:-5}" ]; do
  tries=$((tries + 1))
  MNT=$(zt_mkdir "mnt.$tries")
  zmount "$W/refs.json" "$MNT" -o index_cache=none || break
  zt_counting_begin
  l0=$(stat_field "$MNT" requests_lookup)
  g0=$(stat_field "$MNT" requests_getattr)
  f0=$(stat_field "$MNT" kernel_forgets)
  tb 300 ls -lia --time-style=+%s "$MNT/d" >"$ZT_TMP/long"
  l1=$(stat_field "$MNT" requests_lookup)
  g1=$(stat_field "$MNT" requests_getattr)
  f1=$(stat_field "$MNT" kernel_forgets)
  zt_counting_end
  asked=$((l1 - l0 + g1 - g0))
  say "ls -l of $NAMES names: $((l1 - l0)) LOOKUPs, $((g1 - g0)) GETATTRs, $((f1 - f0)) inodes forgotten by the kernel meanwhile"
  if [ "$((f1 - f0))" = 0 ]; then
    counted=1
    if [ "$asked" -le $((NAMES / 100)) ]; then
      pass "ls -l of $NAMES names: $asked LOOKUPs and GETATTRs (at most one per hundred names)"
    else
      fail "ls -l of $NAMES names: $asked LOOKUPs and GETATTRs (more than $((NAMES / 100)))"
    fi
  fi
  for k in 0 1 $((K / 2 + 7)) $((K - 1)); do
    exp=$(t wc -c <"$MNT/d/$k.txt")
    got=$(awk -v n="$k.txt" '$NF == n { print $6 }' "$ZT_TMP/long")
    assert_eq "ls -l: d/$k.txt shows the size read ($exp)" "$exp" "$got"
  done
  zumount "$MNT"
done
if [ "$counted" = 0 ] && [ "$tries" -ge "${ZT_LSL_TRIES:-5}" ]; then
  zt_skip_part "ls -l's request count: the kernel dropped cached entries during each of $tries attempts"
fi
# ino mode links owner group size mtime name, for the names listed
awk 'NF == 8 && $8 != "." && $8 != ".." { print $1, $2, $3, $4, $5, $6, $7, $8 }' \
  "$ZT_TMP/long" | sort -k8 >"$ZT_TMP/long.fields"
assert_eq "ls -l shows every name once" "$(cat "$ZT_TMP/names")" "$(cut -d' ' -f8 "$ZT_TMP/long.fields")"
MNT=$(zt_mkdir mnt2)
if zmount "$W/refs.json" "$MNT" -o index_cache=none; then
  (cd "$MNT/d" && xargs timeout -k 5 "$ZT_CMD_TIMEOUT" stat -c '%i %A %h %U %G %s %Y %n' <"$ZT_TMP/names") |
    sort -k8 >"$ZT_TMP/stat.fields"
  assert_eq "stat through LOOKUPs alone (no listing) on a fresh mount: no readdir" 0 \
    "$(stat_field "$MNT" requests_readdir)"
  assert_file_eq "ls -li shows each name as a stat of it alone does (inode, mode, links, owner, size, time)" \
    "$ZT_TMP/stat.fields" "$ZT_TMP/long.fields"
  zumount "$MNT"
fi

# ---- 3: ls and find decode nothing ----
MNT=$(zt_mkdir mnt3)
if zmount "$W/refs.json" "$MNT" -o index_cache=none; then
  assert_eq "ls: $NAMES names" "$NAMES" "$(tb 300 ls -A "$MNT/d" | wc -l)"
  assert_eq "find -type f: $NAMES files" "$NAMES" "$(tb 300 find "$MNT/d" -type f | wc -l)"
  assert_eq "ls and find decode nothing" 0 "$(stat_field "$MNT" decodes)"
  zumount "$MNT"
fi

finish
