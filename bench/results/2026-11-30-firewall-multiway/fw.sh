#!/usr/bin/env bash
# Firewall: build, the firewall tests with the GPU, bench classify on the three 10k sets (ROUNDS rounds).
cd "$(dirname "$0")/.." || exit 1
. scripts/device/common.sh
OUT=${OUT:?}
TARGETS="tandem acl_test fw_router_test fw_rule_control_test fw_evasion_test rules_fuzz_test" device_setup || exit 1
for t in acl_test fw_router_test fw_rule_control_test fw_evasion_test rules_fuzz_test; do
  timeout 300 build-device/tests/$t > $OUT/t_$t.log 2>&1; echo "$t rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/t_$t.log | tr '\n' ' ')"
done
cat $OUT/t_*.log > $OUT/tests.log; rm -f $OUT/t_*.log
for round in $(seq 1 ${ROUNDS:-2}); do
  for set in acl1_10k fw1_10k ipc1_10k; do
    timeout 200 $T bench classify --rules "$CB/$set.gz" --core 2 --reps 5 --n 4000000 --json "$OUT/bench_classify_${set}_r$round.json" > $OUT/tmp.log 2>&1
    echo "rc $? $set round $round"; grep -E "^rules|^cpu_hyper|^dpdk|^gpu|results" $OUT/tmp.log | cut -c1-75
    cat $OUT/tmp.log >> $OUT/bench_classify.log
  done
done
rm -f $OUT/tmp.log
