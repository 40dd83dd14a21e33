// Poptrie against the reference trie: on the real BGP table (random addresses and every prefix's
// edges), on hand-made and random small tables at every direct-pointing width the lookup cares
// about, through both lookup() and lookup_batch(); and the build's errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "apps/ipv4/poptrie.h"
#include "tests/ipv4_table.h"

namespace tandem::ipv4 {
namespace {

using test::RealIpv4Table;

constexpr uint32_t ip(int a, int b, int c, int d) {
  return (uint32_t(a) << 24) | (uint32_t(b) << 16) | (uint32_t(c) << 8) | uint32_t(d);
}
constexpr uint32_t prefix_mask(uint32_t len) { return len == 0 ? 0u : ~0u << (32 - len); }

RefTrie trie_of(const std::vector<Route>& routes) {
  RefTrie t;
  for (const Route& r : routes) t.insert(r.prefix, r.len, r.next_hop);
  return t;
}

// Every prefix's first and last address and the addresses just outside it.
std::vector<uint32_t> prefix_edges(const std::vector<Route>& routes) {
  std::vector<uint32_t> v;
  v.reserve(routes.size() * 4);
  for (const Route& r : routes) {
    const uint32_t first = r.prefix & prefix_mask(r.len), last = first | ~prefix_mask(r.len);
    v.insert(v.end(), {first, last, first - 1, last + 1});
  }
  return v;
}

// Checks lookup(), lookup_batch() and the shared core (poptrie_lookup, compiled here for the
// default target, without POPCNT, unlike the class's own loops) on `ips` against the trie; returns
// the mismatches (the first one reported) so that callers can add context.
size_t mismatches(const Poptrie& p, const RefTrie& trie, const std::vector<uint32_t>& ips) {
  std::vector<uint32_t> batch(ips.size());
  p.lookup_batch(ips.data(), batch.data(), ips.size());
  size_t bad = 0;
  for (size_t i = 0; i < ips.size(); ++i) {
    const uint32_t want = trie.lookup(ips[i]);
    const uint32_t one = p.lookup(ips[i]);
    const uint32_t core = poptrie_lookup(p.view(), ips[i]);
    if (one != want || batch[i] != want || core != want) {
      if (bad == 0) {
        ADD_FAILURE() << format_ipv4(ips[i]) << ": trie " << want << ", lookup " << one << ", lookup_batch "
                      << batch[i] << ", poptrie_lookup " << core << " (direct_bits " << p.direct_bits() << ")";
      }
      ++bad;
    }
  }
  return bad;
}

// ---- the real table -----------------------------------------------------------------------------

TEST(PoptrieRealTable, AgreesWithTrieOnUniformAddressesAndPrefixEdges) {
  const auto& t = RealIpv4Table::get();
  for (int bits : {18, 16}) {
    const Poptrie p = Poptrie::build(t.fib.routes, bits);
    // A compressed, cache-sized structure: a few MiB where DIR-24-8 takes 64 MiB and more.
    EXPECT_LT(p.memory_bytes(), size_t{16} << 20) << "direct_bits " << bits;
    EXPECT_GT(p.node_count(), 1000u);
    EXPECT_EQ(p.next_hop_count(), 17u) << "16 derived ports plus \"no route\"";

    const auto ips = test::uniform_addresses(2'000'000, 42 + bits);
    EXPECT_EQ(mismatches(p, t.trie, ips), 0u) << "uniform, direct_bits " << bits;
    EXPECT_EQ(mismatches(p, t.trie, prefix_edges(t.fib.routes)), 0u) << "prefix edges, direct_bits " << bits;
    EXPECT_EQ(mismatches(p, t.trie, test::addresses_in_prefixes(t.fib.routes, 500'000, bits)), 0u);

    std::vector<uint32_t> got(ips.size());
    p.lookup_batch(ips.data(), got.data(), ips.size());
    const auto misses = std::count(got.begin(), got.end(), kNoRoute);
    EXPECT_GT(misses, 100'000) << "the workload must exercise both outcomes";
    EXPECT_LT(misses, 1'900'000);
  }
}

TEST(PoptrieRealTable, AgreesWithDir24_8ForEveryBatchSize) {
  const auto& t = RealIpv4Table::get();
  const Poptrie p = Poptrie::build(t.fib.routes);
  for (size_t n : {0u, 1u, 7u, 64u, 1000u, 4097u}) {
    const auto ips = test::addresses_in_prefixes(t.fib.routes, n, n + 1);
    std::vector<uint32_t> got(n + 1, 0xDEADBEEF);
    p.lookup_batch(ips.data(), got.data(), n);
    EXPECT_EQ(got[n], 0xDEADBEEFu) << "wrote past the end, n " << n;
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], t.dir->lookup(ips[i])) << "n " << n << " i " << i;
  }
}

// ---- small tables -------------------------------------------------------------------------------

class PoptrieSmall : public ::testing::TestWithParam<int> {};  // the parameter: direct_bits

TEST_P(PoptrieSmall, EmptyTableHasNoRoutes) {
  const Poptrie p = Poptrie::build({}, GetParam());
  EXPECT_EQ(p.node_count(), 0u);
  EXPECT_EQ(p.next_hop_count(), 1u);
  const std::vector<uint32_t> ips = {0, 1, ip(10, 0, 0, 1), ip(128, 0, 0, 0), 0xFFFFFFFF};
  EXPECT_EQ(mismatches(p, RefTrie(), ips), 0u);
  for (uint32_t a : ips) EXPECT_EQ(p.lookup(a), kNoRoute);
}

TEST_P(PoptrieSmall, DefaultRouteOnly) {
  const std::vector<Route> routes = {{0, 0, 7}};
  const Poptrie p = Poptrie::build(routes, GetParam());
  EXPECT_EQ(p.node_count(), 0u) << "a /0 is one leaf in every direct entry";
  for (uint32_t a : {0u, 1u, ip(8, 8, 8, 8), 0x80000000u, 0xFFFFFFFFu}) EXPECT_EQ(p.lookup(a), 7u);
}

TEST_P(PoptrieSmall, HostRoutesAtTheEdgesOfTheAddressSpace) {
  const std::vector<Route> routes = {
      {0, 0, 1}, {0, 32, 2}, {0xFFFFFFFF, 32, 3}, {ip(8, 8, 8, 8), 32, 4}, {ip(8, 8, 8, 9), 32, 5},
      {ip(8, 8, 8, 11), 32, 4}, {ip(127, 255, 255, 255), 32, 6}, {ip(128, 0, 0, 0), 32, 7}};
  const Poptrie p = Poptrie::build(routes, GetParam());
  const RefTrie trie = trie_of(routes);
  EXPECT_EQ(mismatches(p, trie, prefix_edges(routes)), 0u);
  EXPECT_EQ(p.lookup(ip(8, 8, 8, 10)), 1u);
  EXPECT_EQ(p.lookup(ip(8, 8, 8, 11)), 4u);
  EXPECT_EQ(p.lookup(0xFFFFFFFE), 1u);
}

// One address covered by a prefix of every length 0..32, each with its own next hop: every level
// of the structure, and every position of a stride, ends some prefix.
TEST_P(PoptrieSmall, DeeplyNestedPrefixesOfEveryLength) {
  for (uint32_t anchor : {ip(10, 1, 2, 3), 0u, 0xFFFFFFFFu, ip(0x55, 0x55, 0x55, 0x55), ip(0xAA, 0xAA, 0xAA, 0xAA)}) {
    std::vector<Route> routes;
    for (uint32_t len = 0; len <= 32; ++len) {
      routes.push_back({anchor & prefix_mask(len), static_cast<uint8_t>(len), 100 + len});
    }
    const Poptrie p = Poptrie::build(routes, GetParam());
    const RefTrie trie = trie_of(routes);
    std::vector<uint32_t> ips = prefix_edges(routes);
    for (uint32_t bit = 0; bit < 32; ++bit) ips.push_back(anchor ^ (1u << bit));  // leaves at each depth
    EXPECT_EQ(mismatches(p, trie, ips), 0u) << "anchor " << format_ipv4(anchor);
    EXPECT_EQ(p.lookup(anchor), 132u);
  }
}

// Random tables of prefixes of every length 0..32 packed around one address region, so that they
// nest and overlap across the direct-pointing boundary (16, 18 or 24) and the 6-bit strides below
// it; checked on a full sweep of the region, every prefix's edges and random addresses.
TEST_P(PoptrieSmall, RandomTablesAroundTheDirectBoundaryMatchTrie) {
  const int bits = GetParam();
  std::mt19937_64 rng(1000 + bits);
  for (int round = 0; round < 6; ++round) {
    // A 2^18-address region that straddles a direct-pointing boundary when there is one nearby.
    const uint32_t region = (static_cast<uint32_t>(rng()) & prefix_mask(static_cast<uint32_t>(bits))) - 0x20000;
    std::vector<Route> routes;
    const int count = 50 + static_cast<int>(rng() % 400);
    for (int i = 0; i < count; ++i) {
      const uint32_t len = rng() % 20 == 0 ? static_cast<uint32_t>(rng() % 14)
                         : rng() % 3 == 0 ? static_cast<uint32_t>(bits - 2 + rng() % 5)
                                          : static_cast<uint32_t>(14 + rng() % 19);
      const uint32_t addr = region + static_cast<uint32_t>(rng() % 0x40000);
      routes.push_back({addr & prefix_mask(len), static_cast<uint8_t>(len), static_cast<uint32_t>(rng() % 12)});
    }
    const Poptrie p = Poptrie::build(routes, bits);
    const RefTrie trie = trie_of(routes);
    std::vector<uint32_t> ips = prefix_edges(routes);
    for (uint32_t a = 0; a < 0x40000; ++a) ips.push_back(region + a);
    for (int i = 0; i < 20000; ++i) ips.push_back(static_cast<uint32_t>(rng()));
    ASSERT_EQ(mismatches(p, trie, ips), 0u) << "round " << round;
  }
}

// Many routes scattered over the whole address space with few next hops (long runs of equal
// leaves, the case leaf compression folds) and with many (where it cannot).
TEST_P(PoptrieSmall, ScatteredTablesMatchTrie) {
  const int bits = GetParam();
  std::mt19937_64 rng(77 + bits);
  for (uint32_t hops : {2u, 5000u}) {
    std::vector<Route> routes;
    for (int i = 0; i < 20000; ++i) {
      const auto len = static_cast<uint32_t>(8 + rng() % 25);
      routes.push_back({static_cast<uint32_t>(rng()) & prefix_mask(len), static_cast<uint8_t>(len),
                        static_cast<uint32_t>(rng() % hops)});
    }
    const Poptrie p = Poptrie::build(routes, bits);
    const RefTrie trie = trie_of(routes);
    EXPECT_EQ(mismatches(p, trie, prefix_edges(routes)), 0u) << hops << " next hops";
    EXPECT_EQ(mismatches(p, trie, test::uniform_addresses(200'000, hops)), 0u) << hops << " next hops";
    EXPECT_EQ(mismatches(p, trie, test::addresses_in_prefixes(routes, 100'000, hops)), 0u);
  }
}

TEST_P(PoptrieSmall, EveryBatchSize) {
  std::mt19937_64 rng(5);
  std::vector<Route> routes = {{0, 1, 1}};
  for (int i = 0; i < 3000; ++i) {
    const auto len = static_cast<uint32_t>(12 + rng() % 21);
    routes.push_back({static_cast<uint32_t>(rng()) & prefix_mask(len), static_cast<uint8_t>(len),
                      static_cast<uint32_t>(rng() % 8)});
  }
  const Poptrie p = Poptrie::build(routes, GetParam());
  const RefTrie trie = trie_of(routes);
  for (size_t n : {0u, 1u, 7u, 64u, 1000u}) {
    const auto ips = test::addresses_in_prefixes(routes, n, n);
    std::vector<uint32_t> got(n + 1, 0xDEADBEEF);
    p.lookup_batch(ips.data(), got.data(), n);
    EXPECT_EQ(got[n], 0xDEADBEEFu) << "wrote past the end, n " << n;
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], trie.lookup(ips[i])) << "n " << n << " i " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(DirectBits, PoptrieSmall, ::testing::Values(16, 18, 24, 8),
                         [](const auto& info) { return "s" + std::to_string(info.param); });

// ---- structure ----------------------------------------------------------------------------------

TEST(Poptrie, OneLongPrefixIsOneNodeWithCompressedLeaves) {
  // A /20 under s = 18: one node resolving bits 18..23; its 64 slots hold three runs (before the
  // prefix, the prefix, after it), which leaf compression stores as three leaves.
  const std::vector<Route> routes = {{ip(10, 0, 0x10, 0), 20, 1}};
  const Poptrie p = Poptrie::build(routes, 18);
  EXPECT_EQ(p.node_count(), 1u);
  EXPECT_EQ(p.leaf_count(), 3u);
  EXPECT_EQ(p.view().nodes[0].vector, 0u);
  EXPECT_EQ(p.lookup(ip(10, 0, 0x10, 0)), 1u);
  EXPECT_EQ(p.lookup(ip(10, 0, 0x1F, 255)), 1u);
  EXPECT_EQ(p.lookup(ip(10, 0, 0x20, 0)), kNoRoute);
  EXPECT_EQ(p.lookup(ip(10, 0, 0x0F, 255)), kNoRoute);
}

TEST(Poptrie, ArraysAreCacheLineAligned) {
  const std::vector<Route> routes = {{ip(1, 2, 3, 0), 24, 1}, {ip(1, 2, 3, 4), 30, 2}, {0, 0, 3}};
  const Poptrie p = Poptrie::build(routes);
  for (const void* a : {static_cast<const void*>(p.view().direct), static_cast<const void*>(p.view().nodes),
                        static_cast<const void*>(p.view().leaves), static_cast<const void*>(p.view().next_hops)}) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  }
}

TEST(Poptrie, LaterDuplicateWinsAndHostBitsAreIgnored) {
  const std::vector<Route> routes = {{ip(10, 0, 0, 0), 8, 1}, {ip(10, 1, 2, 3), 16, 2}, {ip(10, 1, 0, 0), 16, 3}};
  const Poptrie p = Poptrie::build(routes);
  EXPECT_EQ(p.lookup(ip(10, 1, 9, 9)), 3u);
  EXPECT_EQ(p.lookup(ip(10, 2, 0, 0)), 1u);
  EXPECT_EQ(mismatches(p, trie_of(routes), prefix_edges(routes)), 0u);
}

TEST(Poptrie, MovedTableStillAnswers) {
  Poptrie a = Poptrie::build({{ip(192, 168, 0, 0), 16, 9}, {ip(192, 168, 1, 128), 25, 4}});
  Poptrie b = std::move(a);
  EXPECT_EQ(b.lookup(ip(192, 168, 1, 200)), 4u);
  EXPECT_EQ(b.lookup(ip(192, 168, 7, 1)), 9u);
}

// ---- build errors -------------------------------------------------------------------------------

TEST(Poptrie, RejectsBadPrefixLength) {
  EXPECT_THROW(Poptrie::build({{0, 33, 1}}), PoptrieError);
}

TEST(Poptrie, RejectsBadDirectBits) {
  const std::vector<Route> routes = {{0, 0, 1}};
  EXPECT_THROW(Poptrie::build(routes, 7), PoptrieError);
  EXPECT_THROW(Poptrie::build(routes, 25), PoptrieError);
  EXPECT_THROW(Poptrie::build(routes, -1), PoptrieError);
}

TEST(Poptrie, AtMost65535DistinctNextHops) {
  // 65535 distinct next hops (one per /32, the largest value included) fit; one more does not.
  std::vector<Route> routes;
  for (uint32_t i = 0; i < Poptrie::kMaxNextHops; ++i) {
    routes.push_back({ip(20, 0, 0, 0) + i * 3, 32, i == 0 ? kNoRoute - 1 : i * 7});
  }
  const Poptrie p = Poptrie::build(routes);
  EXPECT_EQ(p.next_hop_count(), Poptrie::kMaxNextHops + 1);
  EXPECT_EQ(mismatches(p, trie_of(routes), prefix_edges(routes)), 0u);

  routes.push_back({ip(30, 0, 0, 0), 8, 1u << 30});
  try {
    Poptrie::build(routes);
    FAIL() << "65536 distinct next hops were accepted";
  } catch (const PoptrieError& e) {
    EXPECT_NE(std::string(e.what()).find("65535 distinct next hops"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem::ipv4
