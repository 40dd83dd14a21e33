# shellcheck shell=bash
# description: CPUs and the GPU together (issue 18; DEVICES, WORKERS, SIZES, POLICIES for other rows; SKIP_TESTS=1): the scheduler's tests (every app over a CPU group and the GPU with shards moving every tick, verified, 0 reordered, 0 lost), bench schedule for IPv4 on the full table and MD5 hashing (each device alone, static splits, the adaptive controller, NBA's balancer), a paced run with offered-rate steps (timeline JSON), and a GPU fault under the scheduler
LOG="$OUT/schedule.log"
[ -n "${SKIP_TESTS:-}" ] || (cd build-device && timeout 300 ctest -R "${TEST_FILTER:-Hetero|Energy|Controller|SchedSim|ShardMap|ProfileTable}" -j8 --timeout 200 --output-on-failure) >> "$LOG" 2>&1
note "ctest exit: $?"
list=$(app_specs gpu) || exit 1
ipv4=$(grep '^ipv4:' <<< "$list" | head -1); ipv4=${ipv4#*:}
read -ra ipv4_args <<< "$ipv4"
logged "bench schedule: $ipv4" 300 "$T" bench schedule --app "${ipv4_args[@]}" --cores 0-15 \
  --device "${DEVICES:-cpu:7,gpu}" --workers "${WORKERS:-8}" --sizes "${SIZES:-64,1518}" ${POLICIES:+--policies "$POLICIES"} \
  --json "$OUT/bench_schedule_ipv4.json"
logged "bench schedule: hashing md5" 300 "$T" bench schedule --app hashing --digest md5 --cores 0-15 \
  --device "${DEVICES:-cpu:7,gpu}" --workers "${WORKERS:-8}" --gen count=1000000,flows=100000,seed=3 \
  --sizes "${HASH_SIZES:-256,1024}" ${POLICIES:+--policies "$POLICIES"} --json "$OUT/bench_schedule_md5.json"
logged "run: offered-rate steps, adaptive" 60 "$T" run --app "${ipv4_args[@]}" --gen count=2000000,dst=fib,flows=100000,size=1518,seed=3 \
  --schedule throughput --device "${DEVICES:-cpu:7,gpu}" --workers "${WORKERS:-8}" --cores 0-15 \
  --rate-schedule "${RATES:-0:2,1000:10,2000:30,3000:10,4000:2}" --repeat 100 --json "$OUT/run_schedule_steps.json"
logged "run: a GPU fault at batch 200 under the scheduler, verified" 60 "$T" run --app "${ipv4_args[@]}" \
  --gen count=2000000,dst=fib,flows=100000,size=64,seed=3 --schedule static:1,1 --device "${DEVICES:-cpu:7,gpu}" \
  --workers 4 --cores 0-15 --repeat 3 --verify --inject-gpu-fault 200
grep -E "^==|^exit|PASSED|FAILED|Failure|tests passed|^bench|^size|^[0-9]+ +|^medians|^packets|^latency|^verify|^throughput|^device|^dropped|^reordered|^lost|^switches|^energy" "$LOG" | tail -150
exit 0
