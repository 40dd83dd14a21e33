#!/usr/bin/env bash
# Zero copy on the resident path, third call: `tandem run`'s new default on DPDK ports (zero copy,
# 64 slots a receive thread) against the same with 16 slots, bench io at 64 B, one queue, 5 pairs
# each with testpmd io; the CPU path's row comes first, as the suite runs it.
set -u
cd "$(dirname "$0")/../../../.."
t0=$(date +%s)
export TARGETS="tandem"
. scripts/device/common.sh
device_setup || exit 1
echo "built in $(( $(date +%s) - t0 )) s"
n=0
for p in "--device cpu" "--device gpu --gpu-path resident" "--device gpu --gpu-path resident --ring-slots 16"; do
  n=$((n + 1))
  echo "== probe $n: $p"
  timeout 150 "$T" bench io --fib "$FIB" --backends memif --sizes 64 --queues 1 --cores 1-15 --seconds 3 --repeat 5 \
    --tandem-args "$p" --json "$OUT/bench_io_probe$n.json" 2>&1 | grep -E "^memif|p50" | tee -a "$OUT/io.log"
done
echo "total $(( $(date +%s) - t0 )) s"
