#!/usr/bin/env bash
# EspResidentControl's GPU fault test under ctest -j 4 beside the other resident tests, with the
# resident path as it was before the live-port work (ec2af6c's sched/resident.*, workers.cc and
# resident tests, carried in .gl/old as `git show ec2af6c:PATH` of each): does its parallel
# failure predate the change?
set -u
cd "$(dirname "$0")/../../../.."
t0=$(date +%s)
cp .gl/old/sched/resident.cc .gl/old/sched/resident.h .gl/old/sched/workers.cc sched/
cp .gl/old/resident_test.cc .gl/old/app_cases.h tests/
rm -f tests/resident_live_test.cc
export TARGETS="esp_resident_test esp_resident_control_test resident_test"
. scripts/device/common.sh
device_setup || exit 1
echo "built in $(( $(date +%s) - t0 )) s"
CTEST_LIMIT=150 ctest_log ctest_resident_old.log 20 "tests passed|Failed|\*\*\*|Skipped" -R "Resident" -j 4 --output-on-failure
grep -E "Expected|actual|frames checked" "$OUT/ctest_resident_old.log" | head -8
echo "total $(( $(date +%s) - t0 )) s"
