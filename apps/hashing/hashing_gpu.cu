// The packet hashing app's GPU item path: payload items in, their chunks' digests out.
#include <string>

#include "apps/hashing/hashing_core.h"
#include "apps/hashing/hashing_gpu.h"
#include "apps/registry.h"
#include "gpu/offload_runner.cuh"

namespace tandem::hashing {

namespace {

template <uint32_t kSlots>
struct DigestItemOp {
  using In = HashItem;
  using Out = HashDigests<kSlots>;
  DigestAlgo algo;
  uint32_t chunk;
  __device__ Out operator()(const HashItem& item) const { return digest_item<kSlots>(algo, chunk, item); }
};

template <uint32_t kSlots>
std::unique_ptr<gpu::OffloadRunner> runner(DigestAlgo algo, uint32_t chunk, const gpu::OffloadOptions& opts) {
  return std::make_unique<gpu::OffloadRunnerImpl<DigestItemOp<kSlots>>>(DigestItemOp<kSlots>{algo, chunk}, opts);
}

std::unique_ptr<gpu::OffloadRunner> make_runner(uint32_t digest_slots, DigestAlgo algo, uint32_t chunk,
                                                const gpu::OffloadOptions& opts) {
  gpu::require_available();
  if (digest_slots == 1) return runner<1>(algo, chunk, opts);
  if (digest_slots == kChunkSlots) return runner<kChunkSlots>(algo, chunk, opts);
  throw gpu::GpuError("hashing: no digest runner for results of " + std::to_string(digest_slots) + " digests");
}

const DigestRunnerFactory::Registrar registered{&make_runner};

}  // namespace
}  // namespace tandem::hashing

TANDEM_REGISTER_GPU_PART("hashing")
