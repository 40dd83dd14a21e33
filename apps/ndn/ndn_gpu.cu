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

}  // namespace

struct NdnGpuTable::Impl {
  gpu::DeviceBuffer<NdnFibBucket> buckets;
  gpu::DeviceBuffer<NdnFibEntry> entries;
  gpu::DeviceBuffer<uint8_t> bytes;
  NdnFibView view{};
  uint64_t version = ~uint64_t{0};
  std::unique_ptr<gpu::OffloadRunner> host_runner;
};

NdnGpuTable::NdnGpuTable(const NdnFib& fib) : impl_(std::make_unique<Impl>()) {
  gpu::require_available();
  sync(fib);
}

NdnGpuTable::~NdnGpuTable() = default;

void NdnGpuTable::sync(const NdnFib& fib) {
  Impl& m = *impl_;
  if (fib.version() == m.version) return;
  const NdnFibView v = fib.view();
  m.buckets.upload(v.buckets, fib.bucket_count());
  m.entries.upload(v.entries, fib.size());
  m.bytes.upload(v.bytes, fib.bytes_size());
  m.view = {m.buckets.get(), v.mask, m.entries.get(), m.bytes.get(), v.max_components};
  m.version = fib.version();
  m.host_runner.reset();
}

std::unique_ptr<gpu::OffloadRunner> NdnGpuTable::make_runner(const gpu::OffloadOptions& opts) const {
  return std::make_unique<gpu::OffloadRunnerImpl<NdnLookupOp>>(NdnLookupOp{impl_->view}, opts);
}

void NdnGpuTable::lookup(const NdnItem* items, uint32_t* hops, size_t n) {
  gpu::run_all_lazily(impl_->host_runner, *this, size_t{1} << 16, items, hops, n);
}

}  // namespace tandem::ndn

TANDEM_REGISTER_GPU_PART("ndn")
