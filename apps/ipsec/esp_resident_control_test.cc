// Live SA updates on the resident GPU path (sa_control.h, esp_resident.h): the SA batches of a
// plan applied while the persistent kernel forwards traffic both ways, every frame checked against
// the SA sets it could have seen (sa_control_live_plan.h): none sealed or opened by an SA that was
// not there, none under another SA's keys, every SA's numbers 1, 2, 3, ... (an added SA's state
// fresh in its reused slot on the GPU), and every frame counted. Then the same with a GPU that
// faults mid-run: the receive threads finish on the CPU, reading the host's index under RCU, and
// the updates after the fault reach it alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "apps/ipsec/ipsec_app.h"
#include "apps/ipsec/sa_control_live_plan.h"
#include "core/rcu.h"
#include "gpu/gpu_runtime.h"
#include "sched/resident.h"
#include "tests/test_util.h"

namespace tandem::ipsec {
namespace {

using sa_test::Plan;
using sa_test::Seen;
using sa_test::Sent;

constexpr uint64_t kFrames = 100000;
constexpr double kRate = 40000;         // frames a second: the run takes 2.5 s, 1.2 s more than the plan
constexpr double kFirstBatchS = 0.1;    // the control's first batch, after the run starts
constexpr double kBatchesS = 1.2;       // the time over which it sends the plan's batches
// Small batches and few slots: a frame's receipt stamp (below) reaches back at most
// (kSlots + 1) * kBatch = 80 frames, 2 ms, a quarter of the time between the control's batches.
constexpr uint32_t kBatch = 16, kSlots = 4;

// The frames, made before the run, as a peer and the protected hosts send them: frame k's Sent in
// sent[k] (its `lo` is set after the run) and k * 1000 as its timestamp, by which the sink knows
// it. A churned peer sends to the SA its channel should have when the frame is received (by the
// schedule of the control's batches), else to the one before or after it.
PacketStore make_traffic(const Plan& plan, std::vector<Sent>& sent) {
  sa_test::FrameMaker maker(plan, 77);
  PacketStore s;
  const double per_batch = kBatchesS / plan.batches.size();
  for (uint64_t k = 0; k < kFrames; ++k) {
    const double t = k / kRate;
    const size_t at = t < kFirstBatchS ? 0 : std::min<size_t>(plan.batches.size(), 1 + (t - kFirstBatchS) / per_batch);
    const std::vector<uint8_t> f = maker.make(at, k, &sent.emplace_back());
    s.add(f.data(), static_cast<uint32_t>(f.size()), static_cast<uint32_t>(f.size()), k * 1000);
  }
  return s;
}

// Each frame at transmission, in order (one receive thread), with the control's version() at the
// call that brought it (what a later frame's receipt stamp is taken from).
class CheckingSink final : public PacketSink {
 public:
  CheckingSink(const Plan& plan, const SaControl& rc, const std::vector<Sent>& sent)
      : plan_(plan), rc_(rc), sent_(sent) {}
  void tx_burst(const PacketPool& pool, const PacketBatch& b, Counters&) override {
    const uint64_t lo = rc_.version(), hi = rc_.publishing();
    for (uint32_t i = 0; i < b.size; ++i) {
      const uint64_t k = b.ts_ns[i] / 1000;
      frame.push_back(k);
      version_then.push_back(lo);
      seen.push_back(sa_test::seen_at_tx(plan_, sent_[k], hi, b.verdict[i], pool.data(b.cell[i]), b.len[i]));
    }
    started.store(true);
  }
  std::vector<uint64_t> frame, version_then;
  std::vector<Seen> seen;
  std::atomic<bool> started{false};

