// Memory probe for builds without CUDA: there is no GPU to measure.
#include "gpu/gpu_runtime.h"
#include "gpu/memory_probe.h"

namespace tandem::gpu {

double gpu_random_read_rate(size_t, uint64_t, int, double*) {
  throw GpuError("no GPU: this build of Tandem has no CUDA support (nvcc not found, or TANDEM_WITH_CUDA=OFF)");
}

}  // namespace tandem::gpu
