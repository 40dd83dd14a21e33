// Builds without CUDA: no GPU runner; callers use the CPU.
#include "apps/echo/echo_app.h"
#include "gpu/gpu_runtime.h"

namespace tandem::echo {

std::unique_ptr<gpu::OffloadRunner> make_echo_port_runner(const gpu::OffloadOptions&) {
  throw gpu::GpuError("no GPU: this build of Tandem has no CUDA support");
}

}  // namespace tandem::echo
