// The offload engine: every request answered exactly once with the right results, from several
// workers at once; a GPU failure mid-stream recomputes on the CPU with nothing lost; full queues
// push back (counted); partial batches leave after max_wait. A fake runner stands in for the GPU,
// so these run everywhere; the last test uses the real GPU where there is one.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "gpu/offload_engine.h"
#include "gpu/staged_engine.h"
#include "tests/test_util.h"

namespace tandem::gpu {
namespace {

// out = in + 1 on the host, with `slots` buffers. A batch "finishes" `delay_us` after its submit
// (ready() turns true then), so several can be in flight. Throws GpuError on batch `fail_at`
// (1-based; 0 = never): from submit(), or, with fail_in_ready, later from ready()/wait(), as a
// kernel fault would surface.
class FakeRunner final : public OffloadRunner {
 public:
  FakeRunner(size_t capacity, int fail_at, int delay_us = 0, int slots = 1, bool fail_in_ready = false)
      : slot_(slots), capacity_(capacity), fail_at_(fail_at), delay_us_(delay_us), fail_in_ready_(fail_in_ready) {
    for (auto& s : slot_) {
      s.in.resize(capacity);
      s.out.resize(capacity);
    }
  }
  GpuMode mode() const override { return GpuMode::kAsync; }
  size_t capacity() const override { return capacity_; }
  int slots() const override { return static_cast<int>(slot_.size()); }
  size_t in_item_bytes() const override { return 4; }
  size_t out_item_bytes() const override { return 4; }
  void* in(int s) override { return slot_[s].in.data(); }
  void* out(int s) override { return slot_[s].out.data(); }
  void submit(int s, size_t n) override {
    Slot& sl = slot_[s];
    EXPECT_FALSE(sl.busy) << "slot " << s << " reused while in flight";
    ++batches_;
    sl.busy = true;
    sl.fails = batches_ == fail_at_;
    sl.due = std::chrono::steady_clock::now() + std::chrono::microseconds(delay_us_);
    if (sl.fails && !fail_in_ready_) throw GpuError("injected fault: cudaErrorLaunchFailure on batch " + std::to_string(batches_));
    for (size_t i = 0; i < n; ++i) sl.out[i] = sl.in[i] + 1;
    ++in_flight_;
    max_in_flight_ = std::max(max_in_flight_, in_flight_);
  }
  bool ready(int s) override {
    Slot& sl = slot_[s];
    if (std::chrono::steady_clock::now() < sl.due) return false;
    if (sl.fails) throw GpuError("injected fault: unspecified launch failure, seen at completion");
    if (sl.busy) --in_flight_;
    sl.busy = false;
    return true;
  }
  void wait(int s) override {
    while (!ready(s)) {
    }
  }
  int max_in_flight() const { return max_in_flight_; }

