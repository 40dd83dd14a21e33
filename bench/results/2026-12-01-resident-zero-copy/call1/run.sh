#!/usr/bin/env bash
# The resident path on DPDK ports with the frames left in their mbufs (zero copy, issue 19): the
# resident and DPDK port tests on the GPU (ctest -j 4; not the ESP fault-during-updates test, whose
# timing needs a GPU of its own), the memif line test
# (its second line runs the router on the GPU's resident path, now in the mbufs), then bench io at
# 64 B, one queue: Tandem's CPU path, and the resident path with zero copy on and off, against
# testpmd io in the same runs.
set -u
cd "$(dirname "$0")/../../../.."
t0=$(date +%s)
export TARGETS="tandem dpdk_port_test resident_live_test resident_test esp_resident_test esp_resident_control_test"
. scripts/device/common.sh
device_setup || exit 1
echo "built in $(( $(date +%s) - t0 )) s"
CTEST_LIMIT=240 ctest_log ctest_resident.log 20 "tests passed|Failed|\*\*\*|Skipped" -R "Resident|DpdkPorts" -E "AGpuFaultDuringSaUpdatesHandsTheRestToTheCpu" -j 4 --output-on-failure
echo "tests done at $(( $(date +%s) - t0 )) s"
export IO_BACKENDS=memif IO_SIZES=64 IO_QUEUES=1 IO_SECONDS=3 IO_REPEAT=5
export IO_PROBES="--device gpu --gpu-path resident|--device gpu --gpu-path resident --zero-copy off"
run_suite io
echo "total $(( $(date +%s) - t0 )) s"
