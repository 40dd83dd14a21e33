// Steps shared by the commands: load a forwarding table, pick the device.
#pragma once

#include <memory>
#include <string>

#include "apps/ipv4/dir24_8.h"
#include "apps/ipv4/fib_loader.h"
#include "io/traffic_gen.h"

namespace tandem::cli {

struct LoadedTable {
  ipv4::Fib fib;
  std::unique_ptr<ipv4::Dir24_8> table;
  double load_seconds = 0;
  double build_seconds = 0;
};

// Loads and builds; throws FibError / UsageError naming the file and the failing route.
LoadedTable load_table(const std::string& path, bool quiet);

// Prints "warning: TEXT" on standard error unless `text` is empty.
void warn(const std::string& text);

// The generator spec given to `flag`, parsed; a bad spec is a UsageError naming the flag.
GenSpec parse_gen_flag(const std::string& flag, const std::string& spec);
// The routes of a table as (prefix, length) pairs: what the generator samples dst=fib from.
std::vector<std::pair<uint32_t, uint8_t>> prefixes_of(const ipv4::Fib& fib);

enum class Device { kCpu, kGpu };

// "cpu", "gpu" (an error when no GPU is usable) or "auto" (the GPU when usable, else the CPU,
// saying why on stderr unless quiet).
Device choose_device(const std::string& requested, bool quiet);

}  // namespace tandem::cli