 private:
  struct Slot {
    std::vector<uint32_t> in, out;
    bool busy = false;
    bool fails = false;
    std::chrono::steady_clock::time_point due;
  };
  std::vector<Slot> slot_;
  size_t capacity_;
  int fail_at_;
  int delay_us_;
  bool fail_in_ready_;
  int batches_ = 0;
  int in_flight_ = 0;
  int max_in_flight_ = 0;
};

void plus_one(const void* in, void* out, size_t n) {
  const auto* a = static_cast<const uint32_t*>(in);
  auto* b = static_cast<uint32_t*>(out);
  for (size_t i = 0; i < n; ++i) b[i] = a[i] + 1;
}

// Each worker keeps `depth` requests outstanding, `rounds` times over; returns wrong results.
size_t drive(OffloadEngine& e, int workers, int rounds, int depth, uint64_t* items) {
  std::atomic<size_t> wrong{0};
  std::atomic<uint64_t> total{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(w);
      std::vector<OffloadRequest> reqs(depth);
      std::vector<std::vector<uint32_t>> in(depth, std::vector<uint32_t>(256)), out(depth, std::vector<uint32_t>(256));
      for (int r = 0; r < rounds; ++r) {
        for (int k = 0; k < depth; ++k) {
          const size_t n = 1 + rng() % 256;
          for (size_t i = 0; i < n; ++i) in[k][i] = static_cast<uint32_t>(rng());
          std::fill(out[k].begin(), out[k].end(), 0);
          reqs[k].in = in[k].data();
          reqs[k].out = out[k].data();
          reqs[k].n = n;
          e.submit(w, &reqs[k]);
          total += n;
        }
        for (int k = 0; k < depth; ++k) {
          while (!reqs[k].done()) std::this_thread::yield();
          for (size_t i = 0; i < reqs[k].n; ++i) wrong += out[k][i] != in[k][i] + 1;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  *items = total;
  return wrong;
}

TEST(OffloadEngine, CpuOnlyAnswersEveryRequestOnce) {
  OffloadEngine e(nullptr, plus_one, {1024, 20000, 8, 4, 4}, 3);
  uint64_t items = 0;
  EXPECT_EQ(drive(e, 3, 300, 4, &items), 0u);
  const EngineStats s = e.stats();
  EXPECT_EQ(s.requests, 3u * 300 * 4);
  EXPECT_EQ(s.items, items);
  EXPECT_EQ(s.gpu_batches, 0u);
  EXPECT_EQ(s.cpu_batches, s.batches);
  EXPECT_FALSE(e.on_gpu());
}

TEST(OffloadEngine, GpuFaultMidStreamFallsBackWithoutLoss) {
  OffloadEngine e(std::make_unique<FakeRunner>(2048, 5), plus_one, {2048, 20000, 8, 4, 4}, 2);
  uint64_t items = 0;
  EXPECT_EQ(drive(e, 2, 400, 4, &items), 0u);
  const EngineStats s = e.stats();
  EXPECT_EQ(s.items, items) << "every item answered exactly once";
  EXPECT_EQ(s.requests, 2u * 400 * 4);
  EXPECT_EQ(s.gpu_batches, 4u) << "batches 1-4 on the 'GPU', the 5th failed";
  EXPECT_GE(s.cpu_batches, 1u);
  EXPECT_EQ(s.gpu_batches + s.cpu_batches, s.batches);
  EXPECT_NE(s.gpu_error.find("injected fault"), std::string::npos) << s.gpu_error;
  EXPECT_FALSE(e.on_gpu());
}

TEST(OffloadEngine, FullQueuesPushBack) {
  // A slow "GPU" and a queue of one: the worker must be refused, and still every request is answered.
  OffloadEngine e(std::make_unique<FakeRunner>(256, 0, 2000), plus_one, {256, 1000, 1, 4, 4}, 1);
  std::vector<OffloadRequest> reqs(20);
  std::vector<uint32_t> in(20, 7), out(20, 0);
  for (int k = 0; k < 20; ++k) {
    reqs[k].in = &in[k];
    reqs[k].out = &out[k];
    reqs[k].n = 1;
    e.submit(0, &reqs[k]);
  }
  for (auto& r : reqs) {
    while (!r.done()) std::this_thread::yield();
  }
  for (uint32_t v : out) EXPECT_EQ(v, 8u);
  EXPECT_GT(e.stats().backpressure, 0u);
  EXPECT_EQ(e.stats().requests, 20u);
}

TEST(OffloadEngine, SeveralBatchesInFlight) {
  // Batches take 300 us each on the "GPU": with 4 slots the master gathers and submits while
  // earlier batches are out, and still answers every request once, in any order.
  auto runner = std::make_unique<FakeRunner>(512, 0, 300, 4);
  FakeRunner* fake = runner.get();
  uint64_t items = 0;
  EngineStats s;
  int runner_max_in_flight = 0;
  {
    OffloadEngine e(std::move(runner), plus_one, {512, 20000, 16, 4, 4}, 3);
    EXPECT_EQ(drive(e, 3, 100, 8, &items), 0u);
    s = e.stats();
    EXPECT_TRUE(e.on_gpu());
    runner_max_in_flight = fake->max_in_flight();  // the engine owns the runner: read it while it lives
  }
  EXPECT_EQ(s.items, items);
  EXPECT_EQ(s.gpu_batches, s.batches);
  EXPECT_GT(s.max_in_flight, 1u);
  EXPECT_LE(s.max_in_flight, 4u);
  EXPECT_GT(runner_max_in_flight, 1);
}

TEST(OffloadEngine, FaultSeenAtCompletionRecomputesEveryBatchInFlight) {
  // Batch 6 fails only when its completion is checked, with other batches in flight behind it:
  // all of them, and the batch being gathered, must be answered from the CPU, once.
  OffloadEngine e(std::make_unique<FakeRunner>(512, 6, 200, 4, true), plus_one, {512, 20000, 16, 4, 4}, 3);
  uint64_t items = 0;
  EXPECT_EQ(drive(e, 3, 150, 8, &items), 0u);
  const EngineStats s = e.stats();
  EXPECT_EQ(s.items, items) << "every item answered exactly once";
  EXPECT_EQ(s.requests, 3u * 150 * 8);
  EXPECT_EQ(s.gpu_batches, 5u);
  EXPECT_EQ(s.gpu_batches + s.cpu_batches, s.batches);
  EXPECT_NE(s.gpu_error.find("seen at completion"), std::string::npos) << s.gpu_error;
  EXPECT_FALSE(e.on_gpu());
}

TEST(OffloadEngine, PartialBatchLeavesAfterMaxWait) {
  OffloadEngine e(std::make_unique<FakeRunner>(8192, 0), plus_one, {8192, 200000 /*0.2 ms*/, 8, 4, 4}, 1);
  uint32_t in = 41, out = 0;
  OffloadRequest r;
  r.in = &in;
  r.out = &out;
  r.n = 1;
  const auto t0 = std::chrono::steady_clock::now();
  e.submit(0, &r);
  while (!r.done()) std::this_thread::yield();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_EQ(out, 42u);
  EXPECT_THROW(([&] { OffloadRequest big; big.n = 8193; e.submit(0, &big); })(), std::invalid_argument);
}

TEST(OffloadEngine, FlushWhenIdleDoesNotWaitForMaxWait) {
  // max_wait of 10 s: only the idle rule can send these batches in time.
  EngineConfig cfg{8192, 10'000'000'000ull, 8, 4, 4};
  cfg.flush_when_idle = true;
  OffloadEngine e(std::make_unique<FakeRunner>(8192, 0, 50, 2), plus_one, cfg, 2);
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t items = 0;
  EXPECT_EQ(drive(e, 2, 50, 2, &items), 0u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(e.stats().items, items);
}

// Staged engine: each of `workers` threads keeps up to `depth` tickets, writes random items in
// place, checks every result in place, releases. Returns wrong results; *items gets the total.
size_t drive_staged(StagedEngine& e, int workers, int tickets, int depth, uint64_t* items) {
  std::atomic<size_t> wrong{0};
  std::atomic<uint64_t> total{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(100 + w);
      std::vector<StagedTicket> q(depth);
      std::vector<std::vector<uint32_t>> want(depth);
      size_t bad = 0;
      uint64_t mine = 0;
      // A ring of tickets, oldest first. When no batch can take more items, the worker must
      // release what is done, as a real worker finishing its packets would.
      size_t head = 0, tail = 0;
      auto finish_oldest = [&] {
        const int d = static_cast<int>(head % depth);
        const auto* out = static_cast<const uint32_t*>(q[d].out);
        for (size_t i = 0; i < q[d].n; ++i) bad += out[i] != want[d][i] + 1;
        e.release(q[d]);
        ++head;
      };
      for (int k = 0; k < tickets; ++k) {
        if (tail - head == size_t(depth)) {
          while (!e.done(q[head % depth])) std::this_thread::yield();
          finish_oldest();
        }
        const size_t n = 1 + rng() % 300;
        const int d = static_cast<int>(tail % depth);
        while (!e.try_reserve(n, &q[d])) {
          if (head != tail && e.done(q[head % depth])) finish_oldest();
        }
        want[d].resize(n);
        auto* in = static_cast<uint32_t*>(q[d].in);
        for (size_t i = 0; i < n; ++i) in[i] = want[d][i] = static_cast<uint32_t>(rng());
        e.commit(q[d]);
        ++tail;
        mine += n;
      }
      while (head != tail) {
        while (!e.done(q[head % depth])) std::this_thread::yield();
        finish_oldest();
      }
      wrong += bad;
      total += mine;
    });
  }
  for (auto& t : threads) t.join();
  *items = total;
  return wrong;
}

TEST(StagedEngine, ManyWorkersEveryItemOnceInPlace) {
  auto runner = std::make_unique<FakeRunner>(1000, 0, 100, 4);
  uint64_t items = 0;
  EngineStats s;
  {
    StagedEngine e(std::move(runner), plus_one, {1000, 30000, 8, 4, 4});
    EXPECT_EQ(drive_staged(e, 4, 2000, 6, &items), 0u);
    s = e.stats();
    EXPECT_TRUE(e.on_gpu());
  }
  EXPECT_EQ(s.items, items);
  EXPECT_EQ(s.gpu_batches, s.batches);
  EXPECT_GT(s.batches, items / 1000);
}

TEST(StagedEngine, FaultAtCompletionAnswersEverythingOnTheCpu) {
  StagedEngine e(std::make_unique<FakeRunner>(700, 7, 150, 3, true), plus_one, {700, 30000, 8, 4, 4});
  uint64_t items = 0;
  EXPECT_EQ(drive_staged(e, 3, 1500, 5, &items), 0u);
  const EngineStats s = e.stats();
  EXPECT_EQ(s.items, items);
  EXPECT_EQ(s.gpu_batches, 6u);
  EXPECT_GT(s.cpu_batches, 0u);
  EXPECT_NE(s.gpu_error.find("seen at completion"), std::string::npos) << s.gpu_error;
  EXPECT_FALSE(e.on_gpu());
}

TEST(StagedEngine, PartialBatchLeavesAfterMaxWaitOrWhenIdle) {
  for (bool idle : {false, true}) {
    EngineConfig cfg{4096, idle ? 10'000'000'000ull : 200'000ull, 8, 4, 4};
    cfg.flush_when_idle = idle;
    StagedEngine e(std::make_unique<FakeRunner>(4096, 0, 0, 2), plus_one, cfg);
    const auto t0 = std::chrono::steady_clock::now();
    StagedTicket t = e.reserve(1);
    *static_cast<uint32_t*>(t.in) = 41;
    e.commit(t);
    while (!e.done(t)) std::this_thread::yield();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2)) << "idle " << idle;
    EXPECT_EQ(*static_cast<const uint32_t*>(t.out), 42u);
    e.release(t);
    EXPECT_THROW(e.reserve(4097), std::invalid_argument);
    EXPECT_THROW(e.reserve(0), std::invalid_argument);
  }
}

TEST(StagedEngine, RealGpuEchoInPlace) {
  TANDEM_REQUIRE_GPU();
  for (GpuMode m : {GpuMode::kAsync, GpuMode::kGraph, GpuMode::kMapped, GpuMode::kPersistent}) {
    // The echo runner returns items unchanged, and so does this fallback.
    StagedEngine e(make_echo_runner({m, 2048, 3, 0}), [](const void* in, void* out, size_t n) {
      std::memcpy(out, in, n * 4);
    }, {2048, 20000, 8, 4, 4});
    std::vector<std::thread> ts;
    std::atomic<size_t> wrong{0};
    for (int w = 0; w < 3; ++w) {
      ts.emplace_back([&, w] {
        std::mt19937_64 rng(w);
        for (int k = 0; k < 400; ++k) {
          const size_t n = 1 + rng() % 512;
          StagedTicket t = e.reserve(n);
          std::vector<uint32_t> want(n);
          for (auto& v : want) v = static_cast<uint32_t>(rng());
          std::memcpy(t.in, want.data(), n * 4);
          e.commit(t);
          while (!e.done(t)) std::this_thread::yield();
          wrong += std::memcmp(t.out, want.data(), n * 4) != 0;
          e.release(t);
        }
      });
    }
    for (auto& t : ts) t.join();
    EXPECT_EQ(wrong, 0u) << gpu_mode_name(m);
    EXPECT_TRUE(e.on_gpu()) << e.stats().gpu_error;
  }
}

// Two workers each submit `rounds` requests of 256 items through an echo engine (value(r, w, k):
// item k of worker w's round r) and wait for each; returns how many came back changed.
template <class Value>
size_t echo_from_two_workers(OffloadEngine& e, int rounds, Value value) {
  std::vector<std::thread> ts;
  std::atomic<size_t> wrong{0};
  for (int w = 0; w < 2; ++w) {
    ts.emplace_back([&, w] {
      std::vector<uint32_t> in(256), out(256);
      for (int r = 0; r < rounds; ++r) {
        for (size_t k = 0; k < in.size(); ++k) in[k] = value(r, w, k);
        OffloadRequest q;
        q.in = in.data();
        q.out = out.data();
        q.n = 256;
        e.submit(w, &q);
        while (!q.done()) std::this_thread::yield();
        wrong += in != out;
      }
    });
  }
  for (auto& t : ts) t.join();
  return wrong;
}

TEST(OffloadEngine, RealGpuEcho) {
  TANDEM_REQUIRE_GPU();
  for (GpuMode m : {GpuMode::kAsync, GpuMode::kPersistent}) {
    // The echo runner returns items unchanged: the fallback must agree with it.
    auto echo = [](const void* in, void* out, size_t n) { std::memcpy(out, in, n * 4); };
    OffloadEngine e(make_echo_runner({m, 4096, 1, 0}), echo, {4096, 20000, 8, 4, 4}, 2);
    const size_t wrong = echo_from_two_workers(e, 500, [](int r, int w, size_t) { return static_cast<uint32_t>(r * 7919 + w); });
    EXPECT_EQ(wrong, 0u) << gpu_mode_name(m);
    EXPECT_TRUE(e.on_gpu()) << e.stats().gpu_error;
  }
}

// A real device fault (a trapping kernel, which breaks the CUDA context) in the middle of a stream
// of batches, in each mode: nothing lost, nothing answered twice, the rest done on the CPU. One
// mode per test, since each test runs in its own process and the fault ends that process's
// context.
class GpuFault : public ::testing::TestWithParam<GpuMode> {};

TEST_P(GpuFault, TrapMidStreamFinishesOnTheCpu) {
  TANDEM_REQUIRE_GPU();
  auto echo = [](const void* in, void* out, size_t n) { std::memcpy(out, in, n * 4); };
  OffloadOptions oo{GetParam(), 1024, 3, 0};
  oo.fault_at_batch = 4;
  size_t wrong = 0;
  EngineStats s;
  {
    OffloadEngine e(make_echo_runner(oo), echo, {1024, 20000, 8, 4, 4}, 2);
    wrong = echo_from_two_workers(e, 200, [](int r, int w, size_t k) { return static_cast<uint32_t>(r * 7919 + w * 13 + k); });
    EXPECT_FALSE(e.on_gpu());
    s = e.stats();
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(s.items, 2u * 200 * 256);
  EXPECT_GE(s.gpu_batches, 1u);
  EXPECT_GE(s.cpu_batches, 1u);
  EXPECT_FALSE(s.gpu_error.empty());
}

INSTANTIATE_TEST_SUITE_P(Modes, GpuFault,
                         ::testing::Values(GpuMode::kAsync, GpuMode::kGraph, GpuMode::kMapped, GpuMode::kPersistent),
                         [](const auto& info) { return std::string(gpu_mode_name(info.param)); });

}  // namespace
}  // namespace tandem::gpu
