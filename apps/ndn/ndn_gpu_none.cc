// Builds without CUDA: the GPU table cannot be created; callers use the CPU.
#include "apps/ndn/ndn_gpu.h"

namespace tandem::ndn {

struct NdnGpuTable::Impl {};

NdnGpuTable::NdnGpuTable(const NdnFib&) { throw gpu::GpuError("no GPU: this build of Tandem has no CUDA support"); }
NdnGpuTable::~NdnGpuTable() = default;
void NdnGpuTable::sync(const NdnFib&) {}
std::unique_ptr<gpu::OffloadRunner> NdnGpuTable::make_runner(const gpu::OffloadOptions&) const { return nullptr; }
void NdnGpuTable::lookup(const NdnItem*, uint32_t*, size_t) {}

}  // namespace tandem::ndn
