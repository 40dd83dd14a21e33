// Builds without CUDA: the GPU table cannot be created; callers use the CPU.
#include "apps/ipv6/ipv6_gpu.h"

namespace tandem::ipv6 {

struct Ipv6GpuTable::Impl {};

Ipv6GpuTable::Ipv6GpuTable(const Lpm6&, uint32_t) {
  throw gpu::GpuError("no GPU: this build of Tandem has no CUDA support");
}
Ipv6GpuTable::~Ipv6GpuTable() = default;
bool Ipv6GpuTable::sync(const Lpm6&) { return true; }
std::unique_ptr<gpu::OffloadRunner> Ipv6GpuTable::make_runner(const gpu::OffloadOptions&) const { return nullptr; }
void Ipv6GpuTable::lookup(const uint8_t (*)[16], uint32_t*, size_t) {}
size_t Ipv6GpuTable::device_bytes() const { return 0; }

}  // namespace tandem::ipv6
