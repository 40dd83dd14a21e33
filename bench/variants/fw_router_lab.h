// The fw-router's laboratory: the slow baseline decision and the header mix that its tests and
// `tandem bench fw-router` use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "apps/fwrouter/fw_router_app.h"

namespace tandem::fwrouter {

// Linear first-match search instead of the tree, then DIR-24-8: the reference's decision on the
// same tables, the slow baseline of the benchmark.
uint32_t decide_linear(const FwRouterTables& t, const acl::Header& h);

// n headers for tests and benchmarks, the same for a seed: half drawn inside random rules (so
// accepted or denied by a rule), a quarter with a source in 10.0.0.0/8 and a destination inside a
// random prefix of the table (mostly matched by no rule: the default policy), a quarter uniform
// over all five fields (some without a route). Protocols are TCP or UDP outside the rules.
std::vector<acl::Header> mixed_headers(const acl::RuleSet& rules, const ipv4::Fib& fib, size_t n, uint64_t seed);

}  // namespace tandem::fwrouter
