// The ndn app: NDN Interests over UDP, longest-prefix match of their names (ndn_app.h).
#include <chrono>
#include <cstdio>

#include "apps/key_lookup.h"
#include "apps/ndn/ndn_app.h"
#include "apps/ndn/ndn_gpu.h"
#include "apps/registry.h"
#include "core/byte_order.h"
#include "core/flow_hash.h"
#include "core/table_reader.h"
#include "io/flow_traffic.h"

namespace tandem::ndn {
namespace {

struct NdnState : AppState {
  NdnSetup setup;
};

LoadedApp load(const AppArgs& args) {
  if (args.has("fib") == args.has("urls")) throw UsageError("--app ndn needs --fib FILE (NAME NEXTHOP lines) or --urls FILE");
  const uint32_t fixed_bytes = static_cast<uint32_t>(args.integer("ndn-fixed-bytes", 0));
  const uint32_t replicas = static_cast<uint32_t>(args.integer("ndn-replicas", 1));
  if ((fixed_bytes || replicas > 1) && !args.has("urls")) throw UsageError("--ndn-fixed-bytes and --ndn-replicas need --urls");
  auto st = std::make_unique<NdnState>();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    st->setup = args.has("fib") ? load_ndn_setup(args.text("fib"))
                                : ndn_setup_from_urls(args.text("urls"), static_cast<uint32_t>(args.integer("ports", 16)),
                                                      fixed_bytes, replicas);
  } catch (const std::exception& e) {  // TableError, std::runtime_error, std::invalid_argument
    throw UsageError(e.what());
  }
  warn(st->setup.warning);
  LoadedApp a;
  char buf[320];
  std::snprintf(buf, sizeof buf, "%s: %zu FIB prefixes (%.1f MiB), %zu names for traffic, built in %.2f s",
                st->setup.source.c_str(), st->setup.fib->size(), st->setup.fib->memory_bytes() / 1048576.0,
                st->setup.names.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  a.table_desc = buf;
  a.app = std::make_unique<NdnApp>(st->setup);
  // Interests are encoded once per name, with a nonce from the name's index.
  auto interests = std::make_shared<std::vector<std::vector<uint8_t>>>();
  for (size_t i = 0; i < st->setup.names.size(); ++i) {
    interests->push_back(encode_interest(st->setup.names[i], static_cast<uint32_t>(mix64(i))));
  }
  a.generate = [interests](const GenSpec& spec) {
    return generate_flows(spec, 4, [interests, &spec](Rng& rng, GenFlow& f) {
      store_be32(f.dst, uniform_unicast_ipv4(rng));
      f.dport = kNdnUdpPort;
      f.exact_payload = true;
      if (spec.dst == GenSpec::Dst::kFib || interests->empty()) {
        f.payload = (*interests)[rng.below(interests->size())];
      } else {  // names the FIB does not hold
        f.payload = encode_interest({"tandem-random", std::to_string(rng.next())}, static_cast<uint32_t>(rng.next()));
      }
    });
  };
  a.state = std::move(st);
  return a;
}

std::unique_ptr<KeyLookup> lookup(const AppArgs& args, bool on_gpu) {
  if (!args.has("fib")) throw UsageError("lookup --app ndn needs --fib FILE (NAME NEXTHOP lines)");
  NdnFibFile file;
  try {
    file = load_ndn_fib(args.text("fib"));
  } catch (const TableError& e) {
    throw UsageError(e.what());
  }
  warn(file.duplicates.warning("names"));
  auto fib = std::make_shared<NdnFib>(file.routes.size());
  for (const auto& [prefix, nh] : file.routes) fib->add(prefix, nh);
  std::shared_ptr<NdnGpuTable> gpu;
  if (on_gpu) gpu = NdnGpuTable::create(*fib);
  auto items = std::make_shared<std::vector<NdnItem>>();
  return make_key_lookup<Name>(
      [](std::string_view s, Name* n, std::string* why) {
        try {
          *n = parse_uri(std::string(s));
          return true;
        } catch (const NameError& e) {
          *why = e.what();
          return false;
        }
      },
      [fib, gpu, items](const Name* names, uint32_t* nh, size_t n) {
        if (!gpu) {
          for (size_t i = 0; i < n; ++i) nh[i] = fib->lookup(names[i]);
          return;
        }
        // Names as GPU items (their Name TLV values); one too long for an item is looked up here.
        items->resize(n);
        for (size_t i = 0; i < n; ++i) {
          const std::vector<uint8_t> wire = name_wire_bytes(names[i]);
          make_item(wire.data(), static_cast<uint32_t>(wire.size()), &(*items)[i]);
          if (names[i].size() > static_cast<size_t>(kMaxComponents)) (*items)[i].len = NdnItem::kTooLong;
        }
        gpu->lookup(items->data(), nh, n);
        for (size_t i = 0; i < n; ++i) {
          if (nh[i] == kResolveOnCpu) nh[i] = fib->lookup(names[i]);
        }
      },
      [](const Name& n) { return to_uri(n); }, kNoRoute);
}

AppSpec spec() {
  AppSpec s;
  s.name = "ndn";
  s.drop_reasons = app_drop_reasons<NdnTraits>();
  s.description = "NDN name lookup: TLV v0.3 Interests over UDP 6363, longest-prefix match on a hash-based name FIB";
  s.flags = {{"fib", AppFlag::Kind::kFile, "NAME NEXTHOP lines, names in NDN URI form; .gz ok"},
             {"urls", AppFlag::Kind::kFile, "build the FIB and the traffic's names from this URL list (.gz ok)"},
             {"ndn-fixed-bytes", AppFlag::Kind::kInteger, "--urls: cut or pad every name to this many bytes (the G-Opt paper's 32)", 2, 250},
             {"ndn-replicas", AppFlag::Kind::kInteger,
              "--urls: take the URL set this many times, each under its own top-level component (a larger FIB)", 1, 10000, "", "1"},
             {"ports", AppFlag::Kind::kInteger, "ports of generated tables (--l2-random, --urls)", 1, 65535, "", "16"}};
  s.bench_flags = "--urls {shared}/names/iscx_url2016_benign_list_big_final.csv.gz";
  s.load = load;
  s.lookup = lookup;
  s.key_help = "an NDN name in URI form";
  s.test_cases = [](const auto& data) {
    AppArgs a;
    a.set("urls", data("names/iscx_url2016_benign_list_big_final.csv.gz"));
    std::vector<AppTestCase> v{{"ndn", a, "count=40000,dst=fib,flows=0,seed=9"},
                               {"ndn-unknown", a, "count=5000,dst=uniform,flows=0,seed=10", 3, false}};
    a.set("ndn-fixed-bytes", "32");
    v.push_back({"ndn-fixed32", a, "count=20000,dst=fib,flows=0,seed=11"});
    return v;
  };
  return s;
}

}  // namespace
}  // namespace tandem::ndn

TANDEM_REGISTER_APP(tandem::ndn::spec)
