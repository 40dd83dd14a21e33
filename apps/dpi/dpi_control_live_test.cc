// Live rule updates while workers forward (dpi_control.h): thousands of rules added, deleted and
// replaced (deleted and added again with another action in one batch) while two workers
// (sched/workers.h, with RCU) inspect traffic, every packet's verdict checked against the rule
// sets it could have seen (those published between its receipt and its transmission): none lost,
// none judged by a half-applied batch (a replaced rule's packets alert or drop, never pass clean
// in between); on the CPU's paths and through the GPU's offload path.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "apps/dpi/dpi_app.h"
#include "apps/dpi/dpi_control.h"
#include "apps/dpi/dpi_test_frames.h"
#include "core/rcu.h"
#include "gpu/gpu_runtime.h"
#include "gpu/table_updates.h"
#include "sched/workers.h"
#include "tests/pipeline_runs.h"
#include "tests/test_util.h"

namespace tandem::dpi {
namespace {

constexpr int kWorkers = 2;
constexpr uint32_t kChannels = 24;  // words whose rule comes and goes
constexpr uint32_t kSteady = kChannels;      // a packet with the word of the rule there all along
constexpr uint32_t kClean = kChannels + 1;  // a packet no rule matches

// Channel c's word: none is part of another, or of the steady rule's.
std::string word(uint32_t c) { return std::string("k") + char('a' + c) + "z" + char('a' + c) + "w"; }

// One rule of a channel, from the batch that adds it to the batch that deletes it.
struct Incarnation {
  uint32_t channel = 0;
  bool drop = false;
  size_t added = 0;           // boundary index from which it is there
  size_t removed = SIZE_MAX;  // boundary index from which it is not
  bool there(size_t b) const { return added <= b && b < removed; }
};

struct Plan {
  std::vector<Incarnation> incarnations;
  std::vector<std::vector<uint32_t>> of_channel;
  std::vector<std::vector<std::string>> batches;
  std::vector<uint64_t> boundary{0};  // the version after each batch
  size_t index_of(uint64_t v) const { return std::lower_bound(boundary.begin(), boundary.end(), v) - boundary.begin(); }
  // The verdict of a packet of channel c (and the steady rule's word too) at boundary b.
  uint32_t verdict(uint32_t c, bool steady, size_t b) const {
    for (uint32_t g : of_channel[c]) {
      if (incarnations[g].there(b)) return incarnations[g].drop ? Verdict::drop(kDpiRuleDrop) : Verdict::port(kAlertPort);
    }
    return Verdict::port(steady ? kAlertPort : kCleanPort);
  }
};

Plan make_plan(uint32_t updates, uint64_t seed) {
  Plan p;
  p.of_channel.resize(kChannels);
  std::mt19937_64 rng(seed);
  std::vector<int64_t> live(kChannels, -1);
  uint32_t made = 0;
  while (made < updates) {
    const size_t b = p.batches.size();
    std::vector<std::string> lines;
    const uint32_t n = 1 + static_cast<uint32_t>(rng() % 20);
    while (lines.size() < n && made < updates) {
      const uint32_t c = static_cast<uint32_t>(rng() % kChannels);
      bool drop = rng() % 2;
      if (live[c] >= 0) {  // delete it; half the time add it back with the other action, same batch
        Incarnation& was = p.incarnations[live[c]];
        lines.push_back("del " + std::to_string(1000 + live[c]));
        was.removed = b + 1;
        drop = !was.drop;
        live[c] = -1;
        ++made;
        if (rng() % 2) continue;
      }
      const uint32_t g = static_cast<uint32_t>(p.incarnations.size());
      lines.push_back(std::string("add ") + (drop ? "drop" : "alert") + " tcp any any -> any any (msg:\"c\"; content:\"" +
                      word(c) + "\"; sid:" + std::to_string(1000 + g) + ";)");
      p.incarnations.push_back({c, drop, b + 1});
      p.of_channel[c].push_back(g);
      live[c] = g;
      ++made;
    }
    p.boundary.push_back(p.boundary.back() + lines.size());
    p.batches.push_back(std::move(lines));
  }
  return p;
}

// A frame as its source made it: its channel (or kSteady, kClean), whether it carries the steady
// rule's word too, and the version published before its receipt.
struct Sent {
  uint32_t channel;
  bool steady;
  uint64_t lo;
};
struct Seen {
  Sent sent;
  uint64_t hi;  // the version a lookup of it may have seen at most
  uint32_t verdict;
};

class WordSource final : public PacketSource {
 public:
  WordSource(const RuleControl& rc, int w, std::deque<Sent>& log, const std::atomic<bool>& quiet)
      : rc_(rc), rng_(300 + w), log_(log), quiet_(quiet) {}
  uint32_t rx_burst(PacketPool& pool, PacketBatch& b) override {
    if (quiet_.load()) return 0;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    const uint32_t got = pool.alloc_bulk(&b.cell[b.size], std::min<uint32_t>(PacketBatch::kCapacity - b.size, 32));
    const uint64_t lo = rc_.version();
    // Every other burst is held until the next publish (or 5 ms): lookups on tables newer than
    // the stamp happen on every machine.
    if (++bursts_ % 2 == 0) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
      while (rc_.publishing() == lo && !quiet_.load() && std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
    }
    for (uint32_t k = 0; k < got; ++k) {
      const uint32_t i = b.size + k;
      const uint32_t r = static_cast<uint32_t>(rng_() % (kChannels + 4));
      Sent s{r < kChannels ? r : r == kChannels ? kSteady : kClean, r < kChannels && rng_() % 4 == 0, lo};
      std::string pl = "some bytes " + std::to_string(rng_()) + " ";
      if (s.channel < kChannels) pl += word(s.channel) + " ";
      if (s.steady || s.channel == kSteady) pl += "steady";
      pl += std::string(rng_() % 300, '.');
      const std::vector<uint8_t> f = test_frames::frame(pl, static_cast<uint16_t>(1 + rng_() % 60000));
      std::copy(f.begin(), f.end(), pool.data(b.cell[i]));
      b.len[i] = static_cast<uint16_t>(f.size());
      b.wire_len[i] = static_cast<uint32_t>(f.size());
      b.ts_ns[i] = 0;
      b.verdict[i] = Verdict::kUnset;
      log_.push_back(s);
    }
    b.size += got;
    return got;
  }
  std::string describe() const override { return "dpi word source"; }
  bool live() const override { return true; }

