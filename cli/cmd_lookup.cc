// `tandem lookup`: addresses in (one per line), "address nexthop" out, in input order.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "apps/ipv4/dir24_8.h"
#include "apps/ipv4/fib_loader.h"
#include "apps/ipv4/ipv4_cpu.h"
#include "apps/ipv4/ipv4_gpu.h"
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

void run_lookup(const LookupOptions& o) {
  std::ifstream file;
  std::istream* in = &std::cin;
  const std::string name = o.keys == "-" ? "<stdin>" : o.keys;
  if (o.keys != "-") {
    file.open(o.keys);
    if (!file) throw UsageError(o.keys + ": cannot open");
    in = &file;
  }
  std::vector<uint32_t> ips;
  uint64_t lineno = 0;
  for (std::string line; std::getline(*in, line);) {
    ++lineno;
    size_t b = line.find_first_not_of(" \t\r");
    size_t e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    uint32_t a = 0;
    if (!ipv4::parse_ipv4_addr(line.data() + b, line.data() + e + 1, &a)) {
      throw UsageError(name + ":" + std::to_string(lineno) + ": not an IPv4 address: `" + line + "`");
    }
    ips.push_back(a);
  }
  if (in->bad() || !in->eof()) throw UsageError(name + ": read error after line " + std::to_string(lineno));
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
  for (size_t i = 0; i < ips.size(); ++i) {
    out += ipv4::format_ipv4(ips[i]);
    out += ' ';
    out += nh[i] == ipv4::kNoRoute ? std::string("-") : std::to_string(nh[i]);
    out += '\n';
  }
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
    throw UsageError("cannot write the results to standard output");
  }
}

}  // namespace

void register_lookup(CLI::App& app) {
  auto o = std::make_shared<LookupOptions>();
  CLI::App* c = app.add_subcommand("lookup", "look up addresses: prints `address nexthop` per line ('-' = no route)");
  c->add_option("--app", o->app, "application")->capture_default_str()->check(CLI::IsMember({"ipv4"}));
  c->add_option("--fib", o->fib, "forwarding table (PREFIX/LEN [NEXTHOP] per line, .gz ok)")
      ->required()->check(CLI::ExistingFile);
  c->add_option("--keys", o->keys, "file with one IPv4 address per line, '-' for stdin")->required();
  c->add_option("--device", o->device, "cpu, gpu or auto")->capture_default_str()
      ->check(CLI::IsMember({"cpu", "gpu", "auto"}));
  c->callback([o] { run_lookup(*o); });
}

}  // namespace tandem::cli
