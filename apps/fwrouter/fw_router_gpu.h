// fw-router on the GPU, and the GPU-router report's Fig. 8 question: is one thread per packet
// doing every function (fused) faster than one kernel per function (split)?
//
//   fused: one kernel; a thread classifies its header (HyperSplit) and, when the firewall accepts
//          it, looks its destination up (DIR-24-8): fw_router_decide.
//   split: a classify kernel writes each packet's rule index to device memory; an LPM kernel reads
//          it back (with the header's destination) and finishes with fw_router_route. The extra
//          cost is a second launch, 4 bytes written and read per packet, and the header read twice.
//
// Both run fw_router_core.h's code, so their results equal the CPU's. Device copies of the tree
// (nodes, leaf rule lists, rules), the action bytes and the DIR-24-8 table (tbl24 and the used
// part of tbl8) live as long as the object. The implementation is fw_router_gpu.cu's
// (gpu/gpu_factory.h): without CUDA, create() throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "apps/fwrouter/fw_router_app.h"
#include "gpu/gpu_factory.h"
#include "gpu/gpu_runtime.h"
#include "gpu/offload.h"

namespace tandem::fwrouter {

enum class GpuPlan { kFused, kSplit };

// Milliseconds per repetition (CUDA events) of one batch size.
struct GpuPlanTimes {
  // Device-resident: the headers are already in device memory, the results stay there.
  std::vector<double> fused, split, classify_only, lpm_only;
  // Host to host: pinned headers copied in, the kernel(s), the results copied out.
  std::vector<double> fused_h2h, split_h2h;
};

class FwRouterGpu : public gpu::GpuTable {
 public:
  using Factory = gpu::GpuFactory<std::unique_ptr<FwRouterGpu>(const FwRouterTables&)>;
  // Copies the tables to device 0. Throws gpu::GpuError.
  static std::unique_ptr<FwRouterGpu> create(const FwRouterTables& tables) { return Factory::create(tables); }

  // make_runner: the fused decision as the per-item operation (acl::Header in, result out), the
  // app's GPU path.

  // Host arrays in and out, synchronously, in chunks, with either plan (for tests and checks).
  virtual void decide(GpuPlan plan, const acl::Header* headers, uint32_t* out, size_t n) = 0;

  // Times one batch of n headers `reps` times after a warm-up, the plans interleaved within each
  // repetition (and which goes first alternating) so that clock changes and cache contents hit
  // them alike. The results of the host-to-host runs of the last repetition are left in
  // fused_out and split_out.
  virtual GpuPlanTimes time_plans(const acl::Header* headers, size_t n, int reps, uint32_t* fused_out,
                                  uint32_t* split_out) = 0;

  virtual size_t device_bytes() const = 0;
};

}  // namespace tandem::fwrouter
