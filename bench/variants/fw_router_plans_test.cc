// The GPU plans of `tandem bench fw-router` (bench/variants/fw_router_plans.h), fused, split and
// fused through the device root, against the reference decisions (linear first-match search, then
// the IPv4 reference trie) on the real BGP table and every rule set of the fw-router tests; the
// timed runs leave the same results. Skipped (visibly) without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "bench/variants/fw_router_plans.h"
#include "tests/fw_router_tables.h"

namespace tandem::fwrouter {
namespace {

using testdata::count_diff;
using testdata::NamedRules;

TEST(FwRouterPlans, FusedAndSplitEqualTheReference) {
  TANDEM_REQUIRE_GPU();
  REQUIRE_FIB();
  testdata::for_each_rule_set(12, [](const NamedRules& nr, const FwRouterTables& t, const std::vector<acl::Header>& h,
                                     const std::vector<uint32_t>& want) {
    const auto g = FwRouterGpu::create(t);
    const auto plans = FwRouterGpuPlans::create(*g);
    std::vector<uint32_t> fused(h.size()), split(h.size()), root(h.size());
    plans->decide(GpuPlan::kFused, h.data(), fused.data(), h.size());
    plans->decide(GpuPlan::kSplit, h.data(), split.data(), h.size());
    plans->decide(GpuPlan::kFusedRoot, h.data(), root.data(), h.size());
    EXPECT_EQ(count_diff(fused, want), 0u) << nr.name << " fused";
    EXPECT_EQ(count_diff(split, want), 0u) << nr.name << " split";
    EXPECT_EQ(count_diff(root, want), 0u) << nr.name << " fused, root";
    // The benchmark's timed runs leave their results too.
    const size_t n = std::min<size_t>(h.size(), 8192);
    std::vector<uint32_t> tf(n), ts(n);
    const GpuPlanTimes times = plans->time_plans(h.data(), n, 2, tf.data(), ts.data());
    EXPECT_EQ(times.fused.size(), 2u);
    EXPECT_EQ(times.lpm_only.size(), 2u);
    EXPECT_EQ(times.fused_root.size(), 2u);
    EXPECT_TRUE(std::equal(tf.begin(), tf.end(), want.begin())) << nr.name << " timed fused";
    EXPECT_TRUE(std::equal(ts.begin(), ts.end(), want.begin())) << nr.name << " timed split";
  });
}

}  // namespace
}  // namespace tandem::fwrouter
