# shellcheck shell=bash
# description: the offload runners alone: a few gpu_offload_test cases and bench gpu-offload per persistent block count
for t in GpuMode.NamesRoundTrip GpuOffload.EchoEveryModeEverySize GpuOffload.ManyConsecutiveSmallBatches \
         GpuOffload.SlotsOverlap GpuOffload.Ipv4LookupEveryModeMatchesCpu; do
  timeout 60 ./build-device/tests/gpu_offload_test --gtest_filter=$t 2>&1 | grep -E "OK|FAILED|Failure|error|Expected|Which" | head -5
  echo "$t: exit ${PIPESTATUS[0]}"
done
for pb in 0 32 8; do
  echo "== bench gpu-offload, persistent blocks $pb (0 = one per SM) =="
  timeout 60 "$T" bench gpu-offload --reps 200 --persistent-blocks $pb \
    --json "$OUT/bench_gpu_offload_pb$pb.json" 2>&1 | tail -16
done
exit 0
