// The L2 switch's lookup on the GPU: a device copy of a MacTable's buckets and offload runners
// whose per-item operation is the forwarding decision of cuckoo_core.h (mac_lookup, then
// mac_forward_decision: the code the CPU paths run), 8-byte MACs in, 4-byte ports (or kFlood) out.
// Builds without CUDA compile l2_gpu_none.cc, whose constructor throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "apps/l2/mac_table.h"
#include "gpu/gpu_runtime.h"
#include "gpu/offload.h"

namespace tandem::l2 {

class L2GpuTable {
 public:
  // Copies the table to device 0. Throws gpu::GpuError.
  explicit L2GpuTable(const MacTable& table);
  ~L2GpuTable();
  L2GpuTable(const L2GpuTable&) = delete;
  L2GpuTable& operator=(const L2GpuTable&) = delete;

  // Re-copies the buckets if the table changed (MacTable::version()).
  void sync(const MacTable& table);
  // A runner for the engine and the benches; valid while this table lives.
  std::unique_ptr<gpu::OffloadRunner> make_runner(const gpu::OffloadOptions& opts) const;
  // forward_batch() on the GPU: host arrays in and out, in batches (gpu::run_all).
  void forward(const uint64_t* macs, uint32_t* ports, size_t n);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem::l2
