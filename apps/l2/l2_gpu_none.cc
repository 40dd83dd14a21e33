// Builds without CUDA: the GPU table cannot be created; callers use the CPU.
#include "apps/l2/l2_gpu.h"

namespace tandem::l2 {

struct L2GpuTable::Impl {};

L2GpuTable::L2GpuTable(const MacTable&) { throw gpu::GpuError("no GPU: this build of Tandem has no CUDA support"); }
L2GpuTable::~L2GpuTable() = default;
void L2GpuTable::sync(const MacTable&) {}
std::unique_ptr<gpu::OffloadRunner> L2GpuTable::make_runner(const gpu::OffloadOptions&) const { return nullptr; }
void L2GpuTable::forward(const uint64_t*, uint32_t*, size_t) {}

}  // namespace tandem::l2
