// The benchmarks' DIR-24-8 lookup variants (bench/variants/ipv4_variants.h) against the reference
// trie on the real BGP table: uniform addresses (misses and /8../24 hits) and addresses inside
// prefixes (extended entries, the tbl8 paths), odd sizes that leave partial groups and tails, and
// no write past the end; and the GPU kernel timed alone (ipv4_gpu_variants.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bench/variants/ipv4_gpu_variants.h"
#include "apps/ipv4/ipv4_cpu.h"
#include "bench/variants/ipv4_variants.h"
#include "tests/ipv4_table.h"

namespace tandem::ipv4 {
namespace {

using test::RealIpv4Table;
using Path = std::function<void(const uint32_t* ips, uint32_t* out, size_t n)>;

std::vector<std::pair<std::string, Path>> variants(const Dir24_8& d) {
  std::vector<std::pair<std::string, Path>> v = {
      {"scalar", [&d](const uint32_t* a, uint32_t* o, size_t n) { lookup_scalar(d, a, o, n); }},
      {"gopt", [&d](const uint32_t* a, uint32_t* o, size_t n) { lookup_gopt(d, a, o, n); }},
  };
  for (uint32_t g : {1u, 2u, 4u, 8u, 16u, 32u, 64u}) {
    v.push_back({"group " + std::to_string(g),
                 [&d, g](const uint32_t* a, uint32_t* o, size_t n) { lookup_batched_group(d, a, o, n, g); }});
  }
  for (uint32_t distance : {0u, 16u, 64u}) {
    v.push_back({"stream l2 " + std::to_string(distance),
                 [&d, distance](const uint32_t* a, uint32_t* o, size_t n) { lookup_prefetch_stream_l2(d, a, o, n, distance); }});
    // Without AVX-512 this checks the fallback.
    v.push_back({"avx512 " + std::to_string(distance),
                 [&d, distance](const uint32_t* a, uint32_t* o, size_t n) { lookup_avx512(d, a, o, n, distance); }});
  }
  return v;
}

std::vector<uint32_t> trie_lookups(const RefTrie& trie, const std::vector<uint32_t>& ips) {
  std::vector<uint32_t> want(ips.size());
  for (size_t i = 0; i < ips.size(); ++i) want[i] = trie.lookup(ips[i]);
  return want;
}

size_t mismatches(const std::vector<uint32_t>& want, const std::vector<uint32_t>& got) {
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) bad += want[i] != got[i];
  return bad;
}

TEST(Ipv4Variants, EveryVariantAgreesWithTrieOnTheRealTable) {
  const auto& t = RealIpv4Table::get();
  if (!dir24_8_avx512_supported()) std::printf("no AVX-512 on this CPU: checking lookup_avx512's fallback\n");
  auto ips = test::uniform_addresses(3'000'000, 42);
  const auto inside = test::addresses_in_prefixes(t.fib.routes, 2'000'000, 7);
  ips.insert(ips.end(), inside.begin(), inside.end());
  const std::vector<uint32_t> want = trie_lookups(t.trie, ips);
  for (const auto& [name, run] : variants(*t.dir)) {
    std::vector<uint32_t> got(ips.size() + 1, 0xDEADBEEF);
    run(ips.data(), got.data(), ips.size());
    EXPECT_EQ(got.back(), 0xDEADBEEFu) << name << " wrote past the end";
    got.pop_back();
    EXPECT_EQ(mismatches(want, got), 0u) << name;
  }
}

TEST(Ipv4Variants, OddSizedArraysUseEveryCodePath) {
  const auto& t = RealIpv4Table::get();
  for (size_t n : {0u, 1u, 15u, 16u, 17u, 33u, 100u, 1000u}) {
    const auto ips = test::addresses_in_prefixes(t.fib.routes, n, n);
    const std::vector<uint32_t> want = trie_lookups(t.trie, ips);
    for (const auto& [name, run] : variants(*t.dir)) {
      std::vector<uint32_t> got(n + 1, 0xDEADBEEF);
      run(ips.data(), got.data(), n);
      EXPECT_EQ(got[n], 0xDEADBEEFu) << name << " wrote past the end, n=" << n;
      got.resize(n);
      EXPECT_EQ(mismatches(want, got), 0u) << name << ", n=" << n;
    }
  }
}

TEST(Ipv4Variants, GpuKernelAloneAgreesWithTrie) {
  TANDEM_REQUIRE_GPU();
  const auto& t = RealIpv4Table::get();
  const auto ips = test::uniform_addresses(10'000'000, 42);
  const auto table = Ipv4GpuTable::create(*t.dir);
  std::vector<uint32_t> got(ips.size(), 0xDEADBEEF);
  Ipv4GpuVariants::create(*table)->time_kernel(ips.data(), got.data(), ips.size(), 1);
  EXPECT_EQ(mismatches(trie_lookups(t.trie, ips), got), 0u);
}

}  // namespace
}  // namespace tandem::ipv4
