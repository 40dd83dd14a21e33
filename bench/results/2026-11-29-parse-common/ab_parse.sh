#!/usr/bin/env bash
# A/B of the host's common-frame parse path: this build, and the same with core/parse.cc as before.
set -u
cd "$(dirname "$0")/.."
. scripts/device/common.sh
export TARGETS="tandem"
t0=$(date +%s)
device_setup || exit 1
cp build-device/tandem /tmp/t-new
cp core/parse.cc /tmp/parse.cc.new
cp .gl/files/parse_old/core/parse.cc core/parse.cc
ninja -C build-device -j16 tandem > /tmp/b-old.log 2>&1 || { tail -20 /tmp/b-old.log; exit 1; }
cp build-device/tandem /tmp/t-old
cp /tmp/parse.cc.new core/parse.cc
echo "built in $(( $(date +%s) - t0 )) s"
L=$OUT/ab_parse.log
for rep in 1 2; do
  for v in old new; do
    [ $rep = 2 ] && v=$([ $v = old ] && echo new || echo old)
    echo "== rep $rep $v echo" >> $L
    /tmp/t-$v bench cores --app echo --workers 1,15 --paths scalar,batched --reps 3 --no-stages --no-core-probe --json $OUT/echo_${v}_$rep.json 2>&1 | grep -E "worker\(s\):|own rates" >> $L
    echo "== rep $rep $v ipv4" >> $L
    /tmp/t-$v bench cores --app ipv4 --fib $FIB --gen count=4000000,dst=fib,flows=1000000,size=64,seed=7 --workers 1 --paths scalar,batched --reps 3 --no-stages --no-core-probe 2>&1 | grep -E "worker\(s\):" >> $L
  done
done
cat $L
echo "total $(( $(date +%s) - t0 )) s"
