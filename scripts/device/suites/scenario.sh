# shellcheck shell=bash
# description: the scheduler's scenarios over time (issue 18's deliverable 6; KINDS, DPI_KINDS, STEP_MS, DEVICES, WORKERS, HOG_CORES, LANE_QUEUES): tandem scenario steps, bursts, cpu-hog and gpu-hog for IPv4 on the full table (each device alone, static splits, the throughput controller, NBA's balancer, per segment against the best static row), steps for DPI at 5% patterns and DPI payloads flipping from match-free to 30% patterns and back, each with its timelines (JSON)
LOG="$OUT/scenario.log"
list=$(app_specs gpu) || exit 1
ipv4=$(grep '^ipv4:' <<< "$list" | head -1); ipv4=${ipv4#*:}
read -ra ipv4_args <<< "$ipv4"
dev=${DEVICES:-cpu:7,gpu}
workers=${WORKERS:-8}
step=${STEP_MS:-1000}
for kind in ${KINDS:-steps bursts cpu-hog gpu-hog}; do
  for lq in ${LANE_QUEUES:-8192}; do
    suffix=""; [ "$lq" = 8192 ] || suffix="_lq$lq"
    logged "scenario $kind: ipv4, lane queue $lq" 150 "$T" scenario "$kind" --app "${ipv4_args[@]}" --cores 0-15 \
      --device "$dev" --workers "$workers" --gen count=2000000,dst=fib,flows=100000,size=64,seed=3 --step-ms "$step" \
      --hog-cores "${HOG_CORES:-8-11}" --lane-queue "$lq" --json "$OUT/scenario_ipv4_$kind$suffix.json"
  done
done
for kind in ${DPI_KINDS:-steps flip}; do
  logged "scenario $kind: dpi" 200 "$T" scenario "$kind" --app dpi --ids-rules data/ids/et_open_2019-04-15 \
    --ids-skip-bad on --match-heavy 0.05 --flip match-heavy=0/0.3 --cores 0-15 --device cpu:9,gpu --workers 6 \
    --gen count=200000,flows=20000,proto=tcp,size=imix,seed=3 --step-ms "$step" --json "$OUT/scenario_dpi_$kind.json"
done
grep -E "^==|^exit|^scenario|^traffic|^offered|^0\.|^per segment|^static|^throughput|^nba|^[a-z0-9.]+ x scale" "$LOG" | tail -80
exit 0
