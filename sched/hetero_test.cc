// CPUs and GPUs together (sched/hetero.h), on every machine: CPU groups and simulated devices
// share the traffic by flow-hash shard, shards move while packets are in flight, and every run
// must give the scalar path's decisions and counters, reorder no flow and lose no packet. A run
// that skips the drain before a move must be caught reordering (the check can fail).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "apps/registry.h"
#include "core/parse.h"
#include "gpu/gpu_runtime.h"
#include "io/traffic_gen.h"
#include "sched/controller.h"
#include "sched/hetero.h"
#include "tests/app_cases.h"
#include "tests/chaos_controller.h"
#include "tests/test_util.h"

namespace tandem {
namespace {


DeviceSpec cpu(const std::string& id, int threads = 1) {
  DeviceSpec d;
  d.id = id;
  d.kind = sched::DeviceKind::kCpu;
  d.threads = threads;
  return d;
}

DeviceSpec sim(const std::string& id, double a_us) {
  DeviceSpec d = cpu(id);
  d.kind = sched::DeviceKind::kSim;
  d.cost.a_ns = a_us * 1000;
  return d;
}

HeteroConfig config(const ForwardApp& app, int dispatchers, std::vector<DeviceSpec> devs) {
  HeteroConfig c;
  c.dispatchers = dispatchers;
  c.devices = std::move(devs);
  c.cpu_batch = 97;   // odd sizes: batches cross the CPU path's 256-frame chunks unevenly
  c.cpu_slots = 4;    // few slots: each is reused many times
  c.verify = true;
  c.ports = app.ports();
  return c;
}

// What the scalar path forwards, as a multiset: devices finish flows in different interleavings.
std::vector<std::vector<uint8_t>> sorted_forwarded(const Forwarded& f) {
  std::vector<std::vector<uint8_t>> out = forwarded_frames(f);
  std::sort(out.begin(), out.end());
  return out;
}

class Hetero : public ::testing::TestWithParam<Case> {};

TEST_P(Hetero, DevicesSharingTheTrafficGiveTheReferenceDecisions) {
  const Case& c = GetParam();
  LoadedCase l = load_case(c);
  const ForwardApp& app = *l.a.app;
  for (const int dispatchers : {1, 3}) {
    HeteroConfig hc = config(app, dispatchers, {cpu("cpu0"), cpu("cpu1"), sim("sim0", 5)});
    hc.initial_share = {0.5, 0.3, 0.2};
    CollectingSink sink;
    if (dispatchers == 1) hc.sink = &sink;
    const HeteroResult r = run_hetero(app, l.s, hc);
    const std::string what = c.t.label + ", " + std::to_string(dispatchers) + " dispatcher(s)";
    expect_same(l.ref, r.run, what);
    EXPECT_EQ(r.reordered, 0u) << what;
    EXPECT_EQ(r.lost, 0u) << what;
    uint64_t all = 0;
    for (const DeviceReport& d : r.devices) all += d.packets;
    EXPECT_EQ(all, r.run.counters.rx_packets - r.run.counters.drops[size_t(DropReason::kOversize)]) << what;
    if (dispatchers == 1) {
      std::sort(sink.frames.begin(), sink.frames.end());
      EXPECT_EQ(sink.frames, sorted_forwarded(l.scalar)) << what;
    }
  }
}

TEST_P(Hetero, ShardsMovingEveryTickReorderNothingAndLoseNothing) {
  const Case& c = GetParam();
  LoadedCase l = load_case(c);
  const ForwardApp& app = *l.a.app;
  ChaosController chaos;
  HeteroConfig hc = config(app, 2, {cpu("cpu0"), sim("sim0", 200)});
  hc.controller = &chaos;
  hc.tick_ms = 2;
  hc.repeat = 4;
  const HeteroResult r = run_hetero(app, l.s, hc);
  EXPECT_EQ(r.run.counters.rx_packets, 4 * l.s.size());
  EXPECT_TRUE(r.run.counters.balanced());
  EXPECT_EQ(r.run.verify_mismatches, 0u);
  EXPECT_EQ(r.reordered, 0u) << c.t.label;
  EXPECT_EQ(r.lost, 0u) << c.t.label;
  EXPECT_GT(r.switches.size(), 2u) << c.t.label;
}

// The GPU's resident runner as one device beside a CPU group, both layouts, shards moving every
// tick: the scalar path's decisions and bytes, nothing reordered or lost.
TEST_P(Hetero, TheGpuAndACpuGroupTogetherWithShardsMoving) {
  TANDEM_REQUIRE_GPU();
  const Case& c = GetParam();
  if (const std::string why = no_gpu_path(c); !why.empty()) GTEST_SKIP() << c.t.label << ": " << why;
  LoadedCase l = load_case(c);
  const ForwardApp& app = *l.a.app;
  for (const gpu::FrameLayout layout : {gpu::FrameLayout::kCells, gpu::FrameLayout::kPacked}) {
    for (const int dispatchers : {1, 3}) {
      DeviceSpec g;
      g.id = "gpu0";
      g.kind = sched::DeviceKind::kGpu;
      HeteroConfig hc = config(app, dispatchers, {cpu("cpu0"), g});
      hc.gpu_ring.layout = layout;
      hc.gpu_ring.batch = 97;
      hc.gpu_ring.slots_per_producer = 4;
      hc.gpu_ring.blocks = 8;
      ChaosController chaos;
      hc.controller = &chaos;
      hc.tick_ms = 1;
      hc.repeat = 3;
      CollectingSink sink;
      if (dispatchers == 1) hc.sink = &sink;
      const HeteroResult r = run_hetero(app, l.s, hc);
      const std::string what = c.t.label + ", " + gpu::frame_layout_name(layout) + ", " + std::to_string(dispatchers) + " dispatcher(s)";
      EXPECT_EQ(r.run.counters.rx_packets, 3 * l.s.size()) << what;
      EXPECT_TRUE(r.run.counters.balanced()) << what;
      EXPECT_EQ(r.run.verify_mismatches, 0u) << what;
      EXPECT_GT(r.run.verify_checked, 0u) << what;
      EXPECT_EQ(r.reordered, 0u) << what;
      EXPECT_EQ(r.lost, 0u) << what;
      EXPECT_FALSE(r.devices[1].failed) << r.devices[1].error;
      EXPECT_GT(r.devices[1].packets, 0u) << what;
      if (dispatchers == 1) {
        std::sort(sink.frames.begin(), sink.frames.end());
        EXPECT_EQ(sink.frames, sorted_forwarded(l.scalar)) << what;
      }
    }
  }
}

DeviceSpec gpu_device(const std::string& id, int gpu_index) {
  DeviceSpec g;
  g.id = id;
  g.kind = sched::DeviceKind::kGpu;
  g.gpu = gpu_index;
  return g;
}

// Two GPU devices and a CPU group: two GPUs where the host has them, else two logical devices on
// GPU 0 (each with half its multiprocessors). Shards move among all three every tick.
TEST_P(Hetero, TwoGpuDevicesAndACpuGroupGiveTheReferenceDecisions) {
  TANDEM_REQUIRE_GPU();
  const Case& c = GetParam();
  if (const std::string why = no_gpu_path(c); !why.empty()) GTEST_SKIP() << c.t.label << ": " << why;
  LoadedCase l = load_case(c);
  const ForwardApp& app = *l.a.app;
  const int second = gpu::device_count() > 1 ? 1 : 0;
  HeteroConfig hc = config(app, 3, {cpu("cpu0"), gpu_device("gpu0", 0), gpu_device("gpu1", second)});
  hc.gpu_ring.batch = 97;
  hc.gpu_ring.slots_per_producer = 4;
  ChaosController chaos;
  hc.controller = &chaos;
  hc.tick_ms = 1;
  hc.repeat = 3;
  const HeteroResult r = run_hetero(app, l.s, hc);
  const std::string what = c.t.label + (second ? ", GPUs 0 and 1" : ", two devices on GPU 0");
  EXPECT_EQ(r.run.counters.rx_packets, 3 * l.s.size()) << what;
  EXPECT_TRUE(r.run.counters.balanced()) << what;
  EXPECT_EQ(r.run.verify_mismatches, 0u) << what;
  EXPECT_GT(r.run.verify_checked, 0u) << what;
  EXPECT_EQ(r.reordered, 0u) << what;
  EXPECT_EQ(r.lost, 0u) << what;
  for (size_t d = 1; d < 3; ++d) {
    EXPECT_FALSE(r.devices[d].failed) << r.devices[d].error;
    EXPECT_GT(r.devices[d].packets, 0u) << what << ", " << r.devices[d].id;
  }
}

INSTANTIATE_TEST_SUITE_P(Apps, Hetero, ::testing::ValuesIn(cases()), CaseName());

struct Ipv4 {
  LoadedApp a;
  PacketStore s;
};
Ipv4 ipv4(uint64_t count, uint32_t flows) {
  for (const Case& c : cases()) {
    if (c.app != "ipv4") continue;
    Ipv4 v{load_app(c.app, c.t.args), {}};
    v.a.app->build_reference();
    GenSpec g = parse_gen_spec(c.t.gen);
    g.count = count;
    g.flows = flows;
    v.s = v.a.generate(g);
    return v;
  }
  ADD_FAILURE() << "no ipv4 test case";
  return {};
}

// Without the drain, a shard's new frames overtake its old ones still held by a slow device: the
// order check must see it. (Were it to see nothing here, its zeros above would prove nothing.)
TEST(HeteroMachinery, MovingShardsWithoutTheDrainIsCaughtReordering) {
  Ipv4 v = ipv4(20000, 64);
  if (!v.a.app) return;
  ChaosController chaos;
  HeteroConfig hc = config(*v.a.app, 1, {cpu("cpu0"), sim("sim0", 300)});
  hc.controller = &chaos;
  hc.tick_ms = 2;
  hc.repeat = 20;
  hc.test_skip_drain = true;
  const HeteroResult r = run_hetero(*v.a.app, v.s, hc);
  EXPECT_TRUE(r.run.counters.balanced());
  EXPECT_GT(r.switches.size(), 3u);
  EXPECT_GT(r.reordered, 0u);
  EXPECT_EQ(r.lost, 0u);
}

// Random shares every tick over three unlike devices: shards move on before their frames reach a
// device, come back, skip devices. A dispatcher that waited on the wrong device's batches would
// hang here: a watchdog stops the run, and a stopped run fails.
class RandomController final : public sched::Controller {
 public:
  sched::Decision decide(const sched::Observation& o) override {
    sched::Decision d;
    d.change = true;
    d.share.assign(o.dev.size(), 0.0);
    for (double& x : d.share) x = (next() % 3 == 0) ? 0.0 : double(next() % 100 + 1);
    if (std::all_of(d.share.begin(), d.share.end(), [](double x) { return x == 0; })) d.share[next() % d.share.size()] = 1;
    double sum = 0;
    for (const double x : d.share) sum += x;
    for (double& x : d.share) x /= sum;
    d.reason = "random";
    return d;
  }
  std::string name() const override { return "random"; }

