#!/bin/bash
# calls.sh - the call graph between the daemon's files has no circle
# (tools/calls.py --check on the objects make built: a file calls another
# when its object leaves undefined a symbol the other defines). The include
# check (layering.sh) cannot see a circle through one shared header.
SRC=${ZARRFS_SRCDIR:-.}
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
command -v "${NM:-nm}" >/dev/null 2>&1 || { echo "SKIP: nm is not installed"; exit 77; }
[ -n "$ZARRFS_OBJECTS" ] || { echo "SKIP: ZARRFS_OBJECTS not set (run through make check)"; exit 77; }
cd "${ZARRFS_BUILDDIR:-.}" || exit 1
# shellcheck disable=SC2086 # a list of object paths, split on purpose
python3 "$SRC/tools/calls.py" --check $ZARRFS_OBJECTS
