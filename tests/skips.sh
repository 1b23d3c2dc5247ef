#! /bin/sh
# skips.sh - the last line of make check: every suite it skipped, whole or
# in parts, and why (from the BASE.skip files tests/driver.sh wrote).
#
# Usage: skips.sh BASE.log...   (the logs of the tests this run ran)
n=0 line=
for log in "$@"; do
  skip=${log%.log}.skip
  [ -f "$skip" ] || continue
  n=$((n + 1))
  line="$line${line:+; }$(basename "${log%.log}") ($(cat "$skip"))"
done
if [ "$n" -eq 0 ]; then
  echo "make check: no suite skipped"
else
  echo "make check: $n suite(s) skipped: $line"
fi
