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

class L2GpuTableImpl final : public L2GpuTable {
 public:
  explicit L2GpuTableImpl(const MacTable& table) {
    gpu::require_available();
    slots_.resize(table.slot_count());
    mask_ = table.bucket_mask();
    sync(table);
  }

  void sync(const MacTable& table) override {
    if (table.version() == version_) return;
    slots_.copy_from(table.slots(), table.slot_count());
    version_ = table.version();
  }

  uint64_t* device_slots() const override { return const_cast<uint64_t*>(slots_.get()); }
  std::unique_ptr<gpu::OffloadRunner> make_runner(const gpu::OffloadOptions& opts) const override {
    return std::make_unique<gpu::OffloadRunnerImpl<MacForwardOp>>(MacForwardOp{slots_.get(), mask_}, opts);
  }

 private:
  gpu::DeviceBuffer<uint64_t> slots_;
  uint64_t mask_ = 0;
  uint64_t version_ = ~uint64_t{0};
};

const L2GpuTable::Factory::Registrar registered{&L2GpuTable::Factory::make<L2GpuTableImpl>};

}  // namespace
}  // namespace tandem::l2

TANDEM_REGISTER_GPU_PART("l2")
