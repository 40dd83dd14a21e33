// Steps shared by the commands: load a forwarding table, pick the device.
#pragma once

#include <memory>
#include <string>

#include "apps/ipv4/dir24_8.h"
#include "apps/ipv4/fib_loader.h"

namespace tandem::cli {

struct LoadedTable {
  ipv4::Fib fib;
  std::unique_ptr<ipv4::Dir24_8> table;
  double load_seconds = 0;
  double build_seconds = 0;
};

// Loads and builds; throws FibError / UsageError naming the file and the failing route.
LoadedTable load_table(const std::string& path, bool quiet);

enum class Device { kCpu, kGpu };

// "cpu", "gpu" (an error when no GPU is usable) or "auto" (the GPU when usable, else the CPU,
// saying why on stderr unless quiet).
Device choose_device(const std::string& requested, bool quiet);

}  // namespace tandem::cli
