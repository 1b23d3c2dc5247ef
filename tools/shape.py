#!/usr/bin/env python3
"""shape.py - no source file of the daemon grows past MAX_LINES lines.

  tools/shape.py [SRCDIR]   fail (exit 1), naming each file, when a .c or
                            .h under src/, fs/ or codecs/ is longer

A file that long holds more than one job (docs/architecture.md: one job a
module); split it by role, moving whole functions, before it grows on."""
import os
import sys

MAX_LINES = 900
ROOTS = ("src", "fs", "codecs")


def long_files(root):
    """[(path relative to root, lines)] of every file over MAX_LINES."""
    found = []
    for top in ROOTS:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                p = os.path.join(d, f)
                with open(p, "rb") as fh:
                    n = sum(1 for _ in fh)
                if n > MAX_LINES:
                    found.append((os.path.relpath(p, root), n))
    return found


def main(argv):
    root = argv[0] if argv else "."
    if not all(os.path.isdir(os.path.join(root, t)) for t in ROOTS):
        print("FAIL: %s holds no src/, fs/ and codecs/" % root)
        return 1
    bad = long_files(root)
    for path, n in bad:
        print("FAIL: %s has %d lines (at most %d: split it by role)" %
              (path, n, MAX_LINES))
    if not bad:
        print("no file under %s over %d lines: ok" % (", ".join(ROOTS),
                                                      MAX_LINES))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
