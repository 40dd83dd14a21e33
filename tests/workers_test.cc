// The multi-worker data path: RSS keeps flows on one queue and serves every frame once; any
// number of workers, on any path (CPU scalar, CPU batched, the offload engine with or without a
// GPU), forwards exactly what the reference trie decides and accounts for every packet; packet
// budgets and offered loads are honoured.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>

#include "apps/ipv4/ipv4_app.h"
#include "apps/ipv4/ipv4_gpu.h"
#include "sched/workers.h"
#include "core/checksum.h"
#include "core/flow_hash.h"
#include "core/parse.h"
#include "io/rss.h"
#include "io/traffic_gen.h"
#include "tests/ipv4_table.h"
#include "tests/pipeline_runs.h"

namespace tandem {
namespace {

PacketStore traffic(uint64_t count, uint64_t seed) {
  GenSpec g;
  g.count = count;
  g.dst = GenSpec::Dst::kFib;
  g.flows = 2000;
  g.zipf = 1.1;
  g.seed = seed;
  const auto& t = test::RealIpv4Table::get();
  std::vector<std::pair<uint32_t, uint8_t>> prefixes;
  for (const auto& r : t.fib.routes) prefixes.emplace_back(r.prefix, r.len);
  PacketStore s = generate(g, prefixes);
  // Some packets every path must drop, each for its own reason.
  std::vector<uint8_t> f(s.frame(0), s.frame(0) + s.caplen[0]);
  uint8_t* ip = f.data() + 14;
  auto add = [&] {
    ip[10] = ip[11] = 0;
    const uint16_t c = ipv4_header_checksum(ip, 20);
    ip[10] = static_cast<uint8_t>(c >> 8);
    ip[11] = static_cast<uint8_t>(c);
    s.add(f.data(), static_cast<uint32_t>(f.size()), static_cast<uint32_t>(f.size()), 0);
  };
  ip[8] = 1;  // TTL 1
  add();
  ip[8] = 64;
  ip[16] = 127;  // martian destination
  add();
  s.add(f.data(), 10, 10, 0);  // truncated
  return s;
}

TEST(Rss, EveryFrameOnceAndFlowsStayTogether) {
  const PacketStore s = traffic(20000, 1);
  for (int q : {1, 2, 3, 8}) {
    const auto parts = rss_split(s, q);
    ASSERT_EQ(parts.size(), size_t(q));
    std::vector<int> owner(s.size(), -1);
    std::map<uint32_t, int> flow_queue;
    for (int k = 0; k < q; ++k) {
      for (size_t j = 0; j < parts[k].size(); ++j) {
        const uint32_t i = parts[k][j];
        if (j) {
          EXPECT_LT(parts[k][j - 1], i) << "queue " << k << " out of capture order";
        }
        ASSERT_EQ(owner[i], -1) << "frame " << i << " in two queues";
        owner[i] = k;
        ParsedPacket p;
        if (parse_packet(s.frame(i), s.caplen[i], &p) == DropReason::kNone) {
          auto [it, fresh] = flow_queue.emplace(flow_hash(p.tuple), k);
          EXPECT_EQ(it->second, k) << "a flow split across queues";
        }
      }
    }
    for (size_t i = 0; i < s.size(); ++i) ASSERT_NE(owner[i], -1) << "frame " << i << " in no queue";
  }
  EXPECT_THROW(rss_split(s, 0), std::invalid_argument);
}

// The IPv4 app on the real table, with its reference built.
ipv4::Ipv4App& app() {
  static ipv4::Ipv4App* a = [] {
    const auto& t = test::RealIpv4Table::get();
    auto* r = new ipv4::Ipv4App(*t.dir, t.fib);
    r->build_reference();
    return r;
  }();
  return *a;
}

gpu::OffloadEngine::CpuFallback cpu_fallback() {
  return [](const void* in, void* out, size_t n) { app().lookup_items(in, static_cast<uint32_t*>(out), n); };
}

WorkersResult forward(const PacketStore& s, WorkersConfig wc) {
  wc.ports = app().ports();
  wc.verify = true;
  return run_workers(app(), s, wc);
}

void expect_same(const WorkersResult& a, const WorkersResult& b, const char* what) {
  EXPECT_EQ(a.counters.rx_packets, b.counters.rx_packets) << what;
  EXPECT_EQ(a.counters.tx_per_port, b.counters.tx_per_port) << what;
  EXPECT_EQ(a.counters.drops, b.counters.drops) << what;
  EXPECT_TRUE(b.counters.balanced()) << what;
  EXPECT_EQ(b.counters.rx_packets, b.expected) << what;
  EXPECT_EQ(b.verify_mismatches, 0u) << what;
  EXPECT_GT(b.verify_checked, 0u) << what;
  EXPECT_EQ(b.latency.count(), b.counters.rx_packets) << what << ": a latency per packet";
}

TEST(Workers, CpuPathsAgreeForAnyWorkerCount) {
  const PacketStore s = traffic(50000, 2);
  WorkersConfig wc;
  wc.path = LookupPath::kScalar;
  const auto ref = forward(s, wc);
  EXPECT_EQ(ref.counters.rx_packets, s.size());
  EXPECT_GT(ref.counters.drops[static_cast<int>(DropReason::kTtlExceeded)], 0u);
  EXPECT_GT(ref.counters.drops[static_cast<int>(DropReason::kMartian)], 0u);
  EXPECT_GT(ref.counters.drops[static_cast<int>(DropReason::kTruncated)], 0u);
  for (int w : {1, 2, 5}) {
    for (auto path : {LookupPath::kScalar, LookupPath::kBatched}) {
      wc.workers = w;
      wc.path = path;
      wc.burst = w == 2 ? 7 : 256;
      expect_same(ref, forward(s, wc), "cpu");
    }
  }
}

// Stage timing changes nothing the run decides, and accounts for the whole loop: every stage the
// path passes has time, the stages add up to no more than the loop, and the receive stage is the
// run's rx_seconds.
TEST(Workers, StageTimesCoverTheLoopAndChangeNoVerdict) {
  const PacketStore s = traffic(50000, 4);
  WorkersConfig wc;
  wc.path = LookupPath::kScalar;
  wc.repeat = 3;
  const auto ref = forward(s, wc);
  for (auto path : {LookupPath::kScalar, LookupPath::kBatched}) {
    for (int w : {1, 3}) {
      wc.path = path;
      wc.workers = w;
      const auto plain = forward(s, wc);
      EXPECT_EQ(plain.stages.packets, 0u);
      EXPECT_EQ(plain.rx_seconds, 0.0) << "no clock read without stage_times";
      wc.stage_times = StageTiming::kAll;
      const auto timed = forward(s, wc);
      wc.stage_times = StageTiming::kReceive;
      const auto rx_only = forward(s, wc);
      wc.stage_times = StageTiming::kOff;
      expect_same(ref, plain, "plain");
      expect_same(ref, timed, "timed");
      expect_same(ref, rx_only, "receive timed");
      const StageTimes& st = timed.stages;
      EXPECT_EQ(st.packets, timed.counters.rx_packets);
      EXPECT_GT(st.tick_ns, 0.0);
      uint64_t staged = 0;
      for (int i = 0; i < kStageCount; ++i) {
        if (static_cast<Stage>(i) != Stage::kLoop) staged += st.ticks[i];
      }
      EXPECT_LE(staged, st.total_ticks) << "no stage counted twice: the stages fit in the loop";
      // Every burst counted (at most 256 frames each, at least one), and the only empty receives
      // are those that found a worker's input at its end.
      EXPECT_GE(st.bursts * wc.burst, st.packets);
      EXPECT_LE(st.bursts, st.packets);
      EXPECT_LE(st.empty_receives, uint64_t(w) * wc.repeat);
      EXPECT_GT(st.of(Stage::kLoop), 0u);
      // Receive alone: that stage and the rest of the loop, nothing else.
      const StageTimes& rx = rx_only.stages;
      EXPECT_EQ(rx.packets, rx_only.counters.rx_packets);
      EXPECT_GT(rx.of(Stage::kReceive), 0u);
      EXPECT_GT(rx_only.rx_seconds, 0.0);
      EXPECT_EQ(rx.of(Stage::kParse) + rx.of(Stage::kApp) + rx.of(Stage::kLatency) + rx.of(Stage::kTransmit), 0u);
      EXPECT_GT(st.of(Stage::kReceive), 0u);
      EXPECT_GT(st.of(Stage::kLatency), 0u);
      EXPECT_GT(st.of(Stage::kTransmit), 0u);
      if (path == LookupPath::kBatched) {
        EXPECT_GT(st.of(Stage::kParse), 0u);
        EXPECT_GT(st.of(Stage::kLookup), 0u);
        EXPECT_GT(st.of(Stage::kApply), 0u);
        EXPECT_GT(st.of(Stage::kCount), 0u);
        EXPECT_EQ(st.of(Stage::kApp), 0u);
      } else {
        EXPECT_GT(st.of(Stage::kApp), 0u);
        EXPECT_EQ(st.of(Stage::kParse), 0u);
      }
      // Wall time of the workers' loops, summed, is at most workers x the run's seconds.
      EXPECT_LE(st.total_ticks * st.tick_ns / 1e9, timed.seconds * w * 1.05 + 1e-3);
      EXPECT_NEAR(timed.rx_seconds, st.of(Stage::kReceive) * st.tick_ns / 1e9, 1e-9);
    }
  }
}

TEST(Workers, EnginePathWithoutGpuMatchesCpu) {
  // The engine with no runner batches for the CPU fallback: the GPU path's worker logic
  // (bursts in flight, in-order completion) runs on every machine.
  const auto& t = test::RealIpv4Table::get();
  const PacketStore s = traffic(60000, 3);
  WorkersConfig wc;
  const auto ref = forward(s, wc);
  for (int w : {1, 3}) {
    gpu::EngineConfig ec;
    ec.max_batch = 2048;
    ec.max_wait_ns = 20000;
    ec.queue_depth = 16;
    gpu::OffloadEngine e(nullptr, cpu_fallback(), ec, w);
    wc.workers = w;
    wc.path = LookupPath::kGpu;
    wc.engine = &e;
    wc.max_bursts_in_flight = 16;
    wc.burst = 64;
    expect_same(ref, forward(s, wc), "engine, CPU only");
    EXPECT_GT(e.stats().batches, 0u);
    // Paced, with partial bursts held for more packets: same decisions, every packet once.
    wc.rate_pps = 3e6;
    wc.rx_hold_ns = 3000;
    wc.packets = s.size();
    expect_same(ref, forward(s, wc), "engine, CPU only, paced");
    wc.rate_pps = 0;
    wc.rx_hold_ns = 0;
    wc.packets = 0;
  }
}

// A runner that does the lookup on the host when a batch is submitted: the staged engine's worker
// logic (keys written into the batch, next hops read in place, slots held until released) runs on
// every machine with it.
class HostLookupRunner final : public gpu::OffloadRunner {
 public:
  HostLookupRunner(const ipv4::Dir24_8& t, size_t cap, int slots) : t_(t), cap_(cap), in_(slots), out_(slots) {
    for (int s = 0; s < slots; ++s) {
      in_[s].resize(cap);
      out_[s].resize(cap);
    }
  }
  gpu::GpuMode mode() const override { return gpu::GpuMode::kAsync; }
  size_t capacity() const override { return cap_; }
  int slots() const override { return static_cast<int>(in_.size()); }
  size_t in_item_bytes() const override { return 4; }
  size_t out_item_bytes() const override { return 4; }
  void* in(int s) override { return in_[s].data(); }
  void* out(int s) override { return out_[s].data(); }
  void submit(int s, size_t n) override {
    for (size_t i = 0; i < n; ++i) out_[s][i] = t_.lookup(in_[s][i]);
  }
  void wait(int) override {}
  bool ready(int) override { return true; }

