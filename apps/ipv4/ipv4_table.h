// An IPv4 forwarding table loaded from a file and built: the routes (for references and traffic)
// and the DIR-24-8 table the data path reads. Shared by the ipv4 and fw-router apps and the
// benchmarks.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "apps/ipv4/dir24_8.h"
#include "apps/ipv4/fib_loader.h"

namespace tandem::ipv4 {

struct LoadedTable {
  Fib fib;
  std::unique_ptr<Dir24_8> table;
  double load_seconds = 0;
  double build_seconds = 0;
};

// Loads and builds; throws FibError (a bad line) or UsageError (a route the table cannot take),
// naming the file. Duplicate routes are warned about on stderr.
LoadedTable load_table(const std::string& path);

// The routes of a table as (prefix, length) pairs: what the generator samples dst=fib from.
std::vector<std::pair<uint32_t, uint8_t>> prefixes_of(const Fib& fib);

}  // namespace tandem::ipv4