 private:
  uint64_t next() {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return state_ >> 33;
  }
  uint64_t state_ = 7;
};

TEST(HeteroMachinery, RandomMovesAmongUnlikeDevicesNeitherHangNorReorder) {
  Ipv4 v = ipv4(20000, 5000);
  if (!v.a.app) return;
  RandomController random;
  HeteroConfig hc = config(*v.a.app, 2, {cpu("cpu0"), sim("sim0", 100), cpu("cpu1")});
  hc.controller = &random;
  hc.tick_ms = 1;
  hc.repeat = 10;
  std::atomic<int> stop{0};
  hc.stop = &stop;
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    for (int k = 0; k < 600 && !done.load(); ++k) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop.store(1);
  });
  const HeteroResult r = run_hetero(*v.a.app, v.s, hc);
  done.store(true);
  watchdog.join();
  EXPECT_FALSE(r.run.stopped) << "the run hung and was stopped after 60 s";
  EXPECT_TRUE(r.run.counters.balanced());
  EXPECT_EQ(r.run.verify_mismatches, 0u);
  EXPECT_GT(r.switches.size(), 5u);
  EXPECT_EQ(r.reordered, 0u);
  EXPECT_EQ(r.lost, 0u);
}

// A device whose ring is full holds its frames in the dispatcher's lane queue, and the other
// device's frames go on past them; without a lane queue the first such frame stops the dispatcher
// and every frame behind it waits in the receive queue, whichever device it is for.
TEST(HeteroMachinery, ASlowDevicesFullRingDoesNotStopTheOthers) {
  Ipv4 v = ipv4(20000, 1000);
  if (!v.a.app) return;
  uint64_t backlog[2] = {0, 0};
  uint64_t slow_hwm = 0;
  for (const uint32_t queue : {16384u, 0u}) {
    // sim0: 5 ms a batch of 97, about 19 Kpps; half of 0.2 Mpps for 100 ms is 10,000 frames for it.
    HeteroConfig hc = config(*v.a.app, 1, {cpu("cpu0"), sim("sim0", 5000)});
    hc.initial_share = {0.5, 0.5};
    hc.rate = parse_rate_schedule("0:0.2,100:0");
    hc.repeat = 100;
    hc.lane_queue = queue;
    const HeteroResult r = run_hetero(*v.a.app, v.s, hc);
    const std::string what = "lane queue " + std::to_string(queue);
    EXPECT_EQ(r.run.counters.rx_packets, 20000u) << what;
    EXPECT_TRUE(r.run.counters.balanced()) << what;
    EXPECT_EQ(r.run.verify_mismatches, 0u) << what;
    EXPECT_EQ(r.reordered, 0u) << what;
    EXPECT_EQ(r.lost, 0u) << what;
    EXPECT_GT(r.devices[0].packets, 8000u) << what;
    EXPECT_GT(r.devices[1].packets, 8000u) << what;
    if (queue) {
      EXPECT_GT(r.devices[1].queue_hwm, 5000u);
      // cpu0 keeps up but for scheduling hiccups of its thread, which on a busy small machine last
      // tens of milliseconds (thousands of frames): measured against the slow device's queue,
      // which holds most of what it was sent.
      slow_hwm = r.devices[1].queue_hwm;
      EXPECT_LT(r.devices[0].queue_hwm, slow_hwm / 2);
    } else {
      EXPECT_EQ(r.devices[1].queue_hwm, 0u);
    }
    backlog[queue ? 0 : 1] = r.rx_backlog_hwm;
  }
  EXPECT_LT(backlog[0], slow_hwm / 2) << "with a lane queue, the receive queue kept up (but for hiccups)";
  EXPECT_GT(backlog[1], 5000u) << "without one, the slow device's full ring stopped the receive queue";
}

