# shellcheck shell=bash
# description: CPUs and the GPU together (issue 18; DEVICES, WORKERS, SIZES for the IPv4 rows, HASH_DEVICES, HASH_WORKERS, HASH_SIZES, RATES for the hashing rows; SKIP_TESTS=1): the scheduler's tests (every app over a CPU group and the GPU with shards moving every tick, verified, 0 reordered, 0 lost), bench schedule for IPv4 on the full table and MD5 hashing (each device alone, static splits, the adaptive controller, NBA's balancer), the same rows under offered-rate steps (per-segment delivered rate), an adaptive run with its timeline (JSON), and a GPU fault under the scheduler
LOG="$OUT/schedule.log"
[ -n "${SKIP_TESTS:-}" ] || (cd build-device && timeout 300 ctest -R "${TEST_FILTER:-Hetero|Energy|Controller|SchedSim|ShardMap|ProfileTable}" -j8 --timeout 200 --output-on-failure) >> "$LOG" 2>&1
note "ctest exit: $?"
list=$(app_specs gpu) || exit 1
ipv4=$(grep '^ipv4:' <<< "$list" | head -1); ipv4=${ipv4#*:}
read -ra ipv4_args <<< "$ipv4"
hash_dev=${HASH_DEVICES:-cpu:11,gpu}
hash_workers=${HASH_WORKERS:-4}
rates=${RATES:-0:2,1000:8,2000:17,3000:8,4000:2,5000:0}
logged "bench schedule: $ipv4" 200 "$T" bench schedule --app "${ipv4_args[@]}" --cores 0-15 \
  --device "${DEVICES:-cpu:7,gpu}" --workers "${WORKERS:-8}" --sizes "${SIZES:-64,1518}" \
  --json "$OUT/bench_schedule_ipv4.json"
logged "bench schedule: hashing md5" 200 "$T" bench schedule --app hashing --digest md5 --cores 0-15 \
  --device "$hash_dev" --workers "$hash_workers" --gen count=1000000,flows=100000,seed=3 \
  --sizes "${HASH_SIZES:-256,1024}" --json "$OUT/bench_schedule_md5.json"
logged "bench schedule: hashing md5, offered-rate steps" 200 "$T" bench schedule --app hashing --digest md5 --cores 0-15 \
  --device "$hash_dev" --workers "$hash_workers" --gen count=1000000,flows=100000,size=256,seed=3 \
  --rate-schedule "$rates" --policies "static:1,0;static:0,1;static:1,9;static:1,6;static:1,3;throughput;nba" \
  --json "$OUT/bench_schedule_md5_steps.json"
logged "run: offered-rate steps, adaptive, timeline" 60 "$T" run --app hashing --digest md5 \
  --gen count=1000000,flows=100000,size=256,seed=3 --schedule throughput --device "$hash_dev" --workers "$hash_workers" \
  --cores 0-15 --rate-schedule "$rates" --repeat 1000 --json "$OUT/run_schedule_steps.json"
logged "run: a GPU fault at batch 200 under the scheduler, verified" 60 "$T" run --app "${ipv4_args[@]}" \
  --gen count=2000000,dst=fib,flows=100000,size=64,seed=3 --schedule static:1,1 --device "${DEVICES:-cpu:7,gpu}" \
  --workers 4 --cores 0-15 --repeat 3 --verify --inject-gpu-fault 200
grep -E "^==|^exit|PASSED|FAILED|Failure|tests passed|^bench|^size|^[0-9]+ +|^medians|^steps|^packets|^latency|^verify|^throughput|^device|^dropped|^reordered|^lost|^switches|^energy" "$LOG" | tail -150
exit 0
