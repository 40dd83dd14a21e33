# shellcheck shell=bash
# description: several GPUs in one host (issue 20; PARTS to pick "probe ipv4 md5 blocks schedule faults"; RX, SIZES, HASH_SIZES, GPUS, BLOCKS, SCHED_WORKERS, CPU_THREADS; SKIP_TESTS=1): the multi-GPU tests, a probe of fault isolation between GPUs, bench gpu-path for IPv4 on the full table and MD5 hashing with 1 and 2 GPUs in the same run (the scaling ratio, and ceilings on both GPUs at once), the same with few blocks per GPU (the GPUs the limit), bench schedule over a CPU group and both GPUs, and a fault on one of two GPUs, verified, on the resident path and under the scheduler
LOG="$OUT/multigpu.log"
parts=" ${PARTS:-probe ipv4 md5 blocks schedule faults} "
want() { [[ $parts == *" $1 "* ]]; }
nvidia-smi -L >> "$LOG" 2>&1
nvidia-smi topo -m >> "$LOG" 2>&1
[ -n "${SKIP_TESTS:-}" ] || (cd build-device && timeout 240 ctest -R "${TEST_FILTER:-TwoGpuDevices|AFaultOnOneGpu|Numa|ResidentMultiGpu}" -j8 --timeout 200 --output-on-failure) >> "$LOG" 2>&1
note "ctest exit: $?"
# Does a fault on GPU 0 end GPU 1's work in the same process? (bench/probes/gpu_fault_isolation.cu)
if want probe && nvcc -arch=sm_90 -O2 -o build-device/gpu_fault_isolation bench/probes/gpu_fault_isolation.cu >> "$LOG" 2>&1; then
  for v in device host portable; do
    timeout 30 build-device/gpu_fault_isolation "$v" >> "$LOG" 2>&1
    note "fault isolation probe ($v): exit $?"
  done
fi
list=$(app_specs gpu) || exit 1
ipv4=$(grep '^ipv4:' <<< "$list" | head -1); ipv4=${ipv4#*:}
read -ra ipv4_args <<< "$ipv4"
cores="0-$(($(nproc) - 1))"
gpus=${GPUS:-1,2}
md5=(--app hashing --digest md5 --gen count=1000000,flows=100000,seed=3)
want ipv4 && logged "bench gpu-path: $ipv4, 1 and 2 GPUs" 200 "$T" bench gpu-path --app "${ipv4_args[@]}" --cores "$cores" \
  --cpu-workers "" --offload-workers "" --resident persistent-cells --gpus "$gpus" --rx-threads "${RX:-4,8,16,24}" \
  --sizes "${SIZES:-64,1518}" --json "$OUT/bench_gpu_path_ipv4.json"
want md5 && logged "bench gpu-path: hashing md5, 1 and 2 GPUs" 200 "$T" bench gpu-path "${md5[@]}" --cores "$cores" \
  --cpu-workers "" --offload-workers "" --resident persistent-cells \
  --gpus "$gpus" --rx-threads "${RX:-8,16}" --sizes "${HASH_SIZES:-256,1024}" --no-ceilings \
  --json "$OUT/bench_gpu_path_md5.json"
# The GPUs as the limit: few worker blocks on each, so that the receive side has room to spare.
want blocks && logged "bench gpu-path: hashing md5, ${BLOCKS:-4} worker blocks per GPU, 1 and 2 GPUs" 200 "$T" bench gpu-path \
  "${md5[@]}" --cores "$cores" --cpu-workers "" --offload-workers "" --resident persistent-cells --gpus "$gpus" \
  --rx-threads 8 --blocks "${BLOCKS:-4}" --sizes "${HASH_SIZES:-256,1024}" --no-ceilings \
  --json "$OUT/bench_gpu_path_md5_blocks.json"
cpu="cpu:${CPU_THREADS:-12}"
want schedule && logged "bench schedule: hashing md5 over $cpu, gpu0, gpu1" 200 "$T" bench schedule "${md5[@]}" \
  --cores "$cores" --device "$cpu,gpu0,gpu1" --workers "${SCHED_WORKERS:-8}" \
  --sizes "${HASH_SIZES:-256,1024}" --policies "static:1,0,0;static:0,1,0;static:0,1,1;static:1,6,6;throughput;nba" \
  --json "$OUT/bench_schedule_md5_2gpu.json"
want faults && logged "run: resident path on GPUs 0,1, a fault on GPU 0 at batch 200, verified" 60 "$T" run \
  --app "${ipv4_args[@]}" --gen count=2000000,dst=fib,flows=100000,size=64,seed=3 --device gpu --gpus 0,1 --workers 8 \
  --cores "$cores" --repeat 3 --verify --inject-gpu-fault 200
want faults && logged "run: scheduler over $cpu and GPUs 0,1, a fault on GPU 0 at batch 200, verified" 60 "$T" run \
  --app "${ipv4_args[@]}" --gen count=2000000,dst=fib,flows=100000,size=64,seed=3,seq=1 --schedule throughput \
  --device "$cpu,gpu" --gpus 0,1 --workers 8 --cores "$cores" --repeat 3 --verify --inject-gpu-fault 200 \
  --json "$OUT/run_schedule_fault_2gpu.json"
grep -E "^==|^exit|PASSED|FAILED|Failure|tests passed|^bench|^size|^[0-9]+ +|^  [0-9]|^scaling|^medians|^packets|^verify|^throughput|^device|^gpu|^dropped|^reordered|^lost|^switches|^energy|^resident|GPU [0-9]|isolation|mapped|DMA" "$LOG" | tail -150
exit 0
