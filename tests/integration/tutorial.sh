#!/bin/bash
# tutorial.sh - runs examples/tutorial.md: builds its store (zarrfs-mkstore
# cells), mounts it, runs every "$ " command of the file's ```console
# blocks in the mount's root with bash (LC_ALL=C, as the tutorial says) and
# compares what it prints (stdout and stderr) with the lines written below
# the command, byte for byte. So the tutorial's outputs cannot go stale: a
# change that alters one fails this test.
#
# TUTORIAL_WRITE=FILE: also write the tutorial with the outputs of this run
# to FILE (the test still fails on a difference, so a rewrite is a
# deliberate step: rerun after it).
#
# The mount's values.txt of every array is also compared with the text the
# independent writer says it must hold (zarrfs-mkstore cells DIR EXPDIR),
# so an output written into the tutorial from a wrong build would not pass
# either.
. "$(dirname "$0")/lib.sh"
zt_require_mkstore

DOC="$ZARRFS_SRCDIR/examples/tutorial.md"
[ -r "$DOC" ] || zt_hard_error "$DOC is missing"
SRC="$ZT_TMP/cells.zarr"
EXP="$ZT_TMP/expected"
t "$ZARRFS_MKSTORE" cells "$SRC" "$EXP" >"$ZT_TMP/mkstore.log" 2>&1 ||
  zt_hard_error "zarrfs-mkstore cells failed: $(cat "$ZT_TMP/mkstore.log")"
MNT=$(zt_mkdir cells)
zmount "$SRC" "$MNT" || finish

for a in obs/_index obs/cell_type obs/donor obs/n_genes var/_index var/gene_ids X; do
  assert_file_eq "$a/values.txt is the writer's text" "$EXP/$a.txt" "$MNT/$a/values.txt"
done

# Run one command in the mount's root; its output (both streams) to $2.
run_cmd() {
  (cd "$MNT" && LC_ALL=C timeout -k 5 "$ZT_CMD_TIMEOUT" bash -c "$1") >"$2" 2>&1
}

# Check the command held in $cmd against the expected lines in $want.
check_cmd() {
  run_cmd "$cmd" "$ZT_TMP/got"
  printf '%s' "$want" >"$ZT_TMP/want"
  if cmp -s "$ZT_TMP/want" "$ZT_TMP/got"; then
    pass "\$ $cmd"
  else
    fail "\$ $cmd: output differs from the tutorial's (- tutorial, + now):"
    diff -u "$ZT_TMP/want" "$ZT_TMP/got" | tail -n +3 | show
  fi
  ncmds=$((ncmds + 1))
  if [ -n "${TUTORIAL_WRITE:-}" ]; then cat "$ZT_TMP/got" >>"$ZT_TMP/new.md"; fi
}

# Walk the file: in a console block, "$ CMD" starts a command and the lines
# up to the next "$ " or the closing fence are its expected output.
ncmds=0
in_console=0
cmd=""
want=""
: >"$ZT_TMP/new.md"
emit() { if [ -n "${TUTORIAL_WRITE:-}" ]; then printf '%s\n' "$1" >>"$ZT_TMP/new.md"; fi; }
while IFS= read -r line || [ -n "$line" ]; do
  if [ "$in_console" = 0 ]; then
    emit "$line"
    [ "$line" = '```console' ] && in_console=1
    continue
  fi
  case $line in
  '$ '* | '```')
    if [ -n "$cmd" ]; then check_cmd; fi
    cmd=""
    want=""
    if [ "$line" = '```' ]; then
      in_console=0
    else
      cmd=${line#\$ }
    fi
    emit "$line"
    ;;
  *)
    [ -n "$cmd" ] || fail "console block line without a command before it: '$line'"
    want+="$line"$'\n'
    ;;
  esac
done <"$DOC"
[ "$in_console" = 0 ] || fail "the last console block of $DOC is not closed"
# The tutorial has commands (a parse that found none would check nothing).
if [ "$ncmds" -ge 15 ]; then pass "$ncmds commands run"; else fail "only $ncmds commands found in $DOC"; fi

if [ -n "${TUTORIAL_WRITE:-}" ]; then
  cp "$ZT_TMP/new.md" "$TUTORIAL_WRITE" && say "wrote $TUTORIAL_WRITE"
fi
zumount "$MNT"
finish
