// DIR-24-8 and its batched CPU lookup against the reference trie, on the real BGP table and on
// hand-made edge cases. The benchmarks' lookup variants: bench/variants/ipv4_variants_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "apps/ipv4/ipv4_cpu.h"
#include "tests/ipv4_table.h"
#include "tests/reserved_range.h"

namespace tandem::ipv4 {
namespace {

using test::RealIpv4Table;
using S = Dir24_8::Status;

constexpr uint32_t ip(int a, int b, int c, int d) {
  return (uint32_t(a) << 24) | (uint32_t(b) << 16) | (uint32_t(c) << 8) | uint32_t(d);
}

size_t count_mismatches(const RefTrie& trie, const std::vector<uint32_t>& ips,
                        const std::vector<uint32_t>& got, uint32_t* first_bad = nullptr) {
  size_t bad = 0;
  for (size_t i = 0; i < ips.size(); ++i) {
    if (trie.lookup(ips[i]) != got[i]) {
      if (!bad && first_bad) *first_bad = ips[i];
      ++bad;
    }
  }
  return bad;
}

TEST(Ipv4RealTable, LoadsTheFullBgpTable) {
  const auto& t = RealIpv4Table::get();
  EXPECT_EQ(t.fib.routes.size(), 901899u);
  EXPECT_EQ(t.fib.ipv6_skipped, 160147u);
  EXPECT_EQ(t.fib.derived_next_hops, 901899u);
  EXPECT_EQ(t.dir->rule_count(), 901899u);
  EXPECT_GT(t.dir->tbl8_groups_in_use(), 400u);  // one per /24 holding longer prefixes
}

TEST(Ipv4RealTable, TenMillionUniformAddressesAgreeWithTrie) {
  const auto& t = RealIpv4Table::get();
  const auto ips = test::uniform_addresses(10'000'000, 42);
  std::vector<uint32_t> got(ips.size());
  lookup_batched(*t.dir, ips.data(), got.data(), ips.size());
  uint32_t bad_ip = 0;
  EXPECT_EQ(count_mismatches(t.trie, ips, got, &bad_ip), 0u) << format_ipv4(bad_ip);
  // The workload must exercise both outcomes.
  const auto misses = std::count(got.begin(), got.end(), kNoRoute);
  EXPECT_GT(misses, 100000);
  EXPECT_LT(misses, 9'000'000);
}

TEST(Ipv4RealTable, AddressesInsidePrefixesAgreeWithTrie) {
  const auto& t = RealIpv4Table::get();
  const auto ips = test::addresses_in_prefixes(t.fib.routes, 2'000'000, 7);
  std::vector<uint32_t> got(ips.size());
  for (uint32_t distance : {1u, 16u, kPrefetchDistance, 256u}) {
    lookup_prefetch_stream(*t.dir, ips.data(), got.data(), ips.size(), distance);
    EXPECT_EQ(count_mismatches(t.trie, ips, got), 0u) << "distance " << distance;
  }
  lookup_batched(*t.dir, ips.data(), got.data(), ips.size());
  EXPECT_EQ(count_mismatches(t.trie, ips, got), 0u);
  EXPECT_EQ(std::count(got.begin(), got.end(), kNoRoute), 0);
  for (uint32_t distance : {16u, kPrefetchDistance}) {  // the AVX-512 gathers, or their fallback
    lookup_avx512(*t.dir, ips.data(), got.data(), ips.size(), distance);
    EXPECT_EQ(count_mismatches(t.trie, ips, got), 0u) << "avx512, distance " << distance;
  }
}

// Slots of groups at and above 2^23 pass 2^31, past a gather's signed indices: the AVX-512 lookup
// must read them where the scalar one does. A table reaches such groups only with millions of
// prefixes longer than /24, so the arrays are laid out by hand in a reserved range.
TEST(Dir24_8, Avx512ReachesGroupsAboveTwoToThe23) {
  if (!dir24_8_avx512_supported()) GTEST_SKIP() << "no AVX-512F on this CPU";
  const test::ReservedRange range((size_t{1} << 24) * 256 * sizeof(uint32_t));
  uint32_t* tbl8 = range.as<uint32_t>();
  if (!tbl8) GTEST_SKIP() << "cannot reserve 16 GiB of address space";
  std::vector<uint32_t> tbl24(1u << 24, 0);
  const uint32_t groups[] = {0xFFFFFF, 0x800000, 0xABCDEF, 0x7FFFFF, 0};
  std::vector<uint32_t> ips;
  for (uint32_t k = 0; k < 5; ++k) {
    tbl24[0x0A0000 | k] = Dir24_8Entry::make_ext(groups[k]);  // 10.0.k.0/24 -> group k
    for (uint32_t b = 0; b < 256; ++b) tbl8[size_t{groups[k]} * 256 + b] = Dir24_8Entry::make(k * 256 + b, 32);
  }
  // 32 addresses, so that all of them go through the gathers (two steps of 16), the top group's
  // first and a no-route one among them.
  for (uint32_t i = 0; ips.size() < 31; ++i) ips.push_back(0x0A000000 | (i % 5) << 8 | (i * 37 % 256));
  ips.push_back(0x0B000000);
  const size_t n = ips.size();
  std::vector<uint32_t> got(n + 1, 0xDEADBEEF);
  lookup_avx512(tbl24.data(), tbl8, ips.data(), got.data(), n, 0);
  EXPECT_EQ(got[n], 0xDEADBEEFu);
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(got[i], dir24_8_lookup(tbl24.data(), tbl8, ips[i])) << format_ipv4(ips[i]);
  EXPECT_EQ(got[0], 0u) << "group 0xFFFFFF, slot 0: the last group's slot, read by the gather";
  EXPECT_EQ(got[n - 1], kNoRoute);
}

TEST(Ipv4RealTable, OddSizedArraysUseEveryCodePath) {
  const auto& t = RealIpv4Table::get();
  for (size_t n : {0u, 1u, 15u, 17u, 63u, 64u, 65u, 1000u}) {
    const auto ips = test::addresses_in_prefixes(t.fib.routes, n, n);
    std::vector<uint32_t> got(n + 1, 0xDEADBEEF);
    lookup_batched(*t.dir, ips.data(), got.data(), n);
    EXPECT_EQ(got[n], 0xDEADBEEFu) << "wrote past the end, n=" << n;
    std::vector<uint32_t> pipeline(n + 1, 0xDEADBEEF);
    lookup_prefetch_stream(*t.dir, ips.data(), pipeline.data(), n, kPrefetchDistance);
    EXPECT_EQ(pipeline[n], 0xDEADBEEFu) << "pipeline wrote past the end, n=" << n;
    got.resize(n);
    pipeline.resize(n);
    EXPECT_EQ(count_mismatches(t.trie, ips, got), 0u) << "n=" << n;
    EXPECT_EQ(count_mismatches(t.trie, ips, pipeline), 0u) << "pipeline, n=" << n;
  }
}

TEST(Dir24_8, DefaultRouteAndHostRoutes) {
  Dir24_8 d(16);
  EXPECT_EQ(d.lookup(ip(8, 8, 8, 8)), kNoRoute);
  ASSERT_EQ(d.add(0, 0, 1), S::kOk);
  EXPECT_EQ(d.lookup(ip(8, 8, 8, 8)), 1u);
  EXPECT_EQ(d.lookup(0xFFFFFFFF), 1u);
  ASSERT_EQ(d.add(ip(8, 8, 8, 8), 32, 2), S::kOk);
  EXPECT_EQ(d.lookup(ip(8, 8, 8, 8)), 2u);
  EXPECT_EQ(d.lookup(ip(8, 8, 8, 9)), 1u);
  EXPECT_EQ(d.lookup(ip(8, 8, 8, 7)), 1u);
  ASSERT_EQ(d.add(0xFFFFFFFF, 32, 3), S::kOk);
  EXPECT_EQ(d.lookup(0xFFFFFFFF), 3u);
  ASSERT_EQ(d.add(0, 32, 4), S::kOk);
  EXPECT_EQ(d.lookup(0), 4u);
  EXPECT_EQ(d.lookup(1), 1u);
  ASSERT_EQ(d.remove(0, 0), S::kOk);
  EXPECT_EQ(d.lookup(ip(1, 2, 3, 4)), kNoRoute);
  EXPECT_EQ(d.lookup(ip(8, 8, 8, 8)), 2u);
  ASSERT_EQ(d.remove(ip(8, 8, 8, 8), 32), S::kOk);
  ASSERT_EQ(d.remove(0xFFFFFFFF, 32), S::kOk);
  ASSERT_EQ(d.remove(0, 32), S::kOk);
  EXPECT_EQ(d.tbl8_groups_in_use(), 0u) << "groups must be recycled";
  EXPECT_EQ(d.lookup(0), kNoRoute);
}

TEST(Dir24_8, OverlappingPrefixesAndReplacement) {
  Dir24_8 d(16);
  ASSERT_EQ(d.add(ip(10, 0, 0, 0), 8, 1), S::kOk);
  ASSERT_EQ(d.add(ip(10, 1, 0, 0), 16, 2), S::kOk);
  ASSERT_EQ(d.add(ip(10, 1, 2, 0), 24, 3), S::kOk);
  ASSERT_EQ(d.add(ip(10, 1, 2, 128), 25, 4), S::kOk);
  ASSERT_EQ(d.add(ip(10, 1, 2, 200), 30, 5), S::kOk);
  EXPECT_EQ(d.lookup(ip(10, 9, 9, 9)), 1u);
  EXPECT_EQ(d.lookup(ip(10, 1, 9, 9)), 2u);
  EXPECT_EQ(d.lookup(ip(10, 1, 2, 1)), 3u);
  EXPECT_EQ(d.lookup(ip(10, 1, 2, 129)), 4u);
  EXPECT_EQ(d.lookup(ip(10, 1, 2, 201)), 5u);
  EXPECT_EQ(d.lookup(ip(10, 1, 2, 204)), 4u);
  // A shorter prefix added later must not override longer ones.
  ASSERT_EQ(d.add(ip(10, 1, 0, 0), 12, 6), S::kOk);
  EXPECT_EQ(d.lookup(ip(10, 1, 2, 201)), 5u);
  EXPECT_EQ(d.lookup(ip(10, 2, 0, 0)), 6u);
  // Replacing a next hop keeps the rule count.
  const size_t rules = d.rule_count();
  ASSERT_EQ(d.add(ip(10, 1, 2, 0), 24, 7), S::kOk);
  EXPECT_EQ(d.rule_count(), rules);
  EXPECT_EQ(d.lookup(ip(10, 1, 2, 1)), 7u);
  EXPECT_EQ(d.lookup(ip(10, 1, 2, 129)), 4u);
  // Deleting the /24 exposes the /16 below the /25 and /30.
  ASSERT_EQ(d.remove(ip(10, 1, 2, 0), 24), S::kOk);
  EXPECT_EQ(d.lookup(ip(10, 1, 2, 1)), 2u);
  EXPECT_EQ(d.lookup(ip(10, 1, 2, 201)), 5u);
  ASSERT_EQ(d.remove(ip(10, 1, 2, 200), 30), S::kOk);
  EXPECT_EQ(d.lookup(ip(10, 1, 2, 201)), 4u);
  EXPECT_EQ(d.remove(ip(10, 1, 2, 200), 30), S::kNotFound);
  // Host bits are ignored.
  ASSERT_EQ(d.remove(ip(10, 1, 2, 255), 25), S::kOk);
  EXPECT_EQ(d.lookup(ip(10, 1, 2, 201)), 2u);
  EXPECT_EQ(d.tbl8_groups_in_use(), 0u);
}

TEST(Dir24_8, RejectsBadArguments) {
  Dir24_8 d(4);
  EXPECT_EQ(d.add(0, 33, 1), S::kBadDepth);
  EXPECT_EQ(d.add(0, 8, kMaxNextHop + 1), S::kBadNextHop);
  EXPECT_EQ(d.add(0, 8, kMaxNextHop), S::kOk);
  EXPECT_EQ(d.lookup(ip(0, 1, 2, 3)), kMaxNextHop);
  EXPECT_EQ(d.remove(0, 33), S::kBadDepth);
}

TEST(Dir24_8, Tbl8ExhaustionLeavesTableUnchanged) {
  Dir24_8 d(2);
  ASSERT_EQ(d.add(ip(1, 0, 0, 0), 25, 1), S::kOk);
  ASSERT_EQ(d.add(ip(1, 0, 1, 0), 25, 2), S::kOk);
  ASSERT_EQ(d.add(ip(1, 0, 0, 128), 25, 3), S::kOk) << "same /24: no new group";
  const uint64_t version = d.version();
  EXPECT_EQ(d.add(ip(1, 0, 2, 0), 25, 4), S::kNoTbl8Space);
  EXPECT_EQ(d.version(), version);
  EXPECT_EQ(d.rule_count(), 3u);
  EXPECT_EQ(d.lookup(ip(1, 0, 2, 1)), kNoRoute);
  EXPECT_EQ(d.remove(ip(1, 0, 2, 0), 25), S::kNotFound);
  // Freeing a group makes room again.
  ASSERT_EQ(d.remove(ip(1, 0, 1, 0), 25), S::kOk);
  EXPECT_EQ(d.add(ip(1, 0, 2, 0), 25, 4), S::kOk);
  EXPECT_EQ(d.lookup(ip(1, 0, 2, 1)), 4u);
}

// Random add/delete sequences over a small address region (so prefixes overlap heavily),
// compared with the trie after every step at the prefix's edges and at random points.
TEST(Dir24_8, RandomAddDeleteSequencesMatchTrie) {
  std::mt19937_64 rng(2024);
  for (int round = 0; round < 4; ++round) {
    Dir24_8 d(64);
    RefTrie trie;
    std::vector<std::pair<uint32_t, uint8_t>> live;
    const uint32_t base = ip(100 + round, 64, 0, 0);
    for (int step = 0; step < 3000; ++step) {
      const bool del = !live.empty() && rng() % 3 == 0;
      uint32_t p;
      uint8_t len;
      if (del) {
        const size_t k = rng() % live.size();
        std::tie(p, len) = live[k];
        live[k] = live.back();
        live.pop_back();
        ASSERT_EQ(d.remove(p, len), S::kOk);
        ASSERT_TRUE(trie.remove(p, len));
      } else {
        // Mostly lengths that overlap inside the region; now and then a short one (/0../13)
        // that covers all of it, and now and then the largest next hop.
        len = static_cast<uint8_t>(rng() % 100 == 0 ? rng() % 14
                                   : rng() % 3 == 0 ? 14 + rng() % 11 : 25 + rng() % 8);
        p = (base | (static_cast<uint32_t>(rng()) & 0x0003FFFF)) & depth_mask(len);
        const uint32_t nh = rng() % 50 == 0 ? kMaxNextHop : static_cast<uint32_t>(rng() % 1000);
        const S s = d.add(p, len, nh);
        if (s == S::kNoTbl8Space) continue;
        ASSERT_EQ(s, S::kOk);
        trie.insert(p, len, nh);
        if (std::find(live.begin(), live.end(), std::make_pair(p, len)) == live.end()) {
          live.emplace_back(p, len);
        }
      }
      const uint32_t last = p | ~depth_mask(len);
      for (uint32_t probe : {p, last, p - 1, last + 1, base | (static_cast<uint32_t>(rng()) & 0x3FFFF)}) {
        ASSERT_EQ(d.lookup(probe), trie.lookup(probe))
            << "round " << round << " step " << step << " probe " << format_ipv4(probe);
      }
    }
    // Full sweep of the region at the end.
    for (uint32_t a = base; a < base + 0x40000; ++a) ASSERT_EQ(d.lookup(a), trie.lookup(a));
    EXPECT_EQ(d.rule_count(), live.size());
  }
}

TEST(Dir24_8, DeletingTheWholeRealTableEmptiesIt) {
  const auto& t = RealIpv4Table::get();
  Dir24_8 d;
  for (const auto& r : t.fib.routes) ASSERT_EQ(d.add(r.prefix, r.len, r.next_hop), S::kOk);
  std::vector<Route> order = t.fib.routes;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(5));
  // Delete half, compare with a trie holding the other half.
  RefTrie half;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i % 2) {
      ASSERT_EQ(d.remove(order[i].prefix, order[i].len), S::kOk);
    } else {
      half.insert(order[i].prefix, order[i].len, order[i].next_hop);
    }
  }
  const auto ips = test::addresses_in_prefixes(t.fib.routes, 1'000'000, 3);
  std::vector<uint32_t> got(ips.size());
  lookup_batched(d, ips.data(), got.data(), ips.size());
  EXPECT_EQ(count_mismatches(half, ips, got), 0u);
  for (size_t i = 0; i < order.size(); i += 2) ASSERT_EQ(d.remove(order[i].prefix, order[i].len), S::kOk);
  EXPECT_EQ(d.rule_count(), 0u);
  EXPECT_EQ(d.tbl8_groups_in_use(), 0u);
  for (uint32_t i = 0; i < Dir24_8::kTbl24Entries; ++i) ASSERT_EQ(d.tbl24()[i], 0u) << i;
}

}  // namespace
}  // namespace tandem::ipv4
