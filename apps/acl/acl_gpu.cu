#include "apps/acl/acl_gpu.h"

#include "apps/acl/hypersplit_device.cuh"

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
  explicit AclGpuTableImpl(const HyperSplit& tree) : tree_((gpu::require_available(), tree)) {}

  std::unique_ptr<gpu::OffloadRunner> make_runner(const gpu::OffloadOptions& opts) const override {
    return std::make_unique<gpu::OffloadRunnerImpl<ClassifyOp>>(ClassifyOp{tree_.view()}, opts);
  }

 private:
  DeviceHyperSplit tree_;
};

const AclGpuTable::Factory::Registrar registered{&AclGpuTable::Factory::make<AclGpuTableImpl>};

}  // namespace
}  // namespace tandem::acl
