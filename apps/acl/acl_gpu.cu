#include "apps/acl/acl_gpu.h"

#include "gpu/cuda_util.cuh"
#include "gpu/offload_runner.cuh"

namespace tandem::acl {

namespace {

struct ClassifyOp {
  using In = Header;
  using Out = uint32_t;
  HsView tree;
  __device__ uint32_t operator()(const Header& h) const { return classify_hypersplit(tree, h); }
};

class AclGpuTableImpl final : public AclGpuTable {
 public:
  explicit AclGpuTableImpl(const HyperSplit& tree) {
    gpu::require_available();
    nodes_.upload(tree.nodes());
    leaf_rules_.upload(tree.leaf_rules());
    rules_.upload(tree.rules());
    view_ = tree.view();
    view_.nodes = nodes_.get();
    view_.leaf_rules = leaf_rules_.get();
    view_.rules = rules_.get();
  }

  std::unique_ptr<gpu::OffloadRunner> make_runner(const gpu::OffloadOptions& opts) const override {
    return std::make_unique<gpu::OffloadRunnerImpl<ClassifyOp>>(ClassifyOp{view_}, opts);
  }

 private:
  gpu::DeviceBuffer<HsNode> nodes_;
  gpu::DeviceBuffer<uint32_t> leaf_rules_;
  gpu::DeviceBuffer<Rule> rules_;
  HsView view_{};  // the device arrays, the host tree's roots
};

const AclGpuTable::Factory::Registrar registered{&AclGpuTable::Factory::make<AclGpuTableImpl>};

}  // namespace
}  // namespace tandem::acl
