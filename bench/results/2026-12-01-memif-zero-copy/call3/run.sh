#!/usr/bin/env bash
# memif at 64 B, one queue, hugepages, zero-copy mode, the final code (the burst's frames prefetched
# on receipt): eight pairs of Tandem's router and testpmd io in turn, for a median over more pairs
# than call 2's four. The hugepage reserve is set for the call and put back.
set -u
cd "$(dirname "$0")/../../../.."
t0=$(date +%s)
export TARGETS="tandem"
. scripts/device/common.sh
device_setup || exit 1
echo "built in $(( $(date +%s) - t0 )) s"
orig=$(cat /proc/sys/vm/nr_hugepages)
echo 2048 > /proc/sys/vm/nr_hugepages 2>/dev/null || echo "cannot set nr_hugepages"
timeout 400 "$T" bench io --fib "$FIB" --backends memif --sizes 64 --queues 1 --cores 1-15 --seconds 3 --hugepages \
  --memif-zero-copy --repeat 8 --tandem-args "--device cpu" --json "$OUT/zero_copy_8.json" > /tmp/io.log 2>&1
echo "exit $?" >> /tmp/io.log
grep -E "^memif|p50|EAL memory|copied|exit|rror" /tmp/io.log | tee "$OUT/io.log"
echo "$orig" > /proc/sys/vm/nr_hugepages 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
