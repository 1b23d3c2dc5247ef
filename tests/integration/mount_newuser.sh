#!/bin/bash
# mount_newuser.sh - what a new user met (issue 36), each as it was seen:
#   1. /.zarrfs/stats is one snapshot per open: cat on a fresh mount, and
#      reads of 7 bytes, give whole "name value" lines, each name once;
#      an Icechunk log read in pieces is the log;
#   2. messages: a name that is not there, a mistyped command, a path
#      inside an Icechunk repository, snapshot ids (well formed but none,
#      lower case in -o snapshot= and under /.zarrfs/snapshots/ alike), a
#      virtual chunk that cannot be fetched (the endpoint's words, not the
#      codec's);
#   4. Icechunk: tag and snapshot directories show their commit time, on
#      a fresh mount, listed and stat'ed; the root info.txt names the ref
#      and the snapshot shown;
#   5. a V2 group's info.txt says zarr_format: 2; the reference says what
#      df shows of a remote store and why;
#   6. -o log_level=debug: a line for each request, cache decision and
#      decode, never more than 20 a second (plus a summary), and every
#      request either shown or counted in a summary;
#   7. README's listings are what the mount shows (info.txt included);
#      the man page's NAME and DESCRIPTION and README's first commands
#      name Icechunk repositories as a SOURCE.
# The Icechunk parts need ../shared/fixtures (skipped without them).
. "$(dirname "$0")/lib.sh"
export LC_ALL=C

EX="$ZARRFS_SRCDIR/examples/example.zarr"
FIX=${ZARRFS_FIXTURES:-$ZARRFS_SRCDIR/../shared/fixtures}
ICE="$FIX/icechunk/test-repo-v2"
ICE1="$FIX/icechunk/test-repo-v1"
have_ice=1
[ -f "$ICE/repo" ] && [ -d "$ICE1/refs" ] || have_ice=0

# stats_ok FILE DESC: every line "name value", each name once, and the
# names of a whole text (errors_other is the last).
stats_ok() {
  local f=$1 desc=$2 bad dup
  bad=$(grep -cvE '^[a-z][a-z0-9_]* [0-9]+$' "$f")
  dup=$(awk '{ print $1 }' "$f" | sort | uniq -d | wc -l)
  if [ "$bad" -eq 0 ] && [ "$dup" -eq 0 ] && [ -s "$f" ] &&
    [ "$(tail -n 1 "$f" | awk '{ print $1 }')" = errors_other ]; then
    pass "$desc"
  else
    fail "$desc: $bad lines not 'name value', $dup names twice"
    show "$f"
  fi
}

# ---- 1. /.zarrfs/stats: one snapshot per open ----
M=$(zt_mkdir m)
for i in 1 2 3; do
  zmount "$EX" "$M" || break
  t cat "$M/.zarrfs/stats" >"$ZT_TMP/stats.$i"
  stats_ok "$ZT_TMP/stats.$i" "1: cat of /.zarrfs/stats on fresh mount $i"
  zumount "$M"
done
zmount "$EX" "$M" && {
  t dd if="$M/.zarrfs/stats" bs=7 status=none >"$ZT_TMP/stats.dd"
  stats_ok "$ZT_TMP/stats.dd" "1: /.zarrfs/stats read 7 bytes at a time"
  # a view read between the reads changes the counters, not the open text
  exec 5<"$M/.zarrfs/stats"
  head -c 100 <&5 >"$ZT_TMP/stats.part1"
  cat "$M/names_start/values.txt" >/dev/null
  cat <&5 >"$ZT_TMP/stats.part2"
  exec 5<&-
  cat "$ZT_TMP/stats.part1" "$ZT_TMP/stats.part2" >"$ZT_TMP/stats.joined"
  stats_ok "$ZT_TMP/stats.joined" "1: one open's text, other reads between its reads"
  zumount "$M"
}

# ---- 2. messages ----
cd "$ZT_TMP" || zt_hard_error "cd $ZT_TMP"
t "$ZARRFS_BIN" ls "$EX" nope >/dev/null 2>"$ZT_TMP/err"
if grep -q "nope: No such file or directory in " "$ZT_TMP/err" &&
  ! grep -q "(no such file)" "$ZT_TMP/err"; then
  pass "2: ls of a name not there says where it looked"