// Frames waiting in lane queues follow their shards as they move (to a queue that is itself full,
// to the device that already holds the shard's frames in flight), and none passes an earlier frame
// of its flow: random plans every millisecond over a slow device and two CPU groups, paced above
// the slow device's capacity, with lane queues small enough to fill.
TEST(HeteroMachinery, QueuedFramesFollowTheirShardsAsTheyMove) {
  Ipv4 v = ipv4(20000, 3000);
  if (!v.a.app) return;
  for (const uint32_t queue : {300u, 8192u}) {
    RandomController random;
    HeteroConfig hc = config(*v.a.app, 2, {cpu("cpu0"), sim("sim0", 2000), cpu("cpu1")});
    hc.controller = &random;
    hc.tick_ms = 1;
    hc.rate = parse_rate_schedule("0:0.3,150:0");
    hc.repeat = 100;
    hc.lane_queue = queue;
    const HeteroResult r = run_hetero(*v.a.app, v.s, hc);
    const std::string what = "lane queue " + std::to_string(queue);
    EXPECT_NEAR(double(r.run.counters.rx_packets), 45000.0, 2.0) << what;  // two queues' arrivals, rounded
    EXPECT_TRUE(r.run.counters.balanced()) << what;
    EXPECT_EQ(r.run.verify_mismatches, 0u) << what;
    EXPECT_EQ(r.reordered, 0u) << what;
    EXPECT_EQ(r.lost, 0u) << what;
    EXPECT_GT(r.switches.size(), 5u) << what;
    uint64_t hwm = 0;
    for (const DeviceReport& d : r.devices) hwm = std::max(hwm, d.queue_hwm);
    EXPECT_GT(hwm, 0u) << what << ": no frame ever waited in a lane queue";
    // Full queues stop the dispatcher; a plan may gather the three lanes' queues in one.
    EXPECT_LE(hwm, 3 * uint64_t{queue} + 3000) << what;
  }
}

