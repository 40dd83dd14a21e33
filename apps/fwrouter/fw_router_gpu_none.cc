// Builds without CUDA: the GPU tables cannot be created; callers use the CPU.
#include "apps/fwrouter/fw_router_gpu.h"

namespace tandem::fwrouter {

struct FwRouterGpu::Impl {};

FwRouterGpu::FwRouterGpu(const FwRouterTables&) {
  throw gpu::GpuError("no GPU: this build of Tandem has no CUDA support");
}
FwRouterGpu::~FwRouterGpu() = default;
std::unique_ptr<gpu::OffloadRunner> FwRouterGpu::make_runner(const gpu::OffloadOptions&) const { return nullptr; }
void FwRouterGpu::decide(GpuPlan, const acl::Header*, uint32_t*, size_t) {}
GpuPlanTimes FwRouterGpu::time_plans(const acl::Header*, size_t, int, uint32_t*, uint32_t*) { return {}; }
size_t FwRouterGpu::device_bytes() const { return 0; }

}  // namespace tandem::fwrouter
