#!/usr/bin/env bash
# Session 11, call 5: is one worker's rate a property of its vCPU or of the moment? Echo batched on
# one worker pinned to each of the 16 vCPUs in turn, the round done twice (0..15, then 15..0):
# tandem run --app echo --gen (4 M frames, 64 B) --workers 1 --cores K --repeat 5.
set -u
cd "$(dirname "$0")/../../.."
. scripts/device/common.sh
export TARGETS="tandem"
t0=$(date +%s)
device_setup || exit 1
echo "built in $(( $(date +%s) - t0 )) s"
G=count=4000000,dst=uniform,flows=1000000,size=64,proto=udp,seed=7
for round in up down; do
  cpus=$(seq 0 15); [ $round = down ] && cpus=$(seq 15 -1 0)
  for k in $cpus; do
    r=$(timeout 30 $T run --app echo --gen $G --workers 1 --cores $k --cpu-path batched --repeat 5 2>&1 | grep -E "^throughput" | awk '{print $2}')
    echo "$round cpu $k $r"
  done
done | tee $OUT/per_cpu.log
echo "total $(( $(date +%s) - t0 )) s"
