// Builds without CUDA: no GPU hog.
#include "bench/scenario_hog.h"
#include "gpu/gpu_runtime.h"

namespace tandem::bench {

void run_gpu_hog(double, double) { gpu::require_available(); }

}  // namespace tandem::bench
