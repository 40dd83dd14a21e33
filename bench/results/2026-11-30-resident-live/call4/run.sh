#!/usr/bin/env bash
# The resident path on live ports at the final code: the resident tests (ctest -j 4, as in call 2)
# and the memif line test with the router on the GPU's resident path.
set -u
cd "$(dirname "$0")/../../../.."
t0=$(date +%s)
export TARGETS="tandem resident_live_test resident_test esp_resident_test esp_resident_control_test"
. scripts/device/common.sh
device_setup || exit 1
echo "built in $(( $(date +%s) - t0 )) s"
CTEST_LIMIT=200 ctest_log ctest_resident.log 20 "tests passed|Failed|\*\*\*|Skipped" -R "Resident" -j 4 --output-on-failure
echo "tests done at $(( $(date +%s) - t0 )) s"
export PYTHONPATH=${PYTHONPATH:-}
timeout 200 python3 tests/e2e/test_dpdk_memif.py --tandem "$T" --source-dir . > "$OUT/e2e_memif.log" 2>&1; echo "== e2e memif exit $?"; tail -3 "$OUT/e2e_memif.log"
echo "total $(( $(date +%s) - t0 )) s"