// Moves every shard to device `to` at tick `at`, then keeps the plan.
class MoveAllOnce final : public sched::Controller {
 public:
  MoveAllOnce(size_t to, int at) : to_(to), at_(at) {}
  sched::Decision decide(const sched::Observation& o) override {
    sched::Decision d;
    if (done_ || ++ticks_ < at_) return d;
    done_ = true;
    d.change = true;
    d.share.assign(o.dev.size(), 0.0);
    d.share[to_] = 1;
    d.batch.assign(o.dev.size(), 0);
    d.reason = "all to one";
    return d;
  }
  std::string name() const override { return "move-all-once"; }

 private:
  size_t to_;
  int at_, ticks_ = 0;
  bool done_ = false;
};

// Frames queued for shards moving to an idle device wait for the old device, not for the new one:
// the new device is not reported saturated meanwhile (a controller would take its rate then for
// its capacity).
TEST(HeteroMachinery, FramesWaitingForAMoveDoNotMakeTheNewDeviceSaturated) {
  Ipv4 v = ipv4(20000, 1000);
  if (!v.a.app) return;
  // At the 10th tick (50 ms), when sim0's ring is full: paced this slowly, batches leave with a
  // frame or two (hold_ns), and sim0 takes 2 ms for each, so the move waits for 64 of them. 64
  // slots: cpu0's ring fills only if its thread stops for over 10 ms.
  MoveAllOnce move(0, 10);
  HeteroConfig hc = config(*v.a.app, 1, {cpu("cpu0"), sim("sim0", 2000)});
  hc.cpu_slots = 64;
  hc.initial_share = {0, 1};
  hc.controller = &move;
  hc.tick_ms = 5;
  hc.rate = parse_rate_schedule("0:0.0047,300:0");
  hc.repeat = 100;
  std::vector<sched::Observation> seen;
  hc.observe = [&](sched::Observation& o) { seen.push_back(o); };
  const HeteroResult r = run_hetero(*v.a.app, v.s, hc);
  EXPECT_EQ(r.reordered, 0u);
  EXPECT_EQ(r.lost, 0u);
  EXPECT_GT(r.devices[0].queue_hwm, 0u) << "no frame waited for the move: the test shows nothing";
  ASSERT_EQ(r.switches.size(), 1u);
  const double wait_ticks = r.switches[0].settle_ms / hc.tick_ms;
  EXPECT_GT(wait_ticks, 5) << "the move waited " << wait_ticks << " ticks: the test shows little";
  // During the wait (after it, on a busy machine, cpu0's thread may fall behind for real).
  const double from_s = r.switches[0].t_ms / 1e3, to_s = from_s + r.switches[0].settle_ms / 1e3;
  int saturated = 0;
  for (const sched::Observation& o : seen) saturated += o.t_s > from_s && o.t_s <= to_s && o.dev[0].saturated;
  EXPECT_LE(saturated, wait_ticks / 3) << "cpu0, idle but for frames waiting on sim0, reported saturated";
}

