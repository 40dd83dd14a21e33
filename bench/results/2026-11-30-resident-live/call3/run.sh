#!/usr/bin/env bash
# EspResidentControl's GPU fault test alone, three times, with its output (it failed once under
# ctest -j 4 beside other GPU tests).
set -u
cd "$(dirname "$0")/../../../.."
t0=$(date +%s)
export TARGETS="esp_resident_control_test"
. scripts/device/common.sh
device_setup || exit 1
echo "built in $(( $(date +%s) - t0 )) s"
for i in 1 2 3; do
  timeout 60 build-device/tests/esp_resident_control_test --gtest_filter='*AGpuFault*' > "$OUT/esp_fault_$i.log" 2>&1
  echo "== run $i exit $?"; grep -E "Failure|Expected|Which is|actual|frames checked|PASSED|FAILED" "$OUT/esp_fault_$i.log" | head -12
done
echo "total $(( $(date +%s) - t0 )) s"
