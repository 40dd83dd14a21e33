// `tandem lookup --app ipv4|ipv6|ndn|l2`: keys in (one per line), "key nexthop" out, in input order
// ('-' where no route matches). IPv6 addresses are printed in their canonical form (RFC 5952), NDN
// names in the NDN URI form, MACs as aa:bb:cc:dd:ee:ff.
//
// The table is loaded first; the keys are then streamed a chunk at a time (read, looked up,
// written), so that memory does not grow with the key file and a pipe can feed it without end. A
// bad key stops the command with an error naming its line, after the results of the chunks
// before it have been written.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apps/ipv4/dir24_8.h"
#include "apps/ipv4/fib_loader.h"
#include "apps/ipv4/ipv4_cpu.h"
#include "apps/ipv4/ipv4_gpu.h"
#include "apps/ipv6/fib6_loader.h"
#include "apps/ipv6/ipv6_gpu.h"
#include "apps/ipv6/lpm6.h"
#include "apps/l2/l2_gpu.h"
#include "apps/l2/l2_loader.h"
#include "apps/l2/mac_table.h"
#include "apps/ndn/ndn_fib.h"
#include "apps/ndn/ndn_gpu.h"
#include "core/table_reader.h"
#include "cli/commands.h"
#include "cli/table_setup.h"

