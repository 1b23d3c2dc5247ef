#!/bin/bash
# mount_inodes.sh - inode numbers are stable: the example store mounted
# twice (daemon restarted) shows every path with the same st_ino; the
# d_ino of a plain readdir (ls -i, without readdirplus attributes) is the
# st_ino stat gives; all paths have distinct numbers; and a path forgotten
# by the kernel (drop_caches) gets its number back (and is counted as
# kernel_forgets in /.zarrfs/stats).
# Times: every stored file and directory shows its own mtime in the store
# (through stat and through readdirplus: ls -l and find -printf), a chunk's
# K.txt its chunk's, values.txt its array's zarr.json's; a kerchunk
# reference's keys the reference file's.
. "$(dirname "$0")/lib.sh"
zt_require_mkstore
export LC_ALL=C

SRC="$ZT_TMP/example.zarr"
t "$ZARRFS_MKSTORE" example "$SRC" >"$ZT_TMP/mkstore.log" 2>&1 || zt_hard_error "zarrfs-mkstore example failed"
inodes() { (cd "$1" && find . -mindepth 1 -printf '%i %P\n' | sort -k2); }

M=$(zt_mkdir m)
zmount "$SRC" "$M" || finish
inodes "$M" >"$ZT_TMP/first"
n=$(wc -l <"$ZT_TMP/first")
assert_eq "every path has its own inode number" "$n" "$(cut -d' ' -f1 "$ZT_TMP/first" | sort -u | wc -l)"
# ls -i of a directory (d_ino) against stat
bad=0
while read -r ino name; do
  s=$(stat -c %i "$M/matrix/$name")
  [ "$s" = "$ino" ] || { bad=$((bad + 1)); say "matrix/$name: d_ino $ino, st_ino $s"; }
done < <(ls -i -1 "$M/matrix" | awk '{ print $1, $2 }')
assert_eq "ls -i (d_ino) agrees with stat (st_ino) in matrix/" 0 "$bad"
before=$(stat -c %i "$M/matrix/c/0/0.txt")
forgets() { t cat "$M/.zarrfs/stats" | awk '$1 == "kernel_forgets" { print $2 }'; }
f0=$(forgets)
if zt_drop_caches 2; then
  # FORGETs come apart from the requests: wait for the first (no time asserted)
  i=0
  while [ "$(forgets)" = "$f0" ] && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  if [ "$(forgets)" -gt "$f0" ]; then
    pass "stats: kernel_forgets counts what the kernel forgot ($f0, then $(forgets))"
  else
    fail "stats: kernel_forgets stayed $f0 after drop_caches"
  fi
fi
assert_eq "a path's number comes back after the kernel forgot it" "$before" "$(stat -c %i "$M/matrix/c/0/0.txt")"
zumount "$M"

zmount "$SRC" "$M" || finish
# Meet the paths in the opposite order first: numbers handed out in order
# of lookup would differ.
cut -d' ' -f2- "$ZT_TMP/first" | tac | (cd "$M" && xargs -d '\n' stat -c %i >/dev/null)
inodes "$M" >"$ZT_TMP/second"
zumount "$M"
if diff "$ZT_TMP/first" "$ZT_TMP/second" >"$ZT_TMP/diff"; then
  pass "a second mount shows the same inode number for each of the $n paths"
else
  fail "inode numbers changed across mounts:"
  show "$ZT_TMP/diff"
fi

# ---- times ----
# Distinct times in the past, none of them the mount's.
touch -d '2020-01-02 03:04:05.25' "$SRC/matrix/c/0/0"
touch -d '2021-05-06 07:08:09' "$SRC/matrix/zarr.json"
touch -d '2019-12-31 23:59:59' "$SRC/matrix/c/0"
touch -d '2018-06-01 12:00:00' "$SRC/counts/zarr.json" "$SRC/counts/0"
zmount "$SRC" "$M" || finish
mt() { stat -c %y "$1" 2>&1; }
# stored files and directories: the store's own times, to the nanosecond
(cd "$SRC" && find . -mindepth 1 -printf '%T@ %P\n' | grep -v '^[^ ]* EXPECTED' | sort -k2) >"$ZT_TMP/src_times"
(cd "$M" && find . -mindepth 1 ! -name '*.txt' ! -name rows.csv -printf '%T@ %P\n' | grep -v '^[^ ]* EXPECTED' | sort -k2) >"$ZT_TMP/mnt_times"
if diff "$ZT_TMP/src_times" "$ZT_TMP/mnt_times" >"$ZT_TMP/tdiff"; then
  pass "every stored file and directory has its store mtime ($(wc -l <"$ZT_TMP/src_times") paths, find -printf after readdirplus)"
else
  fail "mtimes differ from the store's (< store, > mount):"
  show "$ZT_TMP/tdiff"
fi
assert_eq "chunk c/0/0: its own time" "2020-01-02 03:04:05.250000000 +0000" "$(TZ=UTC mt "$M/matrix/c/0/0")"
assert_eq "c/0/0.txt: its chunk's time" "2020-01-02 03:04:05.250000000 +0000" "$(TZ=UTC mt "$M/matrix/c/0/0.txt")"
assert_eq "values.txt: zarr.json's time" "2021-05-06 07:08:09.000000000 +0000" "$(TZ=UTC mt "$M/matrix/values.txt")"
assert_eq "counts/0.txt (V2 keys): chunk 0's time" "2018-06-01 12:00:00.000000000 +0000" "$(TZ=UTC mt "$M/counts/0.txt")"
assert_eq "directory c/0: its own time" "2019-12-31 23:59:59.000000000 +0000" "$(TZ=UTC mt "$M/matrix/c/0")"
# the same through readdirplus (ls -l fills attributes from the listing)
zt_drop_caches 2 || true
got=$(TZ=UTC ls -l --time-style=+%FT%T "$M/matrix/c/0" | awk '$NF == "0" || $NF == "0.txt" { print $6, $NF }' | tr '\n' ' ')
assert_eq "ls -l of c/0: the chunk and its view" "2020-01-02T03:04:05 0 2020-01-02T03:04:05 0.txt " "$got"
zumount "$M"

# a kerchunk reference: every key has the reference file's time
REF="$ZT_TMP/refs.json"
printf '{"version":1,"refs":{".zgroup":"{\\"zarr_format\\":2}","a/.zarray":"{\\"chunks\\":[2],\\"compressor\\":null,\\"dtype\\":\\"|u1\\",\\"fill_value\\":0,\\"filters\\":null,\\"order\\":\\"C\\",\\"shape\\":[2],\\"zarr_format\\":2}","a/0":"base64:AQI="}}' >"$REF"
touch -d '2017-03-04 05:06:07' "$REF"
zmount "$REF" "$M" || finish
assert_eq "reference: a key has the reference file's time" "2017-03-04 05:06:07.000000000 +0000" "$(TZ=UTC mt "$M/a/0")"
assert_eq "reference: its view too" "2017-03-04 05:06:07.000000000 +0000" "$(TZ=UTC mt "$M/a/0.txt")"
assert_eq "reference: the values read" "1 2" "$(tr '\n' ' ' <"$M/a/values.txt" | sed 's/ $//')"
zumount "$M"
finish
