#include "cli/app_setup.h"

#include <chrono>
#include <cstdio>
#include <cstring>

#include "apps/acl/hypersplit.h"
#include "apps/echo/echo_app.h"
#include "apps/fwrouter/fw_router_app.h"
#include "apps/ipv4/ipv4_app.h"
#include "apps/ipv6/ipv6_app.h"
#include "apps/l2/l2_app.h"
#include "apps/l2/l2_loader.h"
#include "apps/ndn/ndn_app.h"
#include "cli/commands.h"
#include "cli/table_setup.h"
#include "core/table_reader.h"
#include "io/flow_traffic.h"

namespace tandem::cli {

namespace {

void put32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

// A uniform unicast IPv4 destination (1.0.0.0-223.255.255.255 minus 127/8), as traffic_gen's.
uint32_t uniform_ipv4(Rng& rng) {
  uint32_t a = static_cast<uint32_t>(rng.below(222ull << 24)) + (1u << 24);
  if (a >= (127u << 24)) a += 1u << 24;
  return a;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Ipv4State : AppState {
  LoadedTable t;
};
struct Ipv6State : AppState {
  ipv6::Fib6 fib;
  ipv6::Lpm6 table;
};
struct L2State : AppState {
  l2::L2Setup setup;
};
struct NdnState : AppState {
  ndn::NdnSetup setup;
};
struct FwRouterState : AppState {
  LoadedTable t;
  acl::RuleSet rules;
  acl::HyperSplit tree;
  std::unique_ptr<fwrouter::FwRouterTables> tables;
};

LoadedApp load_ipv4(const AppOptions& o) {
  if (o.fib.empty()) throw UsageError("--app ipv4 needs --fib FILE");
  auto st = std::make_unique<Ipv4State>();
  st->t = load_table(o.fib, /*quiet=*/true);
  LoadedApp a;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %zu IPv4 routes, loaded in %.2f s, DIR-24-8 built in %.2f s", o.fib.c_str(),
                st->t.fib.routes.size(), st->t.load_seconds, st->t.build_seconds);
  a.table_desc = buf;
  a.app = std::make_unique<ipv4::Ipv4App>(*st->t.table, st->t.fib);
  const ipv4::Fib* fib = &st->t.fib;
  a.generate = [fib](const GenSpec& spec) { return generate(spec, prefixes_of(*fib)); };
  a.state = std::move(st);
  return a;
}

LoadedApp load_ipv6(const AppOptions& o) {
  if (o.fib.empty()) throw UsageError("--app ipv6 needs --fib FILE");
  auto st = std::make_unique<Ipv6State>();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    st->fib = ipv6::load_fib6(o.fib);
    ipv6::build_table(st->fib, st->table);
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
  if (st->fib.routes.empty()) throw UsageError(o.fib + ": no IPv6 routes");
  warn(st->fib.duplicates.warning("routes"));
  LoadedApp a;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %zu IPv6 routes (%llu IPv4 lines skipped), Lpm6 built in %.2f s", o.fib.c_str(),
                st->fib.routes.size(), static_cast<unsigned long long>(st->fib.ipv4_skipped), seconds_since(t0));
  a.table_desc = buf;
  a.app = std::make_unique<ipv6::Ipv6App>(st->table, st->fib);
  const ipv6::Fib6* fib = &st->fib;
  a.generate = [fib](const GenSpec& spec) {
    return generate_flows(spec, 6, [fib, &spec](Rng& rng, GenFlow& f) {
      if (spec.dst == GenSpec::Dst::kFib) {
        // A prefix of the table, then random host bits inside it.
        const ipv6::Route6& r = fib->routes[rng.below(fib->routes.size())];
        for (int i = 0; i < 16; ++i) {
          const int keep = std::clamp(r.len - 8 * i, 0, 8);
          const uint8_t mask = static_cast<uint8_t>(keep == 8 ? 0xFF : (0xFF00 >> keep) & 0xFF);
          f.dst[i] = static_cast<uint8_t>((r.prefix[i] & mask) | (rng.next() & ~mask));
        }
      } else {
        for (int i = 0; i < 16; ++i) f.dst[i] = static_cast<uint8_t>(rng.next());
        f.dst[0] = static_cast<uint8_t>(0x20 | (f.dst[0] & 0x1F));  // global unicast 2000::/3
      }
    });
  };
  a.state = std::move(st);
  return a;
}

LoadedApp load_l2(const AppOptions& o) {
  if (o.fib.empty() == (o.l2_random == 0)) throw UsageError("--app l2 needs --fib FILE (MAC PORT lines) or --l2-random N");
  auto st = std::make_unique<L2State>();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    st->setup = o.fib.empty() ? l2::random_l2_setup(o.l2_random, o.ports, 1) : l2::load_l2_setup(o.fib);
  } catch (const l2::L2TableError& e) {
    throw UsageError(e.what());
  }
  if (st->setup.entries.empty()) throw UsageError(st->setup.source + ": no MAC entries");
  warn(st->setup.warning);
  LoadedApp a;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %zu MACs in a 2-8 cuckoo table of %zu slots (%.0f MiB), built in %.2f s",
                st->setup.source.c_str(), st->setup.table->size(), st->setup.table->slot_count(),
                st->setup.table->memory_bytes() / 1048576.0, seconds_since(t0));
  a.table_desc = buf;
  a.app = std::make_unique<l2::L2App>(st->setup);
  const l2::L2Setup* setup = &st->setup;
  a.generate = [setup](const GenSpec& spec) {
    return generate_flows(spec, 4, [setup, &spec](Rng& rng, GenFlow& f) {
      uint64_t mac = spec.dst == GenSpec::Dst::kFib ? setup->entries[rng.below(setup->entries.size())].first
                                                    : (rng.next() & l2::kMacMask & ~l2::kMacGroupBit);
      for (int i = 5; i >= 0; --i, mac >>= 8) f.dst_mac[i] = static_cast<uint8_t>(mac);
      put32(f.dst, uniform_ipv4(rng));
    });
  };
  a.state = std::move(st);
  return a;
}

