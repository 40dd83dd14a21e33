// The firewall classifier on the GPU: a device copy of a HyperSplit tree (nodes, leaf rule lists,
// rules) and offload runners whose per-item operation is classify_hypersplit (acl_core.h, the code
// the CPU runs): 16-byte headers in, 4-byte rule indices (kNoMatch for none) out. The
// implementation is acl_gpu.cu's (gpu/gpu_factory.h): without CUDA, create() throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "apps/acl/hypersplit.h"
#include "gpu/gpu_factory.h"
#include "gpu/gpu_runtime.h"
#include "gpu/offload.h"

namespace tandem::acl {

class AclGpuTable : public gpu::GpuTable {
 public:
  using Factory = gpu::GpuFactory<std::unique_ptr<AclGpuTable>(const HyperSplit&)>;
  // Copies the tree to device 0. Throws gpu::GpuError.
  static std::unique_ptr<AclGpuTable> create(const HyperSplit& tree) { return Factory::create(tree); }

  // Host arrays in and out, in batches (gpu::run_all).
  void classify(const Header* headers, uint32_t* out, size_t n) { run_host_arrays(size_t{1} << 20, headers, out, n); }
};

}  // namespace tandem::acl
