// The latency histogram against exact percentiles of sorted samples.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "core/latency_histogram.h"

namespace tandem {
namespace {

TEST(LatencyHistogram, BucketsCoverEveryValueWithinOneSixteenth) {
  std::mt19937_64 rng(1);
  for (int k = 0; k < 200000; ++k) {
    const uint64_t v = rng() >> (rng() % 64);
    const int i = LatencyHistogram::index_of(v);
    ASSERT_GE(i, 0);
    ASSERT_LT(i, LatencyHistogram::kBuckets);
    const uint64_t hi = LatencyHistogram::upper_bound_of(i);
    ASSERT_GE(hi, v);
    ASSERT_LE(static_cast<double>(hi - v), static_cast<double>(v) / 16.0 + 1.0) << v;
    if (i > 0) ASSERT_LT(LatencyHistogram::upper_bound_of(i - 1), v) << v;
  }
  EXPECT_EQ(LatencyHistogram::index_of(0), 0);
  EXPECT_EQ(LatencyHistogram::upper_bound_of(LatencyHistogram::index_of(~uint64_t{0})), ~uint64_t{0});
}

TEST(LatencyHistogram, PercentilesMatchSortedSamples) {
  std::mt19937_64 rng(2);
  std::lognormal_distribution<double> dist(9.0, 1.0);  // ~8 us median, long tail
  std::vector<uint64_t> v;
  LatencyHistogram a, b;
  for (int k = 0; k < 100000; ++k) {
    v.push_back(static_cast<uint64_t>(dist(rng)));
    (k % 2 ? a : b).record(v.back());
  }
  a.merge(b);
  std::sort(v.begin(), v.end());
  EXPECT_EQ(a.count(), v.size());
  EXPECT_EQ(a.max(), v.back());
  EXPECT_EQ(a.min(), v.front());
  EXPECT_EQ(a.percentile(1.0), v.back());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const double exact = static_cast<double>(v[static_cast<size_t>(q * v.size()) - 1]);
    EXPECT_NEAR(static_cast<double>(a.percentile(q)), exact, exact / 16.0 + 1) << q;
  }
  EXPECT_EQ(LatencyHistogram().percentile(0.5), 0u);
}

}  // namespace
}  // namespace tandem
