#!/bin/bash
# tests/fuzz/run.sh BUILD WORK [NAME...] - run the libFuzzer targets of
# BUILD (a build directory configured with --enable-fuzzing CC=clang, after
# `make fuzz`) for FUZZ_SECONDS each (default 30), FUZZ_JOBS at a time
# (default 2), seeded from the fixtures (tests/fuzz/seeds.sh into
# WORK/seeds, unless already there). Each target's corpus grows in
# WORK/corpus/NAME, its log is WORK/logs/NAME.log, a crash, leak, timeout
# or sanitizer report leaves the input in WORK/crashes/NAME/. Prints one
# line per target (executions, cov, ft, corpus, result) and exits 1 when
# any target failed. Without NAMEs, every target.
set -uo pipefail

SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:?usage: run.sh BUILD WORK [NAME...]}" && pwd)
WORK=${2:?usage: run.sh BUILD WORK [NAME...]}
shift 2
SECONDS_EACH=${FUZZ_SECONDS:-30}
JOBS=${FUZZ_JOBS:-2}
NAMES=${*:-meta_v3 meta_v2 consolidated kerchunk kerchunk_render jdup jlex manifest
vlen vlen_interleaved sharding blosc packbits optional json2 msgpack zfp namespace
icechunk listxml parquet strtext cf cfgroup htindex sizeindex url}

mkdir -p "$WORK/logs" "$WORK/corpus" "$WORK/crashes"
WORK=$(cd "$WORK" && pwd)
[ -d "$WORK/seeds" ] || "$SRC/tests/fuzz/seeds.sh" "$WORK/seeds" >"$WORK/logs/seeds.log" || exit 1

# Leaks are bugs here too; stop at the first report.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# one NAME: run a target, then write its one-line result to logs/NAME.res.
one() {
  local n=$1 bin="$BUILD/tests/fuzz/fuzz_$1" rc
  mkdir -p "$WORK/corpus/$n" "$WORK/crashes/$n"
  if [ ! -x "$bin" ]; then
    echo "$n - - - - missing($bin)" >"$WORK/logs/$n.res"
    return
  fi
  "$bin" -max_total_time="$SECONDS_EACH" -timeout=25 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$WORK/crashes/$n/" \
    "$WORK/corpus/$n" "$WORK/seeds/$n" >"$WORK/logs/$n.log" 2>&1
  rc=$?
  local execs cov ft corp
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$WORK/logs/$n.log")
  read -r cov ft corp < <(grep -E '^#[0-9]+' "$WORK/logs/$n.log" | tail -1 |
    sed -n 's/.* cov: \([0-9]*\) ft: \([0-9]*\) corp: \([0-9]*\).*/\1 \2 \3/p')
  echo "$n ${execs:--} ${cov:--} ${ft:--} ${corp:--} $([ $rc -eq 0 ] && echo ok || echo "FAILED(status $rc)")" \
    >"$WORK/logs/$n.res"
}
export -f one
export WORK BUILD SECONDS_EACH

# shellcheck disable=SC2086
printf '%s\n' $NAMES | xargs -P "$JOBS" -I{} bash -c 'one {}'

fail=0
printf '%-18s %12s %6s %7s %7s %s\n' target execs cov ft corpus result
for n in $NAMES; do
  read -r _ execs cov ft corp res <"$WORK/logs/$n.res"
  printf '%-18s %12s %6s %7s %7s %s\n' "$n" "$execs" "$cov" "$ft" "$corp" "$res"
  case $res in ok) ;; *)
    fail=1
    echo "---- $n: $(ls "$WORK/crashes/$n" 2>/dev/null | head -3 | tr '\n' ' ')"
    grep -E -A12 'ERROR|runtime error|SUMMARY|deadly signal' "$WORK/logs/$n.log" | head -40
    ;;
  esac
done
exit "$fail"
