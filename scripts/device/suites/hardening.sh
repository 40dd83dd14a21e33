# shellcheck shell=bash
# description: every test (GPU included), then `tandem run` on 1 and 15 cores against the .baseline/ tree, interleaved; AB_ONLY, REPS
if [ -z "${AB_ONLY:-}" ]; then
  CTEST_LIMIT=360 ctest_log ctest_all.log 12 "tests passed|\(Failed\)|Timeout|Skipped\)" --output-on-failure -j12 --timeout 300
fi
[ -d .baseline ] || exit 0
ab_build_baseline || exit 1
LOG="$OUT/ab.log"
# One measurement: 64 B packets from memory, CPU batched, one worker on core 2 or 15 workers on
# cores 1-15. The apps are fixed rather than the registry's: the baseline's binary may predate an
# app or the registry.
# shellcheck disable=SC2317  # called by ab_interleave
ab_run() {
  timeout 120 "$1" run "${@:2}" --gen count=4000000,dst=fib,flows=100000,zipf=1.1,size=64 --device cpu \
    2>&1 | grep -E "packets:|throughput:|dropped per"
}
# Passes enough for at least half a second per run either way.
one=(--workers 1 --cores 2 --repeat 5)
many=(--workers 15 --cores 1-15 --repeat 40)
ab_interleave "${REPS:-3}" ab_run "ipv4:--app ipv4 --fib $FIB ${one[*]}" "ipv6:--app ipv6 --fib $FIB ${one[*]}" \
  "l2:--app l2 --l2-random 1000000 ${one[*]}" "fw-router:--app fw-router --fib $FIB --rules $CB/acl1_10k.gz ${one[*]}" \
  "ipv4-15:--app ipv4 --fib $FIB ${many[*]}" "ipv6-15:--app ipv6 --fib $FIB ${many[*]}" \
  "l2-15:--app l2 --l2-random 1000000 ${many[*]}"
ab_summary "$LOG"
exit 0
