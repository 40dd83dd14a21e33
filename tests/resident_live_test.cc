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
#include <memory>
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
    while (got < want) {
      if (next_ >= s_.size()) {
        if (!loop_) break;
        next_ = first_;
      }
      const uint32_t len = std::min<uint32_t>(s_.caplen[next_], pool.max_frame());
      uint32_t cell;
      if (!take_cell(pool, &cell)) break;
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
  // As a DPDK port: the frames arrive in `cells` buffers of the port's own (PacketSource::own_cells),
  // of which a receiver may hold `hold` in flight.
  void own_buffers(uint32_t cells, uint32_t hold) {
    buffers_ = std::make_unique<Buffers>(cells);
    hold_ = hold;
  }
  PacketPool* own_cells() override { return buffers_ ? &buffers_->pool : nullptr; }
  uint32_t own_cells_to_hold() const override { return buffers_ ? hold_ : 0; }
  // Own buffers: how many are with the port now, and the most a receiver held at once.
  uint32_t buffers_home() const { return static_cast<uint32_t>(buffers_->free.size()); }
  uint32_t most_held() const { return buffers_->most_out; }
  uint64_t sent = 0, polls = 0, waits = 0;

 private:
  // The port's buffers: a pool whose cells it hands out itself and takes back when freed.
  struct Buffers final : PacketPool::Owner {
    explicit Buffers(uint32_t n)
        : mem(size_t{n} * kCell), pool(PacketPool::View{}, mem.data(), n, kCell, kCell - PacketPool::kHeadroom, this) {
      for (uint32_t c = n; c-- > 0;) free.push_back(c);
      out.assign(n, false);
    }
    void release(const uint32_t* cells, uint32_t n) override {
      for (uint32_t i = 0; i < n; ++i) {
        EXPECT_TRUE(out.at(cells[i])) << "cell " << cells[i] << " freed twice";
        out[cells[i]] = false;
        free.push_back(cells[i]);
      }
    }
    bool take(uint32_t* cell) {
      if (free.empty()) return false;
      *cell = free.back();
      free.pop_back();
      out[*cell] = true;
      most_out = std::max<uint32_t>(most_out, pool.num_cells() - static_cast<uint32_t>(free.size()));
      return true;
    }
    static constexpr uint32_t kCell = 2304;  // an mbuf's stride: more than a ring's 2,048-byte cell
    std::vector<uint8_t> mem;
    PacketPool pool;
    std::vector<uint32_t> free;
    std::vector<bool> out;
    uint32_t most_out = 0;
  };
  bool take_cell(PacketPool& pool, uint32_t* cell) {
    if (buffers_) return buffers_->take(cell);
    return pool.available() > 0 && pool.alloc_bulk(cell, 1) == 1;
  }

  const PacketStore& s_;
  size_t next_, first_, step_;
  std::mt19937_64 rng_;
  bool loop_;
  uint32_t full_every_us_ = 0;
  std::unique_ptr<Buffers> buffers_;
  uint32_t hold_ = 0;
};

// As a DPDK port's transmit end: the cells of its port's pool that it sends are its own (the
// driver frees them once sent), the others it copies.
class CellTakingSink final : public PacketSink {
 public:
  explicit CellTakingSink(PacketPool& own) : own_(own) {}
  void tx_burst(const PacketPool& pool, const PacketBatch& b, Counters& c) override {
    copies_.tx_burst(pool, b, c);
    if (&pool != &own_) return;
    for (uint32_t i = 0; i < b.size; ++i) {
      if (!Verdict::is_drop(b.verdict[i])) own_.free_bulk(&b.cell[i], 1);
    }
  }
  bool takes_cells(const PacketPool& pool) const override { return &pool == &own_; }
  const std::vector<std::vector<uint8_t>>& frames() const { return copies_.frames; }

