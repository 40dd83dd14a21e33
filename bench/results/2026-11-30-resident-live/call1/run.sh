#!/usr/bin/env bash
# The resident path on live ports (issue 19): its tests on the GPU, the memif line test with the
# router on the resident path, and bench io at 64 B, one queue: Tandem's CPU path and its GPU
# resident path against testpmd io, taking turns.
set -u
cd "$(dirname "$0")/../../../.."
t0=$(date +%s)
export TARGETS="tandem dpdk_port_test resident_live_test resident_test"
. scripts/device/common.sh
device_setup || exit 1
echo "built in $(( $(date +%s) - t0 )) s"
for t in resident_live_test resident_test; do
  timeout 240 build-device/tests/$t > "$OUT/$t.log" 2>&1; echo "== $t exit $?"; grep -E "PASSED|FAILED|SKIPPED \]" "$OUT/$t.log" | head -12
done
echo "tests done at $(( $(date +%s) - t0 )) s"
export IO_BACKENDS=memif IO_SIZES=64 IO_QUEUES=1 IO_SECONDS=3 IO_REPEAT=5 IO_PROBES="--device gpu --gpu-path resident"
run_suite io
echo "total $(( $(date +%s) - t0 )) s"
