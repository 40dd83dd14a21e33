// `tandem lookup --app ipv4|ipv6|ndn|l2`: keys in (one per line), "key nexthop" out, in input order
// ('-' where no route matches). IPv6 addresses are printed in their canonical form (RFC 5952), NDN
// names in the NDN URI form, MACs as aa:bb:cc:dd:ee:ff.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
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

// The keys file's non-blank, non-comment lines, trimmed, with their line numbers.
std::vector<std::pair<uint64_t, std::string>> read_keys(const std::string& keys, const std::string& name) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (keys != "-") {
    file.open(keys);
    if (!file) throw UsageError(keys + ": cannot open");
    in = &file;
  }
  std::vector<std::pair<uint64_t, std::string>> out;
  uint64_t lineno = 0;
  for (std::string line; std::getline(*in, line);) {
    ++lineno;
    const size_t b = line.find_first_not_of(" \t\r");
    const size_t e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    out.emplace_back(lineno, line.substr(b, e + 1 - b));
  }
  if (in->bad() || !in->eof()) throw UsageError(name + ": read error after line " + std::to_string(lineno));
  return out;
}

void write_results(const std::string& out) {
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
    throw UsageError("cannot write the results to standard output");
  }
}

void append_result(std::string& out, const std::string& key, uint32_t nh) {
  out += key;
  out += ' ';
  out += nh == ipv4::kNoRoute ? std::string("-") : std::to_string(nh);
  out += '\n';
}

void lookup_ipv4(const LookupOptions& o, const std::string& name) {
  std::vector<uint32_t> ips;
  for (const auto& [lineno, text] : read_keys(o.keys, name)) {
    uint32_t a = 0;
    if (!ipv4::parse_ipv4_addr(text.data(), text.data() + text.size(), &a)) {
      throw UsageError(name + ":" + std::to_string(lineno) + ": not an IPv4 address: `" + text + "`");
    }
    ips.push_back(a);
  }
  const LoadedTable t = load_table(o.fib, /*quiet=*/true);
  std::vector<uint32_t> nh(ips.size());
  const Device dev = choose_device(o.device, /*quiet=*/true);
  if (dev == Device::kGpu) {
    ipv4::Ipv4GpuTable g(*t.table);
    g.lookup(ips.data(), nh.data(), ips.size());
  } else {
    ipv4::lookup_batched(*t.table, ips.data(), nh.data(), ips.size());
  }
  std::string out;
  out.reserve(ips.size() * 24);
  for (size_t i = 0; i < ips.size(); ++i) append_result(out, ipv4::format_ipv4(ips[i]), nh[i]);
  write_results(out);
}

void lookup_ipv6(const LookupOptions& o, const std::string& name) {
  std::vector<ipv6::Addr6> addrs;
  for (const auto& [lineno, text] : read_keys(o.keys, name)) {
    ipv6::Addr6 a{};
    if (!ipv6::parse_ipv6_addr(text.data(), text.data() + text.size(), &a)) {
      throw UsageError(name + ":" + std::to_string(lineno) + ": not an IPv6 address: `" + text + "`");
    }
    addrs.push_back(a);
  }
  const ipv6::Fib6 fib = ipv6::load_fib6(o.fib);
  ipv6::Lpm6 table;
  for (const auto& r : fib.routes) {
    const auto st = table.add(r.prefix.data(), r.len, r.next_hop);
    if (st != ipv6::Lpm6::Status::kOk) {
      throw UsageError(o.fib + ": cannot add " + ipv6::format_ipv6(r.prefix.data()) + "/" + std::to_string(r.len) +
                       ": " + ipv6::Lpm6::status_name(st));
    }
  }
  std::vector<uint32_t> nh(addrs.size());
  if (choose_device(o.device, /*quiet=*/true) == Device::kGpu) {
    ipv6::Ipv6GpuTable g(table);
    g.lookup(ipv6::addr_rows(addrs.data()), nh.data(), addrs.size());
  } else {
    table.lookup_batch(ipv6::addr_rows(addrs.data()), nh.data(), addrs.size());
  }
  std::string out;
  out.reserve(addrs.size() * 48);
  for (size_t i = 0; i < addrs.size(); ++i) append_result(out, ipv6::format_ipv6(addrs[i].data()), nh[i]);
  write_results(out);
}