namespace tandem::cli {

namespace {

struct LookupOptions {
  std::string app = "ipv4";
  std::string fib;
  std::string keys;
  std::string device = "cpu";
};

constexpr size_t kChunk = 1 << 16;  // keys read, looked up and written at a time

void write_results(const std::string& out) {
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
    throw UsageError("cannot write the results to standard output");
  }
}

// Streams the key file through `lookup`. parse(text, &key) -> false with a message names a bad
// key; lookup(keys, results, n) answers a chunk; format(key) prints a key.
template <class Key, class Parse, class Lookup, class Format>
void stream_keys(const LookupOptions& o, const std::string& name, Parse parse, Lookup lookup, Format format) {
  LineReader in(o.keys, {}, name);
  std::vector<Key> keys;
  keys.reserve(kChunk);
  std::vector<uint32_t> nh(kChunk);
  std::string out;
  for (bool more = true; more;) {
    keys.clear();
    std::string_view line;
    while (keys.size() < kChunk && (more = in.next(&line))) {
      const size_t b = line.find_first_not_of(" \t\r");
      if (b == std::string_view::npos || line[b] == '#') continue;
      const std::string_view text = line.substr(b, line.find_last_not_of(" \t\r") + 1 - b);
      Key k{};
      std::string why;
      if (!parse(text, &k, &why)) {
        throw UsageError(name + ":" + std::to_string(in.line_number()) + ": " + why + ": `" + quote_excerpt(text) + "`");
      }
      keys.push_back(std::move(k));
    }
    if (keys.empty()) continue;
    lookup(keys.data(), nh.data(), keys.size());
    out.clear();
    for (size_t i = 0; i < keys.size(); ++i) {
      out += format(keys[i]);
      out += ' ';
      out += nh[i] == ipv4::kNoRoute ? std::string("-") : std::to_string(nh[i]);
      out += '\n';
    }
    write_results(out);
  }
}

void lookup_ipv4(const LookupOptions& o, const std::string& name) {
  const LoadedTable t = load_table(o.fib, /*quiet=*/true);
  std::unique_ptr<ipv4::Ipv4GpuTable> gpu;
  if (choose_device(o.device, /*quiet=*/true) == Device::kGpu) gpu = std::make_unique<ipv4::Ipv4GpuTable>(*t.table);
  stream_keys<uint32_t>(
      o, name,
      [](std::string_view s, uint32_t* a, std::string* why) {
        *why = "not an IPv4 address";
        return ipv4::parse_ipv4_addr(s.data(), s.data() + s.size(), a);
      },
      [&](const uint32_t* k, uint32_t* nh, size_t n) {
        if (gpu) {
          gpu->lookup(k, nh, n);
        } else {
          ipv4::lookup_batched(*t.table, k, nh, n);
        }
      },
      [](uint32_t a) { return ipv4::format_ipv4(a); });
}

void lookup_ipv6(const LookupOptions& o, const std::string& name) {
  const ipv6::Fib6 fib = ipv6::load_fib6(o.fib);
  warn(fib.duplicates.warning("routes"));
  ipv6::Lpm6 table;
  for (const auto& r : fib.routes) {
    const auto st = table.add(r.prefix.data(), r.len, r.next_hop);
    if (st != ipv6::Lpm6::Status::kOk) {
      throw UsageError(o.fib + ": cannot add " + ipv6::format_ipv6(r.prefix.data()) + "/" + std::to_string(r.len) +
                       ": " + ipv6::Lpm6::status_name(st));
    }
  }
  std::unique_ptr<ipv6::Ipv6GpuTable> gpu;
  if (choose_device(o.device, /*quiet=*/true) == Device::kGpu) gpu = std::make_unique<ipv6::Ipv6GpuTable>(table);
  stream_keys<ipv6::Addr6>(
      o, name,
      [](std::string_view s, ipv6::Addr6* a, std::string* why) {
        *why = "not an IPv6 address";
        return ipv6::parse_ipv6_addr(s.data(), s.data() + s.size(), a);
      },
      [&](const ipv6::Addr6* k, uint32_t* nh, size_t n) {
        if (gpu) {
          gpu->lookup(ipv6::addr_rows(k), nh, n);
        } else {
          table.lookup_batch(ipv6::addr_rows(k), nh, n);
        }
      },
      [](const ipv6::Addr6& a) { return ipv6::format_ipv6(a.data()); });
}

void lookup_ndn(const LookupOptions& o, const std::string& name) {
  ndn::NdnFibFile file;
  try {
    file = ndn::load_ndn_fib(o.fib);
  } catch (const TableError& e) {
    throw UsageError(e.what());
  }
  warn(file.duplicates.warning("names"));
  ndn::NdnFib fib(file.routes.size());
  for (const auto& [prefix, nh] : file.routes) fib.add(prefix, nh);
  std::unique_ptr<ndn::NdnGpuTable> gpu;
  if (choose_device(o.device, /*quiet=*/true) == Device::kGpu) gpu = std::make_unique<ndn::NdnGpuTable>(fib);
  std::vector<ndn::NdnItem> items;
  stream_keys<ndn::Name>(
      o, name,
      [](std::string_view s, ndn::Name* n, std::string* why) {
        try {
          *n = ndn::parse_uri(std::string(s));
          return true;
        } catch (const ndn::NameError& e) {
          *why = e.what();
          return false;
        }
      },
      [&](const ndn::Name* names, uint32_t* nh, size_t n) {
        if (!gpu) {
          for (size_t i = 0; i < n; ++i) nh[i] = fib.lookup(names[i]);
          return;
        }
        // Names as GPU items (their Name TLV values); one too long for an item is looked up here.
        items.resize(n);
        for (size_t i = 0; i < n; ++i) {
          const std::vector<uint8_t> wire = ndn::name_wire_bytes(names[i]);
          ndn::make_item(wire.data(), static_cast<uint32_t>(wire.size()), &items[i]);
          if (names[i].size() > static_cast<size_t>(ndn::kMaxComponents)) items[i].len = ndn::NdnItem::kTooLong;
        }
        gpu->lookup(items.data(), nh, n);
        for (size_t i = 0; i < n; ++i) {
          if (nh[i] == ndn::kResolveOnCpu) nh[i] = fib.lookup(names[i]);
        }
      },
      [](const ndn::Name& n) { return ndn::to_uri(n); });
}

void lookup_l2(const LookupOptions& o, const std::string& name) {
  // Sized from a first pass over the table file (its lines with columns).
  l2::MacTable table(std::max<size_t>(1024, [&] {
    try {
      return l2::count_l2_entries(o.fib);
    } catch (const l2::L2TableError& e) {
      throw UsageError(e.what());
    }
  }()));
  try {
    warn(l2::load_l2_table(o.fib, table).duplicates.warning("MAC entries"));
  } catch (const l2::L2TableError& e) {
    throw UsageError(e.what());
  }
  std::unique_ptr<l2::L2GpuTable> gpu;
  if (choose_device(o.device, /*quiet=*/true) == Device::kGpu) gpu = std::make_unique<l2::L2GpuTable>(table);
  stream_keys<uint64_t>(
      o, name,
      [](std::string_view s, uint64_t* m, std::string* why) {
        *why = "not a MAC address";
        return l2::parse_mac(std::string(s), m);
      },
      [&](const uint64_t* macs, uint32_t* ports, size_t n) {
        if (!gpu) {
          table.lookup_batch(macs, ports, n);
          return;
        }
        // The GPU runs the forwarding decision; the table's answer is the lookup (no flooding here).
        gpu->forward(macs, ports, n);
        for (size_t i = 0; i < n; ++i) {
          if (ports[i] == l2::kFlood) ports[i] = l2::kMiss;
        }
      },
      [](uint64_t m) { return l2::format_mac(m); });
}

void run_lookup(const LookupOptions& o) {
  const std::string name = o.keys == "-" ? "<stdin>" : o.keys;
  try {
    if (o.app == "ipv6") {
      lookup_ipv6(o, name);
    } else if (o.app == "ndn") {
      lookup_ndn(o, name);
    } else if (o.app == "l2") {
      lookup_l2(o, name);
    } else {
      lookup_ipv4(o, name);
    }
  } catch (const TableError& e) {
    throw UsageError(e.what());
  }
}

}  // namespace

void register_lookup(CLI::App& app) {
  auto o = std::make_shared<LookupOptions>();
  CLI::App* c = app.add_subcommand("lookup", "look up addresses: prints `address nexthop` per line ('-' = no route)");
  c->add_option("--app", o->app, "application")->capture_default_str()->check(CLI::IsMember({"ipv4", "ipv6", "ndn", "l2"}));
  c->add_option("--fib", o->fib, "forwarding table: PREFIX/LEN [NEXTHOP] per line (ipv4, ipv6; the other family's lines are "
                "skipped; MRT dumps too), NAME NEXTHOP (ndn, NDN URI form) or MAC PORT (l2); .gz ok")
      ->required()->check(CLI::ExistingFile);
  c->add_option("--keys", o->keys, "file with one key per line (an IPv4 or IPv6 address, an NDN name or a MAC, as --app), '-' for stdin")->required();
  c->add_option("--device", o->device, "cpu, gpu or auto")->capture_default_str()
      ->check(CLI::IsMember({"cpu", "gpu", "auto"}));
  c->callback([o] { run_lookup(*o); });
}

}  // namespace tandem::cli
