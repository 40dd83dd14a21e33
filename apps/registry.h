// The list of apps. Each app declares itself in its own folder (apps/<app>/<app>_register.cc):
// its name, what it does, the flags it reads, how it loads its table into a ForwardApp, the
// traffic it forwards, its `tandem lookup` keys and the cases the pipeline tests run. The
// commands, the benchmarks, the device suites and the tests take the list from here, so adding an
// app is its folder and one `tandem_add_app(...)` line in the build (docs/DESIGN.md).
//
//   namespace { AppSpec spec() { AppSpec s; s.name = "echo"; ...; return s; } }
//   TANDEM_REGISTER_APP(spec)
//
// Registration runs during static initialisation; the build links every app whole
// (cmake/TandemApp.cmake), so nothing has to name an app for it to be there.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "apps/forward_app.h"
#include "core/usage_error.h"
#include "io/packet_store.h"
#include "io/traffic_gen.h"

namespace tandem {

// A flag an app reads: `--name VALUE`. Apps that read the same flag (--fib) share it; the
// command adds it once and refuses it for an app that does not declare it.
struct AppFlag {
  enum class Kind {
    kFile,     // an existing file
    kPath,     // an existing file or directory
    kChoice,   // one of `choices` ("accept|drop")
    kInteger,  // a whole number in [min, max]
    kShare,    // a finite real number in [min, max]
  };
  std::string name;  // without the dashes
  Kind kind = Kind::kFile;
  std::string help;
  double min = 0, max = 0;
  std::string choices;
  std::string default_value;  // shown in --help; empty: none
};

// The app flags given on a command line, by name.
class AppArgs {
 public:
  bool has(std::string_view flag) const { return values_.find(flag) != values_.end(); }
  // The value given, or `fallback` when the flag was not given.
  const std::string& text(std::string_view flag, const std::string& fallback = empty_) const;
  uint64_t integer(std::string_view flag, uint64_t fallback) const;
  double real(std::string_view flag, double fallback) const;
  void set(const std::string& flag, const std::string& value) { values_[flag] = value; }
  const std::map<std::string, std::string, std::less<>>& values() const { return values_; }

 private:
  static const std::string empty_;
  std::map<std::string, std::string, std::less<>> values_;
};

// The tables an app reads; owned by LoadedApp, destroyed after the app.
struct AppState {
  virtual ~AppState() = default;
};

struct LoadedApp {
  std::unique_ptr<AppState> state;
  std::unique_ptr<ForwardApp> app;
  std::string table_desc;  // one line: what was loaded
  // The app's traffic for a spec (frames it forwards; dst=fib: keys from its table).
  std::function<PacketStore(const GenSpec&)> generate;
};

// `tandem lookup`: keys one per line in, "key result" lines out, in input order.
class KeyLookup {
 public:
  virtual ~KeyLookup() = default;
  // Parses one key into the pending chunk; false with *why for a line that is not a key.
  virtual bool add(std::string_view text, std::string* why) = 0;
  virtual size_t pending() const = 0;
  // Looks the pending keys up and appends "key result\n" per key ('-': no match) to *out.
  virtual void flush(std::string* out) = 0;
};

// A case of the pipeline tests (tests/apps_pipeline_test.cc): the app loaded with `args` forwards
// `gen` traffic with malformed frames mixed in, the same on every path and as its reference.
struct AppTestCase {
  std::string label;
  AppArgs args;
  std::string gen;
  uint64_t min_drops = 3;  // of the test's 3 malformed frames (an L2 switch forwards ARP)
  bool forwards = true;    // some packets match the table
};

struct AppSpec {
  std::string name;
  std::string description;  // one line, for `tandem apps` and --help
  std::vector<AppFlag> flags;
  // Flags that load the app's standard benchmark table, paths from the repository root (the
  // device suites and README examples use them).
  std::string bench_flags;
  // Loads the tables and builds the app; throws UsageError for missing flags and tables that do
  // not load (naming the file and line).
  std::function<LoadedApp(const AppArgs&)> load;
  // `tandem lookup` on the CPU or (gpu) the GPU; empty when the app has no keys to look up alone.
  std::function<std::unique_ptr<KeyLookup>(const AppArgs&, bool gpu)> lookup;
  std::string key_help;  // what one key line is ("an IPv4 address")
  // Builds test cases; `data(path)` resolves a shared-data path and returns "" when it is absent
  // (a case needing it is then left out).
  std::function<std::vector<AppTestCase>(const std::function<std::string(const std::string&)>& data)> test_cases;
  // The app's own drop reasons (core/drop_reason.h app_drop_reason) and their names:
  // app_drop_reasons<Traits>() (apps/forward_app_impl.h).
  std::vector<std::pair<DropReason, std::string>> drop_reasons;
  // Why the app, with these flags, has no GPU path ("" when it has one; unset: it always has one).
  // `tandem run` refuses --device gpu with it before loading anything and runs --device auto on
  // the CPU; the benchmarks leave out their GPU rows. (The ipv4 app's Poptrie has no GPU kernel.)
  std::function<std::string(const AppArgs&)> no_gpu_path;
  // The GPU runs the app through the resident path only (whole frames, state on the GPU): `tandem
  // run --device gpu` takes that path for it unless told --gpu-path offload, which it refuses.
  bool resident_only = false;
  bool gpu = false;  // set by the registry when the app's GPU part is linked in
};

void register_app(AppSpec spec);
// Every app, sorted by name.
const std::vector<AppSpec>& apps();
// The app called `name`, or null.
const AppSpec* find_app(std::string_view name);
// The name of every drop reason a run of `app` reports (the core's, then each app's own: the
// running app's with its code, the others' with none), so that every run's report has the same
// names. Pairs of (name, code or -1).
std::vector<std::pair<std::string, int>> drop_reason_report(const std::string& app);
// Checks `args` against the app's flags (every given flag is one the app declares) and loads it.
// Throws UsageError ("--urls is for --app ndn").
LoadedApp load_app(const std::string& name, const AppArgs& args);

// The GPU part of an app, registered by its .cu file (TANDEM_REGISTER_GPU_PART): a build without
// CUDA has none, and the app's GPU path then reports that instead of running.
void register_gpu_part(const std::string& app);

}  // namespace tandem

#define TANDEM_APP_CONCAT2(a, b) a##b
#define TANDEM_APP_CONCAT(a, b) TANDEM_APP_CONCAT2(a, b)
#define TANDEM_REGISTER_APP(spec_fn)                                                                       \
  namespace {                                                                                              \
  [[maybe_unused]] const bool TANDEM_APP_CONCAT(tandem_app_registered_, __LINE__) =                      \
      (::tandem::register_app(spec_fn()), true);                                                           \
  }
#define TANDEM_REGISTER_GPU_PART(app_name)                                                                 \
  namespace {                                                                                              \
  [[maybe_unused]] const bool TANDEM_APP_CONCAT(tandem_gpu_part_registered_, __LINE__) =                 \
      (::tandem::register_gpu_part(app_name), true);                                                       \
  }