 private:
  const Plan& plan_;
  const SaControl& rc_;
  const std::vector<Sent>& sent_;
};

// cpu: the receive threads process their batches on the CPU (the ring without a GPU), reading the
// host's index under RCU; else on the GPU, which faults at batch `fault_at` (0: never).
void updates_on_the_resident_path(bool cpu, uint64_t fault_at) {
  const Plan plan = sa_test::make_plan(1500, 41 + fault_at + cpu);
  SaTable table(sa_test::plan_file(plan), sa_test::kPlanRoom);
  IpsecApp app(table);
  auto* rc = dynamic_cast<SaControl*>(app.table_control());
  ASSERT_NE(rc, nullptr);
  Rcu rcu(1);
  rc->set_rcu(&rcu);
  std::vector<Sent> sent;
  const PacketStore store = make_traffic(plan, sent);
  ASSERT_EQ(sent.size(), kFrames);

  CheckingSink sink(plan, *rc, sent);
  ResidentConfig cfg;
  cfg.ring.batch = kBatch;
  cfg.ring.slots_per_producer = kSlots;
  cfg.ring.cell_size = 2048;
  cfg.ring.blocks = 8;
  cfg.ring.fault_at_batch = fault_at;
  cfg.cpu = cpu;
  cfg.rate_pps = kRate;
  cfg.rx_hold_ns = 1000000;  // full batches at this rate: batch 600 comes 0.24 s in, mid-plan
  cfg.sink = &sink;
  cfg.ports = app.ports();
  cfg.rcu = &rcu;
  std::vector<uint64_t> published{0};
  std::thread control([&] {
    while (!sink.started.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t b = 0; b < plan.batches.size(); ++b) {
      std::this_thread::sleep_until(t0 + std::chrono::duration<double>(kFirstBatchS + b * kBatchesS / plan.batches.size()));
      for (const std::string& e : rc->apply(plan.batches[b])) EXPECT_EQ(e, "");
      published.push_back(rc->version());
    }
  });
  const ResidentResult r = run_resident(app, store, cfg);
  control.join();
  ASSERT_EQ(published, plan.boundary);
  EXPECT_TRUE(rc->copies_equal());
  EXPECT_EQ(r.run.counters.rx_packets, kFrames);
  EXPECT_TRUE(r.run.counters.balanced());
  ASSERT_EQ(sink.seen.size(), kFrames) << "every frame to the sink, drops too";

  // Receipt stamps: frame k was received after batch j - kSlots was finished (its slot free),
  // so after every frame kSlots + 1 batches before it was sent.
  const uint64_t back = uint64_t{kSlots + 1} * kBatch;
  std::vector<Seen> checked;
  uint64_t faulted = 0;
  for (size_t i = 0; i < sink.seen.size(); ++i) {
    ASSERT_EQ(sink.frame[i], i) << "frames in order";
    Seen s = sink.seen[i];
    s.sent.lo = i >= back ? sink.version_then[i - back] : 0;
    if (s.verdict == Verdict::drop(DropReason::kGpuFault)) {
      ++faulted;  // a batch the GPU had claimed when it failed: dropped, never sent
      continue;
    }
    checked.push_back(s);
  }
  const sa_test::Tally t = sa_test::check_seen(plan, {&checked});
  EXPECT_EQ(t.wrong, 0u);
  EXPECT_GT(t.during, 1000u) << "frames in flight while the SAs changed";
  EXPECT_GT(t.churn_sealed, 1000u);
  EXPECT_GT(t.bypassed, 200u);
  EXPECT_GT(t.opened, 1000u);
  EXPECT_GT(t.unknown, 50u);
  EXPECT_GT(t.fresh, 50u) << "added outbound SAs that sealed";
  const ResidentCopyStats& dc = *rc->resident_copy();
  if (cpu) {
    EXPECT_EQ(faulted, 0u);
    EXPECT_EQ(dc.versions.load(), 0u) << "no GPU copy";
  } else if (fault_at == 0) {
    EXPECT_FALSE(r.gpu_failed) << r.gpu_error;
    EXPECT_EQ(r.cpu_batches, 0u);
    EXPECT_EQ(faulted, 0u);
    EXPECT_EQ(dc.versions.load(), plan.batches.size()) << "every batch reached the GPU";
    EXPECT_FALSE(dc.abandoned.load());
  } else {
    EXPECT_TRUE(r.gpu_failed);
    EXPECT_GT(r.cpu_batches, 100u);
    EXPECT_LE(faulted, uint64_t{kSlots} * kBatch);
    EXPECT_GT(dc.versions.load(), 0u);
    EXPECT_LT(dc.versions.load(), plan.batches.size());
    EXPECT_TRUE(dc.abandoned.load()) << "the updates after the fault reached the host alone";
  }
  std::printf("%llu frames checked (%llu while SAs changed, %llu dropped by the GPU's fault): %llu sealed by churned "
              "SAs, %llu bypassed, %llu opened by churned SAs, %llu to unknown SPIs; %llu added SAs numbered from 1; "
              "%llu SA batches on the GPU (%.1f ms uploading, %.1f ms waiting for its batches)\n",
              (unsigned long long)t.checked, (unsigned long long)t.during, (unsigned long long)faulted,
              (unsigned long long)t.churn_sealed, (unsigned long long)t.bypassed, (unsigned long long)t.opened,
              (unsigned long long)t.unknown, (unsigned long long)t.fresh, (unsigned long long)dc.versions.load(),
              dc.upload_ns.load() / 1e6, dc.wait_ns.load() / 1e6);
}

TEST(EspResidentControl, SaUpdatesWhileTheRingIsProcessedOnTheCpuMisuseNoSa) { updates_on_the_resident_path(true, 0); }

TEST(EspResidentControl, SaUpdatesWhileTheGpuForwardsMisuseNoSa) {
  TANDEM_REQUIRE_GPU();
  updates_on_the_resident_path(false, 0);
}

TEST(EspResidentControl, AGpuFaultDuringSaUpdatesHandsTheRestToTheCpu) {
  TANDEM_REQUIRE_GPU();
  updates_on_the_resident_path(false, 600);
}

}  // namespace
}  // namespace tandem::ipsec
