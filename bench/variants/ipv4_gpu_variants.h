// The GPU forms of IPv4 forwarding that only the benchmarks measure, on an Ipv4GpuTable's device
// copy: the lookup kernel alone (`tandem bench ipv4`'s gpu_kernel row), and whole frames on the
// GPU (`tandem bench gpu-router`'s first iteration, the GPU-router report's). The product's GPU
// path is the table's own runner (apps/ipv4/ipv4_gpu.h). The implementation is
// ipv4_gpu_variants.cu's (gpu/gpu_factory.h): without CUDA, create() throws gpu::GpuError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "apps/ipv4/ipv4_gpu.h"
#include "gpu/gpu_factory.h"
#include "gpu/offload.h"

namespace tandem::ipv4 {

// A whole frame travelling to the GPU and back.
struct alignas(16) FrameCell {
  uint8_t frame[60];  // the frame's first bytes (64-byte frames are 60 bytes without FCS)
  uint32_t meta;      // in: the frame's length (<= 60); out: the verdict (core/batch.h Verdict)
};
static_assert(sizeof(FrameCell) == 64);

class Ipv4GpuVariants {
 public:
  using Factory = gpu::GpuFactory<std::unique_ptr<Ipv4GpuVariants>(const Ipv4GpuTable&)>;
  // Works on `table`'s device copy, which must outlive this. Throws gpu::GpuError.
  static std::unique_ptr<Ipv4GpuVariants> create(const Ipv4GpuTable& table) { return Factory::create(table); }
  virtual ~Ipv4GpuVariants() = default;

  // Times the lookup kernel alone on `ips` (copied to the device first), `reps` repetitions after
  // a warm-up, each launching it back to back until `min_seconds` of GPU time have passed (at
  // least once). Returns the milliseconds of one launch per repetition (CUDA events over the
  // repetition's launches), and the results in `next_hops`.
  virtual std::vector<double> time_kernel(const uint32_t* ips, uint32_t* next_hops, size_t n, int reps,
                                          double min_seconds = 0) = 0;

  // An offload runner that forwards whole frames on the GPU, FrameCell in and out: parsing,
  // validation, the router's drop rules, the lookup and the TTL/checksum rewrite, with the code
  // of the CPU path (apps/ipv4/ipv4_frame_core.h; ipv4_forward.h forward_frame_cpu gives the same
  // cells). A length over 60 is taken as 60. Valid as long as the table's own runners are.
  virtual std::unique_ptr<gpu::OffloadRunner> make_frame_runner(const gpu::OffloadOptions& opts) const = 0;
};

}  // namespace tandem::ipv4
