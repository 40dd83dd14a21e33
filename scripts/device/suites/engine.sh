# shellcheck shell=bash
# description: engine-tests, the offload engine's four benchmarks, and `tandem run` through it (faults, modes, workers, idle flush)
run_suite engine-tests
echo "== bench gpu-offload: round trip per mode =="
timeout 300 "$T" bench gpu-offload --fib "$FIB" --json "$OUT/bench_gpu_offload.json" 2>&1 | tail -32
echo "== bench gpu-stream: IPv4 throughput vs the PCIe bound =="
timeout 300 "$T" bench gpu-stream --fib "$FIB" --json "$OUT/bench_gpu_stream.json" 2>&1 | tail -24
echo "== bench gpu-router: the GPU-router report's iterations =="
timeout 300 "$T" bench gpu-router --fib "$FIB" --json "$OUT/bench_gpu_router.json" 2>&1 | tail -14
echo "== bench gpu-load: latency vs offered load =="
timeout 300 "$T" bench gpu-load --fib "$FIB" --workers 2 --cores 2-4 --point-ms 300 --engine staged \
  --json "$OUT/bench_gpu_load.json" 2>&1 | tail -80
echo "== bench gpu-load, the gathering engine =="
timeout 300 "$T" bench gpu-load --fib "$FIB" --workers 2 --cores 2-4 --point-ms 300 --engine gather \
  --json "$OUT/bench_gpu_load_gather.json" 2>&1 | grep -E "peak|0.50|target"
echo "== run: fault injected at batch 5 (trap kernel), every mode =="
for m in async graph mapped persistent; do
  timeout 120 "$T" run --fib "$FIB" --gen count=2000000,dst=fib,size=64 --device gpu --gpu-mode $m --workers 2 \
    --cores 2-4 --inject-gpu-fault 5 --verify 2>&1 | grep -E "injecting|GPU failed|packets:|gpu engine|verify:"
  echo "exit ${PIPESTATUS[0]}"
done
timeout 120 "$T" run --fib "$FIB" --gen count=2000000,dst=fib,size=64 --device gpu --engine gather --workers 2 \
  --cores 2-4 --inject-gpu-fault 5 --verify 2>&1 | grep -E "device:|GPU failed|packets:|gpu engine|verify:"
echo "== run: 8M 64 B packets through the engine, each mode, 1/2/4/8 workers =="
for m in async graph mapped persistent; do
  for w in 1 2 4 8; do
    timeout 120 "$T" run --fib "$FIB" --gen count=4000000,dst=fib,flows=100000,zipf=1.1,size=64 --repeat 2 --device gpu \
      --gpu-mode $m --workers $w --cores 2-$((2 + w)) --verify 2>&1 | grep -E "device:|throughput:|latency|gpu engine|verify:"
  done
done
echo "== run: 10 Mpps offered, 2 workers, fixed MAX_WAIT vs flush when idle =="
for m in async persistent; do
  for idle in "" --flush-when-idle; do
    timeout 120 "$T" run --fib "$FIB" --gen count=4000000,dst=fib,flows=100000,zipf=1.1,size=64 --device gpu \
      --gpu-mode $m --workers 2 --cores 2-4 --burst 32 --rate-mpps 10 --max-wait-us 20 ${idle:+"$idle"} 2>&1 |
      grep -E "device:|throughput:|latency|gpu engine"
  done
done
for w in 1 4; do
  timeout 120 "$T" run --fib "$FIB" --gen count=4000000,dst=fib,flows=100000,zipf=1.1,size=64 --repeat 2 --device cpu \
    --workers $w --cores 2-$((1 + w)) 2>&1 | grep -E "device:|throughput:|latency"
done
exit 0
