#!/bin/bash
# layering.sh - the include graph has no circle and no arrow pointing up
# (tools/includes.py --check; docs/architecture.md shows the graph it
# draws), the tests of tests/unit/codecs and tests/unit/stores include no
# fs/ header (tools/includes.py's TEST_LAYERS), and the fuzz target list
# of tests/fuzz/Makefile.inc is tests/fuzz/targets.h's.
SRC=${ZARRFS_SRCDIR:-.}
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
python3 "$SRC/tools/includes.py" --check "$SRC" || exit 1
mk=$(grep -o '%reldir%/fuzz_[a-z0-9_]*' "$SRC/tests/fuzz/Makefile.inc" |
  grep -v 'fuzz_replay\|fuzz_common' | sed 's|%reldir%/fuzz_||' | sort -u)
th=$(sed -n 's/^X(\(.*\))$/\1/p' "$SRC/tests/fuzz/targets.h" | sort -u)
if [ "$mk" != "$th" ]; then
  echo "FAIL: tests/fuzz/Makefile.inc's FUZZ_TARGETS and tests/fuzz/targets.h differ"
  diff <(echo "$mk") <(echo "$th") 2>/dev/null || true
  exit 1
fi
echo "include graph and fuzz target list: ok"
