#include "sched/shard_map.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

namespace tandem::sched {
namespace {

std::vector<double> fractions(const std::vector<uint8_t>& a, const std::vector<double>& w, size_t nd) {
  std::vector<double> f(nd, 0.0);
  double total = 0;
  for (size_t s = 0; s < a.size(); ++s) {
    f.at(a[s]) += w[s];
    total += w[s];
  }
  for (double& x : f) x /= total;
  return f;
}

double moved_weight(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, const std::vector<double>& w) {
  double m = 0;
  for (size_t s = 0; s < a.size(); ++s) m += a[s] != b[s] ? w[s] : 0;
  return m;
}

void expect_within(const std::vector<uint8_t>& a, const std::vector<double>& w, const std::vector<double>& share,
                   double tol) {
  const std::vector<double> f = fractions(a, w, share.size());
  for (size_t d = 0; d < share.size(); ++d) EXPECT_NEAR(f[d], share[d], tol + 1e-9) << "device " << d;
}

// Zipf-like popularity over shards in a shuffled order (heavy hitters anywhere in the table).
std::vector<double> zipf_weights(double exponent, uint32_t seed) {
  std::vector<double> w(kShards);
  for (uint32_t r = 0; r < kShards; ++r) w[r] = 1.0 / std::pow(r + 1.0, exponent);
  std::mt19937 rng(seed);
  std::shuffle(w.begin(), w.end(), rng);
  return w;
}

TEST(ShardOf, SpreadsSequentialHashesEvenly) {
  std::vector<uint32_t> count(kShards, 0);
  const uint32_t n = 1000000;
  uint32_t same_as_mod = 0;
  for (uint32_t h = 0; h < n; ++h) {
    const uint32_t s = shard_of(h);
    ASSERT_LT(s, kShards);
    ++count[s];
    same_as_mod += s == h % kShards;
  }
  const double expect = double(n) / kShards;
  for (uint32_t s = 0; s < kShards; ++s) EXPECT_NEAR(count[s], expect, 0.10 * expect) << "shard " << s;
  // Not the plain low bits (which RSS used already): agreement should be about chance, 1 in 1024.
  EXPECT_LT(same_as_mod, n / 100);
}

TEST(ShardOf, EveryRssQueueSpreadsOverAllShards) {
  // RSS picks queue = hash % 4; within each queue the shards must still be even, or a device
  // would get its shards' traffic from only some of the queues.
  const uint32_t queues = 4, n = 4000000;
  std::vector<uint32_t> count(queues * kShards, 0);
  for (uint32_t h = 0; h < n; ++h) ++count[(h % queues) * kShards + shard_of(h)];
  const double expect = double(n) / queues / kShards;
  for (uint32_t c : count) EXPECT_NEAR(c, expect, 0.10 * expect);
  // Random (Toeplitz-like) hashes: binomial noise only; 25% is about 8 standard deviations.
  std::vector<uint32_t> rnd(kShards, 0);
  std::mt19937 rng(7);
  for (uint32_t i = 0; i < n; ++i) ++rnd[shard_of(uint32_t(rng()))];
  for (uint32_t c : rnd) EXPECT_NEAR(c, double(n) / kShards, 0.25 * n / kShards);
}

TEST(InitialShards, ContiguousAndProportional) {
  const auto a = initial_shards({0.5, 0.0, 0.25, 0.25});
  ASSERT_EQ(a.size(), kShards);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));  // contiguous runs in device order
  EXPECT_EQ(std::count(a.begin(), a.end(), 0), 512);
  EXPECT_EQ(std::count(a.begin(), a.end(), 1), 0);
  EXPECT_EQ(std::count(a.begin(), a.end(), 2), 256);
  EXPECT_EQ(std::count(a.begin(), a.end(), 3), 256);
  const auto b = initial_shards({1, 1, 1});  // 1024 / 3: 342, 341, 341 by largest remainder
  EXPECT_EQ(std::count(b.begin(), b.end(), 0) + std::count(b.begin(), b.end(), 1) +
                std::count(b.begin(), b.end(), 2), 1024);
  for (int d = 0; d < 3; ++d) EXPECT_NEAR(std::count(b.begin(), b.end(), d), 1024.0 / 3, 1.0);
  EXPECT_THROW(initial_shards({0, 0}), std::invalid_argument);
  EXPECT_THROW(initial_shards({}), std::invalid_argument);
  EXPECT_THROW(initial_shards({-1, 2}), std::invalid_argument);
}

TEST(AssignShards, ReachesSharesWithUniformWeights) {
  const std::vector<double> share = {0.5, 0.3, 0.2};
  const std::vector<uint8_t> cur(kShards, 0);
  for (double unit : {1.0, 0.0}) {  // 0: no traffic seen yet, treated as uniform
    const std::vector<double> w(kShards, unit);
    const auto a = assign_shards(cur, w, share);
    expect_within(a, std::vector<double>(kShards, 1.0), share, 0.01);
    // Only what had to go moved: about half the shards, not a reshuffle.
    EXPECT_LE(moved_weight(cur, a, std::vector<double>(kShards, 1.0)), 0.5 * kShards);
  }
}