LoadedApp load_ndn(const AppOptions& o) {
  if (o.fib.empty() == o.urls.empty()) throw UsageError("--app ndn needs --fib FILE (NAME NEXTHOP lines) or --urls FILE");
  if ((o.ndn_fixed_bytes || o.ndn_replicas > 1) && o.urls.empty()) throw UsageError("--ndn-fixed-bytes and --ndn-replicas need --urls");
  auto st = std::make_unique<NdnState>();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    st->setup = o.fib.empty() ? ndn::ndn_setup_from_urls(o.urls, o.ports, o.ndn_fixed_bytes, o.ndn_replicas) : ndn::load_ndn_setup(o.fib);
  } catch (const std::exception& e) {  // TableError, std::runtime_error, std::invalid_argument
    throw UsageError(e.what());
  }
  warn(st->setup.warning);
  LoadedApp a;
  char buf[320];
  std::snprintf(buf, sizeof buf, "%s: %zu FIB prefixes (%.1f MiB), %zu names for traffic, built in %.2f s",
                st->setup.source.c_str(), st->setup.fib->size(), st->setup.fib->memory_bytes() / 1048576.0,
                st->setup.names.size(), seconds_since(t0));
  a.table_desc = buf;
  a.app = std::make_unique<ndn::NdnApp>(st->setup);
  // Interests are encoded once per name, with a nonce from the name's index.
  auto interests = std::make_shared<std::vector<std::vector<uint8_t>>>();
  for (size_t i = 0; i < st->setup.names.size(); ++i) {
    interests->push_back(ndn::encode_interest(st->setup.names[i], static_cast<uint32_t>(mix64(i))));
  }
  a.generate = [interests](const GenSpec& spec) {
    return generate_flows(spec, 4, [interests, &spec](Rng& rng, GenFlow& f) {
      put32(f.dst, uniform_ipv4(rng));
      f.dport = ndn::kNdnUdpPort;
      f.exact_payload = true;
      if (spec.dst == GenSpec::Dst::kFib || interests->empty()) {
        f.payload = (*interests)[rng.below(interests->size())];
      } else {  // names the FIB does not hold
        f.payload = ndn::encode_interest({"tandem-random", std::to_string(rng.next())}, static_cast<uint32_t>(rng.next()));
      }
    });
  };
  a.state = std::move(st);
  return a;
}

