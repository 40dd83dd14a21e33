// The packet hashing app's item path on the GPU: offload runners whose per-item operation is
// digest_item (hashing_core.h: a payload of up to 508 bytes in, the digests of its chunks out, by
// apps/crypto/digest_core.h's code). The table stays on the host: apply() looks the digests up.
// The implementation is hashing_gpu.cu's (gpu/gpu_factory.h): without CUDA, creating one throws.
#pragma once

#include <cstdint>
#include <memory>

#include "apps/crypto/digest_core.h"
#include "gpu/gpu_factory.h"
#include "gpu/offload.h"

namespace tandem::hashing {

// A runner for results of `digest_slots` digests (1 for whole payloads, kChunkSlots for chunks).
// Throws gpu::GpuError without a usable GPU.
struct DigestRunnerTag;
using DigestRunnerFactory =
    gpu::GpuFactory<std::unique_ptr<gpu::OffloadRunner>(uint32_t digest_slots, crypto::DigestAlgo algo, uint32_t chunk,
                                                        const gpu::OffloadOptions& opts),
                    DigestRunnerTag>;
inline std::unique_ptr<gpu::OffloadRunner> make_digest_runner(uint32_t digest_slots, crypto::DigestAlgo algo,
                                                              uint32_t chunk, const gpu::OffloadOptions& opts) {
  return DigestRunnerFactory::create(digest_slots, algo, chunk, opts);
}

}  // namespace tandem::hashing
