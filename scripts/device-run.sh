#!/usr/bin/env bash
# On a GPU machine with no network: build, run every test (GPU tests included), run the
# benchmarks and demos, and write logs and JSON results into OUTDIR (at most 8 files: the device
# tool returns no more).
#   usage: scripts/device-run.sh OUTDIR [full|quick|offload|engine|engine-tests]
#   engine: the offload engine's tests, its four benchmarks and `tandem run` through it;
#   engine-tests: only the tests (a fast check before spending device time on benchmarks);
#   cpu-a: the CPU latency-hiding benches (bench gopt, bench anchors: Tandem vs DPDK);
#   cpu-b: the GPU engine tests, throughput vs cores (bench cores) and bench ipv4. Each fits in
#          one 10-minute device call; run cpu-a first (it builds).
#   apps-tests: every app through the pipeline on the GPU (tests), and `tandem run` per app;
#   apps-cores: throughput vs cores for every app (bench cores: echo, ipv4, ipv6, l2 1M/16M, ndn);
#     SPECS="name:app flags|..." WORKERS=1,2,4 REPS=3 PACKETS=8000000 choose what runs;
#   dpi: the DPI tests (GPU included), tandem match per path on ET rules, and bench dpi alone (1 and
#     16 threads, GPU; one thread with groups of 8 and 16 besides the default 32);
#   apps-lookup: every app's lookups alone (bench lookup: scalar, batched, GPU), one core;
#   acl-dpi: the firewall, fw-router and DPI tests (GPU included), bench classify (ClassBench
#     acl1/fw1/ipc1 10k: linear, HyperSplit, rte_acl, GPU), bench fw-router (acl1_10k: CPU, GPU
#     fused vs split) and bench dpi (ET rules: baseline, batched, Hyperscan, GPU; 1 and 16 threads).
#   hardening: every test (GPU included), then `tandem run` on one core, this tree against a
#     baseline tree in .baseline/ (git archive of an earlier commit, carried), interleaved: IPv4,
#     IPv6 and fw-router, 64 B packets from memory, CPU batched. AB_ONLY=1 skips the tests, REPS=N
#     sets the repetitions (default 3; even ones run this tree first).
# Needs .deps/ from scripts/fetch-device-deps.sh (carried with the tree).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: scripts/device-run.sh OUTDIR [quick]}
MODE=${2:-full}
mkdir -p "$OUT"
ROOT=$PWD/.deps/root
export LD_LIBRARY_PATH="$ROOT/usr/lib/x86_64-linux-gnu:$ROOT/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
export PATH="$PATH:/usr/local/cuda/bin"
if [ -d .deps/whl ] && ! python3 -c "import scapy, pycparser" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .deps/whl/*.whl && export PYTHONPATH=/tmp/site
fi
FIB=data/fib/iprbench_tier1_fulltable_prefixes.txt.gz
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  lscpu | grep -E "Model name|^CPU\(s\)|L2|L3|NUMA node\(s\)"
  cat /sys/kernel/mm/transparent_hugepage/enabled
} 2>&1

set -e
cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DTANDEM_DEPS_ROOT="$ROOT" \
  -DTANDEM_NATIVE=ON -DTANDEM_SHARED_DATA_DIR="$PWD/.deps/shared" > /tmp/configure.log 2>&1 || { tail -30 /tmp/configure.log; exit 1; }
# TARGETS (optional): build only these (e.g. "tandem dpi_test"), to save device time.
ninja -C build-device -j16 ${TARGETS:-} > /tmp/build.log 2>&1 || { grep -E "error|FAILED" -A3 /tmp/build.log | head -40; exit 1; }
set +e
if [ "$MODE" = engine ] || [ "$MODE" = engine-tests ]; then
  T=./build-device/tandem
  echo "== GPU tests: offload runners, engine, whole-frame forwarding (each test in its own process) =="
  (cd build-device && ctest --output-on-failure -j4 --timeout 120 -R "GpuOffload|GpuMode|OffloadEngine|GpuFault|Frame|Ipv4Gpu|Workers|test_gpu_engine") \
    > "$OUT/ctest_gpu.log" 2>&1
  echo "ctest exit: $?"; grep -E "tests passed|Failed|\*\*\*|Timeout" "$OUT/ctest_gpu.log" | tail -20
  [ "$MODE" = engine-tests ] && exit 0
  echo "== bench gpu-offload: round trip per mode =="
  timeout 300 $T bench gpu-offload --fib $FIB --json "$OUT/bench_gpu_offload.json" 2>&1 | tail -32
  echo "== bench gpu-stream: IPv4 throughput vs the PCIe bound =="
  timeout 300 $T bench gpu-stream --fib $FIB --json "$OUT/bench_gpu_stream.json" 2>&1 | tail -24
  echo "== bench gpu-router: the GPU-router report's iterations =="
  timeout 300 $T bench gpu-router --fib $FIB --json "$OUT/bench_gpu_router.json" 2>&1 | tail -14
  echo "== bench gpu-load: latency vs offered load =="
  timeout 300 $T bench gpu-load --fib $FIB --workers 2 --cores 2-4 --point-ms 300 --engine staged \
    --json "$OUT/bench_gpu_load.json" 2>&1 | tail -80
  echo "== bench gpu-load, the gathering engine =="
  timeout 300 $T bench gpu-load --fib $FIB --workers 2 --cores 2-4 --point-ms 300 --engine gather \
    --json "$OUT/bench_gpu_load_gather.json" 2>&1 | grep -E "peak|0.50|target"
  echo "== run: fault injected at batch 5 (trap kernel), every mode =="
  for m in async graph mapped persistent; do
    timeout 120 $T run --fib $FIB --gen count=2000000,dst=fib,size=64 --device gpu --gpu-mode $m --workers 2 \
      --cores 2-4 --inject-gpu-fault 5 --verify 2>&1 | grep -E "injecting|GPU failed|packets:|gpu engine|verify:"
    echo "exit ${PIPESTATUS[0]}"
  done
  timeout 120 $T run --fib $FIB --gen count=2000000,dst=fib,size=64 --device gpu --engine gather --workers 2 \
    --cores 2-4 --inject-gpu-fault 5 --verify 2>&1 | grep -E "device:|GPU failed|packets:|gpu engine|verify:"
  echo "== run: 8M 64 B packets through the engine, each mode, 1/2/4/8 workers =="
  for m in async graph mapped persistent; do
    for w in 1 2 4 8; do
      timeout 120 $T run --fib $FIB --gen count=4000000,dst=fib,flows=100000,zipf=1.1,size=64 --repeat 2 --device gpu \
        --gpu-mode $m --workers $w --cores 2-$((2 + w)) --verify 2>&1 | grep -E "device:|throughput:|latency|gpu engine|verify:"
    done
  done
  echo "== run: 10 Mpps offered, 2 workers, fixed MAX_WAIT vs flush when idle =="
  for m in async persistent; do
    for idle in "" --flush-when-idle; do
      timeout 120 $T run --fib $FIB --gen count=4000000,dst=fib,flows=100000,zipf=1.1,size=64 --device gpu \
        --gpu-mode $m --workers 2 --cores 2-4 --burst 32 --rate-mpps 10 --max-wait-us 20 $idle 2>&1 |
        grep -E "device:|throughput:|latency|gpu engine"
    done
  done
  for w in 1 4; do
    timeout 120 $T run --fib $FIB --gen count=4000000,dst=fib,flows=100000,zipf=1.1,size=64 --repeat 2 --device cpu \
      --workers $w --cores 2-$((1 + w)) 2>&1 | grep -E "device:|throughput:|latency"
  done
  exit 0
fi
if [ "$MODE" = cpu-a ] || [ "$MODE" = cpu-b ]; then
  T=./build-device/tandem
  LOG="$OUT/$MODE.log"
  if [ "$MODE" = cpu-a ]; then
    echo "== bench gopt (core 2) ==" | tee -a "$LOG"
    timeout 240 $T bench gopt --core 2 --reps 5 --json "$OUT/bench_gopt.json" >> "$LOG" 2>&1; echo "exit $?" | tee -a "$LOG"
    echo "== bench anchors (core 2) ==" | tee -a "$LOG"
    timeout 330 $T bench anchors --fib $FIB --core 2 --reps 5 --json "$OUT/bench_anchors.json" >> "$LOG" 2>&1
    echo "exit $?" | tee -a "$LOG"
  else
    echo "== GPU tests: offload runners, engine, whole-frame forwarding =="
    (cd build-device && ctest --output-on-failure -j4 --timeout 120 -R "GpuOffload|GpuMode|OffloadEngine|GpuFault|Frame|Ipv4Gpu|Workers|test_gpu_engine") \
      > "$OUT/ctest_gpu.log" 2>&1
    echo "ctest exit: $?"; grep -E "tests passed|Failed|\*\*\*|Timeout" "$OUT/ctest_gpu.log" | tail -8
    echo "== bench cores: throughput vs worker cores ==" | tee -a "$LOG"
    timeout 360 $T bench cores --fib $FIB --workers 1-16 --reps 3 --json "$OUT/bench_cores.json" >> "$LOG" 2>&1
    echo "exit $?" | tee -a "$LOG"
    echo "== bench ipv4 (uniform addresses, core 2) ==" | tee -a "$LOG"
    timeout 200 $T bench ipv4 --fib $FIB --n 10000000 --reps 5 --core 2 --json "$OUT/bench_ipv4.json" >> "$LOG" 2>&1
    echo "exit $?" | tee -a "$LOG"
  fi
  grep -vE "^(group|amac)_b(8|16)" "$LOG" | tail -150
  exit 0
fi
URLS=.deps/shared/names/iscx_url2016_benign_list_big_final.csv.gz
if [ "$MODE" = apps-tests ]; then
  T=./build-device/tandem
  echo "== app tests on the GPU: pipeline per app, every mode; lookups; run per app =="
  (cd build-device && ctest --output-on-failure -j4 --timeout 300 -R "AppsPipeline|NdnApp|Ipv6Gpu|Workers|test_run_apps|test_lookup") \
    > "$OUT/ctest_apps.log" 2>&1
  echo "ctest exit: $?"; grep -E "tests passed|Failed|\*\*\*|Timeout|Skipped" "$OUT/ctest_apps.log" | tail -30
  for app in "echo" "ipv4 --fib $FIB" "ipv6 --fib $FIB" "l2 --l2-random 1000000" "ndn --urls $URLS"; do
    for dev in "cpu --cpu-path scalar" "cpu --cpu-path batched" "gpu"; do
      timeout 120 taskset -c 2-3 $T run --app $app --gen count=4000000,dst=fib,size=64 --device $dev --verify 2>&1 |
        grep -E "^app|device:|packets:|throughput:|verify:" | sed "s|^|[$app \| $dev] |"
    done
  done
  exit 0
fi
if [ "$MODE" = apps-cores ]; then
  T=./build-device/tandem
  LOG="$OUT/apps-cores.log"
  GEN=count=4000000,dst=fib,flows=1000000,size=64,seed=7
  W=${WORKERS:-1,2,4,8,12,15,16}
  SPECS=${SPECS:-"echo:echo|ipv4:ipv4 --fib $FIB|ipv6:ipv6 --fib $FIB|l2_1m:l2 --l2-random 1000000|l2_16m:l2 --l2-random 16000000|ndn:ndn --urls $URLS|ndn32:ndn --urls $URLS --ndn-fixed-bytes 32"}
  SPECS=${SPECS//\$URLS/$URLS}
  IFS='|' read -ra SPEC_LIST <<< "$SPECS"
  for spec in "${SPEC_LIST[@]}"; do
    name=${spec%%:*}; app=${spec#*:}
    echo "== bench cores: $app ==" | tee -a "$LOG"
    timeout 150 $T bench cores --app $app --gen $GEN --workers $W --reps ${REPS:-3} --packets ${PACKETS:-8000000} \
      --json "$OUT/bench_cores_$name.json" >> "$LOG" 2>&1
    echo "exit $?" | tee -a "$LOG"
  done
  grep -E "^==|^exit|throughput vs|^[0-9]+ |^workers|batched / scalar|GPU best|matches|does not|MISMATCH" "$LOG" | tail -120
  exit 0
fi
if [ "$MODE" = hardening ]; then
  if [ -z "${AB_ONLY:-}" ]; then
    (cd build-device && timeout 360 ctest --output-on-failure -j12 --timeout 300) > "$OUT/ctest_all.log" 2>&1
    echo "ctest exit: $?"; grep -E "tests passed|\(Failed\)|Timeout|Skipped\)" "$OUT/ctest_all.log" | tail -12
  fi
  if [ -d .baseline ]; then
    (cmake -S .baseline -B build-baseline -G Ninja -DCMAKE_BUILD_TYPE=Release -DTANDEM_DEPS_ROOT="$ROOT" -DTANDEM_NATIVE=ON \
       -DTANDEM_WITH_CUDA=OFF && ninja -C build-baseline -j16 tandem) > /tmp/build-baseline.log 2>&1 || { tail -20 /tmp/build-baseline.log; exit 1; }
    CB=.deps/shared/classbench/filters
    LOG="$OUT/ab.log"
    for rep in $(seq 1 "${REPS:-3}"); do
      order="baseline device"
      [ $((rep % 2)) -eq 0 ] && order="device baseline"  # neither side always first
      for which in $order; do
        T=./build-$which/tandem
        for spec in "ipv4:--app ipv4 --fib $FIB" "ipv6:--app ipv6 --fib $FIB" "fw-router:--app fw-router --fib $FIB --rules $CB/acl1_10k.gz"; do
          echo "== rep $rep $which ${spec%%:*}" >> "$LOG"
          timeout 120 $T run ${spec#*:} --gen count=4000000,dst=fib,flows=100000,zipf=1.1,size=64 --repeat 5 --device cpu \
            --workers 1 --cores 2 2>&1 | grep -E "packets:|throughput:|dropped per" >> "$LOG"
        done
      done
    done
    python3 - "$LOG" <<'PY'
import re, sys, statistics
runs = {}
key = None
for line in open(sys.argv[1]):
    m = re.match(r"== rep \d+ (\S+) (\S+)", line)
    if m:
        key = (m.group(2), m.group(1))
    m = re.match(r"throughput: ([\d.]+) Mpps", line)
    if m and key:
        runs.setdefault(key, []).append(float(m.group(1)))
print("app        baseline Mpps   now Mpps   now/baseline (medians, one core)")
for app in ("ipv4", "ipv6", "fw-router"):
    b, n = runs.get((app, "baseline"), []), runs.get((app, "device"), [])
    if b and n:
        print(f"{app:10} {statistics.median(b):10.2f} {statistics.median(n):10.2f} {statistics.median(n) / statistics.median(b):10.3f}")
PY
  fi
  exit 0
fi

if [ "$MODE" = acl-dpi ]; then
  T=./build-device/tandem
  LOG="$OUT/acl-dpi.log"
  echo "== tests: firewall (GPU included) and DPI ==" | tee -a "$LOG"
  (cd build-device && ctest --output-on-failure -j4 --timeout 300 -R "Acl|Ids|AhoCorasick|DpiStage2|FwRouter|test_classify|test_match") \
    > "$OUT/ctest_acl_dpi.log" 2>&1
  echo "ctest exit: $?" | tee -a "$LOG"; grep -E "tests passed|Failed|\*\*\*|Skipped" "$OUT/ctest_acl_dpi.log" | tail -12
  CB=.deps/shared/classbench/filters
  for set in acl1_10k fw1_10k ipc1_10k; do
    echo "== bench classify: $set ==" | tee -a "$LOG"
    timeout 120 $T bench classify --rules $CB/$set.gz --core 2 --reps 5 --n 4000000 --json "$OUT/bench_classify_$set.json" >> "$LOG" 2>&1
    echo "exit $?" | tee -a "$LOG"
  done
  echo "== bench fw-router: acl1_10k + the full BGP table, CPU and GPU fused vs split ==" | tee -a "$LOG"
  timeout 150 $T bench fw-router --fib $FIB --rules $CB/acl1_10k.gz --core 2 --json "$OUT/bench_fw_router_acl1_10k.json" >> "$LOG" 2>&1
  echo "exit $?" | tee -a "$LOG"
  echo "== bench dpi: ET rules, 1 and 16 threads, GPU ==" | tee -a "$LOG"
  timeout 300 $T bench dpi --rules .deps/shared/ids/et_open_2019-04-15/*.rules.gz --threads 1,16 --core 0 --reps 3 \
    --json "$OUT/bench_dpi.json" >> "$LOG" 2>&1
  echo "exit $?" | tee -a "$LOG"
  echo "== bench dpi: lockstep groups of 8, one thread ==" | tee -a "$LOG"
  timeout 200 $T bench dpi --rules .deps/shared/ids/et_open_2019-04-15/*.rules.gz --threads 1 --core 1 --reps 3 --group 8 \
    --device cpu --json "$OUT/bench_dpi_group8.json" >> "$LOG" 2>&1
  echo "exit $?" | tee -a "$LOG"
  grep -E "^==|^exit|^rules|^cpu|^dpdk|^gpu|^stage1|^hyperscan|^rules_|Gbps|traffic:|results|batch bytes|^cpu_|^gpu_|split" "$LOG" | tail -120
  exit 0
fi
if [ "$MODE" = dpi ]; then
  T=./build-device/tandem
  LOG="$OUT/dpi.log"
  RULES=$(ls .deps/shared/ids/et_open_2019-04-15/*.rules.gz)
  echo "== tests: DPI (GPU included) ==" | tee -a "$LOG"
  (cd build-device && ctest --output-on-failure -j4 --timeout 300 -R "Ids|AhoCorasick|DpiStage2|test_match") \
    > "$OUT/ctest_dpi.log" 2>&1
  echo "ctest exit: $?" | tee -a "$LOG"; grep -E "tests passed|Failed|\*\*\*|Skipped" "$OUT/ctest_dpi.log" | tail -12
  echo "== bench dpi: ET rules, 1 and 16 threads, GPU ==" | tee -a "$LOG"
  timeout 300 $T bench dpi --rules $RULES --threads 1,16 --core 0 --reps 3 --json "$OUT/bench_dpi.json" >> "$LOG" 2>&1
  echo "exit $?" | tee -a "$LOG"
  echo "== tandem match on ET rules: scalar, batched and GPU give the same lines ==" | tee -a "$LOG"
  for cap in data/pcap/example.pcap data/pcap/tls2.pcap; do
    for path in "--device cpu --cpu-path scalar" "--device cpu --cpu-path batched" "--device gpu"; do
      for po in "" --patterns-only; do
        timeout 120 $T match --rules $RULES --skip-bad --pcap $cap $path $po > /tmp/match.out 2> /tmp/match.err
        rc=$?
        echo "$(basename $cap) $path $po: exit $rc, output md5 $(md5sum < /tmp/match.out | cut -c1-12), $(tail -n 1 /tmp/match.err)" \
          | tee -a "$LOG"
      done
    done
  done
  for g in ${GROUPS_EXTRA:-8 16}; do
    echo "== bench dpi: lockstep groups of $g, one thread ==" | tee -a "$LOG"
    timeout 200 $T bench dpi --rules $RULES --threads 1 --core 1 --reps 3 --group $g --device cpu \
      --json "$OUT/bench_dpi_group$g.json" >> "$LOG" 2>&1
    echo "exit $?" | tee -a "$LOG"
  done
  grep -E "^==|^exit|^gpu|^stage1|^hyperscan|^rules_|Gbps|traffic:|results|pcap --device" "$LOG" | tail -100
  exit 0
fi
if [ "$MODE" = apps-lookup ]; then
  T=./build-device/tandem
  LOG="$OUT/apps-lookup.log"
  for spec in "ipv6:ipv6 --fib $FIB" "l2_1m:l2 --l2-random 1000000" "l2_16m:l2 --l2-random 16000000" \
              "ndn:ndn --urls $URLS" "ndn_x100:ndn --urls $URLS --ndn-replicas 100" "ndn32:ndn --urls $URLS --ndn-fixed-bytes 32" \
              "echo:echo"; do
    name=${spec%%:*}; app=${spec#*:}
    echo "== bench lookup: $app ==" | tee -a "$LOG"
    timeout 120 $T bench lookup --app $app --core 2 --reps 5 --json "$OUT/bench_lookup_$name.json" >> "$LOG" 2>&1
    echo "exit $?" | tee -a "$LOG"
  done
  grep -E "^==|^exit|^cpu|^gpu|results" "$LOG"
  exit 0
fi
if [ "$MODE" = offload ]; then  # just the offload engine: its tests and its benchmark
  for t in GpuMode.NamesRoundTrip GpuOffload.EchoEveryModeEverySize GpuOffload.ManyConsecutiveSmallBatches \
           GpuOffload.SlotsOverlap GpuOffload.Ipv4LookupEveryModeMatchesCpu; do
    timeout 60 ./build-device/tests/gpu_offload_test --gtest_filter=$t 2>&1 | grep -E "OK|FAILED|Failure|error|Expected|Which" | head -5
    echo "$t: exit ${PIPESTATUS[0]}"
  done
  for pb in 0 32 8; do
    echo "== bench gpu-offload, persistent blocks $pb (0 = one per SM) =="
    timeout 60 ./build-device/tandem bench gpu-offload --reps 200 --persistent-blocks $pb \
      --json "$OUT/bench_gpu_offload_pb$pb.json" 2>&1 | tail -16
  done
  exit 0
fi
echo "== tests =="
(cd build-device && ctest --output-on-failure -j4 --timeout 300) > "$OUT/ctest.log" 2>&1
echo "ctest exit: $?"; grep -E "tests passed|Skipped|Failed|\*\*\*" "$OUT/ctest.log" | tail -25

T=./build-device/tandem
REPS=9; [ "$MODE" = quick ] && REPS=3
echo "== bench ipv4 (uniform addresses, core 2) =="
$T bench ipv4 --fib $FIB --n 10000000 --reps $REPS --core 2 --json "$OUT/bench_ipv4_uniform.json" 2>&1 | tail -16
if [ "$MODE" != quick ]; then
  echo "== bench ipv4 (addresses inside the table's prefixes) =="
  $T bench ipv4 --fib $FIB --n 10000000 --reps $REPS --core 2 --addresses fib --json "$OUT/bench_ipv4_fib.json" 2>&1 | tail -14
fi
echo "== bench gpu-offload: round trip per mode (echo, and IPv4 lookups) =="
timeout 300 $T bench gpu-offload --fib $FIB --json "$OUT/bench_gpu_offload.json" 2>&1 | tail -32
echo "== run: forwarding, 64 B packets in memory, CPU scalar / CPU batched / GPU =="
GEN=count=4000000,dst=uniform,size=64
for dev in "cpu --cpu-path scalar" "cpu --cpu-path batched" "gpu"; do
  name=$(echo "$dev" | tr -d ' -' | sed 's/cpupath//')
  taskset -c 2 $T run --app ipv4 --fib $FIB --gen $GEN --device $dev --verify --json "$OUT/run_$name.json" 2>&1 |
    grep -E "device:|packets:|throughput:|verify:"
done
echo "== run: 4M packets on the GPU, each offload mode =="
for m in async graph mapped persistent; do
  taskset -c 2 $T run --app ipv4 --fib $FIB --gen $GEN --device gpu --gpu-mode $m --verify 2>&1 |
    grep -E "device:|throughput:|latency|verify:"
done
echo "== run: real captures on the GPU =="
for cap in example many-protocols tls2; do
  $T run --app ipv4 --fib $FIB --pcap data/pcap/$cap.pcap --device gpu --verify --out "/tmp/$cap-gpu.pcap" 2>&1 |
    grep -E "packets:|verify:|output:"
done
