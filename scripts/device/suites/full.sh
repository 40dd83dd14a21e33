# shellcheck shell=bash
# description: every test, bench ipv4 (uniform and in-table addresses), bench gpu-offload, `tandem run` IPv4 per path, mode and capture
echo "== tests =="
ctest_log ctest.log 25 "tests passed|Skipped|Failed|\*\*\*" --output-on-failure -j4 --timeout 300
reps=9; [ -n "${QUICK:-}" ] && reps=3
echo "== bench ipv4 (uniform addresses, core 2) =="
"$T" bench ipv4 --fib "$FIB" --n 10000000 --reps $reps --core 2 --json "$OUT/bench_ipv4_uniform.json" 2>&1 | tail -16
if [ -z "${QUICK:-}" ]; then
  echo "== bench ipv4 (addresses inside the table's prefixes) =="
  "$T" bench ipv4 --fib "$FIB" --n 10000000 --reps $reps --core 2 --addresses fib --json "$OUT/bench_ipv4_fib.json" 2>&1 | tail -14
fi
echo "== bench gpu-offload: round trip per mode (echo, and IPv4 lookups) =="
timeout 300 "$T" bench gpu-offload --fib "$FIB" --json "$OUT/bench_gpu_offload.json" 2>&1 | tail -32
echo "== run: forwarding, 64 B packets in memory, CPU scalar / CPU batched / GPU =="
GEN=count=4000000,dst=uniform,size=64
for dev in "cpu --cpu-path scalar" "cpu --cpu-path batched" "gpu"; do
  name=$(echo "$dev" | tr -d ' -' | sed 's/cpupath//')
  read -ra dev_args <<< "$dev"
  taskset -c 2 "$T" run --app ipv4 --fib "$FIB" --gen $GEN --device "${dev_args[@]}" --verify --json "$OUT/run_$name.json" 2>&1 |
    grep -E "device:|packets:|throughput:|verify:"
done
echo "== run: 4M packets on the GPU, each offload mode =="
for m in async graph mapped persistent; do
  taskset -c 2 "$T" run --app ipv4 --fib "$FIB" --gen $GEN --device gpu --gpu-mode $m --verify 2>&1 |
    grep -E "device:|throughput:|latency|verify:"
done
echo "== run: real captures on the GPU =="
for cap in example many-protocols tls2; do
  "$T" run --app ipv4 --fib "$FIB" --pcap data/pcap/$cap.pcap --device gpu --verify --out "/tmp/$cap-gpu.pcap" 2>&1 |
    grep -E "packets:|verify:|output:"
done
exit 0
