// Echo on the GPU: 4-byte values in, their ports (echo_port) out.
#include "apps/echo/echo_app.h"
#include "apps/registry.h"
#include "gpu/offload_runner.cuh"

namespace tandem::echo {

namespace {
struct EchoPortOp {
  using In = uint32_t;
  using Out = uint32_t;
  __device__ uint32_t operator()(uint32_t x) const { return echo_port(x); }
};

std::unique_ptr<gpu::OffloadRunner> make_port_runner(const gpu::OffloadOptions& opts) {
  gpu::require_available();
  return std::make_unique<gpu::OffloadRunnerImpl<EchoPortOp>>(EchoPortOp{}, opts);
}

const EchoPortRunnerFactory::Registrar registered{&make_port_runner};

}  // namespace
}  // namespace tandem::echo

TANDEM_REGISTER_GPU_PART("echo")
