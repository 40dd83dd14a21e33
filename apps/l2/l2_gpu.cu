#include "apps/l2/l2_gpu.h"

#include "apps/l2/cuckoo_core.h"
#include "gpu/cuda_util.cuh"
#include "apps/registry.h"
#include "gpu/offload_runner.cuh"

namespace tandem::l2 {

namespace {

struct MacForwardOp {
  using In = uint64_t;
  using Out = uint32_t;
  const uint64_t* slots;
  uint64_t mask;
  __device__ uint32_t operator()(uint64_t mac) const {
    if (mac_is_group(mac)) return kFlood;
    return mac_forward_decision(mac, mac_lookup(slots, mask, mac));
  }
};

}  // namespace

struct L2GpuTable::Impl {
  gpu::DeviceBuffer<uint64_t> slots;
  uint64_t mask = 0;
  uint64_t version = ~uint64_t{0};
  std::unique_ptr<gpu::OffloadRunner> host_runner;
};

L2GpuTable::L2GpuTable(const MacTable& table) : impl_(std::make_unique<Impl>()) {
  std::string why;
  if (!gpu::available(&why)) throw gpu::GpuError("no GPU: " + why);
  impl_->slots.resize(table.slot_count());
  impl_->mask = table.bucket_mask();
  sync(table);
}

L2GpuTable::~L2GpuTable() = default;

void L2GpuTable::sync(const MacTable& table) {
  if (table.version() == impl_->version) return;
  TANDEM_CUDA_CHECK(cudaMemcpy(impl_->slots.get(), table.slots(), table.slot_count() * sizeof(uint64_t),
                               cudaMemcpyHostToDevice));
  impl_->version = table.version();
}

std::unique_ptr<gpu::OffloadRunner> L2GpuTable::make_runner(const gpu::OffloadOptions& opts) const {
  return std::make_unique<gpu::OffloadRunnerImpl<MacForwardOp>>(MacForwardOp{impl_->slots.get(), impl_->mask}, opts);
}

void L2GpuTable::forward(const uint64_t* macs, uint32_t* ports, size_t n) {
  if (!impl_->host_runner) {
    gpu::OffloadOptions o;
    o.capacity = size_t{1} << 20;
    impl_->host_runner = make_runner(o);
  }
  gpu::run_all(*impl_->host_runner, macs, ports, n);
}

}  // namespace tandem::l2

TANDEM_REGISTER_GPU_PART("l2")
