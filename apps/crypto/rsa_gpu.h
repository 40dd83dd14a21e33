// RSA-2048 private-key operations (raw, CRT) in batches on the GPU, by the code in rsa_core.h:
// two threads per operation, one per CRT half, which meet through a warp shuffle for the
// recombination. Keys are uploaded once (any number); each operation uses key 0 or, in per-key
// mode, the key its index names. Host-only header: builds without CUDA have no implementation, and
// create() throws the no-GPU gpu::GpuError (gpu/gpu_factory.h).
//
// A runner holds one batch's buffers and one stream: one caller at a time.
//
// Side channels: see rsa_core.h. RsaTableLookup::kScan keeps every memory address independent of
// the private exponents; kDirect is faster and is not constant-time. Raw RSA: no padding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "apps/crypto/rsa_core.h"
#include "gpu/gpu_factory.h"
#include "gpu/gpu_runtime.h"

namespace tandem::crypto {

// What the compiler and the occupancy calculator made of one kernel variant.
struct RsaKernelInfo {
  int registers = 0;         // per thread
  size_t local_bytes = 0;    // per thread: the window table, the input, spills if any
  int threads_per_block = 0;
  int blocks_per_sm = 0;     // resident at once
  int sm_count = 0;
  // Operations the whole GPU holds in flight at once (two threads each).
  long long ops_in_flight() const { return 1LL * blocks_per_sm * threads_per_block / 2 * sm_count; }
};

class RsaGpu {
 public:
  using Factory = gpu::GpuFactory<std::unique_ptr<RsaGpu>(const std::vector<RsaCrtKey>&, size_t)>;
  // A runner over a device copy of `keys` (at least one), for batches of up to max_ops operations.
  // Throws gpu::GpuError without a usable GPU, std::invalid_argument for no keys or max_ops 0.
  static std::unique_ptr<RsaGpu> create(const std::vector<RsaCrtKey>& keys, size_t max_ops) {
    gpu::require_available();
    return Factory::create(keys, max_ops);
  }
  virtual ~RsaGpu() = default;

  virtual size_t max_ops() const = 0;
  // The batch's pinned host arrays. In: per operation its input c (kRsaBytes, big-endian) and,
  // for per-key batches, its key index. Out: m = c^d mod n (kRsaBytes, big-endian) and a status,
  // 1 for done, 0 for refused (c >= n, or a key index beyond the keys), with m all zeros.
  virtual uint8_t* inputs() = 0;
  virtual uint32_t* key_indices() = 0;
  virtual const uint8_t* outputs() const = 0;
  virtual const uint8_t* status() const = 0;

  // Host to host: copies the first n inputs (and key indices if per_key) in, runs, copies the
  // outputs and statuses back. Without per_key every operation uses key 0. Throws
  // std::invalid_argument for n > max_ops(), gpu::GpuError on CUDA failure.
  virtual void run(size_t n, bool per_key = false, RsaTableLookup lookup = RsaTableLookup::kScan) = 0;
  // Device only: copies the batch in once, then times `reps` kernels over it. Seconds per kernel.
  virtual double time_kernel(size_t n, bool per_key, RsaTableLookup lookup, int reps) = 0;
  virtual RsaKernelInfo kernel_info(RsaTableLookup lookup) const = 0;
};

}  // namespace tandem::crypto
