// Builds without CUDA: the GPU table cannot be created; callers use the CPU.
#include "apps/acl/acl_gpu.h"

namespace tandem::acl {

struct AclGpuTable::Impl {};

AclGpuTable::AclGpuTable(const HyperSplit&) { throw gpu::GpuError("no GPU: this build of Tandem has no CUDA support"); }
AclGpuTable::~AclGpuTable() = default;
std::unique_ptr<gpu::OffloadRunner> AclGpuTable::make_runner(const gpu::OffloadOptions&) const { return nullptr; }
void AclGpuTable::classify(const Header*, uint32_t*, size_t) {}

}  // namespace tandem::acl