 private:
  const ipv4::Dir24_8& t_;
  size_t cap_;
  std::vector<std::vector<uint32_t>> in_, out_;
};

TEST(Workers, StagedEnginePathMatchesCpu) {
  const auto& t = test::RealIpv4Table::get();
  const PacketStore s = traffic(60000, 7);
  WorkersConfig wc;
  const auto ref = forward(s, wc);
  for (int slots : {2, 4}) {
    gpu::EngineConfig ec;
    ec.max_batch = 1024;  // small batches and few slots: workers must wait for room, often
    ec.max_wait_ns = 20000;
    gpu::StagedEngine e(std::make_unique<HostLookupRunner>(*t.dir, 1024, slots), cpu_fallback(), ec);
    wc.workers = 3;
    wc.path = LookupPath::kGpu;
    wc.engine = &e;
    wc.max_bursts_in_flight = 32;
    wc.burst = 100;
    expect_same(ref, forward(s, wc), "staged engine, host lookup");
    EXPECT_GT(e.stats().batches, 0u);
    EXPECT_EQ(e.stats().cpu_batches, 0u);
    // A burst that cannot fit in a batch is refused before any worker starts.
    wc.burst = 256;
    gpu::EngineConfig small = ec;
    small.max_batch = 200;
    gpu::StagedEngine tiny(std::make_unique<HostLookupRunner>(*t.dir, 200, slots), cpu_fallback(), small);
    wc.engine = &tiny;
    EXPECT_THROW(forward(s, wc), std::invalid_argument);
  }
}

TEST(Workers, PacketBudgetLoopsTheInputExactly) {
  const PacketStore s = traffic(3000, 4);
  WorkersConfig wc;
  wc.workers = 3;
  wc.packets = 10007;  // more than three passes, not a multiple of anything
  const auto r = forward(s, wc);
  EXPECT_EQ(r.counters.rx_packets, 10007u);
  EXPECT_EQ(r.expected, 10007u);
  EXPECT_TRUE(r.counters.balanced());
  // Each worker's own count and time: the counts add up to the run's, no worker ends after it.
  ASSERT_EQ(r.worker_packets.size(), 3u);
  ASSERT_EQ(r.worker_seconds.size(), 3u);
  uint64_t sum = 0;
  for (int w = 0; w < 3; ++w) {
    sum += r.worker_packets[w];
    EXPECT_GT(r.worker_packets[w], 0u);
    EXPECT_GT(r.worker_seconds[w], 0);
    EXPECT_LE(r.worker_seconds[w], r.seconds);
  }
  EXPECT_EQ(sum, 10007u);
}

TEST(Workers, OfferedLoadIsHonoured) {
  // 200k packets at 1 Mpps take 0.2 s at least; unpaced they take far less. Only the lower
  // bound is checked: a slow machine may take longer, never shorter.
  const PacketStore s = traffic(20000, 5);
  WorkersConfig wc;
  wc.workers = 2;
  wc.burst = 32;
  wc.rate_pps = 1e6;
  wc.packets = 200000;
  const auto r = forward(s, wc);
  EXPECT_EQ(r.counters.rx_packets, 200000u);
  EXPECT_GE(r.seconds, 0.19);
}

TEST(Workers, EveryGpuModeMatchesCpu) {
  TANDEM_REQUIRE_GPU();
  const auto& t = test::RealIpv4Table::get();
  const PacketStore s = traffic(200000, 6);
  WorkersConfig wc;
  const auto ref = forward(s, wc);
  auto g = ipv4::Ipv4GpuTable::create(*t.dir);
  for (auto mode : {gpu::GpuMode::kAsync, gpu::GpuMode::kGraph, gpu::GpuMode::kMapped, gpu::GpuMode::kPersistent}) {
    for (bool staged : {false, true}) {
      const gpu::OffloadOptions oo = test::mode_options(mode);
      const gpu::EngineConfig ec = test::mode_engine_config();
      std::unique_ptr<gpu::OffloadEngine> gather;
      std::unique_ptr<gpu::StagedEngine> stage;
      WorkersConfig wc2 = wc;
      if (staged) {
        stage = std::make_unique<gpu::StagedEngine>(g->make_runner(oo), cpu_fallback(), ec);
        wc2.engine = stage.get();
      } else {
        gather = std::make_unique<gpu::OffloadEngine>(g->make_runner(oo), cpu_fallback(), ec, 3);
        wc2.engine = gather.get();
      }
      wc2.workers = 3;
      wc2.path = LookupPath::kGpu;
      wc2.max_bursts_in_flight = 64;
      wc2.rate_pps = staged ? 4e6 : 0;  // the staged engine also paced, with partial bursts held
      wc2.rx_hold_ns = staged ? 3000 : 0;
      wc2.packets = staged ? s.size() : 0;
      const std::string what = std::string(gpu::gpu_mode_name(mode)) + (staged ? " staged" : " gather");
      expect_same(ref, forward(s, wc2), what.c_str());
      const gpu::EngineStats st = staged ? stage->stats() : gather->stats();
      EXPECT_TRUE(staged ? stage->on_gpu() : gather->on_gpu()) << st.gpu_error;
      EXPECT_EQ(st.cpu_batches, 0u) << what;
      EXPECT_GT(st.gpu_batches, 0u) << what;
    }
  }
}

}  // namespace
}  // namespace tandem
