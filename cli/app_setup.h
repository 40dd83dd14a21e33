// Building any forwarding app for `tandem run` and the benches: its table from the flags, the
// ForwardApp over it, and a generator of its traffic.
//
//   ipv4  --fib FILE (prefix lines or an MRT dump)      traffic: IPv4/UDP or TCP, dst=fib|uniform
//   ipv6  --fib FILE (prefix lines or an MRT dump)      traffic: IPv6/UDP or TCP, dst=fib|uniform
//   l2    --fib FILE (MAC PORT lines) or --l2-random N  traffic: dst MAC of the table (fib) or random
//   ndn   --fib FILE (NAME NEXTHOP lines) or --urls FILE (names from URLs; --ndn-fixed-bytes B)
//                                                        traffic: Interests over IPv4/UDP port 6363
//   echo  (no table)                                    traffic: IPv4/UDP with a random 32-bit value
//   fw-router --fib FILE and --rules FILE or --acl-random N (--acl-default, --acl-drop-share)
//                                                        traffic: IPv4/UDP or TCP, half the flows inside
//                                                        random rules, half dst=fib|uniform
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "apps/acl/acl_rules.h"
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
  std::string rules;             // fw-router: firewall rules, ClassBench or Tandem's syntax
  uint64_t acl_random = 0;       // fw-router: or this many random rules (acl::random_rules, seed 1)
  std::string acl_default;       // fw-router: "accept" or "drop" replaces the rules' default policy
  double acl_drop_share = -1;    // fw-router: this share of the rules drops (< 0: 0.2 for ClassBench, else as loaded)
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

// Adds --app, --fib, --urls, --l2-random, --ndn-fixed-bytes, --ports, --rules, --acl-random,
// --acl-default and --acl-drop-share to a command.
void add_app_options(CLI::App* c, AppOptions& o);

// The fw-router's rules: from `path` (ClassBench or Tandem's syntax) or `random_n` random rules,
// exactly one of them. The default policy is `default_policy` ("accept", "drop") when given, else
// the file's (`default ...` lines; accept when absent). With `drop_share` in [0, 1] every rule's
// action is drawn again: drop for that share of the rules, picked by a hash of the rule's position
// (the same every run), accept for the rest. ClassBench sets have no actions (every rule accepts,
// and each set ends with a rule matching everything), so a negative `drop_share` means 0.2 for
// them (random_rules' and the GPU-router report's 80/20 mix) and leaves other sets as loaded.
// Throws UsageError naming the flag or the line.
acl::RuleSet load_fw_rules(const std::string& path, uint64_t random_n, const std::string& default_policy,
                           double drop_share = -1);
// One line: the set, its size, how many rules drop, the default policy.
std::string describe_fw_rules(const acl::RuleSet& s);

// The apps `--app` accepts.
inline const char* const kAppNames[] = {"ipv4", "ipv6", "l2", "ndn", "echo", "fw-router"};

}  // namespace tandem::cli
