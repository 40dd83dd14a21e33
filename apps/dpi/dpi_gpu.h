// DPI stage 1 on the GPU: a device copy of an Aho-Corasick automaton (aho_corasick.h) and a kernel
// that walks one payload per thread with the CPU's own step and report code (ac_core.h).
//
// Payloads go to the GPU batched by bytes (up to `batch_bytes` of payload per kernel), each batch
// sorted by length so that the threads of a warp walk payloads of about the same length (the
// GPU form of the G-Opt paper's sort). A thread keeps the distinct ids it finds (up to kMaxIds)
// in a small hash set; they are appended to one compact array, so only what was found comes back
// over PCIe. A payload with more than kMaxIds distinct patterns is searched again on the CPU, so
// results never depend on that limit. Two slots alternate: while the GPU works on one batch, the host packs the next.
// The implementation is dpi_gpu.cu's (gpu/gpu_factory.h): without CUDA, create() throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "apps/dpi/aho_corasick.h"
#include "gpu/gpu_factory.h"
#include "gpu/gpu_runtime.h"

namespace tandem::dpi {

class AhoCorasickGpu {
 public:
  static constexpr uint32_t kMaxIds = 192;

  struct Stats {
    double kernel_ms = 0;      // the kernels alone (CUDA events), summed over batches
    size_t batches = 0;
    size_t cpu_fallbacks = 0;  // payloads with over kMaxIds distinct patterns, redone on the CPU
  };

  using Factory = gpu::GpuFactory<std::unique_ptr<AhoCorasickGpu>(const AhoCorasick&, size_t)>;
  // Copies the automaton to device 0. `ac` must outlive this (the CPU fallback uses it).
  // Throws gpu::GpuError.
  static std::unique_ptr<AhoCorasickGpu> create(const AhoCorasick& ac, size_t batch_bytes = size_t{16} << 20) {
    return Factory::create(ac, batch_bytes);
  }
  virtual ~AhoCorasickGpu() = default;
  AhoCorasickGpu(const AhoCorasickGpu&) = delete;
  AhoCorasickGpu& operator=(const AhoCorasickGpu&) = delete;

  // The same answers as AhoCorasick::patterns_in_batch: out[0 .. n) get the payloads' sorted ids.
  virtual void patterns_in_batch(const uint8_t* const* p, const uint32_t* len, size_t n, std::vector<uint32_t>* out) = 0;

  // Of the last patterns_in_batch call.
  const Stats& stats() const { return stats_; }
  virtual size_t device_bytes() const = 0;

 protected:
  AhoCorasickGpu() = default;
  Stats stats_;
};

}  // namespace tandem::dpi
