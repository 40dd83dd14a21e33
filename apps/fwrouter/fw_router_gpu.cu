#include "apps/fwrouter/fw_router_gpu.h"

#include <algorithm>

#include "apps/acl/hypersplit_device.cuh"
#include "apps/fwrouter/fw_router_core.h"
#include "gpu/cuda_util.cuh"
#include "apps/registry.h"
#include "gpu/offload_runner.cuh"

namespace tandem::fwrouter {

namespace {

// The whole decision as the offload runners' per-item operation: the app's GPU path. The tables
// come from the root (one address for every thread: the loads are served from the cache), which
// changes only between batches.
struct FwRouterOp {
  using In = acl::Header;
  using Out = uint32_t;
  const FwRouterGpu::DeviceTables* root;
  __device__ uint32_t operator()(const acl::Header& h) const {
    const FwRouterGpu::DeviceTables& t = *root;
    return fw_router_decide(t.tree, t.actions, t.default_action, t.tbl24, t.tbl8, h);
  }
};

// The device copy of one rule set: the tree and the action bytes.
struct DeviceRules {
  acl::DeviceHyperSplit tree;
  gpu::DeviceBuffer<uint8_t> actions;

  // Uploads `tables`' rules; `t` gets their device pointers (its routes' are left as they are).
  DeviceRules(const FwRouterTables& tables, FwRouterGpu::DeviceTables* t) : tree(*tables.tree) {
    actions.upload(tables.actions);
    // The actions' copy complete too before runners read it (DeviceHyperSplit says why).
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(0));
    t->tree = tree.view();
    t->actions = actions.get();
    t->default_action = tables.default_action;
  }
  size_t bytes() const { return tree.bytes() + actions.size(); }
};

class FwRouterGpuImpl final : public FwRouterGpu {
 public:
  explicit FwRouterGpuImpl(const FwRouterTables& tables) : rules_((gpu::require_available(), tables), &t_) {
    const ipv4::Dir24_8& d = *tables.table;
    tbl24_.upload(d.tbl24(), ipv4::Dir24_8::kTbl24Entries);
    tbl8_.upload(d.tbl8(), size_t{std::max<uint32_t>(d.tbl8_groups_high_water(), 1)} * ipv4::Dir24_8::kTbl8GroupEntries);
    t_.tbl24 = tbl24_.get();
    t_.tbl8 = tbl8_.get();
    root_.upload(&t_, 1);
    // The copies from pageable memory may still be in flight when cudaMemcpy returns, and the
    // runners' streams do not wait for the default stream.
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(0));
  }

  std::unique_ptr<gpu::OffloadRunner> make_runner(const gpu::OffloadOptions& opts) const override {
    return std::make_unique<gpu::OffloadRunnerImpl<FwRouterOp>>(FwRouterOp{root_.get()}, opts);
  }

  DeviceTables device_tables() const override { return t_; }
  DeviceTables* device_root() const override { return const_cast<DeviceTables*>(root_.get()); }

  gpu::UploadedVersion upload_rules(const FwRouterTables& tables) const override {
    DeviceTables root = t_;
    auto rules = std::make_shared<DeviceRules>(tables, &root);
    const size_t bytes = rules->bytes();
    return gpu::UploadedVersion::of(root, std::move(rules), bytes);
  }

  size_t device_bytes() const override {
    return rules_.bytes() + (tbl24_.size() + tbl8_.size()) * sizeof(uint32_t) + sizeof(DeviceTables);
  }

 private:
  DeviceTables t_{};
  DeviceRules rules_;
  gpu::DeviceBuffer<uint32_t> tbl24_, tbl8_;
  gpu::DeviceBuffer<DeviceTables> root_;
};

const FwRouterGpu::Factory::Registrar registered{&FwRouterGpu::Factory::make<FwRouterGpuImpl>};

}  // namespace
}  // namespace tandem::fwrouter

TANDEM_REGISTER_GPU_PART("fw-router")
