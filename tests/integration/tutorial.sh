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
#
# The xarray part: the file's ```python block is run with Debian's
# python3-xarray to write the weather store, which is mounted too; the
# console blocks after the marker line
#   <!-- tutorial.sh: the console blocks from here on run in the weather mount -->
# run in that mount's root. Each values.cf.txt there is compared with
# what xarray's open_zarr(...).load() reads, written by the text contract.
# Without python3-xarray that part is skipped.
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

# The weather store of the xarray part, written by the tutorial's own
# Python, and what xarray decodes of it.
PY=/usr/bin/python3 # Debian's: its xarray is python3-xarray
WX=""
if "$PY" -c 'import xarray, zarr, pandas' 2>/dev/null; then
  awk '/^```python$/ {on = 1; next} /^```$/ {on = 0} on' "$DOC" >"$ZT_TMP/weather.py"
  if t "$PY" "$ZT_TMP/weather.py" "$ZT_TMP/weather.zarr" >"$ZT_TMP/weather.log" 2>&1; then
    WX=$(zt_mkdir weather)
    zmount "$ZT_TMP/weather.zarr" "$WX" || WX=""
  else
    fail "the tutorial's weather.py failed:"
    show "$ZT_TMP/weather.log"
  fi
else
  zt_skip_part "the xarray part: no xarray for $PY (Debian package python3-xarray)"
fi
if [ -n "$WX" ]; then
  cat >"$ZT_TMP/decode.py" <<'EOF'
import sys

import numpy as np
import pandas as pd
import xarray as xr


def duration(ns):
    sign, ns = ("-" if ns < 0 else ""), abs(ns)
    days, rem = divmod(ns, 86400 * 10**9)
    h, rem = divmod(rem, 3600 * 10**9)
    m, rem = divmod(rem, 60 * 10**9)
    s, frac = divmod(rem, 10**9)
    out = sign + "P" + ("%dD" % days if days else "")
    if not (h or m or s or frac):
        return out + ("" if days else "T0S")
    out += "T" + ("%dH" % h if h else "") + ("%dM" % m if m else "")
    if s or frac:
        out += "%d%sS" % (s, ("." + ("%09d" % frac).rstrip("0")) if frac else "")
    return out


def text(v):
    if isinstance(v, np.timedelta64):
        return "NaT" if np.isnat(v) else duration(int(v.astype("m8[ns]").astype("i8")))
    if isinstance(v, np.datetime64):
        return "NaT" if np.isnat(v) else pd.Timestamp(v).isoformat()
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if np.isnan(v):
        return "nan"
    r = str(v) if isinstance(v, np.float32) else repr(float(v))
    return r[:-2] if r.endswith(".0") else r


ds = xr.open_zarr(sys.argv[1]).load()
for v in ds[sys.argv[2]].values:
    print(text(v))
EOF
  for a in time temperature rain sunshine; do
    if t "$PY" "$ZT_TMP/decode.py" "$ZT_TMP/weather.zarr" $a >"$ZT_TMP/xr.$a" 2>"$ZT_TMP/py.err"; then
      assert_file_eq "weather $a/values.cf.txt is what xarray decodes" "$ZT_TMP/xr.$a" "$WX/$a/values.cf.txt"
    else
      fail "xarray could not read weather $a:"
      show "$ZT_TMP/py.err"
    fi
  done
fi

# Run one command in the mount's root (the weather mount's in the xarray
# part); its output (both streams) to $2.
RUN_IN=$MNT
run_cmd() {
  (cd "$RUN_IN" && LC_ALL=C timeout -k 5 "$ZT_CMD_TIMEOUT" bash -c "$1") >"$2" 2>&1
}

# Check the command held in $cmd against the expected lines in $want.
check_cmd() {
  if [ -z "$RUN_IN" ]; then # the xarray part without xarray
    if [ -n "${TUTORIAL_WRITE:-}" ]; then printf '%s' "$want" >>"$ZT_TMP/new.md"; fi
    return 0
  fi
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
    case $line in
    '<!-- tutorial.sh: the console blocks from here on run in the weather mount -->')
      RUN_IN=$WX ;;
    esac
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
if [ -n "$WX" ]; then zumount "$WX"; fi
finish
