// `tandem lookup --app APP --fib FILE --keys FILE`: keys in (one per line), "key result" out, in
// input order ('-' where nothing matches), for every app that declares a key lookup
// (apps/registry.h): IPv4 and IPv6 addresses (IPv6 printed in the canonical form of RFC 5952),
// NDN names in the NDN URI form, MACs as aa:bb:cc:dd:ee:ff.
//
// The table is loaded first; the keys are then streamed a chunk at a time (read, looked up,
// written), so that memory does not grow with the key file and a pipe can feed it without end. A
// bad key stops the command with an error naming its line, after the results of the chunks
// before it have been written.
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "apps/registry.h"
#include "cli/commands.h"
#include "cli/table_setup.h"
#include "core/table_reader.h"

namespace tandem::cli {

namespace {

struct LookupOptions {
  std::string app = "ipv4";
  std::string fib;
  std::string keys;
  std::string device = "cpu";
  std::string table;  // --table, for the apps that choose a table algorithm
};

constexpr size_t kChunk = 1 << 16;  // keys read, looked up and written at a time

void write_results(const std::string& out) {
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
    throw UsageError("cannot write the results to standard output");
  }
}

void run_lookup(const LookupOptions& o) {
  const std::string name = o.keys == "-" ? "<stdin>" : o.keys;
  const AppSpec* spec = find_app(o.app);
  if (!spec || !spec->lookup) throw UsageError("--app " + o.app + " has no key lookup");
  AppArgs args;
  args.set("fib", o.fib);
  if (!o.table.empty()) {
    std::string users;
    for (const AppSpec& a : apps()) {
      for (const AppFlag& f : a.flags) {
        if (f.name == "table" && a.lookup) users += (users.empty() ? "--app " : " or --app ") + a.name;
      }
    }
    bool reads = false;
    for (const AppFlag& f : spec->flags) reads = reads || f.name == "table";
    if (!reads) throw UsageError("--table is for " + (users.empty() ? std::string("no app") : users));
    args.set("table", o.table);
  }
  // A table without a GPU path (Poptrie) runs on the CPU under --device auto; --device gpu is
  // refused by the app, naming the table.
  const bool cpu_only = spec->no_gpu_path && !spec->no_gpu_path(args).empty();
  const bool on_gpu = !(cpu_only && o.device == "auto") && choose_device(o.device, /*quiet=*/true) == Device::kGpu;
  std::unique_ptr<KeyLookup> lookup;
  try {
    lookup = spec->lookup(args, on_gpu);
  } catch (const TableError& e) {
    throw UsageError(e.what());
  }
  LineReader in(o.keys, {}, name);
  std::string out;
  for (bool more = true; more;) {
    std::string_view line;
    while (lookup->pending() < kChunk && (more = in.next(&line))) {
      const size_t b = line.find_first_not_of(" \t\r");
      if (b == std::string_view::npos || line[b] == '#') continue;
      const std::string_view text = line.substr(b, line.find_last_not_of(" \t\r") + 1 - b);
      std::string why;
      if (!lookup->add(text, &why)) {
        throw UsageError(name + ":" + std::to_string(in.line_number()) + ": " + why + ": `" + quote_excerpt(text) + "`");
      }
    }
    if (lookup->pending() == 0) continue;
    out.clear();
    lookup->flush(&out);
    write_results(out);
  }
}

}  // namespace

void register_lookup(CLI::App& app) {
  auto o = std::make_shared<LookupOptions>();
  std::vector<std::string> names;
  std::string app_help = "application:", key_help;
  for (const AppSpec& a : apps()) {
    if (!a.lookup) continue;
    names.push_back(a.name);
    app_help += " " + a.name;
    key_help += (key_help.empty() ? "" : ", ") + a.key_help + " (" + a.name + ")";
  }
  CLI::App* c = app.add_subcommand("lookup", "look up keys: prints `key result` per line ('-' = no match)");
  c->add_option("--app", o->app, app_help)->capture_default_str()->check(CLI::IsMember(names));
  c->add_option("--fib", o->fib, "the app's table, as `tandem run` reads it (tandem apps); .gz ok")
      ->required()->check(CLI::ExistingFile);
  c->add_option("--keys", o->keys, "file with one key per line (" + key_help + "), '-' for stdin")->required();
  c->add_option("--device", o->device, "cpu, gpu or auto")->capture_default_str()
      ->check(CLI::IsMember({"cpu", "gpu", "auto"}));
  c->add_option("--table", o->table, "the table algorithm, for apps that offer several (as `tandem run --table`)");
  c->callback([o] { run_lookup(*o); });
}

}  // namespace tandem::cli
