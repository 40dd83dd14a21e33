// The fw-router app: a 5-tuple firewall (HyperSplit) in front of the IPv4 router (fw_router_app.h).
#include <cstdio>

#include "apps/acl/hypersplit.h"
#include "apps/fwrouter/fw_router_app.h"
#include "apps/fwrouter/fw_rules.h"
#include "apps/ipv4/ipv4_table.h"
#include "apps/registry.h"
#include "core/byte_order.h"
#include "io/flow_traffic.h"

namespace tandem::fwrouter {
namespace {

struct FwRouterState : AppState {
  ipv4::LoadedTable t;
  acl::RuleSet rules;
  acl::HyperSplit tree;
  std::unique_ptr<FwRouterTables> tables;
};

LoadedApp load(const AppArgs& args) {
  if (!args.has("fib")) throw UsageError("--app fw-router needs --fib FILE");
  const std::string& path = args.text("fib");
  auto st = std::make_unique<FwRouterState>();
  st->rules = load_fw_rules(args.text("rules"), args.integer("acl-random", 0), args.text("acl-default"),
                            args.real("acl-drop-share", -1));
  st->t = ipv4::load_table(path);
  st->tree = acl::HyperSplit::build(st->rules.rules);
  st->tables = std::make_unique<FwRouterTables>(st->rules, st->tree, *st->t.table, st->t.fib);
  LoadedApp a;
  const auto& hs = st->tree.stats();
  char buf[640];
  std::snprintf(buf, sizeof buf, "%s: %zu IPv4 routes, DIR-24-8 built in %.2f s; firewall %s, HyperSplit of %zu nodes "
                "(%.2f MiB) built in %.2f s",
                path.c_str(), st->t.fib.routes.size(), st->t.build_seconds, describe_fw_rules(st->rules).c_str(), hs.nodes,
                st->tree.memory_bytes() / 1048576.0, hs.build_seconds);
  a.table_desc = buf;
  a.app = std::make_unique<FwRouterApp>(*st->tables);
  const acl::RuleSet* rules = &st->rules;
  const ipv4::Fib* fib = &st->t.fib;
  a.generate = [rules, fib](const GenSpec& spec) {
    // Half the flows are drawn inside a random rule (accepted or denied by it, or by an earlier
    // rule), from the rules that admit the traffic's protocol, drawn again (a few times) while
    // the router would drop them as martians; the rest have a source in 10.0.0.0/8 and a
    // destination by `dst` (matched by no rule, or by wide ones: the default policy or those).
    std::vector<uint32_t> usable;
    for (uint32_t i = 0; i < rules->rules.size(); ++i) {
      const acl::Rule& r = rules->rules[i];
      if ((spec.proto & r.proto_mask) == r.proto_value) usable.push_back(i);
    }
    return generate_flows(spec, 4, [rules, fib, &spec, &usable](Rng& rng, GenFlow& f) {
      if (rng.below(2) == 0 && !usable.empty()) {
        acl::Header h;
        for (int tries = 0; tries < 8; ++tries) {
          h = acl::header_in_rule(rules->rules[usable[rng.below(usable.size())]], rng.next());
          if (!ipv4::martian_source(h.src) && !ipv4::martian_destination(h.dst)) break;
        }
        store_be32(f.src, h.src);
        store_be32(f.dst, h.dst);
        f.sport = h.sport;
        f.dport = h.dport;
      } else if (spec.dst == GenSpec::Dst::kFib && !fib->routes.empty()) {
        const ipv4::Route& r = fib->routes[rng.below(fib->routes.size())];
        const uint32_t host = r.len == 32 ? 0u : ~0u >> r.len;
        store_be32(f.dst, r.prefix | (static_cast<uint32_t>(rng.next()) & host));
      } else {
        store_be32(f.dst, uniform_unicast_ipv4(rng));
      }
    });
  };
  a.state = std::move(st);
  return a;
}

AppSpec spec() {
  AppSpec s;
  s.name = "fw-router";
  s.drop_reasons = app_drop_reasons<FwRouterTraits>();
  s.description = "a 5-tuple firewall (HyperSplit), then the IPv4 router";
  s.flags = {
      {"fib", AppFlag::Kind::kFile, "PREFIX/LEN [NEXTHOP] lines or an MRT dump (IPv6 lines skipped); .gz ok"},
      {"rules", AppFlag::Kind::kFile, "firewall rules, a ClassBench filter file or Tandem's syntax (`accept src 10.0.0.0/8 dport 80`), .gz ok"},
      {"acl-random", AppFlag::Kind::kInteger, "this many random rules instead of --rules", 1, double(uint64_t{1} << 22)},
      {"acl-default", AppFlag::Kind::kChoice, "the policy when no rule matches (default: the file's `default` line, else accept)", 0, 0,
       "accept|drop"},
      {"acl-drop-share", AppFlag::Kind::kShare,
       "give this share of the rules the drop action, the rest accept (default: 0.2 for ClassBench sets, which have no "
       "actions; other sets as written)",
       0, 1}};
  s.bench_flags = "--fib data/fib/iprbench_tier1_fulltable_prefixes.txt.gz --rules {shared}/classbench/filters/acl1_10k.gz";
  s.load = load;
  s.test_cases = [](const auto& data) {
    AppArgs a;
    a.set("fib", data("data/fib/iprbench_tier1_fulltable_prefixes.txt.gz"));
    a.set("acl-random", "2000");
    return std::vector<AppTestCase>{{"fw-router", a, "count=30000,dst=fib,flows=3000,seed=12"}};
  };
  return s;
}

}  // namespace
}  // namespace tandem::fwrouter

TANDEM_REGISTER_APP(tandem::fwrouter::spec)
