#!/usr/bin/env bash
# Firewall: bench classify on the three 10k sets with rte_acl beside it, ROUNDS rounds.
cd "$(dirname "$0")/.." || exit 1
. scripts/device/common.sh
OUT=${OUT:?}
TARGETS="tandem" device_setup || exit 1
grep -c TANDEM_HAVE_DPDK:BOOL=ON build-device/CMakeCache.txt; grep "TANDEM_HAVE_DPDK" build-device/CMakeCache.txt | head -3
for round in $(seq 1 ${ROUNDS:-2}); do
  for set in acl1_10k fw1_10k ipc1_10k; do
    timeout 200 $T bench classify --rules "$CB/$set.gz" --core 2 --reps 5 --n 4000000 --json "$OUT/bench_classify_${set}_r$round.json" > $OUT/tmp.log 2>&1
    echo "rc $? $set round $round"; grep -E "^cpu_hyper|^dpdk|^gpu|results" $OUT/tmp.log | cut -c1-70
    cat $OUT/tmp.log >> $OUT/bench_classify.log
  done
done
rm -f $OUT/tmp.log
