// One app's traffic through the worker pipeline (sched/workers.h) every way the tests compare
// with a reference run: tests/apps_pipeline_test.cc does it for every registered app,
// apps/fwrouter/fw_router_test.cc for fw-router's own cases. What a run must match is the
// caller's `check`.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "apps/forward_app.h"
#include "gpu/offload.h"
#include "gpu/offload_engine.h"
#include "io/packet_store.h"
#include "sched/workers.h"

namespace tandem::test {

// A runner that does the app's CPU lookup on the host at submit: the engines' worker logic (items
// written into a batch, results read back or in place) runs on every machine with it, for any
// app's data blocks (item_bytes in, result_bytes out).
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

// A run on the app's ports with every decision checked against its reference (--verify).
inline WorkersResult run_verified(const ForwardApp& app, const PacketStore& s, WorkersConfig wc) {
  wc.ports = app.ports();
  wc.verify = true;
  return run_workers(app, s, wc);
}

// Checks one run against the reference run; `what` names the run in failure messages.
using CheckRun = std::function<void(const WorkersResult& run, const std::string& what)>;

// The CPU paths besides the scalar one: batched with 1 and 3 workers, the offload engine without
// a GPU (the app's CPU fallback behind the GPU path's worker logic), and the staged engine over a
// HostAppRunner.
inline void check_cpu_paths(const ForwardApp& app, const PacketStore& s, const std::string& label,
                            const CheckRun& check) {
  for (int w : {1, 3}) {
    WorkersConfig wc;
    wc.path = LookupPath::kBatched;
    wc.workers = w;
    wc.burst = w == 1 ? 256 : 61;
    check(run_verified(app, s, wc), label + " batched, workers " + std::to_string(w));
  }
  {
    gpu::EngineConfig ec;
    ec.max_batch = 2048;
    ec.max_wait_ns = 20000;
    ec.queue_depth = 16;
    WorkersConfig g;
    g.workers = 2;
    g.burst = 64;
    g.max_bursts_in_flight = 16;
    GpuEngine e = attach_gpu_engine(g, app, nullptr, ec, /*staged=*/false);
    check(run_verified(app, s, g), label + " engine, CPU fallback");
    EXPECT_GT(e.stats().cpu_batches, 0u) << label;
  }
  {
    gpu::EngineConfig ec;
    ec.max_batch = 1024;
    ec.max_wait_ns = 20000;
    WorkersConfig g;
    g.workers = 3;
    g.burst = 100;
    g.max_bursts_in_flight = 32;
    GpuEngine e = attach_gpu_engine(g, app, std::make_unique<HostAppRunner>(app, 1024, 3), ec, /*staged=*/true);
    check(run_verified(app, s, g), label + " staged engine, host runner");
    EXPECT_GT(e.stats().batches, 0u) << label;
  }
}

// What every comparison of the offload modes runs with: batches of up to 4096 items in three
// slots, a partial one flushed after 30 us.
inline gpu::OffloadOptions mode_options(gpu::GpuMode mode) {
  gpu::OffloadOptions oo;
  oo.mode = mode;
  oo.capacity = 4096;
  oo.slots = 3;
  return oo;
}
inline gpu::EngineConfig mode_engine_config() {
  gpu::EngineConfig ec;
  ec.max_batch = 4096;
  ec.max_wait_ns = 30000;
  ec.queue_depth = 64;
  return ec;
}

// Every offload mode, through the staged and the gathering engine; needs a GPU (and a mutable
// app: its first runner builds its device tables).
inline void check_gpu_modes(ForwardApp& app, const PacketStore& s, const std::string& label,
                            const CheckRun& check) {
  for (auto mode : {gpu::GpuMode::kAsync, gpu::GpuMode::kGraph, gpu::GpuMode::kMapped, gpu::GpuMode::kPersistent}) {
    for (bool staged : {true, false}) {
      WorkersConfig g;
      g.workers = 3;
      g.max_bursts_in_flight = 64;
      GpuEngine e = attach_gpu_engine(g, app, app.make_gpu_runner(mode_options(mode)), mode_engine_config(), staged);
      const std::string what = label + " GPU " + gpu::gpu_mode_name(mode) + (staged ? " staged" : " gather");
      check(run_verified(app, s, g), what);
      EXPECT_TRUE(e.on_gpu()) << what << ": " << e.stats().gpu_error;
      EXPECT_GT(e.stats().gpu_batches, 0u) << what;
      EXPECT_EQ(e.stats().cpu_batches, 0u) << what;
    }
  }
}

// Waits until `forwarded()` has grown by `n` (a GPU engine's start may take a while), or 10 s.
inline void wait_until_forwarded(const std::function<uint64_t()>& forwarded, uint64_t n) {
  const uint64_t until = forwarded() + n;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (forwarded() < until && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Every batch of a run went through the GPU (more than `min_batches` of them).
inline void expect_all_on_gpu(const GpuEngine& engine, uint64_t min_batches) {
  const gpu::EngineStats st = engine.stats();
  EXPECT_TRUE(engine.on_gpu()) << st.gpu_error;
  EXPECT_GT(st.gpu_batches, min_batches);
  EXPECT_EQ(st.cpu_batches, 0u) << "every batch looked up on the GPU";
}

}  // namespace tandem::test
