// Building any forwarding app for `tandem run` and the benches: its table from the flags, the
// ForwardApp over it, and a generator of its traffic.
//
//   ipv4  --fib FILE (prefix lines or an MRT dump)      traffic: IPv4/UDP or TCP, dst=fib|uniform
//   ipv6  --fib FILE (prefix lines or an MRT dump)      traffic: IPv6/UDP or TCP, dst=fib|uniform
//   l2    --fib FILE (MAC PORT lines) or --l2-random N  traffic: dst MAC of the table (fib) or random
//   ndn   --fib FILE (NAME NEXTHOP lines) or --urls FILE (names from URLs; --ndn-fixed-bytes B)
//                                                        traffic: Interests over IPv4/UDP port 6363
//   echo  (no table)                                    traffic: IPv4/UDP with a random 32-bit value
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "apps/forward_app.h"
#include "io/packet_store.h"
#include "io/traffic_gen.h"

namespace CLI {
class App;
}

namespace tandem::cli {

struct AppOptions {
  std::string app = "ipv4";
  std::string fib;
  std::string urls;
  uint64_t l2_random = 0;        // l2: a table of this many random MACs
  uint32_t ndn_fixed_bytes = 0;  // ndn --urls: names of exactly this many bytes (the paper's 32)
  uint32_t ndn_replicas = 1;     // ndn --urls: the URL set this many times, each under its own top level
  uint32_t ports = 16;           // ports of generated tables (l2 random, ndn from URLs)
};

// The tables an app reads; owned here, destroyed after the app.
struct AppState {
  virtual ~AppState() = default;
};

struct LoadedApp {
  std::unique_ptr<AppState> state;
  std::unique_ptr<ForwardApp> app;
  std::string table_desc;  // one line: what was loaded
  // The app's traffic for a spec (frames it forwards, dst=fib: keys from its table).
  std::function<PacketStore(const GenSpec&)> generate;
};

// Throws UsageError for missing or conflicting flags and for tables that do not load (naming the
// file and line).
LoadedApp load_app(const AppOptions& o);

// Adds --app, --fib, --urls, --l2-random, --ndn-fixed-bytes and --ports to a command.
void add_app_options(CLI::App* c, AppOptions& o);

// The apps `--app` accepts.
inline const char* const kAppNames[] = {"ipv4", "ipv6", "l2", "ndn", "echo"};

}  // namespace tandem::cli
