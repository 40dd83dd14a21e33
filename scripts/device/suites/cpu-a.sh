# shellcheck shell=bash
# description: the CPU latency-hiding benches: bench gopt, bench anchors (Tandem vs DPDK); fits one 10-minute call with the build
LOG="$OUT/cpu-a.log"
logged "bench gopt (core 2)" 240 "$T" bench gopt --core 2 --reps 5 --json "$OUT/bench_gopt.json"
logged "bench anchors (core 2)" 330 "$T" bench anchors --fib "$FIB" --core 2 --reps 5 --json "$OUT/bench_anchors.json"
grep -vE "^(group|amac)_b(8|16)" "$LOG" | tail -150
exit 0