TEST(HeteroMachinery, AStopDrainsAndEveryReceivedPacketIsCounted) {
  Ipv4 v = ipv4(20000, 1000);
  if (!v.a.app) return;
  std::atomic<int> stop{0};
  ChaosController chaos;
  HeteroConfig hc = config(*v.a.app, 2, {cpu("cpu0"), sim("sim0", 50)});
  hc.controller = &chaos;
  hc.tick_ms = 5;
  hc.repeat = 0;  // until stopped
  hc.stop = &stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    stop.store(1);
  });
  const HeteroResult r = run_hetero(*v.a.app, v.s, hc);
  stopper.join();
  EXPECT_TRUE(r.run.stopped);
  EXPECT_GT(r.run.counters.rx_packets, 0u);
  EXPECT_TRUE(r.run.counters.balanced());
  EXPECT_EQ(r.run.verify_mismatches, 0u);
  EXPECT_EQ(r.reordered, 0u);
  EXPECT_EQ(r.lost, 0u);
}

TEST(HeteroMachinery, AnOfferedLoadThatStepsIsPacedAndEveryPacketTimed) {
  Ipv4 v = ipv4(20000, 1000);
  if (!v.a.app) return;
  HeteroConfig hc = config(*v.a.app, 2, {cpu("cpu0"), cpu("cpu1")});
  // 5,000 then 20,000 packets; nothing after 200 ms, which ends the run.
  hc.rate = parse_rate_schedule("0:0.05,100:0.2,200:0");
  hc.repeat = 100;
  const auto t0 = std::chrono::steady_clock::now();
  const HeteroResult r = run_hetero(*v.a.app, v.s, hc);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const uint64_t rx = r.run.counters.rx_packets;
  EXPECT_LE(rx, 25000u);
  EXPECT_GE(rx, 25000u - 2);  // each queue's share of the offer, whole packets
  EXPECT_TRUE(r.run.stopped);
  EXPECT_TRUE(r.run.counters.balanced());
  EXPECT_EQ(r.run.latency.count(), rx);
  EXPECT_GT(s, 0.18);  // the last packets arrive at 200 ms
  EXPECT_LT(s, 5.0);
  EXPECT_FALSE(r.timeline.empty());
  EXPECT_EQ(r.lost, 0u);
}

