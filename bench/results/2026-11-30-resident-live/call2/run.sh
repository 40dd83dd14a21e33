#!/usr/bin/env bash
# The resident path on live ports (issue 19), second call: the resident tests one per process
# (a GPU fault test breaks its process's CUDA context), and bench io at 64 B, one queue, with the
# batch hold on the arrival clock: Tandem's CPU path and its GPU resident path against testpmd.
set -u
cd "$(dirname "$0")/../../../.."
t0=$(date +%s)
export TARGETS="tandem dpdk_port_test resident_live_test resident_test esp_resident_test esp_resident_control_test"
. scripts/device/common.sh
device_setup || exit 1
echo "built in $(( $(date +%s) - t0 )) s"
CTEST_LIMIT=200 ctest_log ctest_resident.log 20 "tests passed|Failed|\*\*\*|Skipped" -R "Resident" -j 4
echo "tests done at $(( $(date +%s) - t0 )) s"
export IO_BACKENDS=memif IO_SIZES=64 IO_QUEUES=1 IO_SECONDS=3 IO_REPEAT=5
export IO_PROBES="--device gpu --gpu-path resident|--device gpu --gpu-path resident --rx-hold-us 100"
run_suite io
echo "total $(( $(date +%s) - t0 )) s"
