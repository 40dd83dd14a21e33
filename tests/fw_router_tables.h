// The tables of the fw-router tests (apps/fwrouter/fw_router_test.cc, and the GPU plans' in
// bench/variants/fw_router_plans_test.cc): the real BGP table with its reference trie, rule sets
// (random, and ClassBench where the shared data has it) and the reference decision.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "apps/acl/acl_rules.h"
#include "apps/acl/hypersplit.h"
#include "apps/fwrouter/fw_router_app.h"
#include "apps/fwrouter/fw_rules.h"
#include "apps/ipv4/ref_trie.h"
#include "bench/variants/fw_router_lab.h"
#include "cli/table_setup.h"
#include "tests/test_util.h"

namespace tandem::fwrouter::testdata {

// The BGP table from the shared data, or the checkout's copy of it.
inline std::string fib_path() {
  for (const std::string& p : {tandem::test::shared_data_path("fib/iprbench_tier1_fulltable_prefixes.txt.gz"),
                               tandem::test::source_path("data/fib/iprbench_tier1_fulltable_prefixes.txt.gz")}) {
    if (std::ifstream(p).good()) return p;
  }
  return "";
}
inline std::string classbench_path(const char* name) {
  const std::string p = tandem::test::shared_data_path(std::string("classbench/filters/") + name + ".gz");
  return std::ifstream(p).good() ? p : "";
}

#define REQUIRE_FIB()                                                                            \
  do {                                                                                           \
    if (::tandem::fwrouter::testdata::fib_path().empty()) GTEST_SKIP() << "no BGP table found";  \
  } while (0)

// The table, loaded once per test binary, and its reference trie.
struct Routes {
  cli::LoadedTable t;
  ipv4::RefTrie trie;
  static const Routes& get() {
    static const Routes* r = [] {
      auto* x = new Routes;
      x->t = cli::load_table(fib_path(), /*quiet=*/true);
      for (const ipv4::Route& rt : x->t.fib.routes) x->trie.insert(rt.prefix, rt.len, rt.next_hop);
      return x;
    }();
    return *r;
  }
};

// The rule sets: random rules with explicit actions, and ClassBench sets where present (every rule
// accepts there; load_fw_rules gives 20% of them drop).
struct NamedRules {
  std::string name;
  acl::RuleSet rules;
  size_t headers;  // linear search over 10k rules is slow: fewer headers for the large sets
};
inline std::vector<NamedRules> rule_sets() {
  std::vector<NamedRules> v;
  v.push_back({"random3000", load_fw_rules("", 3000, ""), 200000});
  v.push_back({"random500-default-drop", load_fw_rules("", 500, "drop"), 100000});
  for (const char* name : {"acl1_10k", "fw1_1k", "ipc1_1k"}) {
    const std::string p = classbench_path(name);
    if (!p.empty()) v.push_back({name, load_fw_rules(p, 0, ""), std::string(name).find("10k") != std::string::npos ? 60000u : 200000u});
  }
  return v;
}

// The reference decision: linear first match, the action or the default, then the trie.
inline uint32_t reference(const acl::RuleSet& s, const ipv4::RefTrie& trie, const acl::Header& h) {
  const uint32_t r = acl::classify_linear(s.rules.data(), static_cast<uint32_t>(s.rules.size()), h);
  const uint8_t action = r == acl::kNoMatch ? uint8_t{s.default_action} : s.rules[r].action;
  if (action != acl::kAccept) return kDenied;
  return trie.lookup(h.dst);  // kNoRoute without a route, as the fast paths
}

// fn(rules, tables, headers, want) for each rule set: the fw-router tables on it and the real BGP
// table, its `headers` mixed headers (mixed_headers with `seed`) and their reference decisions.
template <class Fn>
void for_each_rule_set(uint64_t seed, Fn&& fn) {
  const Routes& rt = Routes::get();
  for (const NamedRules& nr : rule_sets()) {
    const acl::HyperSplit tree = acl::HyperSplit::build(nr.rules.rules);
    const FwRouterTables t(nr.rules, tree, *rt.t.table, rt.t.fib);
    const std::vector<acl::Header> h = mixed_headers(nr.rules, rt.t.fib, nr.headers, seed);
    std::vector<uint32_t> want(h.size());
    for (size_t i = 0; i < h.size(); ++i) want[i] = reference(nr.rules, rt.trie, h[i]);
    fn(nr, t, h, want);
  }
}

inline size_t count_diff(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  size_t d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += a[i] != b[i];
  return d;
}

}  // namespace tandem::fwrouter::testdata