else
  fail "2: ls of a name not there"
  show "$ZT_TMP/err"
fi
for args in "frobnicate" "frobnicate x" "frobnicate x y"; do
  # shellcheck disable=SC2086
  t "$ZARRFS_BIN" $args >/dev/null 2>"$ZT_TMP/err"
  rc=$?
  if [ "$rc" -ne 0 ] && grep -q "'*frobnicate'*:* .*not a command" "$ZT_TMP/err" &&
    grep -q "ls, cat, stat, info" "$ZT_TMP/err"; then
    pass "2: zarrfs $args: not a command, and the commands"
  else
    fail "2: zarrfs $args (exit $rc)"
    show "$ZT_TMP/err"
  fi
done
# a plain word that names a store is SOURCE, mounted as ever
mkdir -p "$ZT_TMP/frobstore" && cp "$EX/zarr.json" "$ZT_TMP/frobstore/"
if zmount frobstore "$M" && [ -f "$M/zarr.json" ]; then
  pass "2: zarrfs frobstore MOUNTPOINT mounts the store frobstore"
else
  fail "2: zarrfs frobstore MOUNTPOINT"
fi
zumount "$M"

if [ "$have_ice" = 1 ]; then
  for pr in "$ICE/repo|$ICE" "$ICE/snapshots|$ICE" \
    "$ICE1/refs/branch.main/ref.json|$ICE1"; do
    p=${pr%|*}
    repo=$(cd "${pr#*|}" && pwd -P)
    t "$ZARRFS_BIN" ls "$p" >/dev/null 2>"$ZT_TMP/err"
    if grep -q "Icechunk repository" "$ZT_TMP/err" &&
      grep -qF "repository's folder, $repo," "$ZT_TMP/err" &&
      ! grep -q kerchunk "$ZT_TMP/err"; then
      pass "2: ${p#"$FIX"/}: give the repository's folder"
    else
      fail "2: ${p#"$FIX"/}"
      show "$ZT_TMP/err"
    fi
  done
  for id in AAAAAAAAAAAAAAAAAAAA 2768FV3XW5ZXYM84XNN0; do
    t "$ZARRFS_BIN" ls -o snapshot=$id "$ICE" >/dev/null 2>"$ZT_TMP/err"
    if grep -q "no snapshot $id in the repository" "$ZT_TMP/err"; then
      pass "2: -o snapshot=$id does not exist"
    else
      fail "2: -o snapshot=$id"
      show "$ZT_TMP/err"
    fi
  done
  lower=2768fv3xw5zxym84xnng
  t "$ZARRFS_BIN" ls -o snapshot=$lower "$ICE" >"$ZT_TMP/a" 2>&1
  t "$ZARRFS_BIN" ls "$ICE" /.zarrfs/snapshots/$lower >"$ZT_TMP/b" 2>&1
  t "$ZARRFS_BIN" ls "$ICE" /.zarrfs/snapshots/2768FV3XW5ZXYM84XNNG >"$ZT_TMP/c" 2>&1
  if cmp -s "$ZT_TMP/a" "$ZT_TMP/c" && cmp -s "$ZT_TMP/b" "$ZT_TMP/c" &&
    grep -qx group1 "$ZT_TMP/c"; then
    pass "2: a lower-case id: -o snapshot= and /.zarrfs/snapshots/ alike"
  else
    fail "2: a lower-case id"
    show "$ZT_TMP/a"
    show "$ZT_TMP/b"
  fi
  # a virtual chunk whose endpoint answers nothing (the repository's own
  # container, http://localhost:4200, and nothing listens there)
  t "$ZARRFS_BIN" cat -o target_root=s3://testbucket/ \
    -o container_endpoint=http://localhost:4200 "$ICE" \
    group1/big_chunks/c/0/0.txt >/dev/null 2>"$ZT_TMP/err"
  if grep -qF "GET s3://testbucket/can_read_old/chunk-1 (http://localhost:4200): " "$ZT_TMP/err" &&
    ! grep -qE "(zstd|gzip|blosc|bytes): GET" "$ZT_TMP/err"; then
    pass "2: a failed virtual chunk names the endpoint tried, not the codec"
  else
    fail "2: a failed virtual chunk fetch"
    show "$ZT_TMP/err"
  fi