LoadedApp load_echo(const AppOptions& o) {
  if (!o.fib.empty() || !o.urls.empty()) throw UsageError("--app echo has no table: leave out --fib and --urls");
  LoadedApp a;
  a.table_desc = "no table: port = X mod 4";
  a.app = std::make_unique<echo::EchoApp>();
  a.generate = [](const GenSpec& spec) {
    return generate_flows(spec, 4, [](Rng& rng, GenFlow& f) {
      put32(f.dst, uniform_ipv4(rng));
      f.payload.resize(4);
      put32(f.payload.data(), static_cast<uint32_t>(rng.next()));
    });
  };
  return a;
}

LoadedApp load_fw_router(const AppOptions& o) {
  if (o.fib.empty()) throw UsageError("--app fw-router needs --fib FILE");
  auto st = std::make_unique<FwRouterState>();
  st->rules = load_fw_rules(o.rules, o.acl_random, o.acl_default, o.acl_drop_share);
  st->t = load_table(o.fib, /*quiet=*/true);
  st->tree = acl::HyperSplit::build(st->rules.rules);
  st->tables = std::make_unique<fwrouter::FwRouterTables>(st->rules, st->tree, *st->t.table, st->t.fib);
  LoadedApp a;
  const auto& hs = st->tree.stats();
  char buf[640];
  std::snprintf(buf, sizeof buf, "%s: %zu IPv4 routes, DIR-24-8 built in %.2f s; firewall %s, HyperSplit of %zu nodes "
                "(%.2f MiB) built in %.2f s",
                o.fib.c_str(), st->t.fib.routes.size(), st->t.build_seconds, describe_fw_rules(st->rules).c_str(), hs.nodes,
                st->tree.memory_bytes() / 1048576.0, hs.build_seconds);
  a.table_desc = buf;
  a.app = std::make_unique<fwrouter::FwRouterApp>(*st->tables);
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
        put32(f.src, h.src);
        put32(f.dst, h.dst);
        f.sport = h.sport;
        f.dport = h.dport;
      } else if (spec.dst == GenSpec::Dst::kFib && !fib->routes.empty()) {
        const ipv4::Route& r = fib->routes[rng.below(fib->routes.size())];
        const uint32_t host = r.len == 32 ? 0u : ~0u >> r.len;
        put32(f.dst, r.prefix | (static_cast<uint32_t>(rng.next()) & host));
      } else {
        put32(f.dst, uniform_ipv4(rng));
      }
    });
  };
  a.state = std::move(st);
  return a;
}

}  // namespace

acl::RuleSet load_fw_rules(const std::string& path, uint64_t random_n, const std::string& default_policy,
                           double drop_share) {
  if (path.empty() == (random_n == 0)) throw UsageError("fw-router needs --rules FILE or --acl-random N (one of them)");
  if (!default_policy.empty() && default_policy != "accept" && default_policy != "drop") {
    throw UsageError("--acl-default: accept or drop, not '" + default_policy + "'");
  }
  acl::RuleSet s;
  try {
    s = path.empty() ? acl::random_rules(random_n, 1) : acl::load_rules(path);
  } catch (const TableError& e) {
    throw UsageError(e.what());
  }
  if (!default_policy.empty()) s.default_action = default_policy == "drop" ? acl::kDrop : acl::kAccept;
  if (drop_share > 1) throw UsageError("--acl-drop-share: a share 0..1");
  if (drop_share < 0 && s.classbench) drop_share = 0.2;
  if (drop_share >= 0) {
    for (size_t i = 0; i < s.rules.size(); ++i) {
      const double u = static_cast<double>(mix64(i + 0x5EED) >> 11) * 0x1.0p-53;
      s.rules[i].action = u < drop_share ? acl::kDrop : acl::kAccept;
    }
  }
  return s;
}

