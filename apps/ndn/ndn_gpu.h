// NDN name lookup on the GPU: a device copy of an NdnFib (buckets, entries, prefix bytes) and
// offload runners whose per-item operation is ndn_fib_lookup (ndn_fib_core.h, the code the CPU
// paths run). An item is a name as its Name TLV's value, in a fixed 256-byte slot (NdnItem): the
// runners move fixed-size items, and 99% of the names made from the real URLs fit (median 92
// bytes). A longer name's item is marked, and its result is kResolveOnCpu: the worker looks it up
// itself. The implementation is ndn_gpu.cu's (gpu/gpu_factory.h): without CUDA, create() throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "apps/ndn/ndn_fib.h"
#include "gpu/gpu_factory.h"
#include "gpu/gpu_runtime.h"
#include "gpu/offload.h"

namespace tandem::ndn {

struct alignas(16) NdnItem {
  static constexpr uint16_t kTooLong = 0xFFFF;
  uint16_t len;          // bytes of the name, or kTooLong
  uint8_t bytes[254];
};
static_assert(sizeof(NdnItem) == 256);

// The result of an item whose name did not fit.
inline constexpr uint32_t kResolveOnCpu = 0xFFFFFFFEu;

inline void make_item(const uint8_t* name, uint32_t len, NdnItem* item) {
  if (len > sizeof item->bytes) {
    item->len = NdnItem::kTooLong;
    return;
  }
  item->len = static_cast<uint16_t>(len);
  std::memcpy(item->bytes, name, len);
}

class NdnGpuTable : public gpu::GpuTable {
 public:
  using Factory = gpu::GpuFactory<std::unique_ptr<NdnGpuTable>(const NdnFib&)>;
  // Copies the FIB to device 0. Throws gpu::GpuError.
  static std::unique_ptr<NdnGpuTable> create(const NdnFib& fib) { return Factory::create(fib); }

  // Re-copies the FIB if it changed (NdnFib::version()). Runners made before must be made again
  // (the device arrays may have moved).
  virtual void sync(const NdnFib& fib) = 0;
  // n items in, n results out (kResolveOnCpu for a name that did not fit), in batches.
  void lookup(const NdnItem* items, uint32_t* hops, size_t n) { run_host_arrays(size_t{1} << 16, items, hops, n); }
};

}  // namespace tandem::ndn
