// Builds without CUDA: no ceilings to measure.
#include "bench/gpu_path_ceilings.h"
#include "gpu/gpu_runtime.h"

namespace tandem::bench {

std::vector<Ceiling> measure_gpu_path_ceilings(int, double, int) {
  throw gpu::GpuError("no GPU: this build of Tandem has no CUDA support");
}

}  // namespace tandem::bench
