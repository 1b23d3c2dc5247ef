#!/bin/bash
# mount_icechunk_hostile.sh - Icechunk repositories no honest writer makes
# (tests/writers/icechunk_writer.py hostile), mounted by the real daemon;
# each serves what it can, and says once in the log what it left out:
#  1. cycle, spec 1 and 2: main's parents loop (tip -> cycle 1 -> cycle 2 ->
#     cycle 3 -> cycle 1): log/branch.main.txt shows the four snapshots
#     and stops before the first one met again, with one log line naming
#     it; snapshots/ lists each snapshot once; main and the honest tag ok
#     read their values; a snapshot that is its own parent, the same;
#  2. long histories: spec 1, 300 snapshots with 100,000-byte messages:
#     the log stays within 16 MiB of whole lines, each message cut at
#     65,536 bytes and ending with "...", one log line says where it was
#     cut; spec 2, 100,002 snapshots: the log and snapshots/ stop at
#     100,000, each with one log line;
#  3. bad refs, spec 1 and 2: tags named '', 'sl/ash', '../../etc', with a
#     NUL, '.', '..', naming no snapshot or listed twice (spec 2); ref.json
#     empty, not JSON, not an id, naming a snapshot that is not there,
#     names '', '.', '..' (spec 1): the mount comes up, main reads,
#     branches/, tags/ and log/ list the good refs alone (`ls -a` shows
#     `.` and `..` once), the duplicate keeps the first one listed, one log
#     line per ref left out;
#  4. over HTTP (nginx; refs read by name, not listed), the spec 1 tag
#     naming a snapshot that is not there: its tree and its log are EIO
#     with a log line each, main and the good tag read.
# Needs Debian's python3 with python3-flatbuffers (skip otherwise, or fail
# under CI=true).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/servers.sh"

PY=/usr/bin/python3
W="$ZARRFS_SRCDIR/tests/writers/icechunk_writer.py"
"$PY" -c 'import flatbuffers.flexbuffers' 2>/dev/null ||
  zt_skip_or_fail "no python3-flatbuffers for $PY"
MNT=$(zt_mkdir mnt)
TAB=$(printf '\t')

# hostile OUT CASE ARGS...: write a hostile repository (its summary in
# OUT.json); 1 when the writer fails.
hostile() {
  local out=$1
  shift
  if ! "$PY" "$W" hostile "$out" "$@" >"$out.json" 2>"$out.err"; then
    fail "writer: hostile $*"
    show "$out.err"
    return 1
  fi
}

# ls_is DESC DIR NAMES (one line, sorted, space-separated)
ls_is() { assert_eq "$1" "$3" "$(t env LC_ALL=C ls -- "$2" | tr '\n' ' ' | sed 's/ $//')"; }

# messages FILE: the third fields of a log, joined by '|'.
messages() { t cut -f3 "$1" | tr '\n' '|' | sed 's/|$//'; }

# logged DESC PATTERN...: the daemon's log has exactly one line holding
# every fixed-string PATTERN.
logged() {
  local desc=$1 p
  shift
  cp "$ZT_LOG" "$ZT_TMP/logged"
  for p in "$@"; do
    grep -F -- "$p" "$ZT_TMP/logged" >"$ZT_TMP/logged.next"
    mv "$ZT_TMP/logged.next" "$ZT_TMP/logged"
  done
  local n
  n=$(wc -l <"$ZT_TMP/logged")
  if [ "$n" -eq 1 ]; then
    pass "$desc"
  else
    fail "$desc: $n log lines hold '$*'"
    show "$ZT_LOG"
  fi
}

# values DESC FILE EXPECTED_TEXT
values() {
  printf '%s' "$3" >"$ZT_TMP/values.exp"
  assert_file_eq "$1" "$ZT_TMP/values.exp" "$2"
}

