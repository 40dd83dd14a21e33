// The ipv4 app: the IPv4 router (ipv4_app.h) over a DIR-24-8 table.
#include <cstdio>

#include "apps/ipv4/ipv4_app.h"
#include "apps/ipv4/ipv4_cpu.h"
#include "apps/ipv4/ipv4_gpu.h"
#include "apps/ipv4/ipv4_table.h"
#include "apps/key_lookup.h"
#include "apps/registry.h"

namespace tandem::ipv4 {
namespace {

struct Ipv4State : AppState {
  LoadedTable t;
};

constexpr const char* kFibHelp = "PREFIX/LEN [NEXTHOP] lines or an MRT dump (IPv6 lines skipped); .gz ok";

LoadedApp load(const AppArgs& args) {
  if (!args.has("fib")) throw UsageError("--app ipv4 needs --fib FILE");
  const std::string& path = args.text("fib");
  auto st = std::make_unique<Ipv4State>();
  st->t = load_table(path);
  LoadedApp a;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %zu IPv4 routes, loaded in %.2f s, DIR-24-8 built in %.2f s", path.c_str(),
                st->t.fib.routes.size(), st->t.load_seconds, st->t.build_seconds);
  a.table_desc = buf;
  a.app = std::make_unique<Ipv4App>(*st->t.table, st->t.fib);
  const Fib* fib = &st->t.fib;
  a.generate = [fib](const GenSpec& spec) { return generate(spec, prefixes_of(*fib)); };
  a.state = std::move(st);
  return a;
}

std::unique_ptr<KeyLookup> lookup(const AppArgs& args, bool on_gpu) {
  auto t = std::make_shared<LoadedTable>(load_table(args.text("fib")));
  std::shared_ptr<Ipv4GpuTable> gpu;
  if (on_gpu) gpu = std::make_shared<Ipv4GpuTable>(*t->table);
  return make_key_lookup<uint32_t>(
      [](std::string_view s, uint32_t* a, std::string* why) {
        *why = "not an IPv4 address";
        return parse_ipv4_addr(s.data(), s.data() + s.size(), a);
      },
      [t, gpu](const uint32_t* k, uint32_t* nh, size_t n) {
        if (gpu) {
          gpu->lookup(k, nh, n);
        } else {
          lookup_batched(*t->table, k, nh, n);
        }
      },
      [](uint32_t a) { return format_ipv4(a); }, kNoRoute);
}

AppSpec spec() {
  AppSpec s;
  s.name = "ipv4";
  s.description = "IPv4 router: RFC 1812 checks, DIR-24-8 longest-prefix match, TTL and checksum rewrite";
  s.flags = {{"fib", AppFlag::Kind::kFile, kFibHelp}};
  s.bench_flags = "--fib data/fib/iprbench_tier1_fulltable_prefixes.txt.gz";
  s.load = load;
  s.lookup = lookup;
  s.key_help = "an IPv4 address";
  s.test_cases = [](const auto& data) {
    std::vector<AppTestCase> v;
    AppArgs a;
    a.set("fib", data("data/fib/iprbench_tier1_fulltable_prefixes.txt.gz"));
    v.push_back({"ipv4", a, "count=30000,dst=fib,flows=3000,zipf=1.1,seed=3"});
    return v;
  };
  return s;
}

}  // namespace
}  // namespace tandem::ipv4

TANDEM_REGISTER_APP(tandem::ipv4::spec)
