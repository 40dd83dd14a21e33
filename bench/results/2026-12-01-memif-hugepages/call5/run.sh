#!/usr/bin/env bash
# memif at 64 B, one queue, fifth call: as the fourth, the stage report now with the frames a burst and the
# empty receives (where the per-burst costs fall; whether the worker waits for frames); four
# pairs with testpmd io on 2 MiB hugepages. The hugepage reserve is set for the call and put back.
set -u
cd "$(dirname "$0")/../../../.."
t0=$(date +%s)
export TARGETS="tandem"
. scripts/device/common.sh
device_setup || exit 1
echo "built in $(( $(date +%s) - t0 )) s"
orig=$(cat /proc/sys/vm/nr_hugepages)
echo 2048 > /proc/sys/vm/nr_hugepages 2>/dev/null || echo "cannot set nr_hugepages"
grep -E "HugePages_(Total|Free)|Hugepagesize" /proc/meminfo | tee "$OUT/hugepages.txt"
timeout 200 "$T" bench io --fib "$FIB" --backends memif --sizes 64 --queues 1 --cores 1-15 --seconds 3 --repeat 4 \
  --hugepages --tandem-args "--device cpu --stage-times" --json "$OUT/io_huge_stages.json" > /tmp/io.log 2>&1
echo "exit $?" >> /tmp/io.log
grep -E "^memif|p50|stages|EAL memory|copied|exit|error" /tmp/io.log | tee "$OUT/io.log"
echo "$orig" > /proc/sys/vm/nr_hugepages 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
