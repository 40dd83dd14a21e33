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

}  // namespace

struct AclGpuTable::Impl {
  gpu::DeviceBuffer<HsNode> nodes;
  gpu::DeviceBuffer<uint32_t> leaf_rules;
  gpu::DeviceBuffer<Rule> rules;
  HsView view{};  // the device arrays, the host tree's roots
  std::unique_ptr<gpu::OffloadRunner> host_runner;
};

AclGpuTable::AclGpuTable(const HyperSplit& tree) : impl_(std::make_unique<Impl>()) {
  gpu::require_available();
  impl_->nodes.upload(tree.nodes());
  impl_->leaf_rules.upload(tree.leaf_rules());
  impl_->rules.upload(tree.rules());
  impl_->view = tree.view();
  impl_->view.nodes = impl_->nodes.get();
  impl_->view.leaf_rules = impl_->leaf_rules.get();
  impl_->view.rules = impl_->rules.get();
}

AclGpuTable::~AclGpuTable() = default;

std::unique_ptr<gpu::OffloadRunner> AclGpuTable::make_runner(const gpu::OffloadOptions& opts) const {
  return std::make_unique<gpu::OffloadRunnerImpl<ClassifyOp>>(ClassifyOp{impl_->view}, opts);
}

void AclGpuTable::classify(const Header* headers, uint32_t* out, size_t n) {
  gpu::run_all_lazily(impl_->host_runner, *this, size_t{1} << 20, headers, out, n);
}

}  // namespace tandem::acl
