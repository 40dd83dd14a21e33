# shellcheck shell=bash
# description: the resident GPU path (issue 17; HALF=MPPS RX=N HOLD_BATCH="us:frames ..." for the latency runs alone; BATCH=N: the benches' persistent batch, whose peak the latency runs take half of; RESIDENT=ways SKIP_APPS=1 for fewer rows; SIZES=64,512,1518 for IPv4 at several sizes): resident_test (every app, persistent kernel on cells and packed frames, DMA variant, GPU fault), bench gpu-path for IPv4 on the full table (CPU batched 1 and 15 workers, offload 15 workers, resident persistent cells/packed and async on 1, 2, 4 receive threads, PCIe ceilings), the other apps' best rows, tandem run at half the resident peak (latency), and a fault through the CLI
LOG="$OUT/gpu-path.log"
# HALF=MPPS RX=N: only the latency runs, at that load with N receive threads (no tests, no benches).
if [ -z "${HALF:-}" ]; then
# Through ctest: each test case in its own process (a GPU fault breaks the process's context).
(cd build-device && timeout 300 ctest -R "${TEST_FILTER:-Resident}" -j4 --timeout 120 --output-on-failure) >> "$LOG" 2>&1
note "ctest exit: $?"
list=$(app_specs gpu) || exit 1
mkdir -p /tmp/gp
ipv4=$(grep '^ipv4:' <<< "$list" | head -1); ipv4=${ipv4#*:}
read -ra ipv4_args <<< "$ipv4"
logged "bench gpu-path: $ipv4" 240 "$T" bench gpu-path --app "${ipv4_args[@]}" --cores 1-15 \
  --cpu-workers "${CPU_WORKERS:-1,2,4,8,15}" --rx-threads "${RX_THREADS:-1,2,4,8,12}" --dma-batch "${DMA_BATCH:-16384}" \
  --batch "${BATCH:-1024}" \
  --sizes "${SIZES:-64}" \
  --resident "${RESIDENT:-persistent-cells,persistent-packed,async-packed}" \
  --json "$OUT/bench_gpu_path_ipv4.json"
while IFS= read -r spec; do
  name=${spec%%:*}; app=${spec#*:}
  [ "$name" = ipv4 ] || [ -n "${SKIP_APPS:-}" ] && continue
  read -ra app_args <<< "$app"
  logged "bench gpu-path: $app" 60 "$T" bench gpu-path --app "${app_args[@]}" --cores 1-15 --cpu-workers 15 \
    --offload-workers "" --rx-threads "${APP_RX_THREADS:-8}" --resident persistent-packed,async-packed --reps 2 --no-ceilings \
    --json "/tmp/gp/$name.json"
done <<< "$list"
[ -n "${SKIP_APPS:-}" ] || python3 - "$OUT/bench_gpu_path_apps.json" /tmp/gp/*.json <<'PY'
import json, sys
json.dump([json.load(open(f)) for f in sys.argv[2:]], open(sys.argv[1], "w"), indent=1)
PY
best=$(python3 -c 'import json,sys; r=[x for x in json.load(open(sys.argv[1]))["rows"] if "resident (persistent, packed)" in x["path"]]; b=max(r, key=lambda x: x["mpps"]); print(round(b["mpps"]/2, 1), b["threads"].split()[0])' "$OUT/bench_gpu_path_ipv4.json")
read -r half rx <<< "$best"
else
  list=$(app_specs gpu) || exit 1
  mkdir -p /tmp/gp
  ipv4=$(grep '^ipv4:' <<< "$list" | head -1); ipv4=${ipv4#*:}
  read -ra ipv4_args <<< "$ipv4"
  half=$HALF rx=${RX:-12}
fi
note "half of the resident peak (persistent, packed): $half Mpps, $rx receive threads"
repeat=$(python3 -c "import math; print(max(1, math.ceil($half * 1e6 * 2 / 2e6)))")
for hold_batch in ${HOLD_BATCH:-20:1024 10:1024 10:256 5:256}; do
  hold=${hold_batch%%:*}; batch=${hold_batch#*:}
  logged "run at half load: resident persistent packed, $rx receive threads, hold $hold us, batch $batch" 60 \
    "$T" run --app "${ipv4_args[@]}" --gen count=2000000,dst=fib,flows=100000,size=64,seed=5 --repeat "$repeat" \
    --device gpu --gpu-path resident --frame-layout packed --workers "$rx" --cores "1-$rx" --rate-mpps "$half" \
    --rx-hold-us "$hold" --batch "$batch" --json "/tmp/gp/run_${hold}_${batch}.json"
done
logged "run at half load: CPU batched, 15 workers" 60 "$T" run --app "${ipv4_args[@]}" \
  --gen count=2000000,dst=fib,flows=100000,size=64,seed=5 --repeat "$repeat" --device cpu --workers 15 --cores 1-15 \
  --rate-mpps "$half" --json /tmp/gp/run_cpu.json
python3 - "$OUT/run_half_load.json" /tmp/gp/run_*.json <<'PY'
import json, sys
json.dump({f: json.load(open(f)) for f in sys.argv[2:]}, open(sys.argv[1], "w"), indent=1)
PY
logged "run with a GPU fault at batch 200, verified" 60 "$T" run --app "${ipv4_args[@]}" \
  --gen count=2000000,dst=fib,flows=100000,size=64,seed=6 --device gpu --gpu-path resident --workers 2 --verify \
  --inject-gpu-fault 200
grep -E "^==|^exit|PASSED|FAILED|^path|^CPU|^GPU|ceilings|^  |^packets|^latency|^resident|^gpu error|^verify|^throughput|half of|^device" "$LOG" | tail -150
exit 0
