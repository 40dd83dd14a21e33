// A device copy of a HyperSplit tree: the arrays classify_hypersplit (acl_core.h) reads on the
// GPU, and a view of them. The host's leaf blocks (its vector path's copy of the leaves) stay on
// the host. The firewall classifier and the fw-router each upload their trees through it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "apps/acl/hypersplit.h"
#include "gpu/cuda_util.cuh"

namespace tandem::acl {

class DeviceHyperSplit {
 public:
  // Copies the tree to the current device. A copy from pageable memory may still be in flight
  // when cudaMemcpy returns, and runners' streams do not wait for the default stream: the copies
  // are complete when this returns.
  explicit DeviceHyperSplit(const HyperSplit& tree) : view_(tree.view()) {
    nodes_.upload(tree.nodes());
    leaf_rules_.upload(tree.leaf_rules());
    rules_.upload(tree.rules());
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(0));
    view_.nodes = nodes_.get();
    view_.leaf_rules = leaf_rules_.get();
    view_.rules = rules_.get();
  }
  DeviceHyperSplit(const DeviceHyperSplit&) = delete;
  DeviceHyperSplit& operator=(const DeviceHyperSplit&) = delete;

  // The device arrays, with the host tree's roots.
  const HsView& view() const { return view_; }
  size_t bytes() const {
    return nodes_.size() * sizeof(HsNode) + leaf_rules_.size() * sizeof(uint32_t) + rules_.size() * sizeof(Rule);
  }

 private:
  gpu::DeviceBuffer<HsNode> nodes_;
  gpu::DeviceBuffer<uint32_t> leaf_rules_;
  gpu::DeviceBuffer<Rule> rules_;
  HsView view_;
};

}  // namespace tandem::acl
