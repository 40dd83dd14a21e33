// The firewall classifier on the GPU: a device copy of a HyperSplit tree (nodes, leaf rule lists,
// rules) and offload runners whose per-item operation is classify_hypersplit (acl_core.h, the code
// the CPU runs): 16-byte headers in, 4-byte rule indices (kNoMatch for none) out. Builds without
// CUDA compile acl_gpu_none.cc, whose constructor throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "apps/acl/hypersplit.h"
#include "gpu/gpu_runtime.h"
#include "gpu/offload.h"

namespace tandem::acl {

class AclGpuTable {
 public:
  explicit AclGpuTable(const HyperSplit& tree);  // throws gpu::GpuError
  ~AclGpuTable();
  AclGpuTable(const AclGpuTable&) = delete;
  AclGpuTable& operator=(const AclGpuTable&) = delete;

  std::unique_ptr<gpu::OffloadRunner> make_runner(const gpu::OffloadOptions& opts) const;
  // Host arrays in and out, in batches (gpu::run_all).
  void classify(const Header* headers, uint32_t* out, size_t n);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem::acl
