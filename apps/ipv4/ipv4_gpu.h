// The IPv4 lookup on the GPU: a copy of a Dir24_8 table resident in device memory, a kernel over
// an array of addresses, and a host-to-host path that pipelines copies and kernels over streams.
// The implementation is ipv4_gpu.cu's (gpu/gpu_factory.h): without CUDA, create() throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "apps/ipv4/dir24_8.h"
#include "gpu/gpu_factory.h"
#include "gpu/gpu_runtime.h"
#include "gpu/offload.h"

namespace tandem::ipv4 {

// A whole frame travelling to the GPU and back (the GPU-router report's first iteration).
struct alignas(16) FrameCell {
  uint8_t frame[60];  // the frame's first bytes (64-byte frames are 60 bytes without FCS)
  uint32_t meta;      // in: the frame's length (<= 60); out: the verdict (core/batch.h Verdict)
};
static_assert(sizeof(FrameCell) == 64);

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

  // Times the kernel alone on `ips` (copied to the device first), `reps` times after a warm-up.
  // Returns the milliseconds of each repetition (CUDA events), and the results in `next_hops`.
  virtual std::vector<double> time_kernel(const uint32_t* ips, uint32_t* next_hops, size_t n, int reps) = 0;

  virtual size_t device_bytes() const = 0;

  // An offload runner that forwards whole frames on the GPU, FrameCell in and out: parsing,
  // validation, the router's drop rules, the lookup and the TTL/checksum rewrite, with the code
  // of the CPU path (ipv4_frame_core.h; bench/variants/ipv4_forward.h forward_frame_cpu gives the
  // same cells). A length over 60 is taken as 60. Valid as long as make_runner's runners are.
  virtual std::unique_ptr<gpu::OffloadRunner> make_frame_runner(const gpu::OffloadOptions& opts) const = 0;
};

}  // namespace tandem::ipv4