// Input phases: each segment's packets come from the phase it plays. Echo's port is the first
// payload word mod 4, so phase 0's frames (word 0) leave on port 0 and phase 1's (word 1) on port 1:
// the per-port counts are each phase's share of the offer, whatever the devices' pace.
TEST(HeteroMachinery, InputPhasesFollowTheSegmentsTheyPlay) {
  LoadedApp a = load_app("echo", {});
  const PacketStore one = a.generate(parse_gen_spec("count=3000,flows=300,seed=5"));
  PacketStore s;
  for (uint8_t phase = 0; phase < 2; ++phase) {
    for (size_t i = 0; i < one.size(); ++i) {
      std::vector<uint8_t> f(one.frame(i), one.frame(i) + one.caplen[i]);
      ParsedPacket pp;
      uint32_t off = 0, n = 0;
      ASSERT_EQ(parse_packet(f.data(), uint32_t(f.size()), &pp), DropReason::kNone);
      ASSERT_TRUE(transport_payload(f.data(), pp, &off, &n) && n >= 4);
      f[off] = f[off + 1] = f[off + 2] = 0;
      f[off + 3] = phase;
      s.add(f.data(), uint32_t(f.size()), one.wire_len[i], one.ts_ns[i]);
    }
  }
  for (int dispatchers : {1, 3}) {
    HeteroConfig hc = config(*a.app, dispatchers, {cpu("cpu0"), sim("sim0", 5)});
    hc.verify = false;
    hc.rate = parse_rate_schedule("0:0.1,100:0.1,200:0.1,300:0");  // 10,000 packets a segment
    hc.repeat = 0;
    hc.input_phases = {0, one.size()};
    hc.segment_phase = {0, 1, 0, 0};
    const HeteroResult r = run_hetero(*a.app, s, hc);
    const auto& port = r.run.counters.tx_per_port;
    const double slack = 64.0 * dispatchers + dispatchers;  // a burst may straddle a boundary
    EXPECT_NEAR(double(port[0]), 20000, slack) << dispatchers;
    EXPECT_NEAR(double(port[1]), 10000, slack) << dispatchers;
    EXPECT_EQ(port[2] + port[3], 0u);
    EXPECT_EQ(r.reordered, 0u);
    EXPECT_EQ(r.lost, 0u);
  }
  // Configurations it refuses.
  HeteroConfig hc = config(*a.app, 1, {cpu("cpu0")});
  hc.rate = parse_rate_schedule("0:0.1,100:0");
  hc.repeat = 0;
  hc.input_phases = {0, one.size()};
  hc.segment_phase = {0};
  EXPECT_THROW(run_hetero(*a.app, s, hc), std::invalid_argument) << "a phase per segment";
  hc.segment_phase = {2, 0};
  EXPECT_THROW(run_hetero(*a.app, s, hc), std::invalid_argument) << "a phase the input lacks";
  hc.segment_phase = {1, 0};
  hc.input_phases = {5, one.size()};
  EXPECT_THROW(run_hetero(*a.app, s, hc), std::invalid_argument) << "phases from 0";
  hc.input_phases = {0, 0};
  EXPECT_THROW(run_hetero(*a.app, s, hc), std::invalid_argument) << "an empty phase";
  hc.input_phases = {0, one.size()};
  hc.repeat = 1;
  EXPECT_THROW(run_hetero(*a.app, s, hc), std::invalid_argument) << "the schedule must end the run";
}

