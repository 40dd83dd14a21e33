// The IPv6 lookup on the GPU: a device copy of an Lpm6 table (tbl24 and the groups in use) and
// offload runners whose per-item operation is lpm6_lookup (apps/ipv6/lpm6_core.h, the code the CPU
// paths run), 16-byte addresses in, 4-byte next hops out, in any of the four offload modes
// (gpu/offload.h). Builds without CUDA compile ipv6_gpu_none.cc, whose constructor throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "apps/ipv6/lpm6.h"
#include "gpu/gpu_runtime.h"
#include "gpu/offload.h"

namespace tandem::ipv6 {

class Ipv6GpuTable {
 public:
  // Copies the table to device 0, with room for `spare_groups` more groups than it uses now (and
  // at least twice as many) so that later sync() calls rarely need a bigger device array. Throws
  // gpu::GpuError.
  explicit Ipv6GpuTable(const Lpm6& table, uint32_t spare_groups = 1u << 16);
  ~Ipv6GpuTable();
  Ipv6GpuTable(const Ipv6GpuTable&) = delete;
  Ipv6GpuTable& operator=(const Ipv6GpuTable&) = delete;

  // Re-copies the table if it changed (Lpm6::version()). Returns false when the table outgrew the
  // device array, which was then reallocated: runners made before must be made again.
  bool sync(const Lpm6& table);

  // A runner for the engine and the benches; valid while this table lives and sync() returns true.
  std::unique_ptr<gpu::OffloadRunner> make_runner(const gpu::OffloadOptions& opts) const;

  // Host arrays in and out, through an async-mode runner in batches (gpu::run_all).
  void lookup(const uint8_t (*addrs)[16], uint32_t* next_hops, size_t n);

  size_t device_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem::ipv6
