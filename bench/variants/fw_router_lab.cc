#include "bench/variants/fw_router_lab.h"

#include "core/parse.h"
#include "core/rng.h"

namespace tandem::fwrouter {

uint32_t decide_linear(const FwRouterTables& t, const acl::Header& h) {
  const uint32_t rule = acl::classify_linear(t.rules->rules.data(), static_cast<uint32_t>(t.rules->rules.size()), h);
  return fw_router_route(rule, t.actions.data(), t.default_action, t.table->tbl24(), t.table->tbl8(), h.dst);
}

std::vector<acl::Header> mixed_headers(const acl::RuleSet& rules, const ipv4::Fib& fib, size_t n, uint64_t seed) {
  Rng rng(seed, 21);
  std::vector<acl::Header> v(n);
  for (acl::Header& h : v) {
    const uint64_t kind = rng.below(4);
    if (kind < 2 && !rules.rules.empty()) {
      h = acl::header_in_rule(rules.rules[rng.below(rules.rules.size())], rng.next());
      continue;
    }
    h.src = static_cast<uint32_t>(rng.next());
    h.dst = static_cast<uint32_t>(rng.next());
    h.sport = static_cast<uint16_t>(rng.next());
    h.dport = static_cast<uint16_t>(rng.next());
    h.proto = rng.below(2) ? kProtoTcp : kProtoUdp;
    if (kind != 3 && !fib.routes.empty()) {
      const ipv4::Route& r = fib.routes[rng.below(fib.routes.size())];
      const uint32_t host = r.len == 32 ? 0u : ~0u >> r.len;
      h.src = (10u << 24) | (h.src & 0x00FFFFFFu);
      h.dst = r.prefix | (h.dst & host);
    }
  }
  return v;
}

}  // namespace tandem::fwrouter
