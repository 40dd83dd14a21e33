// The app flags of a command (`--app` and every flag a registered app declares, apps/registry.h)
// and loading the chosen app, for `tandem run`, the benches and the tests.
#pragma once

#include <string>

#include "apps/fwrouter/fw_rules.h"
#include "apps/registry.h"

namespace CLI {
class App;
}

namespace tandem::cli {

using tandem::AppState;
using tandem::LoadedApp;
using fwrouter::describe_fw_rules;
using fwrouter::load_fw_rules;

struct AppOptions {
  std::string app = "ipv4";
  AppArgs args;  // the app flags given
  AppOptions& set(const std::string& flag, const std::string& value) {
    args.set(flag, value);
    return *this;
  }
};

// Adds --app and every app's flags (each once) to a command.
void add_app_options(CLI::App* c, AppOptions& o);

// The app of `o.app` with its flags (apps/registry.h load_app): UsageError for a flag the app does
// not read, missing flags and tables that do not load.
LoadedApp load_app(const AppOptions& o);

// Why the app of `o`, with its flags, has no GPU path (AppSpec::no_gpu_path); "" when it has one.
std::string no_gpu_path(const AppOptions& o);
// Whether the GPU runs the app of `o` through the resident path only (AppSpec::resident_only).
bool resident_only(const AppOptions& o);

}  // namespace tandem::cli