TEST(AssignShards, ReachesSharesWithZipfWeights) {
  for (double exponent : {0.8, 1.0, 1.2}) {
    const auto w = zipf_weights(exponent, 42);
    for (const std::vector<double>& share : {std::vector<double>{0.25, 0.75}, std::vector<double>{0.1, 0.6, 0.3}}) {
      const auto cur = initial_shards(std::vector<double>(share.size(), 1.0));
      const auto a = assign_shards(cur, w, share, 0.01);
      SCOPED_TRACE(testing::Message() << "exponent " << exponent << ", " << share.size() << " devices");
      expect_within(a, w, share, 0.01);
      EXPECT_EQ(a, assign_shards(cur, w, share, 0.01));  // deterministic
    }
  }
}

TEST(AssignShards, MovesNothingWhenWithinTolerance) {
  const auto cur = initial_shards({0.5, 0.5});
  std::vector<double> w(kShards, 1.0);
  for (size_t s = 0; s < 10; ++s) w[s] = 2.0;  // device 0 at 0.5049, inside 1%
  EXPECT_EQ(assign_shards(cur, w, {0.5, 0.5}, 0.01), cur);
  const auto z = zipf_weights(1.0, 3);
  const auto settled = assign_shards(cur, z, {0.3, 0.7});
  EXPECT_EQ(assign_shards(settled, z, {0.3, 0.7}), settled);  // a second call has nothing to do
}

TEST(AssignShards, MovesTheLeastWeightOnSimpleCases) {
  // Device 0 holds 40, 30, 20, 10; device 1 nothing. 50 must move; 40 + 10 is the heaviest-first way.
  std::vector<uint8_t> cur(kShards, 1);
  std::vector<double> w(kShards, 0.0);
  const double load[] = {40, 30, 20, 10};
  for (int i = 0; i < 4; ++i) cur[100 + i] = 0, w[100 + i] = load[i];
  auto a = assign_shards(cur, w, {0.5, 0.5});
  EXPECT_DOUBLE_EQ(moved_weight(cur, a, w), 50.0);
  EXPECT_EQ(a[100], 1);
  EXPECT_EQ(a[103], 1);
  EXPECT_EQ(std::count_if(a.begin(), a.end(), [](uint8_t d) { return d == 0; }), 2);
  // Uniform: 612 / 412 shards for an even split, 1% tolerance (10.24 shards): 90 must move, no more.
  cur.assign(kShards, 1);
  std::fill(cur.begin(), cur.begin() + 612, 0);
  const std::vector<double> u(kShards, 1.0);
  a = assign_shards(cur, u, {0.5, 0.5}, 0.01);
  EXPECT_DOUBLE_EQ(moved_weight(cur, a, u), 90.0);
}

TEST(AssignShards, RespectsMaxMoved) {
  const std::vector<uint8_t> cur(kShards, 0);
  const auto w = zipf_weights(1.0, 9);
  const double total = std::accumulate(w.begin(), w.end(), 0.0);
  auto a = cur;
  int calls = 0;
  for (; calls < 20; ++calls) {
    const auto next = assign_shards(a, w, {0.4, 0.6}, 0.01, 0.1);
    const double m = moved_weight(a, next, w);
    EXPECT_LE(m, 0.1 * total + 1e-9);
    a = next;
    if (m == 0) break;
  }
  EXPECT_GE(calls, 6);  // 60% had to move at 10% a call
  EXPECT_LT(calls, 20);
  expect_within(a, w, {0.4, 0.6}, 0.01);
  EXPECT_EQ(assign_shards(cur, w, {0.4, 0.6}, 0.01, 0.0), cur);  // no budget, nothing moves
}

