// The IPv6 table (apps/ipv6/lpm6) and its CPU lookups against the reference trie: on the real BGP
// table, on the G-Opt paper's random worst case, on hand-made edge cases and random add/delete
// sequences; the IPv6 table loader on good and broken files. The benchmarks' lookup variants:
// bench/variants/ipv6_variants_test.cc.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>

#include "apps/ipv6/fib6_loader.h"
#include "apps/ipv6/lpm6.h"
#include "apps/ipv6/ref_trie6.h"
#include "tests/reserved_range.h"
#include "tests/test_util.h"

namespace tandem::ipv6 {
namespace {

using S = Lpm6::Status;

Addr6 addr(const char* text) {
  Addr6 a{};
  if (!parse_ipv6_addr(text, text + std::strlen(text), &a)) throw std::runtime_error(text);
  return a;
}

// a + 1 and a - 1 over the 128 bits (wrapping).
Addr6 next_addr(Addr6 a) {
  for (int i = 15; i >= 0 && ++a[i] == 0; --i) {
  }
  return a;
}
Addr6 prev_addr(Addr6 a) {
  for (int i = 15; i >= 0 && a[i]-- == 0; --i) {
  }
  return a;
}
Addr6 last_addr(const Addr6& prefix, uint8_t len) {
  Addr6 ones, net;
  ones.fill(0xFF);
  lpm6_mask(ones.data(), len, net.data());
  Addr6 last;
  for (int i = 0; i < 16; ++i) last[i] = static_cast<uint8_t>(prefix[i] | ~net[i]);
  return last;
}

// Each route's first and last address and the addresses just outside it.
std::vector<Addr6> edge_addresses(const std::vector<Route6>& routes) {
  std::vector<Addr6> v;
  v.reserve(routes.size() * 4);
  for (const Route6& r : routes) {
    const Addr6 last = last_addr(r.prefix, r.len);
    v.insert(v.end(), {r.prefix, last, prev_addr(r.prefix), next_addr(last)});
  }
  return v;
}

struct Built {
  std::unique_ptr<Lpm6> lpm = std::make_unique<Lpm6>();
  RefTrie6 trie;
  explicit Built(const std::vector<Route6>& routes) {
    for (const Route6& r : routes) {
      const S s = lpm->add(r.prefix.data(), r.len, r.next_hop);
      if (s != S::kOk) throw std::runtime_error(Lpm6::status_name(s));
      trie.insert(r.prefix.data(), r.len, r.next_hop);
    }
  }
};

const Fib6& real_fib() {
  static const Fib6 fib = load_fib6(test::source_path("data/fib/iprbench_tier1_fulltable_prefixes.txt.gz"));
  return fib;
}
const Built& real_table() {
  static const Built b(real_fib().routes);
  return b;
}

// Every lookup path agrees with the trie on `addrs`, and none writes past the end.
void expect_paths_agree(const Lpm6& t, const RefTrie6& trie, const std::vector<Addr6>& addrs) {
  const size_t n = addrs.size();
  const auto rows = addr_rows(addrs.data());
  std::vector<uint32_t> want(n);
  for (size_t i = 0; i < n; ++i) want[i] = trie.lookup(addrs[i].data());
  using Path = std::function<void(uint32_t*)>;
  const std::vector<std::pair<std::string, Path>> paths = {
      {"lookup", [&](uint32_t* h) { for (size_t i = 0; i < n; ++i) h[i] = t.lookup(rows[i]); }},
      {"batch", [&](uint32_t* h) { t.lookup_batch(rows, h, n); }},
      {"window 4", [&](uint32_t* h) { lpm6_lookup_window(t, rows, h, n, 4); }},
      {"window 64", [&](uint32_t* h) { lpm6_lookup_window(t, rows, h, n, 64); }},
      {"window 256", [&](uint32_t* h) { lpm6_lookup_window(t, rows, h, n, 256); }},
      {"avx512", [&](uint32_t* h) { lpm6_lookup_avx512(t, rows, h, n); }},
      {"avx512, 21 at a time", [&](uint32_t* h) {  // the app's bursts: a 16-lane step and a scalar tail
         for (size_t i = 0; i < n; i += 21) lpm6_lookup_avx512(t, rows + i, h + i, std::min<size_t>(21, n - i));
       }},
  };
  for (const auto& [name, run] : paths) {
    std::vector<uint32_t> got(n + 1, 0xDEADBEEF);
    run(got.data());
    EXPECT_EQ(got[n], 0xDEADBEEFu) << name << " wrote past the end";
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
      if (got[i] != want[i] && bad++ == 0) {
        ADD_FAILURE() << name << ": " << format_ipv6(addrs[i].data()) << " -> " << got[i] << ", trie says "
                      << want[i];
      }
    }
    EXPECT_EQ(bad, 0u) << name << " mismatches of " << n;
  }
}

// ---- the real table ----

TEST(Ipv6RealTable, LoadsTheFullBgpTable) {
  const Fib6& fib = real_fib();
  EXPECT_EQ(fib.routes.size(), 160147u);
  EXPECT_EQ(fib.ipv4_skipped, 901899u);
  EXPECT_EQ(fib.derived_next_hops, 160147u);
  EXPECT_LT(fib.max_next_hop, 16u);
  const Built& t = real_table();
  EXPECT_EQ(t.lpm->rule_count(), 160147u);
  EXPECT_GT(t.lpm->groups_in_use(), 10000u);
  EXPECT_EQ(t.lpm->groups_in_use(), t.lpm->groups_high_water()) << "nothing freed while only adding";
}

TEST(Ipv6RealTable, MillionsOfAddressesAgreeWithTrie) {
  const Built& t = real_table();
  std::vector<Addr6> addrs = uniform_addresses(300'000, 1);
  const auto inside = sample_addresses(real_fib().routes, 500'000, 2);
  const auto edges = edge_addresses(real_fib().routes);
  addrs.insert(addrs.end(), inside.begin(), inside.end());
  addrs.insert(addrs.end(), edges.begin(), edges.end());
  ASSERT_GE(addrs.size(), 1'000'000u);
  expect_paths_agree(*t.lpm, t.trie, addrs);
  // The workload exercises both outcomes.
  std::vector<uint32_t> hops(addrs.size());
  t.lpm->lookup_batch(addr_rows(addrs.data()), hops.data(), hops.size());
  const auto misses = std::count(hops.begin(), hops.end(), kNoRoute);
  EXPECT_GT(misses, 290'000);
  EXPECT_LT(misses, 700'000);
}

TEST(Ipv6RealTable, OddSizedArraysUseEveryCodePath) {
  const Built& t = real_table();
  for (size_t n : {0u, 1u, 3u, 15u, 17u, 33u, 1000u}) {
    expect_paths_agree(*t.lpm, t.trie, sample_addresses(real_fib().routes, n, n));
  }
}

TEST(Ipv6RealTable, DeletingTheWholeTableEmptiesIt) {
  std::vector<Route6> order = real_fib().routes;
  Built b(order);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(5));
  RefTrie6 half;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i % 2) {
      ASSERT_EQ(b.lpm->remove(order[i].prefix.data(), order[i].len), S::kOk);
    } else {
      half.insert(order[i].prefix.data(), order[i].len, order[i].next_hop);
    }
  }
  auto addrs = sample_addresses(real_fib().routes, 200'000, 3);
  const auto edges = edge_addresses(order);
  addrs.insert(addrs.end(), edges.begin(), edges.begin() + 200'000);
  expect_paths_agree(*b.lpm, half, addrs);
  for (size_t i = 0; i < order.size(); i += 2) ASSERT_EQ(b.lpm->remove(order[i].prefix.data(), order[i].len), S::kOk);
  EXPECT_EQ(b.lpm->rule_count(), 0u);
  EXPECT_EQ(b.lpm->groups_in_use(), 0u) << "every group folded back";
  for (uint32_t i = 0; i < Lpm6::kTbl24Entries; ++i) ASSERT_EQ(b.lpm->tbl24()[i], 0u) << i;
}

// ---- the G-Opt paper's worst case: random prefixes of length 48..64 ----

TEST(Ipv6RandomTable, RandomPrefixes48To64AgreeWithTrie) {
  const auto routes = random_table(20'000, 48, 64, 11);
  ASSERT_EQ(routes.size(), 20'000u);
  for (const Route6& r : routes) ASSERT_TRUE(r.len >= 48 && r.len <= 64);
  EXPECT_EQ(random_table(100, 48, 64, 11)[42].prefix, random_table(100, 48, 64, 11)[42].prefix) << "reproducible";
  Built b(routes);
  // Random bits: almost every prefix has a /24 of its own, and groups down to its last byte.
  EXPECT_GT(b.lpm->groups_in_use(), 20'000u * 3);
  auto addrs = sample_addresses(routes, 300'000, 12);
  const auto uniform = uniform_addresses(100'000, 13);
  const auto edges = edge_addresses(routes);
  addrs.insert(addrs.end(), uniform.begin(), uniform.end());
  addrs.insert(addrs.end(), edges.begin(), edges.end());
  expect_paths_agree(*b.lpm, b.trie, addrs);
}

// ---- edge cases ----

TEST(Lpm6, DefaultRouteAndHostRoutes) {
  Lpm6 t(64);
  const Addr6 zero = addr("::"), ones = addr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
  EXPECT_EQ(t.lookup(zero.data()), kNoRoute);
  ASSERT_EQ(t.add(zero.data(), 0, 1), S::kOk);
  EXPECT_EQ(t.lookup(addr("2001:db8::1").data()), 1u);
  EXPECT_EQ(t.lookup(ones.data()), 1u);
  ASSERT_EQ(t.add(ones.data(), 128, 2), S::kOk);
  ASSERT_EQ(t.add(zero.data(), 128, 3), S::kOk);
  ASSERT_EQ(t.add(addr("2001:db8::1").data(), 128, 4), S::kOk);
  EXPECT_EQ(t.lookup(ones.data()), 2u);
  EXPECT_EQ(t.lookup(prev_addr(ones).data()), 1u);
  EXPECT_EQ(t.lookup(zero.data()), 3u);
  EXPECT_EQ(t.lookup(addr("::1").data()), 1u);
  EXPECT_EQ(t.lookup(addr("2001:db8::1").data()), 4u);
  EXPECT_EQ(t.lookup(addr("2001:db8::2").data()), 1u);
  EXPECT_EQ(t.groups_in_use(), 3u * kMaxTbl8Levels);
  ASSERT_EQ(t.remove(zero.data(), 0), S::kOk);
  EXPECT_EQ(t.lookup(addr("2001:db8::2").data()), kNoRoute);
  EXPECT_EQ(t.lookup(addr("2001:db8::1").data()), 4u);
  EXPECT_EQ(t.lookup(zero.data()), 3u);
  for (const Addr6& a : {ones, zero, addr("2001:db8::1")}) ASSERT_EQ(t.remove(a.data(), 128), S::kOk);
  EXPECT_EQ(t.groups_in_use(), 0u) << "groups must be recycled";
  EXPECT_EQ(t.lookup(zero.data()), kNoRoute);
}

TEST(Lpm6, Tbl24AndFirstTbl8LevelBoundaries) {
  // 2001:d00::/24 is tbl24 slot 20 01 0d; its /25s split on byte 3's top bit.
  Lpm6 t(64);
  const Addr6 p = addr("2001:d00::");
  ASSERT_EQ(t.add(p.data(), 23, 23), S::kOk);  // 2001:c00::/23: slots 20 01 0c and 20 01 0d
  ASSERT_EQ(t.add(p.data(), 24, 24), S::kOk);
  ASSERT_EQ(t.add(p.data(), 25, 25), S::kOk);
  ASSERT_EQ(t.add(addr("2001:e80::").data(), 25, 125), S::kOk);
  EXPECT_EQ(t.lookup(addr("2001:d00::1").data()), 25u);
  EXPECT_EQ(t.lookup(addr("2001:d7f:ffff::").data()), 25u);  // the /25's last /32
  EXPECT_EQ(t.lookup(addr("2001:d80::").data()), 24u);       // the other half of the /24
  EXPECT_EQ(t.lookup(addr("2001:cff:ffff::").data()), 23u);  // the other /24 of the /23
  EXPECT_EQ(t.lookup(addr("2001:bff:ffff::").data()), kNoRoute);
  EXPECT_EQ(t.lookup(addr("2001:e00::").data()), kNoRoute);
  EXPECT_EQ(t.lookup(addr("2001:e80::").data()), 125u);
  EXPECT_EQ(t.lookup(addr("2001:eff:ffff:ffff::").data()), 125u);
  EXPECT_EQ(t.lookup(addr("2001:f00::").data()), kNoRoute);
  ASSERT_EQ(t.remove(p.data(), 24), S::kOk);
  EXPECT_EQ(t.lookup(addr("2001:d80::").data()), 23u);
  EXPECT_EQ(t.lookup(addr("2001:d00::1").data()), 25u);
  ASSERT_EQ(t.remove(p.data(), 25), S::kOk);
  EXPECT_EQ(t.lookup(addr("2001:d00::1").data()), 23u);
  EXPECT_EQ(t.groups_in_use(), 1u) << "only 2001:e80::/25's group is left";
  ASSERT_EQ(t.remove(p.data(), 23), S::kOk);
  EXPECT_EQ(t.lookup(addr("2001:d00::1").data()), kNoRoute);
  EXPECT_EQ(t.lookup(addr("2001:e80::").data()), 125u);
}

// Prefixes of every length 0..128 along one address, added shortest-first and longest-first: an
// address that leaves the path after k bits must get the /k route. Then deleted one by one.
TEST(Lpm6, NestedPrefixesAtEveryLength) {
  const Addr6 base = addr("2a03:b0c0:3:d0::27f:e001");
  std::vector<Addr6> probes = {base};
  for (int k = 0; k < 128; ++k) {
    Addr6 a = base;
    a[k / 8] ^= static_cast<uint8_t>(0x80 >> (k % 8));  // leaves the path at bit k
    probes.push_back(a);
  }
  for (bool longest_first : {false, true}) {
    Lpm6 t(1024);
    RefTrie6 trie;
    for (int i = 0; i <= 128; ++i) {
      const uint8_t len = static_cast<uint8_t>(longest_first ? 128 - i : i);
      ASSERT_EQ(t.add(base.data(), len, 1000 + len), S::kOk);
      trie.insert(base.data(), len, 1000 + len);
    }
    EXPECT_EQ(t.lookup(base.data()), 1128u);
    for (int k = 0; k < 128; ++k) EXPECT_EQ(t.lookup(probes[k + 1].data()), 1000u + k) << "bit " << k;
    std::vector<int> order(129);
    for (int i = 0; i <= 128; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), std::mt19937_64(longest_first));
    for (int len : order) {
      ASSERT_EQ(t.remove(base.data(), static_cast<uint8_t>(len)), S::kOk);
      ASSERT_TRUE(trie.remove(base.data(), static_cast<uint8_t>(len)));
      for (const Addr6& a : probes) ASSERT_EQ(t.lookup(a.data()), trie.lookup(a.data())) << "after /" << len;
    }
    EXPECT_EQ(t.groups_in_use(), 0u);
  }
}

TEST(Lpm6, ReplacingANextHopAndDeletingEveryKind) {
  Lpm6 t(256);
  const Addr6 p32 = addr("2001:db8::"), p48 = addr("2001:db8:1::"), p64 = addr("2001:db8:1:2::");
  ASSERT_EQ(t.add(p32.data(), 32, 1), S::kOk);
  ASSERT_EQ(t.add(p48.data(), 48, 2), S::kOk);
  ASSERT_EQ(t.add(p64.data(), 64, 3), S::kOk);
  ASSERT_EQ(t.add(addr("2001:db8:1:2::100").data(), 120, 4), S::kOk);
  EXPECT_EQ(t.rule_count(), 4u);
  // Replacing keeps the rule count and the longer routes.
  ASSERT_EQ(t.add(p32.data(), 32, 7), S::kOk);
  ASSERT_EQ(t.add(p48.data(), 48, 8), S::kOk);
  EXPECT_EQ(t.rule_count(), 4u);
  EXPECT_EQ(t.lookup(addr("2001:db8:9::").data()), 7u);
  EXPECT_EQ(t.lookup(addr("2001:db8:1:9::").data()), 8u);
  EXPECT_EQ(t.lookup(addr("2001:db8:1:2::1").data()), 3u);
  EXPECT_EQ(t.lookup(addr("2001:db8:1:2::200").data()), 3u);
  EXPECT_EQ(t.lookup(addr("2001:db8:1:2::100").data()), 4u);
  EXPECT_EQ(t.lookup(addr("2001:db8:1:2::1ff").data()), 4u);
  // Deleting the covering /48 under longer ones exposes the /32 around them.
  ASSERT_EQ(t.remove(p48.data(), 48), S::kOk);
  EXPECT_EQ(t.lookup(addr("2001:db8:1:9::").data()), 7u);
  EXPECT_EQ(t.lookup(addr("2001:db8:1:2::1").data()), 3u);
  EXPECT_EQ(t.lookup(addr("2001:db8:1:2::1ff").data()), 4u);
  // Not found: absent, wrong length, already deleted; bad arguments.
  EXPECT_EQ(t.remove(p48.data(), 48), S::kNotFound);
  EXPECT_EQ(t.remove(p32.data(), 33), S::kNotFound);
  EXPECT_EQ(t.remove(addr("3000::").data(), 0), S::kNotFound);
  EXPECT_EQ(t.add(p32.data(), 129, 1), S::kBadDepth);
  EXPECT_EQ(t.remove(p32.data(), 129), S::kBadDepth);
  EXPECT_EQ(t.add(p32.data(), 32, kMaxNextHop + 1), S::kBadNextHop);
  // Host bits are ignored; the largest next hop is representable.
  ASSERT_EQ(t.add(addr("2001:db8:1:2:ffff::").data(), 64, kMaxNextHop), S::kOk);
  EXPECT_EQ(t.lookup(addr("2001:db8:1:2::1").data()), kMaxNextHop);
  ASSERT_EQ(t.remove(addr("2001:db8:1:2::1ab").data(), 120), S::kOk);
  EXPECT_EQ(t.lookup(addr("2001:db8:1:2::1ff").data()), kMaxNextHop);
  // Deleting the leaf /64 leaves the /32; deleting the /32 leaves nothing.
  ASSERT_EQ(t.remove(p64.data(), 64), S::kOk);
  EXPECT_EQ(t.lookup(addr("2001:db8:1:2::1").data()), 7u);
  EXPECT_EQ(t.groups_in_use(), 1u) << "the /32's group, its level-1 slot";
  ASSERT_EQ(t.remove(p32.data(), 32), S::kOk);
  EXPECT_EQ(t.lookup(addr("2001:db8:1:2::1").data()), kNoRoute);
  EXPECT_EQ(t.groups_in_use(), 0u);
  EXPECT_EQ(t.rule_count(), 0u);
}

TEST(Lpm6, RunningOutOfGroupsLeavesTheTableUnchanged) {
  Lpm6 t(3);
  ASSERT_EQ(t.add(addr("2001:db8::").data(), 32, 1), S::kOk);  // 1 group
  const uint64_t version = t.version();
  EXPECT_EQ(t.add(addr("2001:db8:1::").data(), 56, 2), S::kNoTbl8Space) << "needs 3 more";
  EXPECT_EQ(t.version(), version);
  EXPECT_EQ(t.groups_in_use(), 1u);
  EXPECT_EQ(t.lookup(addr("2001:db8:1::").data()), 1u);
  EXPECT_EQ(t.remove(addr("2001:db8:1::").data(), 56), S::kNotFound);
  ASSERT_EQ(t.add(addr("2001:db8:1::").data(), 48, 2), S::kOk);  // 2 more: the cap
  EXPECT_EQ(t.group_capacity(), 3u);
  EXPECT_EQ(t.lookup(addr("2001:db8:1::").data()), 2u);
  ASSERT_EQ(t.remove(addr("2001:db8:1::").data(), 48), S::kOk);
  EXPECT_EQ(t.groups_in_use(), 1u);
  EXPECT_EQ(t.add(addr("2001:db8:1::").data(), 56, 3), S::kNoTbl8Space);
  ASSERT_EQ(t.add(addr("2001:db8:1::").data(), 48, 3), S::kOk) << "freed groups are reused";
}

TEST(Lpm6, PoolGrowsInChunksWithoutMoving) {
  Lpm6 t;
  EXPECT_EQ(t.group_capacity(), 0u);
  EXPECT_EQ(t.max_groups(), Lpm6::kMaxGroups);
  const uint32_t* tbl8 = t.tbl8();
  const auto routes = random_table(3000, 40, 128, 9);
  RefTrie6 trie;
  for (const Route6& r : routes) {
    ASSERT_EQ(t.add(r.prefix.data(), r.len, r.next_hop), S::kOk);
    trie.insert(r.prefix.data(), r.len, r.next_hop);
  }
  EXPECT_GT(t.group_capacity(), 10'000u);
  EXPECT_EQ(t.group_capacity() % Lpm6::kGroupsPerChunk, 0u);
  EXPECT_LT(t.group_capacity() - t.groups_in_use(), Lpm6::kGroupsPerChunk);
  EXPECT_EQ(t.tbl8(), tbl8) << "readers' pointers stay valid";
  EXPECT_EQ(t.memory_bytes() - t.memory_bytes_in_use(),
            size_t{t.group_capacity() - t.groups_in_use()} * Lpm6::kGroupEntries * 4);
  expect_paths_agree(t, trie, edge_addresses(routes));
}

// Group slots reach 2^32 - 1 and the AVX-512 gathers take signed 32-bit indices: groups at and
// above 2^23 (slots past 2^31) must be read where the scalar walk reads them. Such groups take
// gigabytes of routes to reach through the pool, so the arrays are laid out by hand in a reserved
// 16 GiB range of which only the pages written are backed.
TEST(Lpm6, Avx512ReachesGroupsAboveTwoToThe23) {
  if (!lpm6_avx512_supported()) GTEST_SKIP() << "no AVX-512 F+BW on this CPU";
  const test::ReservedRange range(size_t{Lpm6::kMaxGroups} * Lpm6::kGroupEntries * sizeof(uint32_t));
  uint32_t* tbl8 = range.as<uint32_t>();
  if (!tbl8) GTEST_SKIP() << "cannot reserve 16 GiB of address space";
  std::vector<uint32_t> tbl24(Lpm6::kTbl24Entries, 0);
  const uint32_t groups[] = {0, 0x7FFFFF, 0x800000, 0x800001, 0xABCDEF, 0xFFFFFF};
  constexpr uint32_t kGroups = 6;
  std::vector<Addr6> addrs;
  for (uint32_t k = 0; k < kGroups; ++k) {
    // 2001:0k00::/40 leads to group k; its slot 0x42 leads on to the next group of the list, whose
    // slot 0x42 leads to the one after, and so on: byte 5 onwards of the addresses ends the walk.
    const uint32_t g = groups[k];
    tbl24[0x200100 | k] = Lpm6Entry::make_ext(g, 0);
    uint32_t* grp = tbl8 + size_t{g} * Lpm6::kGroupEntries;
    for (uint32_t b = 0; b < 256; ++b) grp[b] = Lpm6Entry::make(k * 256 + b, 1);
    grp[0x42] = Lpm6Entry::make_ext(groups[(k + 1) % kGroups], 0);
    for (const uint32_t b3 : {0x00u, 0x42u, 0x99u, 0xFFu}) {
      for (const uint32_t b4 : {0x00u, 0x42u, 0xFFu}) {
        Addr6 a{};
        a[0] = 0x20, a[1] = 0x01, a[2] = static_cast<uint8_t>(k), a[3] = static_cast<uint8_t>(b3);
        a[4] = static_cast<uint8_t>(b4), a[5] = 0x42;
        addrs.push_back(a);
      }
    }
  }
  // 145 addresses: 128 through eight sets of 16, 16 through one, the last one at a time.
  const std::vector<Addr6> once = addrs;
  addrs.insert(addrs.end(), once.begin(), once.end());
  addrs.push_back(once.back());
  const size_t n = addrs.size();
  ASSERT_EQ(n, 145u);
  std::vector<uint32_t> want(n), got(n + 1, 0xDEADBEEF);
  for (size_t i = 0; i < n; ++i) want[i] = lpm6_lookup(tbl24.data(), tbl8, addrs[i].data());
  lpm6_lookup_avx512(tbl24.data(), tbl8, addr_rows(addrs.data()), got.data(), n);
  EXPECT_EQ(got[n], 0xDEADBEEFu);
  size_t ended_high = 0;  // next hop k * 256 + byte: the walk ended in group k of the list
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(got[i], want[i]) << format_ipv6(addrs[i].data());
    ended_high += want[i] != kNoRoute && want[i] / 256 >= 2;  // groups 0x800000 and above
  }
  EXPECT_GT(ended_high, n / 3) << "the walks must end in the groups past 2^23";
}

TEST(Lpm6, SelectLookupRefusesWhatTheCpuCannotRun) {
  Lpm6 t(64);
  EXPECT_EQ(t.selected_lookup(), default_lookup());
  EXPECT_TRUE(t.select_lookup(Lpm6Lookup::kWindow));
  EXPECT_EQ(t.selected_lookup(), Lpm6Lookup::kWindow);
  EXPECT_EQ(t.select_lookup(Lpm6Lookup::kAvx512), lpm6_avx512_supported());
  EXPECT_EQ(t.selected_lookup(), lpm6_avx512_supported() ? Lpm6Lookup::kAvx512 : Lpm6Lookup::kWindow);
  EXPECT_STREQ(lpm6_lookup_name(Lpm6Lookup::kAvx512), "avx512");
}

// Random add/delete sequences in a small region, so that prefixes of all lengths overlap heavily,
// compared with the trie after every step at the prefix's edges and at random points.
TEST(Lpm6, RandomAddDeleteSequencesMatchTrie) {
  std::mt19937_64 rng(2024);
  for (int round = 0; round < 4; ++round) {
    Lpm6 t(1u << 16);
    RefTrie6 trie;
    std::vector<std::pair<Addr6, uint8_t>> live;
    Addr6 region = addr("2001:db8::");
    region[2] = static_cast<uint8_t>(round);
    // A random address in the region: the first 20 bits fixed, then mostly zeros (so prefixes
    // share paths), and random bits in a few bytes.
    auto in_region = [&] {
      Addr6 a = region;
      a[2] |= static_cast<uint8_t>(rng() & 0x0F);
      for (int i : {3, 5, 8, 15}) a[i] = static_cast<uint8_t>(rng() % 4 == 0 ? rng() : 0);
      return a;
    };
    for (int step = 0; step < 2500; ++step) {
      Addr6 p;
      uint8_t len;
      if (!live.empty() && rng() % 3 == 0) {
        const size_t k = rng() % live.size();
        std::tie(p, len) = live[k];
        live[k] = live.back();
        live.pop_back();
        ASSERT_EQ(t.remove(p.data(), len), S::kOk);
        ASSERT_TRUE(trie.remove(p.data(), len));
      } else {
        const uint64_t pick = rng() % 100;
        len = static_cast<uint8_t>(pick < 2 ? rng() % 20 : pick < 30 ? 20 + rng() % 20 : 40 + rng() % 89);
        lpm6_mask(in_region().data(), len, p.data());
        const uint32_t nh = rng() % 50 == 0 ? kMaxNextHop : static_cast<uint32_t>(rng() % 1000);
        ASSERT_EQ(t.add(p.data(), len, nh), S::kOk);
        trie.insert(p.data(), len, nh);
        if (std::find(live.begin(), live.end(), std::make_pair(p, len)) == live.end()) live.emplace_back(p, len);
      }
      const Addr6 last = last_addr(p, len);
      for (const Addr6& probe : {p, last, prev_addr(p), next_addr(last), in_region(), in_region()}) {
        ASSERT_EQ(t.lookup(probe.data()), trie.lookup(probe.data()))
            << "round " << round << " step " << step << " probe " << format_ipv6(probe.data());
      }
    }
    std::vector<Route6> now;
    for (const auto& [p, len] : live) now.push_back({p, len, 0});
    auto probes = edge_addresses(now);
    for (int i = 0; i < 20000; ++i) probes.push_back(in_region());
    expect_paths_agree(t, trie, probes);
    EXPECT_EQ(t.rule_count(), live.size());
    for (const auto& [p, len] : live) ASSERT_EQ(t.remove(p.data(), len), S::kOk);
    EXPECT_EQ(t.groups_in_use(), 0u);
  }
}

// ---- the loader ----

class Fib6LoaderTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const auto path = (std::filesystem::temp_directory_path() / ("tandem_fib6_" + name)).string();
    std::ofstream(path) << text;
    paths_.push_back(path);
    return path;
  }
  // Loading `text` fails with "FILE:LINE: ...what...: `line`".
  void expect_error(const std::string& text, int line, const std::string& what) {
    const std::string path = write("bad.txt", text);
    try {
      load_fib6(path);
      ADD_FAILURE() << "no error for: " << text;
    } catch (const ipv4::FibError& e) {  // Fib6Error is one
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(path + ":" + std::to_string(line) + ": ", 0), 0u) << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << msg;
      EXPECT_EQ(msg.back(), '`') << msg;
    }
  }
  void TearDown() override {
    for (const auto& p : paths_) std::remove(p.c_str());
  }
  std::vector<std::string> paths_;
};

TEST_F(Fib6LoaderTest, ParsesCommentsFamiliesHostBitsAndDuplicates) {
  const std::string path = write("good.txt",
                                 "# a table\n"
                                 "\n"
                                 "2001:db8::/32 7\n"
                                 "10.0.0.0/8 3   # IPv4: skipped\n"
                                 "2001:db8:1::1/48\t9\r\n"
                                 "::ffff:1.2.3.0/120\n"
                                 "::/0 0\n"
                                 "2001:db8::/32 8\n");
  const Fib6 fib = load_fib6(path);
  ASSERT_EQ(fib.routes.size(), 4u);
  EXPECT_EQ(fib.lines, 8u);
  EXPECT_EQ(fib.ipv4_skipped, 1u);
  EXPECT_EQ(fib.host_bits_cleared, 1u);
  EXPECT_EQ(fib.duplicates.count, 1u);
  EXPECT_EQ(fib.derived_next_hops, 1u);
  EXPECT_EQ(fib.routes[0].prefix, addr("2001:db8::"));
  EXPECT_EQ(fib.routes[0].next_hop, 8u) << "last wins, in the first one's place";
  EXPECT_EQ(fib.routes[1].prefix, addr("2001:db8:1::"));
  EXPECT_EQ(fib.routes[1].len, 48);
  EXPECT_EQ(fib.routes[2].len, 120);
  EXPECT_EQ(fib.routes[2].next_hop, derived_next_hop6(addr("::ffff:1.2.3.0").data(), 120, 16));
  EXPECT_LT(fib.routes[2].next_hop, 16u);
  EXPECT_EQ(fib.routes[3].len, 0);
  EXPECT_EQ(fib.max_next_hop, std::max(9u, fib.routes[2].next_hop));
}

TEST_F(Fib6LoaderTest, ReadsGzip) {
  const auto path = (std::filesystem::temp_directory_path() / "tandem_fib6_good.txt.gz").string();
  paths_.push_back(path);
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzputs(f, "2001:db8::/32 1\nfe80::/10\n");
  gzclose(f);
  const Fib6 fib = load_fib6(path);
  ASSERT_EQ(fib.routes.size(), 2u);
  EXPECT_EQ(format_ipv6(fib.routes[1].prefix.data()), "fe80::");
}

TEST_F(Fib6LoaderTest, ErrorsNameFileAndLine) {
  expect_error("2001:db8::/32\n2001:db8::\n", 2, "missing /length");
  expect_error("2001:db8::/32\n\n# c\n2001:db8:::1/64\n", 4, "bad IPv6 address");
  expect_error("2001:db8::/129\n", 1, "prefix length 129 is over 128");
  expect_error("2001:db8::/\n", 1, "bad prefix length");
  expect_error("2001:db8::/+3\n", 1, "bad prefix length");
  expect_error("fe80::1%eth0/64\n", 1, "bad IPv6 address");
  expect_error("2001:db8::/32 16777216\n", 1, "next hop must be");
  expect_error("2001:db8::/32 -1\n", 1, "next hop must be");
  expect_error("2001:db8::/32 1 2\n", 1, "too many columns");
  expect_error("::/0\n1.2.3/8\n", 2, "bad IPv4 address");
  expect_error("hello\n", 1, "missing /length");
  expect_error("2001:db8::/32 1\n" + std::string(5000, 'x') + "\n", 2, "line too long");
  EXPECT_THROW(load_fib6("/nonexistent/tandem_fib6.txt"), Fib6Error);
}

}  // namespace
}  // namespace tandem::ipv6