else
  zt_skip_part "2, 4: Icechunk fixtures not found at $FIX/icechunk"
fi

# ---- 4. Icechunk: commit times, which ref ----
# times_ok DIR DESC: every entry of DIR has the commit time of its
# snapshot, as .zarrfs/log and the repository say (to the second).
times_ok() {
  local dir=$1 desc=$2 bad=0 name id want got
  while IFS= read -r name; do
    case $dir in
    */snapshots) id=$name ;;
    */tags) id=$(head -n 1 "$M/.zarrfs/log/tag.$name.txt" | cut -f 1) ;;
    *) id=$(head -n 1 "$M/.zarrfs/log/branch.$name.txt" | cut -f 1) ;;
    esac
    want=$(cat "$M"/.zarrfs/log/*.txt | awk -F'\t' -v id="$id" '$1 == id { print $2; exit }')
    want=$(date -u -d "$want" +%s)
    got=$(stat -c %Y "$dir/$name")
    if [ "$want" != "$got" ]; then
      bad=$((bad + 1))
      echo "$name: $got, committed $want" >>"$ZT_TMP/times.bad"
    fi
  done < <(ls "$dir")
  if [ "$bad" -eq 0 ] && [ -n "$(ls "$dir")" ]; then
    pass "$desc"
  else
    fail "$desc: $bad of $(ls "$dir" | wc -l) with another time"
    show "$ZT_TMP/times.bad"
  fi
}
if [ "$have_ice" = 1 ]; then
  for repo in "$ICE" "$ICE1"; do
    r=${repo##*/}
    zmount "$repo" "$M" || continue
    rm -f "$ZT_TMP/times.bad"
    # listed first (readdirplus gives the attributes), then stat'ed
    t ls -l "$M/.zarrfs/tags" "$M/.zarrfs/snapshots" "$M/.zarrfs/branches" >/dev/null
    times_ok "$M/.zarrfs/tags" "4: $r: tags show their commit time"
    times_ok "$M/.zarrfs/snapshots" "4: $r: snapshots show their commit time"
    times_ok "$M/.zarrfs/branches" "4: $r: branches show their commit time"
    tip=$(head -n 1 "$M/.zarrfs/log/branch.main.txt")
    id=$(printf '%s' "$tip" | cut -f 1)
    t cat "$M/info.txt" >"$ZT_TMP/info"
    if grep -qx "icechunk_ref: branch main" "$ZT_TMP/info" &&
      grep -qx "icechunk_snapshot: $id" "$ZT_TMP/info" &&
      grep -qx "icechunk_committed: $(printf '%s' "$tip" | cut -f 2)" "$ZT_TMP/info"; then
      pass "4: $r: the root info.txt names branch main and $id"
    else
      fail "4: $r: the root info.txt"
      show "$ZT_TMP/info"
    fi
    zumount "$M"
  done
  zmount "$ICE" "$M" -o ref="it works!" && {
    if grep -qx "icechunk_ref: tag it works!" "$M/info.txt"; then
      pass "4: -o ref=TAG: the root info.txt names the tag"
    else
      fail "4: -o ref=TAG"
      show "$M/info.txt"
    fi
    zumount "$M"
  }
fi

# ---- 5. a V2 group's zarr_format; df of a remote store ----
V2=$(zt_mkdir v2)
printf '{"zarr_format": 2}' >"$V2/.zgroup"
mkdir "$V2/sub" && printf '{"zarr_format": 2}' >"$V2/sub/.zgroup"
zmount "$V2" "$M" && {
  for g in "" sub/; do
    if grep -qx "zarr_format: 2" "$M/${g}info.txt"; then
      pass "5: a V2 group's info.txt (/$g) says zarr_format: 2"
    else
      fail "5: a V2 group's info.txt (/$g)"
      show "$M/${g}info.txt"
    fi
  done
  zumount "$M"
}
if grep -q "remote.md#statfs-and-df" "$ZARRFS_SRCDIR/docs/reference.md" &&
  grep -qx "## statfs and df" "$ZARRFS_SRCDIR/docs/remote.md"; then
  pass "5: the reference and remote.md say what df shows of a remote store"
