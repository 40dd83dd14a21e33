// The IPv4 lookup on the GPU: a copy of a Dir24_8 table resident in device memory, offload runners
// whose per-item operation is the lookup (addresses in, next hops out), and a host-to-host path
// that pipelines copies and kernels (dir24_8_kernel.cuh) over streams.
// The implementation is ipv4_gpu.cu's (gpu/gpu_factory.h): without CUDA, create() throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "apps/ipv4/dir24_8.h"
#include "gpu/gpu_factory.h"
#include "gpu/gpu_runtime.h"
#include "gpu/offload.h"

namespace tandem::ipv4 {

class Ipv4GpuTable : public gpu::GpuTable {
 public:
  using Factory = gpu::GpuFactory<std::unique_ptr<Ipv4GpuTable>(const Dir24_8&)>;
  // Copies tbl24 and the used part of tbl8 to device 0. Throws gpu::GpuError.
  static std::unique_ptr<Ipv4GpuTable> create(const Dir24_8& table) { return Factory::create(table); }

  // Re-copies the table if it changed since the last copy (Dir24_8::version()). The device arrays
  // stay where they are, so runners stay valid.
  virtual void sync(const Dir24_8& table) = 0;

  // Host arrays in and out (pageable or pinned; pinned arrays skip a staging copy). Splits the
  // work into chunks pipelined over several streams so that the copy in, the kernel and the copy
  // out of consecutive chunks overlap. Returns when all results are in `next_hops`.
  virtual void lookup(const uint32_t* ips, uint32_t* next_hops, size_t n) = 0;

  virtual size_t device_bytes() const = 0;

  // The device copy (device pointers), for the kernels of the benchmarks' variants
  // (bench/variants/ipv4_gpu_variants.h). sync() keeps it where it is.
  struct DeviceArrays {
    const uint32_t* tbl24;
    const uint32_t* tbl8;
  };
  virtual DeviceArrays device_arrays() const = 0;
};

}  // namespace tandem::ipv4