# snap_id OUT LABEL: the snapshot id the writer gave label.
snap_id() { "$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["snapshots"][sys.argv[2]])' "$1.json" "$2"; }

# ---- 1. cycles ----

for spec in 1 2; do
  R="$ZT_TMP/cycle.$spec"
  hostile "$R" cycle --spec "$spec" -n 3 || continue
  zmount "$R" "$MNT" || continue
  H="$MNT/.zarrfs"
  values "cycle spec $spec: main reads" "$MNT/a/values.txt" "1
1
"
  if t cat "$H/log/branch.main.txt" >"$ZT_TMP/cycle.log"; then
    assert_eq "cycle spec $spec: the log stops before the loop comes round" \
      "tip|cycle 1|cycle 2|cycle 3" "$(messages "$ZT_TMP/cycle.log")"
  else
    fail "cycle spec $spec: reading log/branch.main.txt failed"
  fi
  logged "cycle spec $spec: one log line names the snapshot met again" \
    "log/branch.main.txt" "loop" "$(snap_id "$R" c1)"
  t cat "$H/log/branch.main.txt" >/dev/null
  logged "cycle spec $spec: read again, no new line" "log/branch.main.txt" "loop"
  assert_eq "cycle spec $spec: snapshots/ lists each once" 6 \
    "$(t ls "$H/snapshots" | sort -u | wc -l)"
  assert_eq "cycle spec $spec: log of tag ok" "ok|Repository initialized" \
    "$(messages "$H/log/tag.ok.txt")"
  values "cycle spec $spec: tags/ok reads" "$H/tags/ok/a/values.txt" "2
2
"
  values "cycle spec $spec: a snapshot inside the loop reads" \
    "$H/snapshots/$(snap_id "$R" c2)/a/values.txt" "3
3
"
  zumount "$MNT"
done
# its own parent (spec 1: a snapshot file; spec 2: the repo file's index)
for spec in 1 2; do
  R="$ZT_TMP/self.$spec"
  hostile "$R" cycle --spec "$spec" -n 1 || continue
  zmount "$R" "$MNT" || continue
  assert_eq "own parent spec $spec: the log" "tip|cycle 1" \
    "$(messages "$MNT/.zarrfs/log/branch.main.txt")"
  logged "own parent spec $spec: one log line" "loop" "$(snap_id "$R" c1)"
  zumount "$MNT"
done

# ---- 2. long histories ----

R="$ZT_TMP/long.1"
if hostile "$R" long --spec 1 -n 300 --message-bytes 100000 &&
  zmount "$R" "$MNT"; then
  L="$MNT/.zarrfs/log/branch.main.txt"
  if t cat "$L" >"$ZT_TMP/long.log"; then
    size=$(wc -c <"$ZT_TMP/long.log")
    if [ "$size" -le $((16 << 20)) ] && [ "$size" -gt $((15 << 20)) ]; then
      pass "long spec 1: the log is cut within 16 MiB ($size bytes)"
    else
      fail "long spec 1: the log has $size bytes"
    fi
    assert_eq "long spec 1: stat gives the size read" "$size" "$(stat -c %s "$L")"
    assert_eq "long spec 1: whole lines, newest first" \
      "commit 299$(head -c 65526 /dev/zero | tr '\0' .)..." \
      "$(head -1 "$ZT_TMP/long.log" | cut -f3)"
    if awk -F'\t' 'NF != 3 || length($3) != 65539 { bad = 1 } END { exit bad }' \
      "$ZT_TMP/long.log"; then
      pass "long spec 1: every message cut at 65,536 bytes with '...'"
    else
      fail "long spec 1: a line is not ID, TIME, a cut message"
    fi
  else
    fail "long spec 1: reading the log failed"
  fi
  logged "long spec 1: one log line says where the log is cut" \
    "log/branch.main.txt" "the log is cut at" "16 MiB"
  zumount "$MNT"
fi
R="$ZT_TMP/long.2"
if hostile "$R" long --spec 2 -n 100002 && zmount "$R" "$MNT"; then
  assert_eq "long spec 2: the log has 100,000 lines" 100000 \
    "$(t cat "$MNT/.zarrfs/log/branch.main.txt" | wc -l)"
  assert_eq "long spec 2: newest first" "commit 100001" \
    "$(t head -1 "$MNT/.zarrfs/log/branch.main.txt" | cut -f3)"
  logged "long spec 2: one log line says the history is cut" \
    "log/branch.main.txt" "the history is cut" "100,000"
  assert_eq "long spec 2: snapshots/ lists 100,000" 100000 \
    "$(t ls "$MNT/.zarrfs/snapshots" | wc -l)"
  logged "long spec 2: one log line says the list is cut" \
    ".zarrfs/snapshots" "the list of snapshots is cut"
  values "long spec 2: main reads" "$MNT/a/values.txt" "1
1
"
  zumount "$MNT"
fi

# ---- 3. bad refs ----

for spec in 1 2; do
  R="$ZT_TMP/badrefs.$spec"
  hostile "$R" badrefs --spec "$spec" || continue
  zmount "$R" "$MNT" || continue
  H="$MNT/.zarrfs"
  values "bad refs spec $spec: main reads" "$MNT/a/values.txt" "1
1
"
  ls_is "bad refs spec $spec: branches/ lists the good ones" "$H/branches" \
    "feature main"
  ls_is "bad refs spec $spec: tags/ lists the good one" "$H/tags" "good"
  assert_eq "bad refs spec $spec: ls -a tags/ shows . and .. once" ". .. good" \
    "$(t env LC_ALL=C ls -a -- "$H/tags" | tr '\n' ' ' | sed 's/ $//')"
  ls_is "bad refs spec $spec: log/" "$H/log" \
    "branch.feature.txt branch.main.txt tag.good.txt"
  values "bad refs spec $spec: tags/good reads (the first listed)" \
    "$H/tags/good/a/values.txt" "2
2
"
  assert_eq "bad refs spec $spec: log of tag good" "good|main|Repository initialized" \
    "$(messages "$H/log/tag.good.txt")"
  if [ "$spec" = 1 ]; then
    skipped=("tag 'empty'" "tag 'garbage'" "tag 'badid'" "tag 'missing'"
      "branch 'broken'" "branch ''" "tag '.'" "tag '..'")
  else
    skipped=("tag ''" "tag 'sl/ash'" "tag '../../etc'" "tag 'nul\\x00byte'"
      "tag '.'" "tag '..'" "tag 'range'" "tag 'good'" "branch ''" "branch '..'")
  fi
  for s in "${skipped[@]}"; do
    logged "bad refs spec $spec: one log line for $s" "skipped $s"
  done
  zumount "$MNT"
done

# ---- 4. a tag naming a snapshot that is not there, over HTTP ----

# Locally it is left out at open (section 3); over the network (refs
# read by name on demand) it is found missing when used.
R="$ZT_TMP/badrefs.1"
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  zt_skip_part "nginx missing: a ref naming no snapshot over HTTP"
elif [ -d "$R" ]; then
  srv_nginx_start "$ZT_TMP"
  if zmount "$NGINX_URL/badrefs.1" "$MNT"; then
    H="$MNT/.zarrfs"
    assert_fails_with_eio "missing snapshot over HTTP: its tree is EIO" \
      "$H/tags/missing/a/values.txt"
    logged "missing snapshot over HTTP: one log line for its tree" \
      ".zarrfs/tags/missing:" "$(sed 's/.*"snapshot": *"\([^"]*\)".*/\1/' "$R/refs/tag.missing/ref.json")"
    assert_fails_with_eio "missing snapshot over HTTP: its log is EIO" \
      "$H/log/tag.missing.txt"
    logged "missing snapshot over HTTP: one log line for its log" \
      ".zarrfs/log/tag.missing.txt"
    values "missing snapshot over HTTP: tags/good reads" \
      "$H/tags/good/a/values.txt" "2
2
"
    values "missing snapshot over HTTP: main reads" "$MNT/a/values.txt" "1
1
"
    zumount "$MNT"
  fi
fi

finish
