#include "cli/table_setup.h"

#include <cstdio>

#include "cli/commands.h"
#include "gpu/gpu_runtime.h"

namespace tandem::cli {

LoadedTable load_table(const std::string& path, bool quiet) {
  LoadedTable t = ipv4::load_table(path);
  if (!quiet) {
    std::printf("fib: %s: %zu IPv4 routes (%llu IPv6 lines skipped, %llu next hops derived), "
                "loaded in %.2f s, DIR-24-8 built in %.2f s (%u tbl8 groups)\n",
                path.c_str(), t.fib.routes.size(), static_cast<unsigned long long>(t.fib.ipv6_skipped),
                static_cast<unsigned long long>(t.fib.derived_next_hops), t.load_seconds,
                t.build_seconds, t.table->tbl8_groups_in_use());
  }
  return t;
}

GenSpec parse_gen_flag(const std::string& flag, const std::string& spec) {
  try {
    return parse_gen_spec(spec);
  } catch (const std::invalid_argument& e) {
    throw UsageError(flag + ": " + e.what());
  }
}

Device choose_device(const std::string& requested, bool quiet) {
  if (requested == "cpu") return Device::kCpu;
  std::string why;
  const bool ok = gpu::available(&why);
  if (requested == "gpu") {
    if (!ok) throw UsageError("--device gpu: no usable GPU: " + why);
    return Device::kGpu;
  }
  if (!ok && !quiet) std::fprintf(stderr, "device auto: no usable GPU (%s): running on the CPU\n", why.c_str());
  return ok ? Device::kGpu : Device::kCpu;
}

}  // namespace tandem::cli
