// The GPU-router report's Fig. 8 question on fw-router: is one thread per packet doing every
// function (fused) faster than one kernel per function (split)?
//
//   fused: one kernel; a thread classifies its header (HyperSplit) and, when the firewall accepts
//          it, looks its destination up (DIR-24-8): fw_router_decide, as the app's runners do.
//   split: a classify kernel writes each packet's rule index to device memory; an LPM kernel reads
//          it back (with the header's destination) and finishes with fw_router_route. The extra
//          cost is a second launch, 4 bytes written and read per packet, and the header read twice.
//   fused, root: the fused kernel reading the tables' pointers from the FwRouterGpu's device root
//          (as the app's runners do, so that live rule updates can replace them) instead of its
//          parameters: what that indirection costs.
//
// Both run fw_router_core.h's code on a FwRouterGpu's device copies, so their results equal the
// CPU's. Only `tandem bench fw-router` measures them; the app's GPU path is FwRouterGpu's runner.
// The implementation is fw_router_plans.cu's (gpu/gpu_factory.h): without CUDA, create() throws
// gpu::GpuError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "apps/fwrouter/fw_router_gpu.h"
#include "gpu/gpu_factory.h"

namespace tandem::fwrouter {

enum class GpuPlan { kFused, kSplit, kFusedRoot };

// Milliseconds per repetition (CUDA events) of one batch size.
struct GpuPlanTimes {
  // Device-resident: the headers are already in device memory, the results stay there.
  std::vector<double> fused, split, classify_only, lpm_only, fused_root;
  // Host to host: pinned headers copied in, the kernel(s), the results copied out.
  std::vector<double> fused_h2h, split_h2h;
};

class FwRouterGpuPlans {
 public:
  using Factory = gpu::GpuFactory<std::unique_ptr<FwRouterGpuPlans>(const FwRouterGpu&)>;
  // Works on the device copies of `tables`, which must outlive this. Throws gpu::GpuError.
  static std::unique_ptr<FwRouterGpuPlans> create(const FwRouterGpu& tables) { return Factory::create(tables); }
  virtual ~FwRouterGpuPlans() = default;

  // Host arrays in and out, synchronously, in chunks, with either plan (for tests and checks).
  virtual void decide(GpuPlan plan, const acl::Header* headers, uint32_t* out, size_t n) = 0;

  // Times one batch of n headers `reps` times after a warm-up, the plans interleaved within each
  // repetition (and which goes first alternating) so that clock changes and cache contents hit
  // them alike. The results of the host-to-host runs of the last repetition are left in
  // fused_out and split_out.
  virtual GpuPlanTimes time_plans(const acl::Header* headers, size_t n, int reps, uint32_t* fused_out,
                                  uint32_t* split_out) = 0;
};

}  // namespace tandem::fwrouter
