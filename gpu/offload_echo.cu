// The echo runner: each item comes back unchanged, so its round trip is the pure cost of
// involving the GPU in a mode.
#include "gpu/offload_runner.cuh"

namespace tandem::gpu {

namespace {
struct EchoOp {
  using In = uint32_t;
  using Out = uint32_t;
  __device__ uint32_t operator()(uint32_t x) const { return x; }
};
}  // namespace

std::unique_ptr<OffloadRunner> make_echo_runner(const OffloadOptions& opts) {
  require_available();
  return std::make_unique<OffloadRunnerImpl<EchoOp>>(EchoOp{}, opts);
}

}  // namespace tandem::gpu
