// The ipv4 app: the IPv4 router (ipv4_app.h) over the table --table chooses (DIR-24-8 or Poptrie).
#include <chrono>
#include <cstdio>

#include "apps/ipv4/ipv4_app.h"
#include "apps/ipv4/ipv4_cpu.h"
#include "apps/ipv4/ipv4_gpu.h"
#include "apps/ipv4/ipv4_table.h"
#include "apps/key_lookup.h"
#include "apps/registry.h"

namespace tandem::ipv4 {

// The apps are instantiated here, apart from the traits' member definitions (ipv4_app.cc), so
// that the per-packet path compiles as it was measured (docs/RESULTS.md): classify and
// lookup_batch stay calls rather than being inlined into ForwardAppImpl's loops.
std::unique_ptr<ForwardApp> make_app(RouteTable& table, const Fib& fib) {
  if (table.dir24_8) return std::make_unique<Ipv4App>(*table.dir24_8, fib, table.dir24_8.get());
  return std::make_unique<Ipv4PoptrieApp>(*table.poptrie, fib);
}

namespace {

struct Ipv4State : AppState {
  Fib fib;
  RouteTable table;
  double load_seconds = 0;
};

constexpr const char* kFibHelp = "PREFIX/LEN [NEXTHOP] lines or an MRT dump (IPv6 lines skipped); .gz ok";
constexpr const char* kTableHelp =
    "the lookup table: dir24-8 (DIR-24-8, on the CPU and the GPU) or poptrie (Poptrie, a compressed trie that "
    "stays in the caches; CPU only: --device gpu is refused, --device auto runs on the CPU)";

const std::string& table_name(const AppArgs& args) {
  static const std::string fallback = kDefaultTable;
  return args.text("table", fallback);
}

// The routes of --fib in the table --table names. UsageError for a table name it does not know,
// before the file is read.
std::unique_ptr<Ipv4State> load_state(const AppArgs& args) {
  if (!args.has("fib")) throw UsageError("--app ipv4 needs --fib FILE");
  const std::string& name = table_name(args);
  if (!known_table(name)) throw UsageError("--table: unknown IPv4 table '" + name + "' (tables: " + kTableNames + ")");
  auto st = std::make_unique<Ipv4State>();
  const auto t0 = std::chrono::steady_clock::now();
  st->fib = load_fib(args.text("fib"));
  st->load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  st->table = make_table(name, st->fib);
  warn(st->fib.duplicates.warning("routes"));
  return st;
}

LoadedApp load(const AppArgs& args) {
  auto st = load_state(args);
  LoadedApp a;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %zu IPv4 routes, loaded in %.2f s, %s built in %.2f s", st->fib.path.c_str(),
                st->fib.routes.size(), st->load_seconds, st->table.title(), st->table.build_seconds);
  a.table_desc = buf;
  a.app = make_app(st->table, st->fib);
  const Fib* fib = &st->fib;
  a.generate = [fib](const GenSpec& spec) { return generate(spec, prefixes_of(*fib)); };
  a.state = std::move(st);
  return a;
}

std::unique_ptr<KeyLookup> lookup(const AppArgs& args, bool on_gpu) {
  const std::string no_gpu = no_gpu_path(table_name(args));
  if (on_gpu && !no_gpu.empty()) throw UsageError("--device gpu: " + no_gpu + ": use --device cpu");
  std::shared_ptr<Ipv4State> st = load_state(args);
  std::shared_ptr<Ipv4GpuTable> gpu;
  if (on_gpu) gpu = Ipv4GpuTable::create(*st->table.dir24_8);
  return make_key_lookup<uint32_t>(
      [](std::string_view s, uint32_t* a, std::string* why) {
        *why = "not an IPv4 address";
        return parse_ipv4_addr(s.data(), s.data() + s.size(), a);
      },
      [st, gpu](const uint32_t* k, uint32_t* nh, size_t n) {
        if (gpu) {
          gpu->lookup(k, nh, n);
        } else if (st->table.dir24_8) {
          lookup_batched(*st->table.dir24_8, k, nh, n);
        } else {
          st->table.poptrie->lookup_batch(k, nh, n);
        }
      },
      [](uint32_t a) { return format_ipv4(a); }, kNoRoute);
}

AppSpec spec() {
  AppSpec s;
  s.name = "ipv4";
  s.description = "IPv4 router: RFC 1812 checks, longest-prefix match (DIR-24-8 or Poptrie), TTL and checksum rewrite";
  s.flags = {{"fib", AppFlag::Kind::kFile, kFibHelp},
             {"table", AppFlag::Kind::kChoice, kTableHelp, 0, 0, kTableNames, kDefaultTable}};
  s.bench_flags = "--fib data/fib/iprbench_tier1_fulltable_prefixes.txt.gz";
  s.load = load;
  s.lookup = lookup;
  s.key_help = "an IPv4 address";
  s.no_gpu_path = [](const AppArgs& args) { return no_gpu_path(table_name(args)); };
  s.test_cases = [](const auto& data) {
    std::vector<AppTestCase> v;
    AppArgs a;
    a.set("fib", data("data/fib/iprbench_tier1_fulltable_prefixes.txt.gz"));
    v.push_back({"ipv4", a, "count=30000,dst=fib,flows=3000,zipf=1.1,seed=3"});
    a.set("table", "poptrie");
    v.push_back({"ipv4_poptrie", a, "count=30000,dst=fib,flows=3000,zipf=1.1,seed=3"});
    return v;
  };
  return s;
}

}  // namespace
}  // namespace tandem::ipv4

TANDEM_REGISTER_APP(tandem::ipv4::spec)
