#! /bin/sh
# driver.sh - automake's test driver (build-aux/test-driver), and what a
# skip says: make check names every suite it skipped, and CI cannot skip.
#
# Runs test-driver with the same arguments. Then, for a test that skipped
# whole (exit 77) or in parts (an integration script's closing line
# "NAME.sh: N passed, M failed, K skipped" with K > 0; a Check suite ends
# the same way, tests/unit/testutil.h), it writes the
# reason, one line, to BASE.skip beside BASE.log (tests/skips.sh gathers
# them into the last line of make check). Under CI=true a whole skip
# becomes a FAIL in BASE.trs, so CI fails if any suite skips (the parts
# already fail there: zt_skip_part).
#
# Usage (Makefile.am): LOG_DRIVER = $(SHELL) tests/driver.sh DRIVER
#   then test-driver's own options: --test-name N --log-file L --trs-file T ...
driver=$1
shift
log= trs= name=
for a in "$@"; do
  case $prev in
  --log-file) log=$a ;;
  --trs-file) trs=$a ;;
  --test-name) name=$a ;;
  esac
  prev=$a
done
skip=${log%.log}.skip
rm -f "$skip"
sh "$driver" "$@"
st=$?
[ -n "$log" ] && [ -n "$trs" ] && [ -f "$trs" ] || exit $st

# The reasons a test gives: its lines saying SKIP or skipping, joined.
reason() {
  grep -E 'SKIP|[Ss]kipp' "$log" | grep -v '^SKIP ' |
    grep -Ev '[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' |
    sed 's/^[^:]*: *//; s/^SKIP:* *//; s/^part: *//' | awk '
    { r = r (NR > 1 ? " + " : "") $0 } END { print r }'
}

if grep -q '^:test-result: SKIP' "$trs"; then
  why=$(reason)
  echo "${why:-exit 77, no reason given}" >"$skip"
  if [ "${CI:-}" = true ]; then
    sed -i 's/^:test-result: SKIP/:test-result: FAIL/;
            s/^:global-test-result: SKIP/:global-test-result: FAIL/;
            s/^:recheck: no/:recheck: yes/' "$trs"
    echo "FAIL: $name (CI=true: a suite may not skip: ${why:-exit 77})"
    echo "driver.sh: FAIL: CI=true and the test skipped" >>"$log"
  fi
else
  parts=$(sed -n 's/^[^ ]*: [0-9]* passed, [0-9]* failed, \([0-9]*\) skipped$/\1/p' "$log" |
    tail -n 1)
  if [ -n "$parts" ] && [ "$parts" -gt 0 ]; then
    echo "$parts part(s): $(reason)" >"$skip"
  fi
fi
exit $st
