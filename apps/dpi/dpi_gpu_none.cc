// Builds without CUDA: the GPU automaton cannot be created; callers use the CPU.
#include "apps/dpi/dpi_gpu.h"

namespace tandem::dpi {

struct AhoCorasickGpu::Impl {};

AhoCorasickGpu::AhoCorasickGpu(const AhoCorasick&, size_t) {
  throw gpu::GpuError("no GPU: this build of Tandem has no CUDA support");
}
AhoCorasickGpu::~AhoCorasickGpu() = default;
void AhoCorasickGpu::patterns_in_batch(const uint8_t* const*, const uint32_t*, size_t, std::vector<uint32_t>*) {}
size_t AhoCorasickGpu::device_bytes() const { return 0; }

}  // namespace tandem::dpi
