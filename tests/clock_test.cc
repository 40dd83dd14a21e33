// The stamp clock (core/clock.h) against the steady clock, and the arrival clock's stamps.
#include "core/clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "sched/arrival_clock.h"

namespace tandem {
namespace {

// An interval on the stamp clock, and the shortest and longest steady intervals it can have run
// over: each stamp is read between two steady reads, so a thread preempted anywhere only widens
// the bracket.
struct Interval {
  uint64_t stamp, shortest, longest;
};
Interval measure(uint64_t ms) {
  init_stamp_clock();
  const uint64_t a = now_ns(), s0 = stamp_ns(), b = now_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  const uint64_t c = now_ns(), s1 = stamp_ns(), d = now_ns();
  return {s1 - s0, c - b, d - a};
}

TEST(StampClock, KeepsTheSteadyClocksPace) {
  const Interval i = measure(50);
  // Up to the calibration's error (ppm; 500 allowed for a machine under load) and a read's
  // rounding. A scale 1% off would be 500 us out here.
  EXPECT_LE(i.stamp, i.longest + i.longest / 2000 + 100) << "tsc: " << stamp_clock_uses_tsc();
  EXPECT_GE(i.stamp + i.shortest / 2000 + 100, i.shortest) << "tsc: " << stamp_clock_uses_tsc();
}

TEST(StampClock, NeverRunsBackwardsOnOneThread) {
  uint64_t last = stamp_ns();
  for (int i = 0; i < 1000000; ++i) {
    const uint64_t t = stamp_ns();
    ASSERT_GE(t, last) << "read " << i;
    last = t;
  }
}

TEST(StampClock, UsesTheCounterOnlyWhereTheKernelDoes) {
  EXPECT_FALSE(stamp_scale_for("kvm-clock").tsc);
  EXPECT_FALSE(stamp_scale_for("hpet").tsc);
  EXPECT_FALSE(stamp_scale_for("").tsc);
#if defined(__x86_64__)
  const StampScale s = stamp_scale_for("tsc");
  ASSERT_TRUE(s.tsc);
  const double ns_per_tick = static_cast<double>(s.ns_per_tick_q32) / 4294967296.0;
  EXPECT_GT(ns_per_tick, 0.01);  // below 100 GHz
  EXPECT_LT(ns_per_tick, 100);   // above 10 MHz
  // Two calibrations agree to well within a percent.
  const StampScale again = stamp_scale_for("tsc");
  EXPECT_NEAR(static_cast<double>(again.ns_per_tick_q32) / s.ns_per_tick_q32, 1.0, 0.01);
#endif
}

TEST(ArrivalClock, UnpacedStampsAndNowShareAClock) {
  ArrivalClock clock(0, now_ns());
  uint64_t spacing = 1;
  const uint64_t first = clock.take(32, &spacing);
  EXPECT_EQ(spacing, 0u);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const uint64_t t = clock.now();
  ASSERT_GE(t, first);
  EXPECT_GE(t - first, 1900000u);
  EXPECT_LT(t - first, 1000000000u);
}

TEST(ArrivalClock, PacedArrivalsLieOnTheSteadyClock) {
  const uint64_t start = now_ns();
  ArrivalClock clock(1e6, start);  // one packet a microsecond
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  uint64_t spacing = 0;
  const uint64_t first = clock.take(1, &spacing);
  EXPECT_EQ(first, start + 1000);
  EXPECT_EQ(spacing, 1000u);
  const uint64_t t = clock.now();
  EXPECT_GE(t, start + 1000000);
  EXPECT_LE(t, now_ns());
}

}  // namespace
}  // namespace tandem
