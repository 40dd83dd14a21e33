// The ipv6 app: the IPv6 router (ipv6_app.h) over an rte_lpm6-style table.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "apps/ipv6/ipv6_app.h"
#include "apps/ipv6/ipv6_gpu.h"
#include "apps/key_lookup.h"
#include "apps/registry.h"
#include "io/flow_traffic.h"

namespace tandem::ipv6 {
namespace {

struct Ipv6State : AppState {
  Fib6 fib;
  Lpm6 table;
};

// Loads and builds the table; a file or a route that does not load is a UsageError.
void load_table(const std::string& path, Ipv6State& st) {
  try {
    st.fib = load_fib6(path);
    build_table(st.fib, st.table);
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
  warn(st.fib.duplicates.warning("routes"));
}

LoadedApp load(const AppArgs& args) {
  if (!args.has("fib")) throw UsageError("--app ipv6 needs --fib FILE");
  const std::string& path = args.text("fib");
  auto st = std::make_unique<Ipv6State>();
  const auto t0 = std::chrono::steady_clock::now();
  load_table(path, *st);
  if (st->fib.routes.empty()) throw UsageError(path + ": no IPv6 routes");
  LoadedApp a;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %zu IPv6 routes (%llu IPv4 lines skipped), Lpm6 built in %.2f s", path.c_str(),
                st->fib.routes.size(), static_cast<unsigned long long>(st->fib.ipv4_skipped),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  a.table_desc = buf;
  a.app = std::make_unique<Ipv6App>(st->table, st->fib);
  const Fib6* fib = &st->fib;
  a.generate = [fib](const GenSpec& spec) {
    return generate_flows(spec, 6, [fib, &spec](Rng& rng, GenFlow& f) {
      if (spec.dst == GenSpec::Dst::kFib) {
        // A prefix of the table, then random host bits inside it.
        const Route6& r = fib->routes[rng.below(fib->routes.size())];
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

std::unique_ptr<KeyLookup> lookup(const AppArgs& args, bool on_gpu) {
  auto st = std::make_shared<Ipv6State>();
  load_table(args.text("fib"), *st);
  std::shared_ptr<Ipv6GpuTable> gpu;
  if (on_gpu) gpu = Ipv6GpuTable::create(st->table);
  return make_key_lookup<Addr6>(
      [](std::string_view s, Addr6* a, std::string* why) {
        *why = "not an IPv6 address";
        return parse_ipv6_addr(s.data(), s.data() + s.size(), a);
      },
      [st, gpu](const Addr6* k, uint32_t* nh, size_t n) {
        if (gpu) {
          gpu->lookup(addr_rows(k), nh, n);
        } else {
          st->table.lookup_batch(addr_rows(k), nh, n);
        }
      },
      [](const Addr6& a) { return format_ipv6(a.data()); }, kNoRoute);
}

AppSpec spec() {
  AppSpec s;
  s.name = "ipv6";
  s.description = "IPv6 router: hop limit, rte_lpm6-style longest-prefix match";
  s.flags = {{"fib", AppFlag::Kind::kFile, "PREFIX/LEN [NEXTHOP] lines or an MRT dump (IPv4 lines skipped); .gz ok"}};
  s.bench_flags = "--fib data/fib/iprbench_tier1_fulltable_prefixes.txt.gz";
  s.load = load;
  s.lookup = lookup;
  s.key_help = "an IPv6 address";
  s.test_cases = [](const auto& data) {
    AppArgs a;
    a.set("fib", data("data/fib/iprbench_tier1_fulltable_prefixes.txt.gz"));
    return std::vector<AppTestCase>{{"ipv6", a, "count=30000,dst=fib,flows=0,seed=4"},
                                    {"ipv6-uniform", a, "count=20000,dst=uniform,flows=0,size=imix,seed=5"}};
  };
  return s;
}

}  // namespace
}  // namespace tandem::ipv6

TANDEM_REGISTER_APP(tandem::ipv6::spec)
