#!/usr/bin/env bash
# Session 11, call 3: "old" is the commit before this work (81ad71e: libc memcpy of each replayed
# frame, Counters::count summing into the members, two clock reads a burst), "new" the working tree
# at b6d91f8 (64-byte line copies, sums in locals, one clock read a burst; that read was taken back
# after this call, see run3.sh). Four alternating pairs of bench cores --app echo on 1 and 15
# workers. The old files come from `git show 81ad71e:FILE` into .gl/ab2/.
set -u
cd "$(dirname "$0")/../../.."
. scripts/device/common.sh
export TARGETS="tandem"
t0=$(date +%s)
device_setup || exit 1
cp build-device/tandem /tmp/t_new
FILES="io/replay_source.cc core/counters.h sched/workers.cc sched/arrival_clock.h"
mkdir -p /tmp/keep
for f in $FILES; do cp $f /tmp/keep/; cp .gl/ab2/$(basename $f) $f; done
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
    cat /tmp/o.log >> $OUT/ab2.log
  done
done
tar -C /tmp -cf $OUT/json2.tar j
echo "total $(( $(date +%s) - t0 )) s"
