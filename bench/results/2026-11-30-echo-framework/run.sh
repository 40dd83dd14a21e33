#!/usr/bin/env bash
# Session 11, call 2: the framework's per-packet costs on one core. A/B of echo through bench cores:
# "old" is the commit before (libc memcpy of each replayed frame; Counters::count summing into the
# members), "new" the working tree (64-byte line copies; sums in locals). Three alternating pairs on
# one worker, one pair on 15; and what a clock read costs here. The old files come from
# `git show 81ad71e:FILE` into .gl/ab/ (replay_source_old.cc, counters_old.h).
set -u
cd "$(dirname "$0")/../../.."
. scripts/device/common.sh
export TARGETS="tandem"
R=bench/results/2026-11-30-echo-framework
t0=$(date +%s)
device_setup || exit 1
cp build-device/tandem /tmp/t_new
cp io/replay_source.cc /tmp/rs_new.cc; cp core/counters.h /tmp/cnt_new.h
cp .gl/ab/replay_source_old.cc io/replay_source.cc; cp .gl/ab/counters_old.h core/counters.h
ninja -C build-device -j16 tandem > /tmp/build_old.log 2>&1 || { tail -20 /tmp/build_old.log; exit 1; }
cp build-device/tandem /tmp/t_old
cp /tmp/rs_new.cc io/replay_source.cc; cp /tmp/cnt_new.h core/counters.h
echo "built both in $(( $(date +%s) - t0 )) s"
cat /sys/devices/system/clocksource/clocksource0/current_clocksource /sys/devices/system/clocksource/clocksource0/available_clocksource
grep -o -w "constant_tsc\|nonstop_tsc\|tsc_known_freq\|rdtscp" /proc/cpuinfo | sort | uniq -c
g++ -O2 $R/clock_probe.cc -o /tmp/clock_probe && /tmp/clock_probe
mkdir -p /tmp/j
for pair in 1 2 3; do
  for v in old new; do
    timeout 80 /tmp/t_$v bench cores --app echo --workers 1 --paths scalar,batched --reps 3 --json /tmp/j/echo1_${v}_$pair.json > /tmp/o.log 2>&1
    echo "== $v pair $pair (1 worker) exit $?"; grep -E "^(scalar|batched) |stages" /tmp/o.log | sed 's/  */ /g'
    cat /tmp/o.log >> $OUT/ab.log
  done
done
for v in old new; do
  timeout 80 /tmp/t_$v bench cores --app echo --workers 15 --paths scalar,batched --reps 3 --json /tmp/j/echo15_${v}.json > /tmp/o.log 2>&1
  echo "== $v (15 workers) exit $?"; grep -E "^(scalar|batched) |stages" /tmp/o.log | sed 's/  */ /g'
  cat /tmp/o.log >> $OUT/ab.log
done
tar -C /tmp -cf $OUT/json.tar j
echo "total $(( $(date +%s) - t0 )) s"
