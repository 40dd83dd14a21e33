// Builds without CUDA: the GPU table cannot be created; callers fall back to the CPU.
#include "apps/ipv4/ipv4_gpu.h"

namespace tandem::ipv4 {

struct Ipv4GpuTable::Impl {};

Ipv4GpuTable::Ipv4GpuTable(const Dir24_8&) {
  throw gpu::GpuError("no GPU: this build of Tandem has no CUDA support");
}
Ipv4GpuTable::~Ipv4GpuTable() = default;
void Ipv4GpuTable::sync(const Dir24_8&) {}
void Ipv4GpuTable::lookup(const uint32_t*, uint32_t*, size_t) {}
std::vector<double> Ipv4GpuTable::time_kernel(const uint32_t*, uint32_t*, size_t, int) { return {}; }
size_t Ipv4GpuTable::device_bytes() const { return 0; }
std::unique_ptr<gpu::OffloadRunner> Ipv4GpuTable::make_runner(const gpu::OffloadOptions&) const {
  return nullptr;
}
std::unique_ptr<gpu::OffloadRunner> Ipv4GpuTable::make_frame_runner(
    const gpu::OffloadOptions&) const {
  throw gpu::GpuError("no GPU: this build of Tandem has no CUDA support");
}

}  // namespace tandem::ipv4
