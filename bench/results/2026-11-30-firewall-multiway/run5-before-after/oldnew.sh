#!/usr/bin/env bash
# Before/after on one machine: the firewall as of 1d9bb39 (binary HyperSplit) against this tree,
# bench classify in turns.
cd "$(dirname "$0")/.." || exit 1
. scripts/device/common.sh
OUT=${OUT:?}
TARGETS="tandem" device_setup || exit 1
cp build-device/tandem /tmp/t-new
mkdir -p /tmp/keep && cp --parents apps/acl/acl_core.h apps/acl/hypersplit.h apps/acl/hypersplit.cc apps/acl/CMakeLists.txt bench/bench_classify.cc /tmp/keep/
(cd .gl/files/old && cp --parents apps/acl/acl_core.h apps/acl/hypersplit.h apps/acl/hypersplit.cc apps/acl/CMakeLists.txt bench/bench_classify.cc ../../../)
ninja -C build-device tandem > /tmp/b_old.log 2>&1 || { grep -E "error" /tmp/b_old.log | head; exit 1; }
cp build-device/tandem /tmp/t-old
(cd /tmp/keep && cp --parents apps/acl/acl_core.h apps/acl/hypersplit.h apps/acl/hypersplit.cc apps/acl/CMakeLists.txt bench/bench_classify.cc "$OLDPWD")
for round in 1 2; do
  for v in old new; do
    for set in acl1_10k fw1_10k ipc1_10k; do
      timeout 100 /tmp/t-$v bench classify --rules "$CB/$set.gz" --core 2 --reps 3 --n 4000000 > $OUT/tmp.log 2>&1
      echo "rc $? $v $set round $round: $(grep -E "^(cpu_hypersplit |cpu_hypersplit_batched|dpdk_rte_acl_b32|gpu_)" $OUT/tmp.log | awk '{print $1"="$2}' | tr '\n' ' ')"
      cat $OUT/tmp.log >> $OUT/oldnew_$v.log
    done
  done
done
rm -f $OUT/tmp.log
