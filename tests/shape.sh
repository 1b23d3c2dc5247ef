#!/bin/bash
# shape.sh - no .c or .h under src/, fs/ or codecs/ is over 900 lines
# (tools/shape.py names each one that is).
SRC=${ZARRFS_SRCDIR:-.}
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
python3 "$SRC/tools/shape.py" "$SRC"
