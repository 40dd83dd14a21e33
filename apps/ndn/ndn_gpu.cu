#include "apps/ndn/ndn_gpu.h"

#include "apps/ndn/ndn_fib_core.h"
#include "gpu/cuda_util.cuh"
#include "apps/registry.h"
#include "gpu/offload_runner.cuh"

namespace tandem::ndn {

namespace {

struct NdnLookupOp {
  using In = NdnItem;
  using Out = uint32_t;
  NdnFibView fib;
  __device__ uint32_t operator()(const NdnItem& it) const {
    if (it.len == NdnItem::kTooLong) return kResolveOnCpu;
    return ndn_fib_lookup(fib, it.bytes, it.len);
  }
};

class NdnGpuTableImpl final : public NdnGpuTable {
 public:
  explicit NdnGpuTableImpl(const NdnFib& fib) {
    gpu::require_available();
    sync(fib);
  }

  void sync(const NdnFib& fib) override {
    if (fib.version() == version_) return;
    const NdnFibView v = fib.view();
    buckets_.upload(v.buckets, fib.bucket_count());
    entries_.upload(v.entries, fib.size());
    bytes_.upload(v.bytes, fib.bytes_size());
    view_ = {buckets_.get(), v.mask, entries_.get(), bytes_.get(), v.max_components};
    version_ = fib.version();
    drop_host_runner();
  }

  std::unique_ptr<gpu::OffloadRunner> make_runner(const gpu::OffloadOptions& opts) const override {
    return std::make_unique<gpu::OffloadRunnerImpl<NdnLookupOp>>(NdnLookupOp{view_}, opts);
  }

 private:
  gpu::DeviceBuffer<NdnFibBucket> buckets_;
  gpu::DeviceBuffer<NdnFibEntry> entries_;
  gpu::DeviceBuffer<uint8_t> bytes_;
  NdnFibView view_{};
  uint64_t version_ = ~uint64_t{0};
};

const NdnGpuTable::Factory::Registrar registered{&NdnGpuTable::Factory::make<NdnGpuTableImpl>};

}  // namespace
}  // namespace tandem::ndn

TANDEM_REGISTER_GPU_PART("ndn")
