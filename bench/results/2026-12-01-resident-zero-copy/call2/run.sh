#!/usr/bin/env bash
# Zero copy on the resident path, second call: the live and DPDK port tests after the copy path's
# fix, the memif line test (the router on the CPU, then on the GPU's resident path with the frames
# in their mbufs and copied, each checked to have run so), and bench io at 64 B, one queue, four
# ways: zero copy on and off, with the default 16 slots a receive thread and with 64.
set -u
cd "$(dirname "$0")/../../../.."
t0=$(date +%s)
export TARGETS="tandem dpdk_port_test resident_live_test"
. scripts/device/common.sh
device_setup || exit 1
echo "built in $(( $(date +%s) - t0 )) s"
CTEST_LIMIT=120 ctest_log ctest_live.log 12 "tests passed|Failed|\*\*\*" -R "ResidentLive|DpdkPorts" -j 4 --output-on-failure
export PYTHONPATH=${PYTHONPATH:-}
timeout 240 python3 tests/e2e/test_dpdk_memif.py --tandem "$T" --source-dir . > "$OUT/e2e_memif.log" 2>&1; echo "== e2e memif exit $?"; tail -4 "$OUT/e2e_memif.log"
echo "tests done at $(( $(date +%s) - t0 )) s"
n=0
for p in "--device gpu --gpu-path resident" "--device gpu --gpu-path resident --zero-copy off" \
         "--device gpu --gpu-path resident --ring-slots 64" "--device gpu --gpu-path resident --zero-copy off --ring-slots 64"; do
  n=$((n + 1))
  echo "== probe $n: $p"
  timeout 150 "$T" bench io --fib "$FIB" --backends memif --sizes 64 --queues 1 --cores 1-15 --seconds 3 --repeat 4 \
    --tandem-args "$p" --json "$OUT/bench_io_probe$n.json" 2>&1 | grep -E "^memif|p50" | tee -a "$OUT/io.log"
done
echo "total $(( $(date +%s) - t0 )) s"
