#!/usr/bin/env bash
# GPU A/B: the device walk with and without the tree skip, bench classify in turns.
cd "$(dirname "$0")/.." || exit 1
. scripts/device/common.sh
OUT=${OUT:?}
TARGETS="tandem" device_setup || exit 1
for v in skip noskip; do
  cp .gl/files/$v/apps/acl/acl_core.h apps/acl/acl_core.h
  ninja -C build-device tandem > /tmp/b_$v.log 2>&1 || { tail -20 /tmp/b_$v.log; exit 1; }
  cp build-device/tandem /tmp/t-$v
done
cp .gl/files/skip/apps/acl/acl_core.h apps/acl/acl_core.h
for round in 1 2; do
  for v in skip noskip; do
    for set in acl1_10k fw1_10k ipc1_10k; do
      timeout 200 /tmp/t-$v bench classify --rules "$CB/$set.gz" --core 2 --reps 3 --n 4000000 --json "$OUT/gpuab_${v}_${set}_r$round.json" > $OUT/tmp.log 2>&1
      echo "rc $? $v $set round $round: $(grep -E "^(cpu_hypersplit |cpu_hypersplit_batched|dpdk_rte_acl_b32|gpu_)" $OUT/tmp.log | awk '{print $1"="$2}' | tr '\n' ' ')"
      cat $OUT/tmp.log >> $OUT/gpuab_$v.log
    done
  done
done
rm -f $OUT/tmp.log $OUT/*.json
