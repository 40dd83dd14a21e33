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
  gpu::require_available();
  impl_->slots.resize(table.slot_count());
  impl_->mask = table.bucket_mask();
  sync(table);
}

L2GpuTable::~L2GpuTable() = default;

void L2GpuTable::sync(const MacTable& table) {
  if (table.version() == impl_->version) return;
  impl_->slots.copy_from(table.slots(), table.slot_count());
  impl_->version = table.version();
}

std::unique_ptr<gpu::OffloadRunner> L2GpuTable::make_runner(const gpu::OffloadOptions& opts) const {
  return std::make_unique<gpu::OffloadRunnerImpl<MacForwardOp>>(MacForwardOp{impl_->slots.get(), impl_->mask}, opts);
}

void L2GpuTable::forward(const uint64_t* macs, uint32_t* ports, size_t n) {
  gpu::run_all_lazily(impl_->host_runner, *this, size_t{1} << 20, macs, ports, n);
}

}  // namespace tandem::l2

TANDEM_REGISTER_GPU_PART("l2")