void lookup_ndn(const LookupOptions& o, const std::string& name) {
  std::vector<ndn::Name> names;
  for (const auto& [lineno, text] : read_keys(o.keys, name)) {
    try {
      names.push_back(ndn::parse_uri(text));
    } catch (const ndn::NameError& e) {
      throw UsageError(name + ":" + std::to_string(lineno) + ": " + e.what());
    }
  }
  ndn::NdnFibFile file;
  try {
    file = ndn::load_ndn_fib(o.fib);
  } catch (const TableError& e) {
    throw UsageError(e.what());
  }
  ndn::NdnFib fib(file.routes.size());
  for (const auto& [prefix, nh] : file.routes) fib.add(prefix, nh);
  std::vector<uint32_t> nh(names.size());
  if (choose_device(o.device, /*quiet=*/true) == Device::kGpu) {
    // Names as GPU items (their Name TLV values); one too long for an item is looked up here.
    std::vector<ndn::NdnItem> items(names.size());
    for (size_t i = 0; i < names.size(); ++i) {
      const std::vector<uint8_t> wire = ndn::name_wire_bytes(names[i]);
      ndn::make_item(wire.data(), static_cast<uint32_t>(wire.size()), &items[i]);
      if (names[i].size() > static_cast<size_t>(ndn::kMaxComponents)) items[i].len = ndn::NdnItem::kTooLong;
    }
    ndn::NdnGpuTable g(fib);
    g.lookup(items.data(), nh.data(), items.size());
    for (size_t i = 0; i < names.size(); ++i) {
      if (nh[i] == ndn::kResolveOnCpu) nh[i] = fib.lookup(names[i]);
    }
  } else {
    for (size_t i = 0; i < names.size(); ++i) nh[i] = fib.lookup(names[i]);
  }
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) append_result(out, ndn::to_uri(names[i]), nh[i]);
  write_results(out);
}

void lookup_l2(const LookupOptions& o, const std::string& name) {
  std::vector<uint64_t> macs;
  for (const auto& [lineno, text] : read_keys(o.keys, name)) {
    uint64_t m = 0;
    if (!l2::parse_mac(text, &m)) throw UsageError(name + ":" + std::to_string(lineno) + ": not a MAC address: `" + text + "`");
    macs.push_back(m);
  }
  // Sized from a first pass over the table file (its lines with columns).
  l2::MacTable table(std::max<size_t>(1024, [&] {
    try {
      return l2::count_l2_entries(o.fib);
    } catch (const l2::L2TableError& e) {
      throw UsageError(e.what());
    }
  }()));
  try {
    l2::load_l2_table(o.fib, table);
  } catch (const l2::L2TableError& e) {
    throw UsageError(e.what());
  }
  std::vector<uint32_t> ports(macs.size());
  if (choose_device(o.device, /*quiet=*/true) == Device::kGpu) {
    // The GPU runs the forwarding decision; the table's answer is the lookup (no flooding here).
    l2::L2GpuTable g(table);
    g.forward(macs.data(), ports.data(), macs.size());
    for (size_t i = 0; i < macs.size(); ++i) {
      if (ports[i] == l2::kFlood) ports[i] = l2::kMiss;
    }
  } else {
    table.lookup_batch(macs.data(), ports.data(), macs.size());
  }
  std::string out;
  for (size_t i = 0; i < macs.size(); ++i) append_result(out, l2::format_mac(macs[i]), ports[i]);
  write_results(out);
}

void run_lookup(const LookupOptions& o) {
  const std::string name = o.keys == "-" ? "<stdin>" : o.keys;
  if (o.app == "ipv6") {
    lookup_ipv6(o, name);
  } else if (o.app == "ndn") {
    lookup_ndn(o, name);
  } else if (o.app == "l2") {
    lookup_l2(o, name);
  } else {
    lookup_ipv4(o, name);
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
