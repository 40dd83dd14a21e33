// The l2 app: the L2 switch (l2_app.h) over a 2-8 cuckoo MAC table.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "apps/key_lookup.h"
#include "apps/l2/l2_app.h"
#include "apps/l2/l2_gpu.h"
#include "apps/l2/l2_loader.h"
#include "apps/registry.h"
#include "core/byte_order.h"
#include "io/flow_traffic.h"

namespace tandem::l2 {
namespace {

struct L2State : AppState {
  L2Setup setup;
};

LoadedApp load(const AppArgs& args) {
  if (args.has("fib") == args.has("l2-random")) throw UsageError("--app l2 needs --fib FILE (MAC PORT lines) or --l2-random N");
  auto st = std::make_unique<L2State>();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    st->setup = args.has("fib") ? load_l2_setup(args.text("fib"))
                                : random_l2_setup(args.integer("l2-random", 0), static_cast<uint32_t>(args.integer("ports", 16)), 1);
  } catch (const L2TableError& e) {
    throw UsageError(e.what());
  }
  if (st->setup.entries.empty()) throw UsageError(st->setup.source + ": no MAC entries");
  warn(st->setup.warning);
  LoadedApp a;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %zu MACs in a 2-8 cuckoo table of %zu slots (%.0f MiB), built in %.2f s",
                st->setup.source.c_str(), st->setup.table->size(), st->setup.table->slot_count(),
                st->setup.table->memory_bytes() / 1048576.0,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  a.table_desc = buf;
  a.app = std::make_unique<L2App>(st->setup, st->setup.table.get());
  const L2Setup* setup = &st->setup;
  a.generate = [setup](const GenSpec& spec) {
    return generate_flows(spec, 4, [setup, &spec](Rng& rng, GenFlow& f) {
      uint64_t mac = spec.dst == GenSpec::Dst::kFib ? setup->entries[rng.below(setup->entries.size())].first
                                                    : (rng.next() & kMacMask & ~kMacGroupBit);
      for (int i = 5; i >= 0; --i, mac >>= 8) f.dst_mac[i] = static_cast<uint8_t>(mac);
      store_be32(f.dst, uniform_unicast_ipv4(rng));
    });
  };
  a.state = std::move(st);
  return a;
}

std::unique_ptr<KeyLookup> lookup(const AppArgs& args, bool on_gpu) {
  if (!args.has("fib")) throw UsageError("lookup --app l2 needs --fib FILE (MAC PORT lines)");
  const std::string& path = args.text("fib");
  std::shared_ptr<MacTable> table;
  try {
    // Sized from a first pass over the table file (its lines with columns).
    table = std::make_shared<MacTable>(std::max<size_t>(1024, count_l2_entries(path)));
    warn(load_l2_table(path, *table).duplicates.warning("MAC entries"));
  } catch (const L2TableError& e) {
    throw UsageError(e.what());
  }
  std::shared_ptr<L2GpuTable> gpu;
  if (on_gpu) gpu = L2GpuTable::create(*table);
  return make_key_lookup<uint64_t>(
      [](std::string_view s, uint64_t* m, std::string* why) {
        *why = "not a MAC address";
        return parse_mac(std::string(s), m);
      },
      [table, gpu](const uint64_t* macs, uint32_t* ports, size_t n) {
        if (!gpu) {
          table->lookup_batch(macs, ports, n);
          return;
        }
        // The GPU runs the forwarding decision; the table's answer is the lookup (no flooding here).
        gpu->forward(macs, ports, n);
        for (size_t i = 0; i < n; ++i) {
          if (ports[i] == kFlood) ports[i] = kMiss;
        }
      },
      [](uint64_t m) { return format_mac(m); }, kMiss);
}

AppSpec spec() {
  AppSpec s;
  s.name = "l2";
  s.description = "L2 switch (CuckooSwitch): 2-8 cuckoo MAC table, flooding on a miss";
  s.flags = {{"fib", AppFlag::Kind::kFile, "MAC PORT lines; .gz ok"},
             {"l2-random", AppFlag::Kind::kInteger, "a table of this many random MACs instead of --fib", 1, double(uint64_t{1} << 28)},
             {"ports", AppFlag::Kind::kInteger, "ports of generated tables (--l2-random, --urls)", 1, 65535, "", "16"}};
  s.bench_flags = "--l2-random 1000000";
  s.load = load;
  s.lookup = lookup;
  s.key_help = "a MAC address";
  s.test_cases = [](const auto&) {
    AppArgs a;
    a.set("l2-random", "50000");
    return std::vector<AppTestCase>{{"l2", a, "count=30000,dst=fib,flows=0,seed=6", 1},
                                    {"l2-misses", a, "count=20000,dst=uniform,flows=0,seed=7", 1}};  // unknown: flooded
  };
  return s;
}

}  // namespace
}  // namespace tandem::l2

TANDEM_REGISTER_APP(tandem::l2::spec)
