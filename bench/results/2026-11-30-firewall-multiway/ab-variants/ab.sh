#!/usr/bin/env bash
# A/B of batched firewall lookups: each .gl/ab/ab_V.cc against the production code, on the 3 sets.
cd "$(dirname "$0")/.." || exit 1
. scripts/device/common.sh
TARGETS="tandem_acl tandem_ipv4 tandem_io tandem_gpu tandem_core" device_setup || exit 1
B=build-device
L="$B/apps/acl/CMakeFiles/tandem_acl.dir/acl_rules.cc.o $B/apps/acl/CMakeFiles/tandem_acl.dir/hypersplit.cc.o $B/apps/acl/CMakeFiles/tandem_acl.dir/hypersplit_batch.cc.o $B/apps/ipv4/CMakeFiles/tandem_ipv4.dir/*.cc.o $B/libtandem_io.a $B/libtandem_gpu.a $B/libtandem_core.a -L$ROOT/usr/lib/x86_64-linux-gnu -L$ROOT/lib/x86_64-linux-gnu -lz -lpcap -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -lpthread"
for f in ${VARIANTS:-.gl/ab/ab_*.cc}; do
  v=$(basename $f .cc)
  g++ -O3 -march=native -std=c++20 -I. $f $L -o /tmp/$v 2>&1 | grep -E "error" | head -3 &
done
wait
for f in ${VARIANTS:-.gl/ab/ab_*.cc}; do
  v=$(basename $f .cc); leaf=${v#*_leaf}; [ "$leaf" = "$v" ] && leaf=8
  for set in acl1_10k fw1_10k ipc1_10k; do
    taskset -c 2 /tmp/$v $CB/$set.gz $leaf | sed "s|^|$v |; s|$CB/||"
  done
done
