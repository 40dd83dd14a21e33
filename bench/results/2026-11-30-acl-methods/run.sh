#!/usr/bin/env bash
# rte_acl's AVX-512 and AVX2 classify methods beside Tandem's batched HyperSplit (AVX2), on the
# three ClassBench sets of issue 21 item 4, two rounds, one core.
set -u
cd "$(dirname "$0")/../../.."
. scripts/device/common.sh
export TARGETS="tandem"
t0=$(date +%s)
device_setup || exit 1
echo "built in $(( $(date +%s) - t0 )) s"
for round in 1 2; do
  for set in acl1_10k fw1_10k ipc1_10k; do
    $T bench classify --rules $SHARED/classbench/filters/$set.gz --core 2 --reps 3 --n 4000000 \
      --json $OUT/classify_${set}_$round.json > /tmp/o.log 2>&1
    echo "== $set round $round exit $?"; grep -E "^(cpu_hypersplit_batched|dpdk_rte_acl|gpu_hyper)|results:" /tmp/o.log | cut -c1-110
    cat /tmp/o.log >> $OUT/classify.log
  done
done
echo "total $(( $(date +%s) - t0 )) s"
