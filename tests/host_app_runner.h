// A runner that does an app's CPU lookup on the host at submit: the engines' worker logic (items
// written into a batch, results read back or in place) runs on every machine with it, for any
// app's data blocks (item_bytes in, result_bytes out).
#pragma once

#include <cstdint>
#include <vector>

#include "apps/forward_app.h"
#include "gpu/offload.h"

namespace tandem::test {

class HostAppRunner final : public gpu::OffloadRunner {
 public:
  HostAppRunner(const ForwardApp& app, size_t cap, int slots)
      : app_(app),
        cap_(cap),
        in_(slots, std::vector<uint8_t>(cap * app.item_bytes())),
        out_(slots, std::vector<uint8_t>(cap * app.result_bytes())) {}
  gpu::GpuMode mode() const override { return gpu::GpuMode::kAsync; }
  size_t capacity() const override { return cap_; }
  int slots() const override { return static_cast<int>(in_.size()); }
  size_t in_item_bytes() const override { return app_.item_bytes(); }
  size_t out_item_bytes() const override { return app_.result_bytes(); }
  void* in(int s) override { return in_[s].data(); }
  void* out(int s) override { return out_[s].data(); }
  void submit(int s, size_t n) override { app_.lookup_items(in_[s].data(), out_[s].data(), n); }
  void wait(int) override {}
  bool ready(int) override { return true; }

 private:
  const ForwardApp& app_;
  size_t cap_;
  std::vector<std::vector<uint8_t>> in_;
  std::vector<std::vector<uint8_t>> out_;
};

}  // namespace tandem::test
