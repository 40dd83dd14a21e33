// The IPv6 lookup on the GPU: a device copy of an Lpm6 table (tbl24 and the groups in use) and
// offload runners whose per-item operation is lpm6_lookup (apps/ipv6/lpm6_core.h, the code the CPU
// paths run), 16-byte addresses in, 4-byte next hops out, in any of the four offload modes
// (gpu/offload.h). The implementation is ipv6_gpu.cu's (gpu/gpu_factory.h): without CUDA, create()
// throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "apps/ipv6/lpm6.h"
#include "gpu/gpu_factory.h"
#include "gpu/gpu_runtime.h"
#include "gpu/offload.h"

namespace tandem::ipv6 {

class Ipv6GpuTable : public gpu::GpuTable {
 public:
  using Factory = gpu::GpuFactory<std::unique_ptr<Ipv6GpuTable>(const Lpm6&, uint32_t)>;
  // Copies the table to device 0, with room for `spare_groups` more groups than it uses now (and
  // at least twice as many) so that later sync() calls rarely need a bigger device array. Throws
  // gpu::GpuError.
  static std::unique_ptr<Ipv6GpuTable> create(const Lpm6& table, uint32_t spare_groups = 1u << 16) {
    return Factory::create(table, spare_groups);
  }

  // Re-copies the table if it changed (Lpm6::version()). Returns false when the table outgrew the
  // device array, which was then reallocated: runners made before must be made again.
  virtual bool sync(const Lpm6& table) = 0;

  // Host arrays in and out, through an async-mode runner in batches (gpu::run_all).
  void lookup(const uint8_t (*addrs)[16], uint32_t* next_hops, size_t n) {
    run_host_arrays(size_t{1} << 20, addrs, next_hops, n);
  }

  virtual size_t device_bytes() const = 0;
};

}  // namespace tandem::ipv6