TEST(HeteroMachinery, RateSchedulesAreParsedStrictly) {
  EXPECT_EQ(parse_rate_schedule("0:5,2000:40").size(), 2u);
  EXPECT_DOUBLE_EQ(parse_rate_schedule("0:5,2000:40")[1].pps, 40e6);
  for (const char* bad : {"", "5:1", "0:1,0:2", "0:1,-5:2", "0:x", "0:1,10", "0:nan", "0:-1", "0:1,20:1e300", "0:1e-300"}) {
    EXPECT_THROW(parse_rate_schedule(bad), std::invalid_argument) << bad;
  }
}

TEST(HeteroMachinery, ScheduledArrivalsFollowTheSegments) {
  // 1,000 pps for 1 s, nothing for 1 s, then 2,000 pps: packet 999 at 1 s, packet 1000 at 2.0005 s.
  ScheduledArrivalClock c(parse_rate_schedule("0:0.001,1000:0,2000:0.002"), 1.0, 0);
  EXPECT_NEAR(c.arrived_by(500000000), 500, 1e-6);
  EXPECT_NEAR(c.arrived_by(1500000000), 1000, 1e-6);
  EXPECT_NEAR(c.arrived_by(2500000000), 2000, 1e-6);
  uint64_t sp;
  c.take(999, &sp);
  const uint64_t t999 = c.take(1, &sp);
  EXPECT_NEAR(double(t999), 1e9, 10);
  const uint64_t t1000 = c.take(1, &sp);
  EXPECT_NEAR(double(t1000), 2.0005e9, 10);
}

// A fault on one GPU device: its shards move to the others, and every packet is still forwarded
// once, in order, with the reference's decision. With two GPUs the other GPU goes on; with one,
// the fault breaks the GPU's context and both logical devices on it, and the CPU group takes all.
TEST(HeteroGpu, AFaultOnOneGpuMovesItsShardsToTheOtherDevices) {
  TANDEM_REQUIRE_GPU();
  Ipv4 v = ipv4(60'000, 2'000);
  const ForwardApp& app = *v.a.app;
  const int second = gpu::device_count() > 1 ? 1 : 0;
  DeviceSpec faulty = gpu_device("gpu0", 0);
  faulty.fault_at_batch = 20;
  HeteroConfig hc = config(app, 2, {cpu("cpu0"), faulty, gpu_device("gpu1", second)});
  hc.gpu_ring.batch = 128;
  hc.gpu_ring.slots_per_producer = 4;
  hc.initial_share = {0.2, 0.4, 0.4};
  hc.tick_ms = 1;
  hc.repeat = 8;
  const HeteroResult r = run_hetero(app, v.s, hc);
  EXPECT_EQ(r.run.counters.rx_packets, 8 * v.s.size());
  EXPECT_TRUE(r.run.counters.balanced());
  EXPECT_EQ(r.run.verify_mismatches, 0u);
  EXPECT_EQ(r.reordered, 0u);
  EXPECT_EQ(r.lost, 0u);
  ASSERT_EQ(r.devices.size(), 3u);
  EXPECT_TRUE(r.devices[1].failed);
  EXPECT_FALSE(r.devices[0].failed) << r.devices[0].error;
  EXPECT_GT(r.devices[0].packets, 0u);
  // The other GPU device goes on where the driver lets it. With one GPU, the trap breaks the
  // context both devices share; with two, the driver of the device host reports every GPU of the
  // process failed (bench/probes/gpu_fault_isolation.cu). Either way its shards move too, and the
  // CPU group carries what is left, every packet once and in order.
  if (r.devices[2].failed) {
    EXPECT_NE(r.devices[2].error.find("launch failure"), std::string::npos) << r.devices[2].error;
  } else {
    const double carried = double(r.devices[2].packets) / r.run.counters.rx_packets;
    EXPECT_GT(carried, 0.4) << "the healthy GPU carries its share and the failed one's: " << carried;
  }
  if (!second) {
    EXPECT_TRUE(r.devices[2].failed) << "a trap breaks the whole GPU's context";
  }
  bool moved = false;
  for (const SwitchRecord& s : r.switches) moved = moved || s.reason.find(" failed: its shards move") != std::string::npos;
  EXPECT_TRUE(moved);
}

}  // namespace
}  // namespace tandem
