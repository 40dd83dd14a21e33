// The resident path on live ports (sched/resident.h, run_resident_live): receive threads that take
// bursts from a port as they come (some empty, some short), copy each frame into their ring's slot,
// publish a partial batch when the port has no more for now, and send what the app forwards. Run
// here with the receive threads processing their own batches (what they fall back to when the GPU
// fails), against the scalar workers over the same frames; the GPU side is the one the capture
// tests check (tests/resident_test.cc), and the device runs it on memif ports (bench io).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "apps/registry.h"
#include "gpu/gpu_runtime.h"
#include "io/io_error.h"
#include "sched/resident.h"
#include "tests/app_cases.h"
#include "tests/resident_config.h"
#include "tests/test_util.h"

namespace tandem {
namespace {

// A port that brings the frames of a store (from `first`, every `step`-th) in bursts of random
// size, an empty poll now and then, as a NIC's queue would; after the last frame nothing arrives
// (or, with `loop`, the frames come round again). Frames longer than the pool's cells arrive cut,
// with their wire length, as a live source gives them.
class StorePort final : public PacketSource {
 public:
  StorePort(const PacketStore& s, size_t first, size_t step, uint64_t seed, bool loop = false)
      : s_(s), next_(first), first_(first), step_(step), rng_(seed), loop_(loop) {}
  // A busy port instead: every poll a whole burst, each `us` microseconds after the last.
  void full_bursts_every(uint32_t us) { full_every_us_ = us; }
  uint32_t rx_burst(PacketPool& pool, PacketBatch& b) override {
    ++polls;
    const uint32_t room = std::min<uint32_t>(PacketBatch::kCapacity - b.size, burst_);
    uint32_t want = rng_() % 4 == 0 ? 0 : 1 + static_cast<uint32_t>(rng_() % room);
    if (full_every_us_) {
      std::this_thread::sleep_for(std::chrono::microseconds(full_every_us_));
      want = room;
    }
    uint32_t got = 0;
    while (got < want && pool.available() > 0) {
      if (next_ >= s_.size()) {
        if (!loop_) break;
        next_ = first_;
      }
      const uint32_t len = std::min<uint32_t>(s_.caplen[next_], pool.max_frame());
      uint32_t cell;
      pool.alloc_bulk(&cell, 1);
      std::memcpy(pool.data(cell), s_.frame(next_), len);
      const uint32_t j = b.size++;
      b.cell[j] = cell;
      b.len[j] = static_cast<uint16_t>(len);
      b.wire_len[j] = s_.wire_len[next_];
      b.ts_ns[j] = 0;
      b.verdict[j] = Verdict::kUnset;
      next_ += step_;
      ++got;
    }
    sent += got;
    return got;
  }
  std::string describe() const override { return "store port"; }
  bool live() const override { return true; }
  void wait_for_packets(int timeout_ms) override {
    ++waits;
    std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
  }
  uint64_t sent = 0, polls = 0, waits = 0;