std::string describe_fw_rules(const acl::RuleSet& s) {
  size_t drops = 0;
  for (const acl::Rule& r : s.rules) drops += r.action == acl::kDrop;
  return s.path + ": " + std::to_string(s.rules.size()) + (s.rules.size() == 1 ? " rule (" : " rules (") +
         std::to_string(drops) + " drop), default " + (s.default_action == acl::kDrop ? "drop" : "accept");
}

void add_app_options(CLI::App* c, AppOptions& o) {
  c->add_option("--app", o.app, "application: ipv4, ipv6, l2 (CuckooSwitch), ndn (name lookup), echo, fw-router "
                                "(a 5-tuple firewall, then the IPv4 router)")
      ->capture_default_str()->check(CLI::IsMember({"ipv4", "ipv6", "l2", "ndn", "echo", "fw-router"}));
  c->add_option("--fib", o.fib,
                "the app's table: PREFIX/LEN [NEXTHOP] lines or an MRT dump (ipv4, ipv6), MAC PORT lines (l2), "
                "NAME NEXTHOP lines in NDN URI form (ndn); .gz ok")
      ->check(CLI::ExistingFile);
  c->add_option("--urls", o.urls, "ndn: build the FIB and the traffic's names from this URL list (.gz ok)")
      ->check(CLI::ExistingFile);
  c->add_option("--l2-random", o.l2_random, "l2: a table of this many random MACs instead of --fib")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 28));
  c->add_option("--ndn-fixed-bytes", o.ndn_fixed_bytes,
                "ndn --urls: cut or pad every name to this many bytes (the G-Opt paper's 32)")
      ->check(CLI::Range(2u, 250u));
  c->add_option("--ndn-replicas", o.ndn_replicas,
                "ndn --urls: take the URL set this many times, each under its own top-level component (a larger FIB)")
      ->capture_default_str()->check(CLI::Range(1u, 10000u));
  c->add_option("--ports", o.ports, "ports of generated tables (--l2-random, --urls)")
      ->capture_default_str()->check(CLI::Range(1u, 65535u));
  c->add_option("--rules", o.rules, "fw-router: firewall rules, a ClassBench filter file or Tandem's syntax "
                                    "(`accept src 10.0.0.0/8 dport 80`), .gz ok")
      ->check(CLI::ExistingFile);
  c->add_option("--acl-random", o.acl_random, "fw-router: this many random rules instead of --rules")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 22));
  c->add_option("--acl-default", o.acl_default,
                "fw-router: the policy when no rule matches (default: the file's `default` line, else accept)")
      ->check(CLI::IsMember({"accept", "drop"}));
  c->add_option("--acl-drop-share", o.acl_drop_share,
                "fw-router: give this share of the rules the drop action, the rest accept (default: 0.2 for "
                "ClassBench sets, which have no actions; other sets as written)")
      ->check(FiniteRange(0.0, 1.0));
}

LoadedApp load_app(const AppOptions& o) {
  if (o.app != "l2" && o.l2_random) throw UsageError("--l2-random is for --app l2");
  if (o.app != "ndn" && !o.urls.empty()) throw UsageError("--urls is for --app ndn");
  if (o.app != "fw-router" && (!o.rules.empty() || o.acl_random || !o.acl_default.empty() || o.acl_drop_share >= 0)) {
    throw UsageError("--rules, --acl-random, --acl-default and --acl-drop-share are for --app fw-router");
  }
  if (o.app == "ipv4") return load_ipv4(o);
  if (o.app == "ipv6") return load_ipv6(o);
  if (o.app == "l2") return load_l2(o);
  if (o.app == "ndn") return load_ndn(o);
  if (o.app == "echo") return load_echo(o);
  if (o.app == "fw-router") return load_fw_router(o);
  throw UsageError("--app: unknown app '" + o.app + "'");
}

}  // namespace tandem::cli