 private:
  PacketPool& own_;
  CollectingSink copies_;
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

// A port with buffers of its own (as DPDK's mbufs): the frames stay in them through the batch
// (external frames), leave in them where the sink takes them, and every buffer comes back. A
// receiver may hold 200 of the port's buffers, fewer than the ring's slots would take, so the
// receive thread also waits for buffers. On the CPU here; on the GPU where there is one.
void frames_stay_in_the_ports_buffers(const Case& c, bool gpu) {
  LoadedCase l = load_case(c);
  const ForwardApp& app = *l.a.app;
  ResidentConfig rc = live_config(app, 1, gpu::FrameLayout::kCells, 97);
  if (gpu) {
    rc.cpu = false;
    rc.ring.mode = gpu::GpuMode::kPersistent;
    rc.ring.blocks = 8;
  }
  rc.packets = l.s.size();
  auto port = std::make_unique<StorePort>(l.s, 0, 1, 17);
  port->own_buffers(1024, 200);
  StorePort& p = *port;
  std::vector<std::unique_ptr<PacketSource>> sources;
  sources.push_back(std::move(port));
  std::vector<std::unique_ptr<PacketSink>> sinks;
  sinks.push_back(std::make_unique<CellTakingSink>(*p.own_cells()));
  const ResidentResult r = run_resident_live(app, sources, sinks, rc);
  const std::string what = c.t.label + (gpu ? " on the GPU" : " on the CPU");
  expect_same(l.ref, r.run, what);
  EXPECT_NE(r.describe.find("frames in the ports' buffers"), std::string::npos) << r.describe;
  EXPECT_EQ(static_cast<CellTakingSink&>(*sinks[0]).frames(), forwarded_frames(l.scalar)) << what;
  EXPECT_EQ(p.buffers_home(), 1024u) << what << ": every buffer back";
  EXPECT_LE(p.most_held(), 200u + 32u) << what << ": held at most the port's allowance and a burst";
  if (gpu) {
    EXPECT_FALSE(r.gpu_failed) << r.gpu_error;
    EXPECT_EQ(r.cpu_batches, 0u) << what;
  }
}

TEST_P(ResidentLive, FramesStayInThePortsBuffers) { frames_stay_in_the_ports_buffers(GetParam(), false); }

TEST_P(ResidentLive, TheGpuWorksOnFramesInThePortsBuffers) {
  TANDEM_REQUIRE_GPU();
  if (const std::string why = no_gpu_path(GetParam()); !why.empty()) GTEST_SKIP() << GetParam().t.label << ": " << why;
  frames_stay_in_the_ports_buffers(GetParam(), true);
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
// The case's first n frames, frame `cut` of them arrived cut, and the frames the scalar path sends
// of the others.
struct CutInput {
  PacketStore s;
  std::vector<std::vector<uint8_t>> sent;
};
CutInput first_frames_one_cut(const LoadedCase& l, size_t n, size_t cut) {
  CutInput c;
  for (size_t i = 0; i < n; ++i) {
    c.s.add(l.s.frame(i), l.s.caplen[i], l.s.wire_len[i], 0);
    if (i != cut && !Verdict::is_drop(l.scalar.verdicts[i])) c.sent.push_back(l.scalar.frames[i]);
  }
  c.s.wire_len[cut] = kOversizeMark;
  return c;
}

TEST(ResidentLiveMachinery, AFrameThatArrivedCutIsDroppedAsOversize) {
  LoadedCase l = ipv4_case();
  if (!l.a.app) return;
  const CutInput in = first_frames_one_cut(l, 50, 20);
  const PacketStore& s = in.s;
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
  EXPECT_EQ(static_cast<CollectingSink&>(*sinks[0]).frames, in.sent);
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

// Frames in the port's buffers that the sink copies (another backend's transmit end), or that go
// nowhere, or arrived cut: every buffer goes back to the port, and the sent frames are the scalar
// path's. With zero copy off, the frames are copied into the ring as from any port.
TEST(ResidentLiveMachinery, EveryOwnBufferGoesBackWhateverTheSink) {
  LoadedCase l = ipv4_case();
  if (!l.a.app) return;
  const CutInput in = first_frames_one_cut(l, 600, 100);
  const PacketStore& s = in.s;
  for (const bool zero_copy : {true, false}) {
    for (const bool sink : {true, false}) {
      ResidentConfig rc = live_config(*l.a.app, 1, gpu::FrameLayout::kCells, 64);
      rc.packets = s.size();
      rc.zero_copy = zero_copy;
      auto port = std::make_unique<StorePort>(s, 0, 1, 23);
      port->own_buffers(256, 96);
      StorePort& p = *port;
      std::vector<std::unique_ptr<PacketSource>> sources;
      sources.push_back(std::move(port));
      std::vector<std::unique_ptr<PacketSink>> sinks;
      if (sink) sinks.push_back(std::make_unique<CollectingSink>());
      const ResidentResult r = run_resident_live(*l.a.app, sources, sinks, rc);
      const std::string what = std::string(zero_copy ? "zero copy" : "copies") + (sink ? ", a copying sink" : ", no sink");
      EXPECT_EQ(r.run.counters.rx_packets, 600u) << what;
      EXPECT_EQ(r.run.counters.drops[static_cast<int>(DropReason::kOversize)], 1u) << what;
      EXPECT_TRUE(r.run.counters.balanced()) << what;
      EXPECT_EQ(r.describe.find("ports' buffers") != std::string::npos, zero_copy) << r.describe;
      EXPECT_EQ(p.buffers_home(), 256u) << what;
      if (sink) {
        EXPECT_EQ(static_cast<CollectingSink&>(*sinks[0]).frames, in.sent) << what;
      }
    }
  }
}

// A port that lets a receiver hold fewer buffers than a burst cannot keep frames in flight: its
// frames are copied instead of the receive thread waiting for ever.
TEST(ResidentLiveMachinery, APortWithNoBuffersToSpareIsCopiedFrom) {
  LoadedCase l = ipv4_case();
  if (!l.a.app) return;
  ResidentConfig rc = live_config(*l.a.app, 1, gpu::FrameLayout::kCells, 64);
  rc.packets = 300;
  auto port = std::make_unique<StorePort>(l.s, 0, 1, 29);
  port->own_buffers(256, 8);
  StorePort& p = *port;
  std::vector<std::unique_ptr<PacketSource>> sources;
  sources.push_back(std::move(port));
  const ResidentResult r = run_resident_live(*l.a.app, sources, {}, rc);
  EXPECT_EQ(r.run.counters.rx_packets, 300u);
  EXPECT_EQ(r.describe.find("ports' buffers"), std::string::npos) << r.describe;
  EXPECT_EQ(p.buffers_home(), 256u);
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