TEST(AssignShards, EmptiesZeroShareDeviceAtOnce) {
  const auto cur = initial_shards({1, 1, 1});
  const auto w = zipf_weights(1.0, 5);
  // Device 1 failed: everything it held moves now even with a 1% budget.
  const auto a = assign_shards(cur, w, {0.5, 0.0, 0.5}, 0.01, 0.01);
  EXPECT_EQ(std::count(a.begin(), a.end(), 1), 0);
  for (size_t s = 0; s < kShards; ++s) {
    if (cur[s] == 1) continue;
    EXPECT_EQ(a[s], cur[s]) << "only the failed device's shards move (budget spent)";
  }
  // With a full budget the survivors also end within tolerance.
  const auto b = assign_shards(cur, w, {0.5, 0.0, 0.5}, 0.01, 1.0);
  EXPECT_EQ(std::count(b.begin(), b.end(), 1), 0);
  expect_within(b, w, {0.5, 0.0, 0.5}, 0.01);
  // A device index past the share list (a removed device) is emptied too. Its shards carry no
  // weight here, so they go by shard count (to device 1, which has none); then weight moves.
  std::vector<uint8_t> c(kShards, 0);
  std::fill(c.begin(), c.begin() + 512, 7);
  std::vector<double> wc(kShards, 1.0);
  std::fill(wc.begin(), wc.begin() + 512, 0.0);
  const auto d = assign_shards(c, wc, {0.5, 0.5});
  EXPECT_EQ(std::count(d.begin(), d.end(), 7), 0);
  for (size_t s = 0; s < 512; ++s) EXPECT_EQ(d[s], 1);
  expect_within(d, wc, {0.5, 0.5}, 0.01);
}

TEST(AssignShards, ShardHeavierThanToleranceEndsWithoutLooping) {
  // One shard carries 60%: the best possible is 60/40, reached, and it stays put.
  std::vector<double> w(kShards, 0.4 / (kShards - 1));
  w[17] = 0.6;
  const std::vector<uint8_t> cur(kShards, 0);
  const auto a = assign_shards(cur, w, {0.5, 0.5}, 0.01);
  EXPECT_EQ(a[17], 0);
  EXPECT_NEAR(fractions(a, w, 2)[0], 0.6, 1e-9);
  EXPECT_EQ(assign_shards(a, w, {0.5, 0.5}, 0.01), a);  // and no ping-pong on the next call
  // Two shards only, 70/30, wanted 50/50: either placement is 20% off; nothing useful to move.
  const std::vector<uint8_t> two = {0, 1};
  EXPECT_EQ(assign_shards(two, {0.7, 0.3}, {0.5, 0.5}, 0.0), two);
  // Three heavy shards on one device: one moves (the closest split), then it stops.
  const auto t = assign_shards({0, 0, 0}, {0.4, 0.35, 0.25}, {0.5, 0.5}, 0.0);
  EXPECT_NEAR(fractions(t, {0.4, 0.35, 0.25}, 2)[1], 0.4, 1e-12);
  // No shard fits the 40% gap, but moving one 45% shard past the target leaves only 5%: better.
  const auto o = assign_shards({0, 0, 1}, {0.45, 0.45, 0.1}, {0.5, 0.5}, 0.01);
  EXPECT_NEAR(fractions(o, {0.45, 0.45, 0.1}, 2)[1], 0.55, 1e-12);
}

TEST(AssignShards, TradesAHeavyShardForLightOnes) {
  // Device 0 (share 0.3) holds two 16.5% shards; no single move fixes it, but sending one to
  // device 1 and taking 13.5% of device 1's small shards back does.
  std::vector<double> w(kShards, 0.505 / (kShards - 3));
  w[0] = w[1] = w[2] = 0.165;
  std::vector<uint8_t> cur(kShards, 1);
  cur[0] = cur[1] = 0;
  auto a = assign_shards(cur, w, {0.3, 0.7}, 0.01);
  expect_within(a, w, {0.3, 0.7}, 0.01);
  EXPECT_LT(moved_weight(cur, a, w), 0.31);  // one heavy shard and its refill, not a reshuffle
  // A device whose share is smaller than its one heavy shard hands it to one that can hold it.
  std::fill(w.begin(), w.end(), 0.8 / (kShards - 1));
  w[5] = 0.2;
  cur.assign(kShards, 1);
  cur[5] = 0;
  a = assign_shards(cur, w, {0.1, 0.9}, 0.01);
  EXPECT_EQ(a[5], 1);
  expect_within(a, w, {0.1, 0.9}, 0.01);
}

TEST(AssignShards, RejectsBadInput) {
  const std::vector<uint8_t> cur(kShards, 0);
  const std::vector<double> w(kShards, 1.0);
  EXPECT_THROW(assign_shards(cur, std::vector<double>(10, 1.0), {1.0}), std::invalid_argument);
  EXPECT_THROW(assign_shards(cur, w, {}), std::invalid_argument);
  EXPECT_THROW(assign_shards(cur, w, {0.0, 0.0}), std::invalid_argument);
  EXPECT_THROW(assign_shards(cur, w, {NAN, 1.0}), std::invalid_argument);
  auto bad = w;
  bad[3] = -1;
  EXPECT_THROW(assign_shards(cur, bad, {1.0}), std::invalid_argument);
  bad[3] = INFINITY;
  EXPECT_THROW(assign_shards(cur, bad, {1.0}), std::invalid_argument);
  // Unnormalised shares are normalised.
  expect_within(assign_shards(cur, w, {1.0, 3.0}), w, {0.25, 0.75}, 0.01);
}

}  // namespace
}  // namespace tandem::sched
