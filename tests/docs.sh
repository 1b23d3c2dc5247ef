#!/bin/bash
# docs.sh - the docs say what the code is (tools/docs_check.py): every file
# and module docs/architecture.md or a folder README names exists, every
# module is named in its folder's README and in docs/architecture.md, the
# lock table of docs/architecture.md is the code's locks, and the read
# paths drawn there name each function in the file that defines it.
SRC=${ZARRFS_SRCDIR:-.}
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
python3 "$SRC/tools/docs_check.py" "$SRC"
