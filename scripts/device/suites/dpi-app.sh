# shellcheck shell=bash
# description: the dpi app (tandem run --app dpi; issue 18's DPI under the scheduler; DEVICES, WORKERS, SIZES, POLICIES, HEAVY, COUNT, REPS; SKIP_TESTS=1, SKIP_RUN=1): its tests with the GPU (the flat program on the GPU's items, whole frames, the resident ring, the GPU and a CPU group sharing shards), bench schedule over a CPU group and the GPU on match-free and match-heavy payloads (each alone, static splits, the throughput controller, NBA's balancer), and a scheduled run verified
LOG="$OUT/dpi-app.log"
[ -n "${SKIP_TESTS:-}" ] || (cd build-device && timeout 300 ctest -R "${TEST_FILTER:-DpiApp|DpiProgram|/dpi_}" -j8 --timeout 250 --output-on-failure) >> "$LOG" 2>&1
note "ctest exit: $?"
cores="0-$(($(nproc) - 1))"
dev=${DEVICES:-cpu:9,gpu}
workers=${WORKERS:-6}
dpi=(--app dpi --ids-rules data/ids/et_open_2019-04-15 --ids-skip-bad on)
for heavy in ${HEAVY:-0 0.3}; do
  logged "bench schedule: dpi, match-heavy $heavy" 300 "$T" bench schedule "${dpi[@]}" --match-heavy "$heavy" \
    --cores "$cores" --device "$dev" --workers "$workers" --gen count=${COUNT:-400000},flows=20000,proto=tcp,seed=3 --reps ${REPS:-3} \
    --sizes "${SIZES:-imix,1518}" \
    --policies "${POLICIES:-static:1,0;static:0,1;static:1,3;static:1,1;static:3,1;throughput;nba}" \
    --json "$OUT/bench_schedule_dpi_heavy$heavy.json"
done
[ -n "${SKIP_RUN:-}" ] || logged "run: dpi, match-heavy 0.3, throughput controller, verified" 120 "$T" run "${dpi[@]}" --match-heavy 0.3 \
  --gen count=1000000,flows=20000,proto=tcp,size=imix,seed=3,seq=1 --schedule throughput --device "$dev" \
  --workers "$workers" --cores "$cores" --repeat 3 --verify --json "$OUT/run_dpi_schedule.json"
grep -E "^==|^exit|PASSED|FAILED|Failure|tests passed|^bench|^size|^[0-9a-z]+ +static|^[0-9a-z]+ +(throughput|nba)|^medians|^packets|^latency|^verify|^throughput|^device|^dropped|^forwarded|^reordered|^lost|^switches|^energy|^table|^app" "$LOG" | tail -150
exit 0