 private:
  const RuleControl& rc_;
  std::mt19937_64 rng_;
  std::deque<Sent>& log_;
  const std::atomic<bool>& quiet_;
  uint64_t bursts_ = 0;
};

class RecordingSink final : public PacketSink {
 public:
  RecordingSink(const RuleControl& rc, std::deque<Sent>& log) : rc_(rc), log_(log) {}
  void tx_burst(const PacketPool&, const PacketBatch& b, Counters&) override {
    const uint64_t hi = rc_.publishing();
    for (uint32_t i = 0; i < b.size; ++i) {
      seen.push_back({log_.front(), hi, b.verdict[i]});
      log_.pop_front();
    }
  }
  std::vector<Seen> seen;

 private:
  const RuleControl& rc_;
  std::deque<Sent>& log_;
};

// With `gpu_mode`, the workers forward through the GPU engine (each batch's program reaches the
// offload runner's device copy) and `path` is not used.
void updates_while_forwarding(LookupPath path, uint32_t updates, uint64_t seed,
                              std::optional<gpu::GpuMode> gpu_mode = std::nullopt) {
  const Plan plan = make_plan(updates, seed);
  const DpiTables tables(load_ids_rules({tandem::test::write_temp_file(
      "dpi_live", "steady.rules", "alert tcp any any -> any any (msg:\"s\"; content:\"steady\"; sid:1;)\n")}));
  std::unique_ptr<ForwardApp> app = make_dpi_app(tables, DpiPolicy{});
  auto* rc = dynamic_cast<RuleControl*>(app->table_control());
  ASSERT_NE(rc, nullptr);
  Rcu rcu(kWorkers + 1);  // the workers, and the GPU engine's CPU fallback
  rc->set_rcu(&rcu);

  std::atomic<bool> quiet{false};
  std::atomic<int> stop{0};
  std::deque<Sent> logs[kWorkers];
  std::vector<std::unique_ptr<PacketSource>> sources;
  std::vector<std::unique_ptr<PacketSink>> sinks;
  std::vector<RecordingSink*> rec;
  for (int w = 0; w < kWorkers; ++w) {
    sources.push_back(std::make_unique<WordSource>(*rc, w, logs[w], quiet));
    auto s = std::make_unique<RecordingSink>(*rc, logs[w]);
    rec.push_back(s.get());
    sinks.push_back(std::move(s));
  }
  std::vector<uint64_t> published{0};
  std::thread control([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (const auto& batch : plan.batches) {
      for (const std::string& e : rc->apply(batch)) ASSERT_EQ(e, "");
      published.push_back(rc->version());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    quiet = true;
    stop = 1;
  });
  WorkersConfig wc;
  wc.workers = kWorkers;
  wc.path = path;
  wc.ports = app->ports();
  wc.stop = &stop;
  wc.rcu = &rcu;
  GpuEngine engine;
  if (gpu_mode) {
    wc.max_bursts_in_flight = 64;
    engine = attach_gpu_engine(wc, *app, app->make_gpu_runner(test::mode_options(*gpu_mode)), test::mode_engine_config(),
                               /*staged=*/true);
  }
  const WorkersResult r = run_workers_live(*app, sources, sinks, wc);
  control.join();
  ASSERT_EQ(published, plan.boundary);
  ASSERT_EQ(rc->builds(), plan.batches.size()) << "one build per batch";

  uint64_t checked = 0, wrong = 0, during = 0, drops = 0, churned = 0;
  for (const RecordingSink* sink : rec) {
    for (const Seen& s : sink->seen) {
      ++checked;
      ASSERT_LE(s.sent.lo, s.hi);
      during += s.hi > s.sent.lo;
      drops += Verdict::is_drop(s.verdict);
      bool ok = false;
      if (s.sent.channel == kSteady) {
        ok = s.verdict == Verdict::port(kAlertPort);
      } else if (s.sent.channel == kClean) {
        ok = s.verdict == Verdict::port(kCleanPort);
      } else {
        ++churned;
        for (size_t b = plan.index_of(s.sent.lo); b <= plan.index_of(s.hi) && !ok; ++b) {
          ok = s.verdict == plan.verdict(s.sent.channel, s.sent.steady, b);
        }
      }
      if (!ok && ++wrong <= 5) {
        ADD_FAILURE() << "channel " << s.sent.channel << (s.sent.steady ? " (and steady)" : "") << ": verdict "
                      << s.verdict << ", seen between versions " << s.sent.lo << " and " << s.hi;
      }
    }
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_TRUE(r.counters.balanced());
  EXPECT_EQ(r.counters.dropped(), drops);
  EXPECT_EQ(r.counters.drops[static_cast<int>(kDpiRuleDrop)], drops) << "drops by rules only";
  EXPECT_EQ(checked, r.counters.rx_packets) << "every packet received was seen";
  EXPECT_GT(checked, 5000u);
  EXPECT_GT(during, 500u) << "packets in flight while the rules changed";
  EXPECT_GT(drops, 300u);
  std::printf("%llu packets checked (%llu of the churned rules' words, %llu while rules changed), %zu builds\n",
              (unsigned long long)checked, (unsigned long long)churned, (unsigned long long)during,
              plan.batches.size());
  if (gpu_mode) {
    test::expect_all_on_gpu(engine, 10);
    EXPECT_EQ(rc->device_copy()->device_version(), plan.boundary.back()) << "the last program reached the device";
  }
}

TEST(RuleControlLive, UpdatesWhileForwardingBatched) { updates_while_forwarding(LookupPath::kBatched, 3000, 31); }
TEST(RuleControlLive, UpdatesWhileForwardingScalar) { updates_while_forwarding(LookupPath::kScalar, 3000, 32); }

// The same through the GPU's offload path, in each mode that launches per batch.
TEST(RuleControlLive, UpdatesWhileForwardingOnTheGpu) {
  if (!gpu::available()) GTEST_SKIP() << "no GPU";
  for (gpu::GpuMode mode : {gpu::GpuMode::kAsync, gpu::GpuMode::kGraph, gpu::GpuMode::kMapped}) {
    SCOPED_TRACE(gpu::gpu_mode_name(mode));
    updates_while_forwarding(LookupPath::kBatched, 3000, 33, mode);
  }
}

}  // namespace
}  // namespace tandem::dpi
