// Live SA updates while workers forward (sa_control.h): thousands of SAs added and deleted in
// batches while two workers (sched/workers.h, with RCU) carry traffic both ways, every packet
// checked against the SA sets it could have seen (those published between its receipt and its
// transmission): none lost; none sealed or opened by an SA that was not there at one of them, so
// none by an SA after its removal was published and synchronized; every SA's sequence numbers,
// those of the SAs that stay and of each SA added, exactly 1, 2, 3, ... (fresh state, no number
// used twice); and every added inbound SA's window fresh (its peer's first numbers accepted).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <thread>
#include <vector>

#include "apps/ipsec/ipsec_app.h"
#include "apps/ipsec/sa_control_live_plan.h"
#include "core/rcu.h"
#include "sched/workers.h"

namespace tandem::ipsec {
namespace {

using sa_test::Plan;
using sa_test::Seen;
using sa_test::Sent;

constexpr int kWorkers = 2;

// A worker's traffic (sa_test::FrameMaker): cleartext for the staying and the churned selectors, ESP from the peers of
// the staying inbound SAs and of the churned ones this worker owns (channel % kWorkers), each
// peer's numbers from 1 in order, so that windows see no reordering. Each frame's Sent goes into
// `log`, which the worker's sink reads in the same order.
class PeerSource final : public PacketSource {
 public:
  PeerSource(const Plan& plan, const SaControl& rc, int w, std::deque<Sent>& log, const std::atomic<bool>& quiet)
      : plan_(plan), rc_(rc), maker_(plan, 100 + w, kWorkers, w), log_(log), quiet_(quiet) {}
  uint32_t rx_burst(PacketPool& pool, PacketBatch& b) override {
    if (quiet_.load()) return 0;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    const uint32_t want = std::min<uint32_t>(PacketBatch::kCapacity - b.size, 24);
    const uint32_t got = pool.alloc_bulk(&b.cell[b.size], want);
    const uint64_t lo = rc_.version();
    // Every other burst is held until the next publish (or 5 ms), so that its lookups run on an
    // index newer than its stamp on every machine.
    if (++bursts_ % 2 == 0) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
      while (rc_.publishing() == lo && !quiet_.load() && std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
    }
    const size_t at = plan_.index_of(lo);
    for (uint32_t k = 0; k < got; ++k) {
      const uint32_t i = b.size + k;
      Sent sent;
      const std::vector<uint8_t> f = maker_.make(at, ++frames_, &sent);
      sent.lo = lo;
      log_.push_back(sent);
      std::copy(f.begin(), f.end(), pool.data(b.cell[i]));
      b.len[i] = static_cast<uint16_t>(f.size());
      b.wire_len[i] = static_cast<uint32_t>(f.size());
      b.ts_ns[i] = 0;
      b.verdict[i] = Verdict::kUnset;
    }
    b.size += got;
    return got;
  }
  std::string describe() const override { return "ipsec peer source"; }
  bool live() const override { return true; }

 private:
  const Plan& plan_;
  const SaControl& rc_;
  sa_test::FrameMaker maker_;
  std::deque<Sent>& log_;
  const std::atomic<bool>& quiet_;
  uint64_t bursts_ = 0, frames_ = 0;
};

// Records every frame at transmission, drops included, with its Sent from the source's log.
class CheckingSink final : public PacketSink {
 public:
  CheckingSink(const Plan& plan, const SaControl& rc, std::deque<Sent>& log) : plan_(plan), rc_(rc), log_(log) {}
  void tx_burst(const PacketPool& pool, const PacketBatch& b, Counters&) override {
    const uint64_t hi = rc_.publishing();
    for (uint32_t i = 0; i < b.size; ++i) {
      seen.push_back(sa_test::seen_at_tx(plan_, log_.front(), hi, b.verdict[i], pool.data(b.cell[i]), b.len[i]));
      log_.pop_front();
    }
  }
  std::vector<Seen> seen;

 private:
  const Plan& plan_;
  const SaControl& rc_;
  std::deque<Sent>& log_;
};

void updates_while_forwarding(LookupPath path, uint32_t updates, uint64_t seed) {
  const Plan plan = sa_test::make_plan(updates, seed);
  SaTable table(sa_test::plan_file(plan), sa_test::kPlanRoom);
  IpsecApp app(table);
  auto* rc = dynamic_cast<SaControl*>(app.table_control());
  ASSERT_NE(rc, nullptr);
  Rcu rcu(kWorkers);
  rc->set_rcu(&rcu);

  std::atomic<bool> quiet{false};
  std::atomic<int> stop{0};
  std::deque<Sent> logs[kWorkers];
  std::vector<std::unique_ptr<PacketSource>> sources;
  std::vector<std::unique_ptr<PacketSink>> sinks;
  std::vector<CheckingSink*> rec;
  for (int w = 0; w < kWorkers; ++w) {
    sources.push_back(std::make_unique<PeerSource>(plan, *rc, w, logs[w], quiet));
    auto s = std::make_unique<CheckingSink>(plan, *rc, logs[w]);
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
  wc.ports = app.ports();
  wc.stop = &stop;
  wc.rcu = &rcu;
  const WorkersResult r = run_workers_live(app, sources, sinks, wc);
  control.join();
  ASSERT_EQ(published, plan.boundary);
  ASSERT_TRUE(rc->copies_equal());

  std::vector<const std::vector<Seen>*> lists;
  for (const CheckingSink* sink : rec) lists.push_back(&sink->seen);
  const sa_test::Tally t = sa_test::check_seen(plan, lists);
  EXPECT_EQ(t.wrong, 0u);
  const uint64_t checked = t.checked, during = t.during, churn_sealed = t.churn_sealed, bypassed = t.bypassed,
                 opened = t.opened, unknown = t.unknown, fresh = t.fresh;
  EXPECT_TRUE(r.counters.balanced());
  EXPECT_EQ(r.counters.dropped(), unknown) << "no drop but unknown SPIs";
  EXPECT_EQ(checked, r.counters.rx_packets) << "every packet received was seen";
  EXPECT_GT(checked, 5000u);
  EXPECT_GT(during, 500u) << "packets in flight while the SAs changed";
  EXPECT_GT(churn_sealed, 300u);
  EXPECT_GT(bypassed, 100u);
  EXPECT_GT(opened, 300u);
  EXPECT_GT(unknown, 50u);
  EXPECT_GT(fresh, 50u) << "added outbound SAs that sealed";
  std::printf("%llu packets checked (%llu while SAs changed): %llu sealed by churned SAs, %llu bypassed, %llu opened "
              "by churned SAs, %llu to unknown SPIs; %llu added SAs numbered from 1\n",
              (unsigned long long)checked, (unsigned long long)during, (unsigned long long)churn_sealed,
              (unsigned long long)bypassed, (unsigned long long)opened, (unsigned long long)unknown,
              (unsigned long long)fresh);
}

TEST(SaControlLive, UpdatesWhileForwardingBatched) { updates_while_forwarding(LookupPath::kBatched, 3000, 21); }
TEST(SaControlLive, UpdatesWhileForwardingScalar) { updates_while_forwarding(LookupPath::kScalar, 3000, 22); }

}  // namespace
}  // namespace tandem::ipsec
