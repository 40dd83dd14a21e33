// An IPv4 forwarding table loaded from a file and built: the routes (for references and traffic)
// and the table the data path reads. The ipv4 app chooses the table algorithm by name
// (make_table); the fw-router and the benchmarks read DIR-24-8 (load_table).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "apps/ipv4/dir24_8.h"
#include "apps/ipv4/fib_loader.h"
#include "apps/ipv4/poptrie.h"

namespace tandem::ipv4 {

struct LoadedTable {
  Fib fib;
  std::unique_ptr<Dir24_8> table;
  double load_seconds = 0;
  double build_seconds = 0;
};

// DIR-24-8 from a Fib's routes, in their order; throws UsageError for a route it cannot take.
std::unique_ptr<Dir24_8> build_dir24_8(const Fib& fib);

// Loads and builds; throws FibError (a bad line) or UsageError (a route the table cannot take),
// naming the file. Duplicate routes are warned about on stderr.
LoadedTable load_table(const std::string& path);

// The routes of a table as (prefix, length) pairs: what the generator samples dst=fib from.
std::vector<std::pair<uint32_t, uint8_t>> prefixes_of(const Fib& fib);

// ---- the table algorithm, chosen by name (`tandem run --app ipv4 --table NAME`) ----

// DIR-24-8 (one memory access for almost every lookup, 64 MiB of tbl24; the table the GPU reads)
// and Poptrie (a compressed trie of a few MiB that stays in the caches; CPU only, as no GPU
// kernel reads it). The first is the default.
inline constexpr const char* kTableNames = "dir24-8|poptrie";
inline constexpr const char* kDefaultTable = "dir24-8";

// One table built from a Fib's routes: exactly one of the pointers is set.
struct RouteTable {
  std::string name;  // the name it was chosen by
  std::unique_ptr<Dir24_8> dir24_8;
  std::unique_ptr<Poptrie> poptrie;
  double build_seconds = 0;
  const char* title() const { return dir24_8 ? "DIR-24-8" : "Poptrie"; }
};

// The one selection call (as DPDK's rte_fib_select_lookup): builds the table that `name` (one of
// kTableNames) names from `fib`'s routes. Throws UsageError for any other name, listing the names,
// and for routes the table cannot take, naming fib.path.
RouteTable make_table(const std::string& name, const Fib& fib);
// Whether `name` is one of kTableNames.
bool known_table(const std::string& name);

}  // namespace tandem::ipv4
