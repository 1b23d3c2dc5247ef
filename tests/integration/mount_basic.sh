#!/bin/bash
# mount_basic.sh - mount the example store (`zarrfs-mkstore example`) and
# check the product contract with ordinary tools: namespace listings, raw
# keys byte-identical, values.txt and chunk views against DIR/EXPECTED,
# stat sizes, cat/grep/head/tail/wc, read-only (EROFS), 8 parallel readers,
# a tiny cache, the command line (refusals, --help, --version) and a clean
# unmount on SIGTERM.
. "$(dirname "$0")/lib.sh"
zt_require_mkstore

ARRAYS="names_start names_end labels_utf8 matrix counts flags"
SRC="$ZT_TMP/example.zarr"
if ! t "$ZARRFS_MKSTORE" example "$SRC" >"$ZT_TMP/mkstore.log" 2>&1; then
  show "$ZT_TMP/mkstore.log"
  zt_hard_error "zarrfs-mkstore example failed"
fi
EXP="$SRC/EXPECTED"

# ---- discover the store: arrays, their metadata, their chunks ----

# Relative path (from SRC) of every directory whose zarr.json is an array.
: >"$ZT_TMP/arrays"
while IFS= read -r zj; do
  d=${zj%/zarr.json}
  d=${d#"$SRC"}
  d=${d#/}
  [ -n "$d" ] || d=.
  IFS='|' read -r nt shape chunks enc sep < <(zt_meta "$zj")
  if [ "$nt" = array ]; then
    printf '%s|%s|%s|%s|%s\n' "$d" "$shape" "$chunks" "$enc" "$sep" >>"$ZT_TMP/arrays"
  fi
done < <(find "$SRC" -name zarr.json -type f | sort)

# Path of array NAME relative to SRC (first match on the last component).
array_path() {
  awk -F'|' -v n="$1" '{ k = split($1, p, "/"); if (p[k] == n) { print $1; exit } }' "$ZT_TMP/arrays"
}
# Metadata fields of array at relative path P: "shape|chunks|enc|sep".
array_meta() {
  awk -F'|' -v p="$1" '$1 == p { print $2 "|" $3 "|" $4 "|" $5; exit }' "$ZT_TMP/arrays"
}

for a in $ARRAYS; do
  p=$(array_path "$a")
  if [ -z "$p" ]; then
    fail "example store has no array '$a'"
  elif [ ! -f "$EXP/$a.txt" ]; then
    fail "example store has no EXPECTED/$a.txt"
  else
    pass "example store has array $a and EXPECTED/$a.txt"
  fi
done

# Chunks of every array: "ARRAYPATH KEY IDX STORED(0/1)".
: >"$ZT_TMP/chunks"
while IFS='|' read -r p shape chunks enc sep; do
  while read -r key idx; do
    if [ -f "$SRC/$p/$key" ]; then st=1; else st=0; fi
    echo "$p $key $idx $st" >>"$ZT_TMP/chunks"
  done < <(zt_chunk_keys "$shape" "$chunks" "$enc" "$sep")
done <"$ZT_TMP/arrays"

# The expected listing of every directory: stored entries, values.txt and
# info.txt in arrays (and rows.csv in those of two or more dimensions),
# info.txt in groups, KEY.txt beside every stored chunk KEY. Lines
# "DIR<TAB>NAME".
: >"$ZT_TMP/entries"
while IFS= read -r d; do
  rel=${d#"$SRC"}
  rel=${rel#/}
  [ -n "$rel" ] || rel=.
  ls -A "$d" | awk -v r="$rel" '{ print r "\t" $0 }' >>"$ZT_TMP/entries"
  if [ -f "$d/.zgroup" ] || grep -qs '"node_type": *"group"' "$d/zarr.json"; then
    printf '%s\tinfo.txt\n' "$rel" >>"$ZT_TMP/entries"
  fi
done < <(find "$SRC" -type d)
while IFS='|' read -r p shape _; do
  printf '%s\tvalues.txt\n%s\tinfo.txt\n' "$p" "$p" >>"$ZT_TMP/entries"
  case $shape in *,*) printf '%s\trows.csv\n' "$p" >>"$ZT_TMP/entries" ;; esac
done <"$ZT_TMP/arrays"
while read -r p key idx st; do
  [ "$st" = 1 ] || continue
  kd=$(dirname "$key")
  if [ "$kd" = . ]; then kd=$p; elif [ "$p" != . ]; then kd=$p/$kd; fi
  printf '%s\t%s.txt\n' "$kd" "$(basename "$key")" >>"$ZT_TMP/entries"
done <"$ZT_TMP/chunks"
sort -u "$ZT_TMP/entries" -o "$ZT_TMP/entries"

# Expected text of one chunk view, from EXPECTED/<array>.txt.
expected_chunk_text() { # ARRAYPATH IDX OUTFILE
  local p=$1 idx=$2 out=$3 shape chunks rest
  IFS='|' read -r shape chunks rest <<<"$(array_meta "$p")"
  zt_chunk_lines "$shape" "$chunks" "$idx" >"$out.lines"
  zt_select_lines "$out.lines" "$EXP/$(basename "$p").txt" >"$out"
}

# ---- 1. command line, no mount ----

VERSION=$(sed -n 's/^AC_INIT(\[zarrfs\], *\[\([^]]*\)\].*/\1/p' "$ZARRFS_SRCDIR/configure.ac" 2>/dev/null)
[ -n "$VERSION" ] || VERSION=0.1.0
for opt in --version -V; do
  out=$(timeout 10 "$ZARRFS_BIN" "$opt" 2>&1)
  assert_eq "zarrfs $opt exits 0" 0 "$?"
  assert_eq "zarrfs $opt first line" "zarrfs $VERSION" "$(printf '%s\n' "$out" | head -1)"
done
for opt in --help -h; do
  out=$(timeout 10 "$ZARRFS_BIN" "$opt" 2>&1)
  assert_eq "zarrfs $opt exits 0" 0 "$?"
  # here-strings, not pipes: grep -q closing a pipe early is SIGPIPE for
  # printf, which pipefail would count as a failure
  if grep -q 'SOURCE' <<<"$out" && grep -q 'MOUNTPOINT' <<<"$out" &&
    grep -q 'cache_size' <<<"$out"; then
    pass "zarrfs $opt names SOURCE, MOUNTPOINT, cache_size"
  else
    fail "zarrfs $opt output lacks SOURCE/MOUNTPOINT/cache_size"
    printf '%s\n' "$out" | show
  fi
done

# refuse DESC SOURCE MOUNTPOINT [opts]: exit 1 at once, one "zarrfs: " line.
refuse() {
  local desc=$1 src=$2 mnt=$3
  shift 3
  timeout 10 "$ZARRFS_BIN" -f "$@" "$src" "$mnt" >"$ZT_TMP/refuse.out" 2>"$ZT_TMP/refuse.err" </dev/null
  local rc=$?
  if [ -d "$mnt" ] && zt_is_mounted "$mnt"; then
    fusermount3 -u -z "$mnt" 2>/dev/null
    fail "$desc: it mounted anyway"
  fi
  assert_eq "$desc: exit status" 1 "$rc"
  local n first
  n=$(wc -l <"$ZT_TMP/refuse.err")
  first=$(head -1 "$ZT_TMP/refuse.err")
  if [ "$n" = 1 ] && [ "${first#zarrfs: }" != "$first" ]; then
    pass "$desc: one 'zarrfs: ' line on stderr"
  else
    fail "$desc: expected one line 'zarrfs: ...' on stderr, got $n lines:"
    show "$ZT_TMP/refuse.err"
  fi
}
CLIMNT=$(zt_mkdir climnt)
EMPTY=$(zt_mkdir empty)
NOMETA=$(zt_mkdir nometa)
echo hello >"$NOMETA/readme.txt"
mkdir -p "$NOMETA/c" && echo x >"$NOMETA/c/0"
: >"$ZT_TMP/afile"
refuse "SOURCE does not exist" "$ZT_TMP/does-not-exist" "$CLIMNT"
refuse "SOURCE is an empty directory" "$EMPTY" "$CLIMNT"
refuse "SOURCE without zarr.json" "$NOMETA" "$CLIMNT"
refuse "SOURCE is a file" "$ZT_TMP/afile" "$CLIMNT"
refuse "MOUNTPOINT is a file" "$SRC" "$ZT_TMP/afile"
refuse "MOUNTPOINT does not exist" "$SRC" "$ZT_TMP/no-such-mnt"
refuse "bad -o cache_size" "$SRC" "$CLIMNT" -o cache_size=lots
refuse "MOUNTPOINT is not empty" "$SRC" "$NOMETA"
out_has() { # DESC PATTERN: the last refusal's line holds PATTERN
  if grep -qF -- "$2" "$ZT_TMP/refuse.err"; then pass "$1"; else
    fail "$1: the refusal lacks '$2':"
    show "$ZT_TMP/refuse.err"
  fi
}
out_has "a non-empty MOUNTPOINT: the refusal names -o nonempty" "-o nonempty"
BADROOT=$(zt_mkdir badroot)
printf '{"zarr_format":3,"node_type":"array","shape":[4]}' >"$BADROOT/zarr.json"
refuse "root zarr.json without data_type" "$BADROOT" "$CLIMNT"
out_has "a malformed root: the parser's reason" "zarr.json: invalid metadata: "
printf '{"zarr_format":3,' >"$BADROOT/zarr.json"
refuse "root zarr.json that is not JSON" "$BADROOT" "$CLIMNT"
out_has "root JSON cut short: the parser's reason" "not valid JSON"
printf '{"zarr_format":2,"shape":[4]}' >"$BADROOT/.zarray"
rm "$BADROOT/zarr.json"
refuse "root .zarray without chunks" "$BADROOT" "$CLIMNT"
out_has "a malformed V2 root: named" ".zarray: invalid metadata: "
# -o nonempty mounts over the files (hidden while mounted, back after)
if zmount "$SRC" "$NOMETA" -o nonempty; then
  if [ -f "$NOMETA/zarr.json" ] && [ ! -e "$NOMETA/readme.txt" ]; then
    pass "-o nonempty: the store is mounted over the directory's files"
  else
    fail "-o nonempty: the mount does not show the store"
  fi
  zumount "$NOMETA"
  assert_eq "-o nonempty: the hidden file is back after unmounting" hello "$(cat "$NOMETA/readme.txt" 2>&1)"
fi

# ---- 2. eight parallel readers on a cold mount ----

MNT=$(zt_mkdir mnt)
zmount "$SRC" "$MNT" || finish
P_start=$(array_path names_start)
P_end=$(array_path names_end)
P_lab=$(array_path labels_utf8)
P_mat=$(array_path matrix)
P_cnt=$(array_path counts)
P_flg=$(array_path flags)
first_chunk=$(awk -v p="$P_start" '$1 == p && $4 == 1 { print $2 " " $3; exit }' "$ZT_TMP/chunks")
PAR="$ZT_TMP/par"
mkdir -p "$PAR"
if [ -n "$first_chunk" ]; then
  expected_chunk_text "$P_start" "${first_chunk#* }" "$PAR/chunk.source"
fi
lab_pat=$(sed -n '2p' "$EXP/labels_utf8.txt" 2>/dev/null | cut -c1-3)
[ -n "$lab_pat" ] || lab_pat=a
# job lines: NAME|SHELL SNIPPET on "$1"|FILE ON MOUNT (rel)|EXPECTED FILE
cat >"$PAR/jobs" <<EOF
cat1|cat "\$1"|$P_start/values.txt|$EXP/names_start.txt
cat2|cat "\$1"|$P_start/values.txt|$EXP/names_start.txt
tailc|tail -c 1000 "\$1"|$P_end/values.txt|$EXP/names_end.txt
grepc|grep -c -F -- "$lab_pat" "\$1"|$P_lab/values.txt|$EXP/labels_utf8.txt
matrix|cat "\$1"|$P_mat/values.txt|$EXP/matrix.txt
counts|tail -n 3 "\$1"|$P_cnt/values.txt|$EXP/counts.txt
flags|wc -l <"\$1"|$P_flg/values.txt|$EXP/flags.txt
chunk|cat "\$1"|$P_start/${first_chunk%% *}.txt|$PAR/chunk.source
EOF
pids=""
while IFS='|' read -r name snip rel expf; do
  t sh -c "$snip" sh "$MNT/$rel" >"$PAR/$name.got" 2>"$PAR/$name.err" &
  pids="$pids $!:$name"
done <"$PAR/jobs"
for pn in $pids; do
  wait "${pn%%:*}"
  echo "$?" >"$PAR/${pn#*:}.rc"
done
while IFS='|' read -r name snip rel expf; do
  sh -c "$snip" sh "$expf" >"$PAR/$name.exp" 2>&1
  rc=$(cat "$PAR/$name.rc")
  if [ "$rc" != 0 ]; then
    fail "parallel reader $name ($snip on $rel) exited $rc"
    show "$PAR/$name.err"
  else
    assert_file_eq "parallel reader $name ($snip on $rel)" "$PAR/$name.exp" "$PAR/$name.got"
  fi
done <"$PAR/jobs"

# ---- 3. namespace: listings ----

while IFS= read -r d; do
  awk -F'\t' -v d="$d" '$1 == d { print $2 }' "$ZT_TMP/entries" | sort >"$ZT_TMP/ls.exp"
  t ls -A "$MNT/$d" 2>"$ZT_TMP/ls.err" | sort >"$ZT_TMP/ls.got"
  assert_file_eq "listing of $d (stored entries + views)" "$ZT_TMP/ls.exp" "$ZT_TMP/ls.got"
done < <(cut -f1 "$ZT_TMP/entries" | sort -u)

t ls -A "$MNT" >"$ZT_TMP/root.ls" 2>&1
for a in $ARRAYS zarr.json; do
  [ "$a" = zarr.json ] || [ "$(array_path "$a")" = "$a" ] || continue
  if grep -qx -F -- "$a" "$ZT_TMP/root.ls"; then pass "ls root shows $a"; else fail "ls root does not show $a"; fi
done
t ls -lR "$MNT" >/dev/null 2>"$ZT_TMP/lsR.err"
assert_eq "ls -lR of the whole mount succeeds" 0 "$?"

# Naming styles the example is meant to cover.
if grep -q '|default|\.$' "$ZT_TMP/arrays"; then
  p=$(awk -F'|' '$4 == "default" && $5 == "." { print $1; exit }' "$ZT_TMP/arrays")
  k=$(awk -v p="$p" '$1 == p && $4 == 1 { print $2; exit }' "$ZT_TMP/chunks")
  if [ -n "$k" ] && [ -f "$MNT/$p/$k.txt" ]; then pass "'.'-separated key $p/$k has view $k.txt"; else fail "no view for '.'-separated key $p/$k"; fi
else
  fail "example store has no array with default '.' keys (c.0 style)"
fi
if [ -n "$P_cnt" ]; then
  IFS='|' read -r _ _ enc _ <<<"$(array_meta "$P_cnt")"
  assert_eq "counts uses v2 chunk keys" v2 "$enc"
  k=$(awk -v p="$P_cnt" '$1 == p && $4 == 1 { print $2; exit }' "$ZT_TMP/chunks")
  if [ -n "$k" ] && [ -f "$MNT/$P_cnt/$k" ] && [ -f "$MNT/$P_cnt/$k.txt" ]; then
    pass "counts shows v2 key $k and $k.txt"
  else
    fail "counts does not show v2 key '$k' and '$k.txt'"
  fi
fi

# ---- 4. raw files byte-identical ----

nraw=0
while IFS= read -r f; do
  rel=${f#"$SRC"/}
  assert_file_eq "raw $rel byte-identical" "$f" "$MNT/$rel"
  nraw=$((nraw + 1))
done < <(find "$SRC" -type f | sort)
say "compared $nraw stored files with cmp"

# ---- 5. values.txt of every array ----

for a in $ARRAYS; do
  p=$(array_path "$a")
  [ -n "$p" ] || continue
  assert_file_eq "$a/values.txt equals EXPECTED/$a.txt" "$EXP/$a.txt" "$MNT/$p/values.txt"
done

# ---- 6. chunk views: content, missing chunks, 1-D concatenation ----

nmissing=0
while read -r p key idx st; do
  if [ "$st" = 1 ]; then
    [ -f "$SRC/$p/$key.txt" ] && continue # a stored key wins; compared raw above
    expected_chunk_text "$p" "$idx" "$ZT_TMP/chunk.exp"
    assert_file_eq "chunk view $p/$key.txt" "$ZT_TMP/chunk.exp" "$MNT/$p/$key.txt"
  else
    nmissing=$((nmissing + 1))
    if t stat -- "$MNT/$p/$key.txt" >/dev/null 2>"$ZT_TMP/stat.err"; then
      fail "missing chunk $p/$key has a view $key.txt"
    elif grep -q 'No such file' "$ZT_TMP/stat.err"; then
      pass "missing chunk $p/$key has no view"
    else
      fail "stat of missing chunk view $p/$key.txt: unexpected error"
      show "$ZT_TMP/stat.err"
    fi
    if t stat -- "$MNT/$p/$key" >/dev/null 2>&1; then
      fail "missing chunk $p/$key appears as a raw file"
    fi
  fi
done <"$ZT_TMP/chunks"
[ "$nmissing" -gt 0 ] || fail "example store has no missing chunk to test"

# 1-D arrays with every chunk stored: cat of the chunk views == values.txt.
while IFS='|' read -r p shape chunks enc sep; do
  case $shape in *,* | "") continue ;; esac
  if awk -v p="$p" '$1 == p && $4 == 0 { m = 1 } END { exit !m }' "$ZT_TMP/chunks"; then continue; fi
  files=$(awk -v p="$p" -v m="$MNT" '$1 == p { printf "%s/%s/%s.txt\n", m, p, $2 }' "$ZT_TMP/chunks")
  # shellcheck disable=SC2086
  (IFS=$'\n'; t cat $files) >"$ZT_TMP/concat.got" 2>&1
  assert_file_eq "1-D $p: chunk views concatenated == values.txt" "$EXP/$(basename "$p").txt" "$ZT_TMP/concat.got"
done <"$ZT_TMP/arrays"

# ---- 7. stat size == bytes read, for every file ----

nfiles=0
while IFS= read -r f; do
  assert_size_matches "stat size of ${f#"$MNT"/}" "$f"
  nfiles=$((nfiles + 1))
done < <(t find "$MNT" -type f | sort)
say "checked stat sizes of $nfiles files"

# ---- 8. tools on values.txt, against the same tools on EXPECTED ----

# same DESC EXPFILE GOTFILE SNIPPET: the snippet ("$1" = file) prints the
# same on both.
same() {
  sh -c "$4" sh "$2" >"$ZT_TMP/same.exp" 2>&1
  t sh -c "$4" sh "$3" >"$ZT_TMP/same.got" 2>&1
  assert_file_eq "$1" "$ZT_TMP/same.exp" "$ZT_TMP/same.got"
}
for a in $ARRAYS; do
  p=$(array_path "$a")
  [ -n "$p" ] || continue
  E="$EXP/$a.txt"
  V="$MNT/$p/values.txt"
  n=$(wc -l <"$E")
  last=$(tail -n 1 "$E")
  first=$(head -n 1 "$E")
  same "$a: head -n 3" "$E" "$V" 'head -n 3 "$1"'
  same "$a: tail -n 2" "$E" "$V" 'tail -n 2 "$1"'
  same "$a: tail -c 100" "$E" "$V" 'tail -c 100 "$1"'
  same "$a: wc -l" "$E" "$V" 'wc -l <"$1"'
  same "$a: wc -c" "$E" "$V" 'wc -c <"$1"'
  same "$a: grep -c -x -F first line" "$E" "$V" "grep -c -x -F -- '$(printf '%s' "$first" | sed "s/'/'\\\\''/g")' \"\$1\""
  same "$a: grep -n -F last line" "$E" "$V" "grep -n -F -- '$(printf '%s' "$last" | sed "s/'/'\\\\''/g")' \"\$1\""
  same "$a: sort | uniq -c" "$E" "$V" 'sort "$1" | uniq -c | sort -rn | head -20'
  same "$a: awk every 7th line" "$E" "$V" "awk 'NR % 7 == 1' \"\$1\""
  size=$(wc -c <"$E")
  for off in 1 2 $((size / 3)) $((size / 2 + 1)) $((size - 5)); do
    [ "$off" -ge 1 ] || continue
    same "$a: 37 bytes at offset $off" "$E" "$V" "tail -c +$off \"\$1\" | head -c 37"
  done
  # every line ends with \n
  if [ "$(t tail -c 1 "$V" | od -An -c | tr -d ' ')" = '\n' ] || [ "$size" = 0 ]; then
    pass "$a: values.txt ends with a newline"
  else
    fail "$a: values.txt does not end with a newline"
  fi
  assert_eq "$a: wc -l equals the element count in EXPECTED" "$n" "$(t wc -l <"$V")"
done

# ---- 9. read-only ----

p=$P_start
[ -n "$p" ] || p=.
find "$SRC" -type f -exec md5sum {} + | sort >"$ZT_TMP/src.sum.before"
assert_erofs "touch a new file" touch "$MNT/newfile"
assert_erofs "touch an existing file" touch "$MNT/zarr.json"
assert_erofs "mkdir" mkdir "$MNT/newdir"
assert_erofs "rm zarr.json" rm -f "$MNT/zarr.json"
assert_erofs "rm values.txt" rm -f "$MNT/$p/values.txt"
assert_erofs "rmdir an array" rmdir "$MNT/$p"
assert_erofs "mv zarr.json" mv "$MNT/zarr.json" "$MNT/zarr2.json"
assert_erofs "chmod" chmod 600 "$MNT/zarr.json"
assert_erofs "truncate values.txt" truncate -s 0 "$MNT/$p/values.txt"
assert_erofs "truncate zarr.json" truncate -s 0 "$MNT/zarr.json"
assert_erofs "echo > zarr.json" sh -c 'echo x >"$1"' sh "$MNT/zarr.json"
assert_erofs "echo >> values.txt" sh -c 'echo x >>"$1"' sh "$MNT/$p/values.txt"
assert_erofs "ln -s" ln -s zarr.json "$MNT/link"
assert_erofs "cp into the mount" cp "$ZT_TMP/afile" "$MNT/copied"
find "$SRC" -type f -exec md5sum {} + | sort >"$ZT_TMP/src.sum.after"
assert_file_eq "source store unchanged after write attempts" "$ZT_TMP/src.sum.before" "$ZT_TMP/src.sum.after"
zt_check_log_clean "$ZT_LOG"
zumount "$MNT"
if zt_is_mounted "$MNT"; then fail "still mounted after zumount"; else pass "unmounted with fusermount3 -u"; fi

# ---- 10. a tiny cache under 12 parallel readers; -s; -d ----

MNT2=$(zt_mkdir mnt2)
if zmount "$SRC" "$MNT2" -o cache_size=64K; then
  pids=""
  n=0
  for round in 1 2; do
    for a in $ARRAYS; do
      p=$(array_path "$a")
      [ -n "$p" ] || continue
      n=$((n + 1))
      t cat "$MNT2/$p/values.txt" >"$ZT_TMP/tiny.$n.got" 2>&1 &
      pids="$pids $!:$n:$a"
    done
  done
  for pn in $pids; do
    pid=${pn%%:*} rest=${pn#*:}
    wait "$pid"
    rc=$?
    n=${rest%%:*} a=${rest#*:}
    if [ "$rc" -ne 0 ]; then
      fail "cache_size=64K, parallel reader $n of $a/values.txt exited $rc"
      show "$ZT_TMP/tiny.$n.got"
    else
      assert_file_eq "cache_size=64K, parallel reader $n: $a/values.txt" "$EXP/$a.txt" "$ZT_TMP/tiny.$n.got"
    fi
  done
  zt_check_log_clean "$ZT_LOG"
  zumount "$MNT2"
fi
MNT2=$(zt_mkdir mnt2s)
if zmount "$SRC" "$MNT2" -s -d; then
  for a in $ARRAYS; do
    p=$(array_path "$a")
    [ -n "$p" ] || continue
    assert_file_eq "-s -d: $a/values.txt" "$EXP/$a.txt" "$MNT2/$p/values.txt"
  done
  zumount "$MNT2"
fi

# ---- 11. allow_other, cache_size with a suffix, then SIGTERM ----

MNT3=$(zt_mkdir mnt3)
if zmount "$SRC" "$MNT3" -o allow_other -o cache_size=1M; then
  p=$(array_path names_end)
  assert_file_eq "-o allow_other,cache_size=1M: names_end/values.txt" "$EXP/names_end.txt" "$MNT3/$p/values.txt"
  pid=$ZT_PID
  kill -TERM "$pid"
  i=0
  while zt_is_mounted "$MNT3" && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  if zt_is_mounted "$MNT3"; then
    fail "SIGTERM: mount still present after 5s"
  else
    pass "SIGTERM: mount gone"
  fi
  if zt_wait_exit "$pid" 5; then
    wait "$pid"
    st=$?
    # Dying of the signal (status >= 128) means no handler: no clean
    # unmount. A SIGTERM is a requested shutdown: exit status 0.
    if [ "$st" -ge 128 ]; then
      fail "SIGTERM: daemon killed by the signal (status $st), no clean shutdown"
    else
      pass "SIGTERM: daemon exited by itself"
      assert_eq "SIGTERM: exit status" 0 "$st"
    fi
  else
    fail "SIGTERM: daemon still running after 5s"
  fi
  if out=$(t ls -A "$MNT3" 2>&1); then
    assert_eq "SIGTERM: mount point is an empty directory again" "" "$out"
  else
    fail "SIGTERM: ls of the mount point fails: $out"
  fi
  zt_check_log_clean "$ZT_LOG"
  zt_forget "$pid"
fi

# ---- 12. text rules and collisions, on hand-written stores ----
# Independent of zarrfs-mkstore: zarr.json and chunk bytes written here with
# printf, the expected text from the contract.

TS="$ZT_TMP/text.zarr"
mkdir -p "$TS"
echo '{"zarr_format":3,"node_type":"group","attributes":{}}' >"$TS/zarr.json"
# mkarr NAME DTYPE SHAPE CHUNK FILL CODECS
mkarr() {
  mkdir -p "$TS/$1/c"
  printf '{"zarr_format":3,"node_type":"array","shape":[%s],"data_type":"%s",' "$3" "$2" >"$TS/$1/zarr.json"
  printf '"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[%s]}},' "$4" >>"$TS/$1/zarr.json"
  printf '"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},' >>"$TS/$1/zarr.json"
  printf '"fill_value":%s,"codecs":%s,"attributes":{}}\n' "$5" "$6" >>"$TS/$1/zarr.json"
}
# hexw HEX FILE: write the bytes spelled in hex.
hexw() { printf "$(printf '%s' "$1" | sed 's/../\\x&/g')" >"$2"; }
BE='[{"name":"bytes","configuration":{"endian":"big"}}]'
LE='[{"name":"bytes","configuration":{"endian":"little"}}]'

mkarr f64 float64 15 15 0 "$BE"
hexw 3fe0000000000000c0080000000000004415af1d78b58c408000000000000000\
7ff8000000000000fff80000000000007ff0000000000000fff0000000000000\
3fb999999999999a3fd555555555555500000000000000017fefffffffffffff\
3efa36e2eb1c432d405ed000000000003e7ad7f29abcaf48 "$TS/f64/c/0"
printf '%s\n' 0.5 -3 1e+20 -0 nan nan inf -inf 0.1 0.3333333333333333 5e-324 \
  1.7976931348623157e+308 2.5e-05 123.25 1e-07 >"$TS/f64.exp"
mkarr f32 float32 6 6 0 "$BE"
hexw 3dcccccd7f7fffff00000001800000004b8000003eaaaaab "$TS/f32/c/0"
printf '%s\n' 0.1 3.4028235e+38 1e-45 -0 16777216 0.33333334 >"$TS/f32.exp"
mkarr i64 int64 2 2 0 "$BE"
hexw 80000000000000007fffffffffffffff "$TS/i64/c/0"
printf '%s\n' -9223372036854775808 9223372036854775807 >"$TS/i64.exp"
mkarr u64 uint64 1 1 0 "$LE"
hexw ffffffffffffffff "$TS/u64/c/0"
printf '%s\n' 18446744073709551615 >"$TS/u64.exp"
mkarr i8 int8 3 3 0 "$LE"
hexw 80ff7f "$TS/i8/c/0"
printf '%s\n' -128 -1 127 >"$TS/i8.exp"
mkarr u16 uint16 2 2 0 "$BE"
hexw ffff0102 "$TS/u16/c/0"
printf '%s\n' 65535 258 >"$TS/u16.exp"
mkarr flags bool 3 3 false "$LE"
hexw 010001 "$TS/flags/c/0"
printf '%s\n' true false true >"$TS/flags.exp"
# vlen-utf8: u32 count, then u32 length + bytes per element.
mkarr str string 4 4 '""' '[{"name":"vlen-utf8"}]'
hexw 0400000003000000610a620000000002000000c3a90100000078 "$TS/str/c/0"
printf 'a b\n\n\303\251\nx\n' >"$TS/str.exp"
mkarr bin bytes 3 3 '[]' '[{"name":"vlen-bytes"}]'
hexw 030000000200000000ff00000000020000004142 "$TS/bin/c/0"
printf '00ff\n\n4142\n' >"$TS/bin.exp"
# Missing chunks show the fill value; an edge chunk shows in-bounds only.
mkarr nanfill float64 4 2 '"NaN"' "$BE"
rm -rf "$TS/nanfill/c" && mkdir -p "$TS/nanfill/c"
hexw bff80000000000004000000000000000 "$TS/nanfill/c/1"
printf '%s\n' nan nan -1.5 2 >"$TS/nanfill.exp"
mkarr edge int32 5 2 7 "$LE"
hexw 0100000002000000 "$TS/edge/c/0"
hexw 0500000006000000 "$TS/edge/c/2" # holds 5 and an out-of-bounds 6
printf '%s\n' 1 2 7 7 5 >"$TS/edge.exp"
mkarr sfill string 3 1 '"zz"' '[{"name":"vlen-utf8"}]'
hexw 010000000100000071 "$TS/sfill/c/1"
printf 'zz\nq\nzz\n' >"$TS/sfill.exp"
# Collisions: stored c/0.txt and values.txt win over the views.
mkarr coll string 2 2 '""' '[{"name":"vlen-utf8"}]'
hexw 0200000001000000610100000062 "$TS/coll/c/0"
printf 'STORED c/0.txt\n' >"$TS/coll/c/0.txt"
printf 'STORED values.txt\n' >"$TS/coll/values.txt"

MNT4=$(zt_mkdir mnt4)
if zmount "$TS" "$MNT4"; then
  for a in f64 f32 i64 u64 i8 u16 flags str bin nanfill edge sfill; do
    assert_file_eq "text rules: $a/values.txt" "$TS/$a.exp" "$MNT4/$a/values.txt"
    assert_size_matches "text rules: $a/values.txt stat size" "$MNT4/$a/values.txt"
  done
  assert_file_eq "text rules: f64/c/0.txt" "$TS/f64.exp" "$MNT4/f64/c/0.txt"
  printf '5\n' >"$ZT_TMP/edge2.exp"
  assert_file_eq "edge chunk view shows in-bounds elements only" "$ZT_TMP/edge2.exp" "$MNT4/edge/c/2.txt"
  if [ -e "$MNT4/edge/c/1.txt" ] || [ -e "$MNT4/nanfill/c/0.txt" ]; then
    fail "a missing chunk has a view"
  else
    pass "missing chunks have no view"
  fi
  assert_file_eq "collision: stored c/0.txt wins" "$TS/coll/c/0.txt" "$MNT4/coll/c/0.txt"
  assert_file_eq "collision: stored values.txt wins" "$TS/coll/values.txt" "$MNT4/coll/values.txt"
  assert_eq "collision: each name listed once" "0 0.txt" "$(t ls "$MNT4/coll/c" | tr '\n' ' ' | sed 's/ $//')"
  assert_eq "collision: array dir listed once each" "c info.txt values.txt zarr.json" "$(t ls "$MNT4/coll" | tr '\n' ' ' | sed 's/ $//')"
  zt_check_log_clean "$ZT_LOG"
  zumount "$MNT4"
fi

finish
