// `tandem apps`: the registered apps (apps/registry.h), as a table or JSON (--json), for users,
// the device suites and the tests.
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "apps/registry.h"
#include "cli/commands.h"

namespace tandem::cli {

void register_apps(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* c = app.add_subcommand("apps", "list the apps: name, flags, GPU part, key lookup");
  c->add_flag("--json", *json,
              "print a JSON array, one object per app: name, description, flags, gpu, lookup, bench_flags (the flags "
              "of its standard benchmark table; paths from the repository root, {shared} = the shared data directory)");
  c->callback([json] {
    if (*json) {
      nlohmann::json out = nlohmann::json::array();
      for (const AppSpec& a : apps()) {
        nlohmann::json flags = nlohmann::json::array();
        for (const AppFlag& f : a.flags) flags.push_back(f.name);
        out.push_back({{"name", a.name}, {"description", a.description}, {"flags", flags}, {"gpu", a.gpu},
                       {"lookup", static_cast<bool>(a.lookup)}, {"bench_flags", a.bench_flags}});
      }
      std::printf("%s\n", out.dump(2).c_str());
      return;
    }
    std::printf("%-10s %-4s %-7s %-40s %s\n", "app", "gpu", "lookup", "flags", "what it does");
    for (const AppSpec& a : apps()) {
      std::string flags;
      for (const AppFlag& f : a.flags) flags += (flags.empty() ? "--" : " --") + f.name;
      std::printf("%-10s %-4s %-7s %-40s %s\n", a.name.c_str(), a.gpu ? "yes" : "no", a.lookup ? "yes" : "no",
                  flags.empty() ? "-" : flags.c_str(), a.description.c_str());
    }
  });
}

}  // namespace tandem::cli