else
  fail "5: df of a remote store is not explained in docs/reference.md and docs/remote.md"
fi

# ---- 6. log_level=debug ----
DLOG="$ZT_TMP/debug.log"
zmount "$EX" "$M" -o log_level=debug,log_file="$DLOG" && {
  opens=0
  for i in $(seq 150); do
    for f in matrix/c/0/0.txt names_end/c.1.txt counts/values.txt; do
      cat "$M/$f" >/dev/null
      opens=$((opens + 1))
    done
  done
  zumount "$M"
  for kind in "debug: open /" "debug: read /" "debug: lookup /" "debug: cache: " "debug: decode "; do
    if grep -qF "$kind" "$DLOG"; then
      pass "6: debug shows '$kind'"
    else
      fail "6: no '$kind' line"
      head -n 5 "$DLOG" | show
    fi
  done
  most=$(grep ' debug: ' "$DLOG" | awk '{ print substr($1, 1, 19) }' | sort | uniq -c |
    sort -rn | awk 'NR == 1 { print $1 }')
  if [ -n "$most" ] && [ "$most" -le 42 ]; then
    pass "6: at most $most debug lines in a second of the log"
  else
    fail "6: ${most:-no} debug lines in one second (20 a second, two windows at most)"
  fi
  shown=$(grep -cE ' debug: (open|read|lookup|stat|readdir) /' "$DLOG")
  counted=$(grep -oE '\(request [0-9,]+' "$DLOG" | tr -d '(request,' | awk '{ s += $1 } END { print s + 0 }')
  if [ $((shown + counted)) -ge "$opens" ]; then
    pass "6: every request shown ($shown) or counted ($counted), $opens opens"
  else
    fail "6: $opens opens, $shown request lines shown and $counted counted"
  fi
}

# ---- 7. README and the man page ----
README="$ZARRFS_SRCDIR/README.md"
zmount "$EX" "$M" && {
  # README (a): what the mount showed, after `ls M M/names_start && head ...`
  awk '/^It ends with what the mount showed:/ { on = 1; next }
       on && /^```$/ { if (++n == 2) exit; next }
       on && n == 1' "$README" | sed "s|/mnt/zarrfs-demo|$M|" >"$ZT_TMP/readme.a"
  (cd "$ZT_TMP" && ls "$M" "$M/names_start" && head -3 "$M/names_start/values.txt" &&
    grep -c unknown "$M/labels_utf8/values.txt" && tail -n 2 "$M/names_end/values.txt") \
    >"$ZT_TMP/mount.a" 2>&1
  assert_file_eq "7: README's command (a) output is the mount's" "$ZT_TMP/readme.a" "$ZT_TMP/mount.a"
  # "A mounted store": `ls` as a terminal 80 columns wide shows it
  awk '/^\$ ls$/ { on = 1; next } on && /^\$ / { exit } on' "$README" >"$ZT_TMP/readme.ls"
  (cd "$M" && ls -C -T 0 -w 80) >"$ZT_TMP/mount.ls"
  assert_file_eq "7: README's 'ls' of the mounted store is the mount's" "$ZT_TMP/readme.ls" "$ZT_TMP/mount.ls"
  zumount "$M"
}
MAN="$ZARRFS_SRCDIR/man/zarrfs.1"
if sed -n '/^\.SH NAME/,/^\.SH/p' "$MAN" | grep -q Icechunk &&
  sed -n '/^\.SH DESCRIPTION/,/^\.SH OPTIONS/p' "$MAN" | grep -q Icechunk; then
  pass "7: the man page's NAME and DESCRIPTION name Icechunk repositories"
else
  fail "7: the man page's NAME or DESCRIPTION does not name Icechunk"
fi
if sed -n '/^## Five useful commands/,/^2\. /p' "$README" | grep -q Icechunk; then
  pass "7: README's first commands name Icechunk repositories as a SOURCE"
else
  fail "7: README's first commands do not name Icechunk repositories"
fi

finish
