#include "apps/fwrouter/fw_router_gpu.h"

#include <algorithm>

#include "apps/fwrouter/fw_router_core.h"
#include "gpu/cuda_util.cuh"
#include "apps/registry.h"
#include "gpu/offload_runner.cuh"

namespace tandem::fwrouter {

namespace {

// The whole decision as the offload runners' per-item operation: the app's GPU path.
struct FwRouterOp {
  using In = acl::Header;
  using Out = uint32_t;
  FwRouterGpu::DeviceTables t;
  __device__ uint32_t operator()(const acl::Header& h) const {
    return fw_router_decide(t.tree, t.actions, t.default_action, t.tbl24, t.tbl8, h);
  }
};

class FwRouterGpuImpl final : public FwRouterGpu {
 public:
  explicit FwRouterGpuImpl(const FwRouterTables& tables) {
    gpu::require_available();
    const acl::HyperSplit& hs = *tables.tree;
    nodes_.upload(hs.nodes());
    leaf_rules_.upload(hs.leaf_rules());
    rules_.upload(hs.rules());
    actions_.upload(tables.actions);
    const ipv4::Dir24_8& d = *tables.table;
    tbl24_.upload(d.tbl24(), ipv4::Dir24_8::kTbl24Entries);
    tbl8_.upload(d.tbl8(), size_t{std::max<uint32_t>(d.tbl8_groups_high_water(), 1)} * ipv4::Dir24_8::kTbl8GroupEntries);
    t_.tree = hs.view();
    t_.tree.nodes = nodes_.get();
    t_.tree.leaf_rules = leaf_rules_.get();
    t_.tree.rules = rules_.get();
    t_.actions = actions_.get();
    t_.default_action = tables.default_action;
    t_.tbl24 = tbl24_.get();
    t_.tbl8 = tbl8_.get();
  }

  std::unique_ptr<gpu::OffloadRunner> make_runner(const gpu::OffloadOptions& opts) const override {
    return std::make_unique<gpu::OffloadRunnerImpl<FwRouterOp>>(FwRouterOp{t_}, opts);
  }

  DeviceTables device_tables() const override { return t_; }

  size_t device_bytes() const override {
    return nodes_.size() * sizeof(acl::HsNode) + leaf_rules_.size() * sizeof(uint32_t) +
           rules_.size() * sizeof(acl::Rule) + actions_.size() + (tbl24_.size() + tbl8_.size()) * sizeof(uint32_t);
  }

 private:
  gpu::DeviceBuffer<acl::HsNode> nodes_;
  gpu::DeviceBuffer<uint32_t> leaf_rules_;
  gpu::DeviceBuffer<acl::Rule> rules_;
  gpu::DeviceBuffer<uint8_t> actions_;
  gpu::DeviceBuffer<uint32_t> tbl24_, tbl8_;
  DeviceTables t_{};
};

const FwRouterGpu::Factory::Registrar registered{&FwRouterGpu::Factory::make<FwRouterGpuImpl>};

}  // namespace
}  // namespace tandem::fwrouter

TANDEM_REGISTER_GPU_PART("fw-router")