 private:
  const PacketStore& s_;
  size_t next_, first_, step_;
  std::mt19937_64 rng_;
  bool loop_;
  uint32_t full_every_us_ = 0;
};

// The receive threads process their own batches (the GPU's tests set cpu = false).
ResidentConfig live_config(const ForwardApp& app, int producers, gpu::FrameLayout layout, uint32_t batch) {
  return resident_test_config(app, producers, layout, batch, true);
}

class ResidentLive : public ::testing::TestWithParam<Case> {};

// One port bringing the whole input: the same counters and decisions as the scalar workers, and
// the same frames sent, in order.
TEST_P(ResidentLive, APortsFramesGetTheReferenceDecisionsAndAreSentInOrder) {
  const Case& c = GetParam();
  LoadedCase l = load_case(c);
  const ForwardApp& app = *l.a.app;
  for (const gpu::FrameLayout layout : {gpu::FrameLayout::kCells, gpu::FrameLayout::kPacked}) {
    ResidentConfig rc = live_config(app, 1, layout, 97);
    rc.packets = l.s.size();
    std::vector<std::unique_ptr<PacketSource>> sources;
    sources.push_back(std::make_unique<StorePort>(l.s, 0, 1, 7));
    std::vector<std::unique_ptr<PacketSink>> sinks;
    sinks.push_back(std::make_unique<CollectingSink>());
    std::vector<WorkerProgress> progress(1);
    rc.progress = progress.data();
    const ResidentResult r = run_resident_live(app, sources, sinks, rc);
    const std::string what = c.t.label + " " + gpu::frame_layout_name(layout);
    expect_same(l.ref, r.run, what);
    EXPECT_EQ(r.run.expected, l.s.size()) << what;
    EXPECT_EQ(static_cast<CollectingSink&>(*sinks[0]).frames, forwarded_frames(l.scalar)) << what;
    EXPECT_EQ(progress[0].received.load(), l.s.size()) << what;
    EXPECT_EQ(progress[0].forwarded.load() + progress[0].dropped.load(), l.s.size()) << what;
    EXPECT_EQ(progress[0].latency_packets.load(), l.s.size()) << what;
    EXPECT_EQ(r.run.latency.count(), l.s.size()) << what;
  }
}

// The same on the GPU: the persistent kernel takes the batches as the port fills them.
TEST_P(ResidentLive, TheGpuGivesTheReferenceDecisionsOnAPortsFrames) {
  TANDEM_REQUIRE_GPU();
  const Case& c = GetParam();
  if (const std::string why = no_gpu_path(c); !why.empty()) GTEST_SKIP() << c.t.label << ": " << why;
  LoadedCase l = load_case(c);
  const ForwardApp& app = *l.a.app;
  for (const gpu::FrameLayout layout : {gpu::FrameLayout::kCells, gpu::FrameLayout::kPacked}) {
    ResidentConfig rc = live_config(app, 1, layout, 97);
    rc.cpu = false;
    rc.ring.mode = gpu::GpuMode::kPersistent;
    rc.ring.blocks = 8;
    rc.packets = l.s.size();
    std::vector<std::unique_ptr<PacketSource>> sources;
    sources.push_back(std::make_unique<StorePort>(l.s, 0, 1, 13));
    std::vector<std::unique_ptr<PacketSink>> sinks;
    sinks.push_back(std::make_unique<CollectingSink>());
    const ResidentResult r = run_resident_live(app, sources, sinks, rc);
    const std::string what = c.t.label + " " + gpu::frame_layout_name(layout);
    expect_same(l.ref, r.run, what);
    EXPECT_FALSE(r.gpu_failed) << r.gpu_error;
    EXPECT_EQ(r.cpu_batches, 0u) << what;
    EXPECT_EQ(static_cast<CollectingSink&>(*sinks[0]).frames, forwarded_frames(l.scalar)) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Apps, ResidentLive, ::testing::ValuesIn(cases()), CaseName());

// The IPv4 app on generated traffic, for the tests of the path's machinery.
LoadedCase ipv4_case() {
  for (const Case& c : cases()) {
    if (c.app == "ipv4") return load_case(c);
  }
  ADD_FAILURE() << "no ipv4 test case";
  return {};
}

// Three ports sharing one count that ends the run before their frames do: exactly the count is
// received, over all three, and each port's frames leave through its own sink.
TEST(ResidentLiveMachinery, ThreePortsShareOnePacketCount) {
  LoadedCase l = ipv4_case();
  if (!l.a.app) return;
  const ForwardApp& app = *l.a.app;
  ResidentConfig rc = live_config(app, 3, gpu::FrameLayout::kPacked, 64);
  rc.packets = l.s.size() / 2 + 1;
  std::vector<std::unique_ptr<PacketSource>> sources;
  std::vector<std::unique_ptr<PacketSink>> sinks;
  for (int t = 0; t < 3; ++t) {
    sources.push_back(std::make_unique<StorePort>(l.s, t, 3, 11 + t));
    sinks.push_back(std::make_unique<CollectingSink>());
  }
  const ResidentResult r = run_resident_live(app, sources, sinks, rc);
  EXPECT_EQ(r.run.counters.rx_packets, rc.packets);
  EXPECT_TRUE(r.run.counters.balanced());
  EXPECT_EQ(r.run.verify_mismatches, 0u);
  uint64_t sent = 0, frames = 0;
  for (int t = 0; t < 3; ++t) {
    sent += static_cast<StorePort&>(*sources[t]).sent;
    frames += static_cast<CollectingSink&>(*sinks[t]).frames.size();
  }
  EXPECT_EQ(sent, rc.packets);  // no frame taken from a port beyond the count
  EXPECT_EQ(frames, r.run.counters.tx_packets);
}

// A port that keeps bringing frames: the duration ends the run, every frame received is counted.
TEST(ResidentLiveMachinery, TheDurationEndsARunThatTheTrafficWouldNot) {
  LoadedCase l = ipv4_case();
  if (!l.a.app) return;
  ResidentConfig rc = live_config(*l.a.app, 2, gpu::FrameLayout::kCells, 128);
  rc.duration_ns = 150'000'000;
  std::vector<std::unique_ptr<PacketSource>> sources;
  for (int t = 0; t < 2; ++t) sources.push_back(std::make_unique<StorePort>(l.s, t, 2, 3 + t, true));
  const auto t0 = std::chrono::steady_clock::now();
  const ResidentResult r = run_resident_live(*l.a.app, sources, {}, rc);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(s, 0.15);
  EXPECT_LT(s, 10.0);
  EXPECT_FALSE(r.run.stopped);
  EXPECT_GT(r.run.counters.rx_packets, 0u);
  EXPECT_EQ(r.run.counters.rx_packets,
            static_cast<StorePort&>(*sources[0]).sent + static_cast<StorePort&>(*sources[1]).sent);
  EXPECT_TRUE(r.run.counters.balanced());
  EXPECT_EQ(r.run.verify_mismatches, 0u);
}

// A port where nothing arrives: the receive thread waits in the port (not spinning for ever), and
// a stop ends the run with nothing counted.
TEST(ResidentLiveMachinery, AnIdlePortWaitsAndAStopEndsTheRun) {
  LoadedCase l = ipv4_case();
  if (!l.a.app) return;
  PacketStore empty;
  std::atomic<int> stop{0};
  ResidentConfig rc = live_config(*l.a.app, 1, gpu::FrameLayout::kPacked, 64);
  rc.stop = &stop;
  std::vector<std::unique_ptr<PacketSource>> sources;
  sources.push_back(std::make_unique<StorePort>(empty, 0, 1, 5));
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop.store(1);
  });
  const ResidentResult r = run_resident_live(*l.a.app, sources, {}, rc);
  stopper.join();
  EXPECT_TRUE(r.run.stopped);
  EXPECT_EQ(r.run.counters.rx_packets, 0u);
  EXPECT_EQ(r.batches, 0u);
  EXPECT_GT(static_cast<StorePort&>(*sources[0]).waits, 10u);  // about one a millisecond
}

// A frame that arrived cut (a GRO aggregate beyond the cells) is dropped as oversize, never sent
// as if its first bytes were the frame; the frames around it go out as the scalar path sends them.
TEST(ResidentLiveMachinery, AFrameThatArrivedCutIsDroppedAsOversize) {
  LoadedCase l = ipv4_case();
  if (!l.a.app) return;
  PacketStore s;
  for (size_t i = 0; i < 50; ++i) s.add(l.s.frame(i), l.s.caplen[i], l.s.wire_len[i], 0);
  s.wire_len[20] = kOversizeMark;
  ResidentConfig rc = live_config(*l.a.app, 1, gpu::FrameLayout::kPacked, 16);
  rc.packets = s.size();
  std::vector<std::unique_ptr<PacketSource>> sources;
  sources.push_back(std::make_unique<StorePort>(s, 0, 1, 9));
  std::vector<std::unique_ptr<PacketSink>> sinks;
  sinks.push_back(std::make_unique<CollectingSink>());
  const ResidentResult r = run_resident_live(*l.a.app, sources, sinks, rc);
  EXPECT_EQ(r.run.counters.rx_packets, 50u);
  EXPECT_EQ(r.run.counters.drops[static_cast<int>(DropReason::kOversize)], 1u);
  EXPECT_TRUE(r.run.counters.balanced());
  std::vector<std::vector<uint8_t>> want;
  for (size_t i = 0; i < 50; ++i) {
    if (i != 20 && !Verdict::is_drop(l.scalar.verdicts[i])) want.push_back(l.scalar.frames[i]);
  }
  EXPECT_EQ(static_cast<CollectingSink&>(*sinks[0]).frames, want);
}

// A busy port never has less than a burst, so only the hold ends a batch before it is full: with
// a burst every 300 us and a hold of 100 us, each batch leaves with the burst that passed the
// hold (every second burst), not 2,048 frames later.
TEST(ResidentLiveMachinery, TheHoldSendsOffABatchThatABusyPortWouldKeepFilling) {
  LoadedCase l = ipv4_case();
  if (!l.a.app) return;
  ResidentConfig rc = live_config(*l.a.app, 1, gpu::FrameLayout::kCells, 2048);
  rc.packets = 32 * 40;
  rc.rx_hold_ns = 100'000;
  std::vector<std::unique_ptr<PacketSource>> sources;
  auto port = std::make_unique<StorePort>(l.s, 0, 1, 2, true);
  port->full_bursts_every(300);
  sources.push_back(std::move(port));
  const ResidentResult r = run_resident_live(*l.a.app, sources, {}, rc);
  EXPECT_EQ(r.run.counters.rx_packets, rc.packets);
  EXPECT_TRUE(r.run.counters.balanced());
  EXPECT_GE(r.batches, 15u);  // two bursts each (20); without the hold, one batch
  EXPECT_LT(r.run.latency.percentile(0.99), 5'000'000u);  // each waited a burst or two, not the run
}

// A port that fails (a driver's error) ends the run with that error, and the other receive thread,
// whose port would bring frames for ever, stops with it instead of running on.
class FailingPort final : public PacketSource {
 public:
  uint32_t rx_burst(PacketPool&, PacketBatch&) override {
    if (++polls_ == 50) throw IoError("port: the driver failed");
    return 0;
  }
  std::string describe() const override { return "failing port"; }
  bool live() const override { return true; }

 private:
  int polls_ = 0;
};

TEST(ResidentLiveMachinery, AFailingPortEndsTheRunWithItsError) {
  LoadedCase l = ipv4_case();
  if (!l.a.app) return;
  ResidentConfig rc = live_config(*l.a.app, 2, gpu::FrameLayout::kPacked, 64);
  std::vector<std::unique_ptr<PacketSource>> sources;
  sources.push_back(std::make_unique<StorePort>(l.s, 0, 1, 4, true));
  sources.push_back(std::make_unique<FailingPort>());
  EXPECT_THROW(run_resident_live(*l.a.app, sources, {}, rc), IoError);
}

TEST(ResidentLiveMachinery, OneSourcePerReceiveThread) {
  LoadedCase l = ipv4_case();
  if (!l.a.app) return;
  ResidentConfig rc = live_config(*l.a.app, 2, gpu::FrameLayout::kPacked, 64);
  std::vector<std::unique_ptr<PacketSource>> sources;
  sources.push_back(std::make_unique<StorePort>(l.s, 0, 1, 1));
  EXPECT_THROW(run_resident_live(*l.a.app, sources, {}, rc), std::invalid_argument);
}

}  // namespace
}  // namespace tandem
