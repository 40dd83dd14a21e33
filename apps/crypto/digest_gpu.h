// Digests of many messages on the GPU, one thread per message, by the code in digest_core.h:
// host arrays in, digests out. Builds without CUDA have no implementation: create() throws the
// no-GPU gpu::GpuError (gpu/gpu_factory.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "apps/crypto/digest_core.h"
#include "gpu/gpu_factory.h"
#include "gpu/gpu_runtime.h"

namespace tandem::crypto {

class DigestGpu {
 public:
  using Factory = gpu::GpuFactory<std::unique_ptr<DigestGpu>()>;
  // Throws gpu::GpuError without a usable GPU.
  static std::unique_ptr<DigestGpu> create() {
    gpu::require_available();
    return Factory::create();
  }
  virtual ~DigestGpu() = default;

  // Message k is bytes[offsets[k] .. offsets[k] + lengths[k]) of the `total` bytes; its digest
  // goes to out + k * digest_bytes(algo). One batch: copies in, kernel, copies out. Throws
  // gpu::GpuError, and std::invalid_argument for a message outside the bytes.
  virtual void digests(DigestAlgo algo, const uint8_t* bytes, size_t total, const uint32_t* offsets,
                       const uint32_t* lengths, size_t n, uint8_t* out) = 0;
};

}  // namespace tandem::crypto
