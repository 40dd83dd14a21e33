# shellcheck shell=bash
# description: IPsec under the scheduler (issue 18; PARTS to pick "bench runs resident"; DEVICES, WORKERS, SIZES, POLICIES, RING_SLOTS; SKIP_TESTS=1): the tests (SAs moving every tick between the GPU and a CPU group and between two GPU devices, the scalar path's ESP bytes and SA state; a GPU fault sends no sequence number twice), bench schedule for ESP AES-128-CBC + HMAC-SHA1 over a CPU group and the GPU (each alone, static splits, the throughput controller, NBA's balancer), an adaptive run verified, a GPU fault under the scheduler, and the resident path alone with as many receive threads (its GPU-alone reference)
LOG="$OUT/ipsec-schedule.log"
parts=" ${PARTS:-bench runs resident} "
want() { [[ $parts == *" $1 "* ]]; }
[ -n "${SKIP_TESTS:-}" ] || (cd build-device && timeout 300 ctest -R "${TEST_FILTER:-EspSchedule|EspResident|Hetero}" -j8 --timeout 200 --output-on-failure) >> "$LOG" 2>&1
note "ctest exit: $?"
cores="0-$(($(nproc) - 1))"
dev=${DEVICES:-cpu:9,gpu}
workers=${WORKERS:-6}
esp=(--app ipsec --sa-gen 1024 --sa-cipher aes-128-cbc)
want bench && logged "bench schedule: ipsec aes-128-cbc" 400 "$T" bench schedule "${esp[@]}" --cores "$cores" \
  --device "$dev" --workers "$workers" --gen count=1000000,flows=100000,dst=fib,seed=3 --sizes "${SIZES:-1420,64}" \
  --ring-slots "${RING_SLOTS:-16}" \
  --policies "${POLICIES:-static:1,0;static:0,1;static:1,3;static:1,2;static:1,1;static:2,1;throughput;nba}" \
  --json "$OUT/bench_schedule_ipsec.json"
want runs && logged "run: ipsec, throughput controller, both ways, verified" 90 "$T" run "${esp[@]}" --ipsec-traffic both \
  --gen count=2000000,flows=100000,dst=fib,size=1420,seed=3 --schedule throughput --device "$dev" --workers "$workers" \
  --cores "$cores" --repeat 3 --verify --json "$OUT/run_ipsec_schedule.json"
want runs && logged "run: ipsec, a GPU fault at batch 200 under the scheduler, verified" 90 "$T" run "${esp[@]}" \
  --gen count=2000000,flows=100000,dst=fib,size=512,seed=3 --schedule static:1,1 --device "$dev" --workers "$workers" \
  --cores "$cores" --repeat 3 --verify --inject-gpu-fault 200
want resident && logged "bench gpu-path: ipsec aes-128-cbc, the resident path alone" 200 "$T" bench gpu-path "${esp[@]}" \
  --cores "$cores" --cpu-workers 1 --rx-threads "$workers" --sizes "${SIZES:-1420,64}" \
  --resident persistent-cells,persistent-packed --ring-slots "${RING_SLOTS:-16}" --json "$OUT/bench_gpu_path_ipsec.json"
grep -E "^==|^exit|PASSED|FAILED|Failure|tests passed|^bench|^size|^[0-9]+ +|^medians|^packets|^latency|^verify|^throughput|^device|^dropped|^reordered|^lost|^switches|^energy" "$LOG" | tail -150
exit 0
