// Steps shared by the commands: load a forwarding table, pick the device.
#pragma once

#include <memory>
#include <string>

#include "apps/ipv4/dir24_8.h"
#include "apps/ipv4/fib_loader.h"
#include "apps/ipv4/ipv4_table.h"
#include "core/usage_error.h"
#include "io/traffic_gen.h"

namespace tandem::cli {

using ipv4::LoadedTable;
using ipv4::prefixes_of;

// ipv4::load_table, printing what was loaded unless quiet.
LoadedTable load_table(const std::string& path, bool quiet);

using tandem::warn;

// The generator spec given to `flag`, parsed; a bad spec is a UsageError naming the flag.
GenSpec parse_gen_flag(const std::string& flag, const std::string& spec);

enum class Device { kCpu, kGpu };

// "cpu", "gpu" (an error when no GPU is usable) or "auto" (the GPU when usable, else the CPU,
// saying why on stderr unless quiet).
Device choose_device(const std::string& requested, bool quiet);

}  // namespace tandem::cli
