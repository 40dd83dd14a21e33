// The real BGP table, loaded once per test binary, with the reference trie beside it.
#pragma once

#include <memory>
#include <random>
#include <vector>

#include "apps/ipv4/dir24_8.h"
#include "apps/ipv4/fib_loader.h"
#include "apps/ipv4/ref_trie.h"
#include "tests/test_util.h"

namespace tandem::test {

struct RealIpv4Table {
  ipv4::Fib fib;
  std::unique_ptr<ipv4::Dir24_8> dir;
  ipv4::RefTrie trie;

  static const RealIpv4Table& get() {
    static const RealIpv4Table* t = [] {
      auto* r = new RealIpv4Table;
      r->fib = ipv4::load_fib(source_path("data/fib/iprbench_tier1_fulltable_prefixes.txt.gz"));
      r->dir = std::make_unique<ipv4::Dir24_8>();
      for (const auto& rt : r->fib.routes) {
        auto s = r->dir->add(rt.prefix, rt.len, rt.next_hop);
        if (s != ipv4::Dir24_8::Status::kOk) throw std::runtime_error(ipv4::Dir24_8::status_name(s));
        r->trie.insert(rt.prefix, rt.len, rt.next_hop);
      }
      return r;
    }();
    return *t;
  }
};

// n addresses: uniform over 2^32, or sampled from the table's prefixes (including each prefix's
// first and last address), so that both misses and every kind of hit are exercised.
inline std::vector<uint32_t> uniform_addresses(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> v(n);
  for (auto& a : v) a = static_cast<uint32_t>(rng());
  return v;
}

inline std::vector<uint32_t> addresses_in_prefixes(const std::vector<ipv4::Route>& routes, size_t n,
                                                   uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> v;
  v.reserve(n);
  while (v.size() < n) {
    const auto& r = routes[rng() % routes.size()];
    const uint32_t host = r.len == 32 ? 0u : (~0u >> r.len);
    switch (rng() % 4) {
      case 0: v.push_back(r.prefix); break;
      case 1: v.push_back(r.prefix | host); break;
      default: v.push_back(r.prefix | (static_cast<uint32_t>(rng()) & host)); break;
    }
  }
  return v;
}

}  // namespace tandem::test
