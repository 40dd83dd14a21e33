// The L2 switch's lookup on the GPU: a device copy of a MacTable's buckets and offload runners
// whose per-item operation is the forwarding decision of cuckoo_core.h (mac_lookup, then
// mac_forward_decision: the code the CPU paths run), 8-byte MACs in, 4-byte ports (or kFlood) out.
// The implementation is l2_gpu.cu's (gpu/gpu_factory.h): without CUDA, create() throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "apps/l2/mac_table.h"
#include "gpu/gpu_factory.h"
#include "gpu/gpu_runtime.h"
#include "gpu/offload.h"

namespace tandem::l2 {

class L2GpuTable : public gpu::GpuTable {
 public:
  using Factory = gpu::GpuFactory<std::unique_ptr<L2GpuTable>(const MacTable&)>;
  // Copies the table to device 0. Throws gpu::GpuError.
  static std::unique_ptr<L2GpuTable> create(const MacTable& table) { return Factory::create(table); }

  // Re-copies the buckets if the table changed (MacTable::version()).
  virtual void sync(const MacTable& table) = 0;
  // The device copy of the slots (MacTable::slots()), which live updates write (mac_control.h).
  virtual uint64_t* device_slots() const = 0;
  // forward_batch() on the GPU: host arrays in and out, in batches (gpu::run_all).
  void forward(const uint64_t* macs, uint32_t* ports, size_t n) { run_host_arrays(size_t{1} << 20, macs, ports, n); }
};

}  // namespace tandem::l2
