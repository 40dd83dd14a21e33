# shellcheck shell=bash
# description: the GPU engine tests, throughput vs cores (bench cores, IPv4) and bench ipv4; run cpu-a first (it builds)
echo "== GPU tests: offload runners, engine, whole-frame forwarding =="
gpu_engine_tests 8
LOG="$OUT/cpu-b.log"  # after the tests: their exit status is printed, not logged
logged "bench cores: throughput vs worker cores" 360 "$T" bench cores --fib "$FIB" --workers 1-16 --reps 3 \
  --json "$OUT/bench_cores.json"
logged "bench ipv4 (uniform addresses, core 2)" 200 "$T" bench ipv4 --fib "$FIB" --n 10000000 --reps 5 --core 2 \
  --json "$OUT/bench_ipv4.json"
grep -vE "^(group|amac)_b(8|16)" "$LOG" | tail -150
exit 0
