// The workers stop early when asked (WorkersConfig::stop, SIGINT in tandem run) with the packets
// they received accounted for, drop frames longer than 65,535 bytes with their own reason, and
// report wall-clock time with verification in it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "apps/echo/echo_app.h"
#include "io/traffic_gen.h"
#include "sched/workers.h"

namespace tandem {
namespace {

PacketStore traffic(uint64_t count) {
  GenSpec g;
  g.count = count;
  g.flows = 100;
  return generate(g);
}

WorkersConfig config(const ForwardApp& app) {
  WorkersConfig wc;
  wc.ports = app.ports();
  return wc;
}

TEST(WorkersStop, StopBeforeTheStartReceivesNothing) {
  echo::EchoApp app;
  const PacketStore s = traffic(1000);
  std::atomic<int> stop{2};
  for (const int workers : {1, 3}) {
    WorkersConfig wc = config(app);
    wc.workers = workers;
    wc.stop = &stop;
    const WorkersResult r = run_workers(app, s, wc);
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.counters.rx_packets, 0u);
    EXPECT_EQ(r.expected, 1000u);
    EXPECT_TRUE(r.counters.balanced());
  }
}

TEST(WorkersStop, StopMidRunFinishesWhatWasReceived) {
  echo::EchoApp app;
  const PacketStore s = traffic(10000);
  for (const double rate : {0.0, 2e6}) {
    std::atomic<int> stop{0};
    WorkersConfig wc = config(app);
    wc.workers = 2;
    wc.repeat = uint64_t{1} << 30;  // hours of work, unless stopped
    wc.rate_pps = rate;
    wc.stop = &stop;
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      stop.store(15);
    });
    const auto t0 = std::chrono::steady_clock::now();
    const WorkersResult r = run_workers(app, s, wc);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stopper.join();
    EXPECT_TRUE(r.stopped) << rate;
    EXPECT_GT(r.counters.rx_packets, 0u) << rate;
    EXPECT_LT(r.counters.rx_packets, r.expected) << rate;
    EXPECT_TRUE(r.counters.balanced()) << rate;
    EXPECT_EQ(r.latency.count(), r.counters.rx_packets) << rate;
    EXPECT_LT(took, 30.0) << rate;
    EXPECT_LE(r.seconds, took) << rate;
  }
}

TEST(WorkersStop, OversizeFramesAreDroppedWithTheirOwnReason) {
  echo::EchoApp app;
  PacketStore s = traffic(600);
  // A 70,000-byte frame (a GRO capture): its header copied from a generated frame, so that only
  // its length makes it special.
  std::vector<uint8_t> big(70000, 0xAB);
  std::copy(s.frame(0), s.frame(0) + s.caplen[0], big.begin());
  for (int k = 0; k < 3; ++k) s.add(big.data(), static_cast<uint32_t>(big.size()), static_cast<uint32_t>(big.size()), 0);
  const std::vector<uint8_t> normal(s.frame(1), s.frame(1) + s.caplen[1]);
  s.add(normal.data(), s.caplen[1], s.caplen[1], 0);  // a normal frame after them
  for (const LookupPath path : {LookupPath::kScalar, LookupPath::kBatched}) {
    WorkersConfig wc = config(app);
    wc.path = path;
    wc.cell_size = 65536 + PacketPool::kHeadroom;
    wc.repeat = 2;
    const WorkersResult r = run_workers(app, s, wc);
    EXPECT_EQ(r.counters.rx_packets, r.expected);
    EXPECT_EQ(r.expected, 2 * s.size());
    EXPECT_EQ(r.counters.drops[static_cast<int>(DropReason::kOversize)], 6u);
    EXPECT_EQ(r.counters.tx_packets, 2 * (s.size() - 3));
    EXPECT_TRUE(r.counters.balanced());
  }
  EXPECT_STREQ(drop_reason_name(DropReason::kOversize), "oversize");
}

TEST(WorkersStop, SecondsAreWallClockWithVerification) {
  echo::EchoApp app;
  const PacketStore s = traffic(20000);
  WorkersConfig wc = config(app);
  wc.workers = 4;
  wc.repeat = 20;
  wc.verify = true;
  const auto t0 = std::chrono::steady_clock::now();
  const WorkersResult r = run_workers(app, s, wc);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GT(r.verify_checked, 0u);
  EXPECT_GT(r.verify_seconds, 0.0);
  EXPECT_LE(r.seconds, took);
  // No worker can have verified for longer than the run lasted.
  EXPECT_GE(r.seconds, r.verify_seconds / wc.workers);
}

}  // namespace
}  // namespace tandem
