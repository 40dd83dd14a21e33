#!/usr/bin/env bash
# "old": the workers' per-burst stamps on the steady clock (57304a1); "new": the working tree, the
# stamp clock (core/clock.h: the TSC scaled to ns where the kernel's clocksource is tsc). The old
# files come from `git show 57304a1:FILE` into .gl/ab3/ (core/clock.cc emptied there). Four
# alternating pairs of bench cores --app echo on 1 and 15 workers; then the clock test and tandem
# run's latency line, both binaries.
set -u
cd "$(dirname "$0")/../../.."
. scripts/device/common.sh
export TARGETS="tandem clock_test"
t0=$(date +%s)
device_setup || exit 1
cp build-device/tandem /tmp/t_new
build-device/tests/clock_test > $OUT/clock_test.log 2>&1; tail -1 $OUT/clock_test.log
cat /sys/devices/system/clocksource/clocksource0/current_clocksource
FILES="core/clock.h core/clock.cc sched/arrival_clock.h sched/workers.cc sched/resident.cc"
mkdir -p /tmp/keep
for f in $FILES; do cp $f /tmp/keep/; cp .gl/ab3/$(basename $f) $f; done
ninja -C build-device -j16 tandem > /tmp/build_old.log 2>&1 || { tail -20 /tmp/build_old.log; exit 1; }
cp build-device/tandem /tmp/t_old
for f in $FILES; do cp /tmp/keep/$(basename $f) $f; done
echo "built both in $(( $(date +%s) - t0 )) s"
mkdir -p /tmp/j
for pair in 1 2 3 4; do
  order="old new"; [ $((pair % 2)) -eq 0 ] && order="new old"
  for v in $order; do
    timeout 100 /tmp/t_$v bench cores --app echo --workers 1,15 --paths scalar,batched --reps 3 --json /tmp/j/echo_${v}_$pair.json > /tmp/o.log 2>&1
    echo "== $v pair $pair exit $?"; grep -E "^(scalar|batched) " /tmp/o.log | sed 's/  */ /g' | cut -c1-60
    cat /tmp/o.log >> $OUT/ab.log
  done
done
for v in old new; do
  for k in 1 2; do
    echo "== $v run $k" >> $OUT/run_latency.log
    taskset -c 2 /tmp/t_$v run --app echo --gen count=8000000 --workers 1 >> $OUT/run_latency.log 2>&1
  done
done
grep -E "==|throughput|latency per" $OUT/run_latency.log
tar -C /tmp -cf $OUT/json.tar j
echo "total $(( $(date +%s) - t0 )) s"
