// The benchmarks' IPv6 lookup variants (bench/variants/ipv6_variants.h) against the reference
// trie: on the real BGP table (uniform addresses, addresses inside prefixes), on the G-Opt paper's
// random /48../64 worst case (5-6 accesses per lookup), and on odd sizes that leave partial groups
// and tails; none writes past the end.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "apps/ipv6/fib6_loader.h"
#include "apps/ipv6/lpm6.h"
#include "apps/ipv6/ref_trie6.h"
#include "bench/variants/ipv6_variants.h"
#include "tests/test_util.h"

namespace tandem::ipv6 {
namespace {

struct Built {
  std::unique_ptr<Lpm6> lpm = std::make_unique<Lpm6>();
  RefTrie6 trie;
  explicit Built(const std::vector<Route6>& routes) {
    for (const Route6& r : routes) {
      const Lpm6::Status s = lpm->add(r.prefix.data(), r.len, r.next_hop);
      if (s != Lpm6::Status::kOk) throw std::runtime_error(Lpm6::status_name(s));
      trie.insert(r.prefix.data(), r.len, r.next_hop);
    }
  }
};

void expect_variants_agree(const Built& b, const std::vector<Addr6>& addrs) {
  const Lpm6& t = *b.lpm;
  const size_t n = addrs.size();
  const auto rows = addr_rows(addrs.data());
  std::vector<uint32_t> want(n);
  for (size_t i = 0; i < n; ++i) want[i] = b.trie.lookup(addrs[i].data());
  using Path = std::function<void(uint32_t*)>;
  const std::vector<std::pair<std::string, Path>> paths = {
      {"scalar", [&](uint32_t* h) { lpm6_lookup_scalar(t, rows, h, n); }},
      {"gopt", [&](uint32_t* h) { lpm6_lookup_gopt(t, rows, h, n); }},
      {"tbl24 prefetch 16", [&](uint32_t* h) { lpm6_lookup_prefetch_tbl24(t, rows, h, n, 16); }},
      {"tbl24 prefetch 0", [&](uint32_t* h) { lpm6_lookup_prefetch_tbl24(t, rows, h, n, 0); }},
      {"levels 8", [&](uint32_t* h) { lpm6_lookup_levels(t, rows, h, n, 8); }},
      {"levels 64", [&](uint32_t* h) { lpm6_lookup_levels(t, rows, h, n, 64); }},
  };
  for (const auto& [name, run] : paths) {
    std::vector<uint32_t> got(n + 1, 0xDEADBEEF);
    run(got.data());
    EXPECT_EQ(got[n], 0xDEADBEEFu) << name << " wrote past the end, n=" << n;
    got.pop_back();
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) bad += got[i] != want[i];
    EXPECT_EQ(bad, 0u) << name << " mismatches of " << n;
  }
}

const std::vector<Route6>& real_routes() {
  static const Fib6 fib = load_fib6(test::source_path("data/fib/iprbench_tier1_fulltable_prefixes.txt.gz"));
  return fib.routes;
}

TEST(Ipv6Variants, RealTable) {
  const Built b(real_routes());
  auto addrs = uniform_addresses(300'000, 1);
  const auto inside = sample_addresses(real_routes(), 500'000, 2);
  addrs.insert(addrs.end(), inside.begin(), inside.end());
  expect_variants_agree(b, addrs);
  for (size_t n : {0u, 1u, 3u, 15u, 17u, 33u, 1000u}) expect_variants_agree(b, sample_addresses(real_routes(), n, n));
}

TEST(Ipv6Variants, RandomPrefixes48To64) {
  const auto routes = random_table(20'000, 48, 64, 11);
  const Built b(routes);
  auto addrs = sample_addresses(routes, 300'000, 12);
  const auto uniform = uniform_addresses(100'000, 13);
  addrs.insert(addrs.end(), uniform.begin(), uniform.end());
  expect_variants_agree(b, addrs);
}

}  // namespace
}  // namespace tandem::ipv6
