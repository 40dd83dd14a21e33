#include "cli/table_setup.h"

#include <chrono>
#include <cstdio>

#include "cli/commands.h"
#include "gpu/gpu_runtime.h"

namespace tandem::cli {

LoadedTable load_table(const std::string& path, bool quiet) {
  LoadedTable t;
  auto t0 = std::chrono::steady_clock::now();
  t.fib = ipv4::load_fib(path);
  auto t1 = std::chrono::steady_clock::now();
  t.table = std::make_unique<ipv4::Dir24_8>();
  for (const auto& r : t.fib.routes) {
    const auto s = t.table->add(r.prefix, r.len, r.next_hop);
    if (s != ipv4::Dir24_8::Status::kOk) {
      throw UsageError(path + ": cannot add " + ipv4::format_ipv4(r.prefix) + "/" +
                       std::to_string(r.len) + ": " + ipv4::Dir24_8::status_name(s));
    }
  }
  warn(t.fib.duplicates.warning("routes"));
  auto t2 = std::chrono::steady_clock::now();
  t.load_seconds = std::chrono::duration<double>(t1 - t0).count();
  t.build_seconds = std::chrono::duration<double>(t2 - t1).count();
  if (!quiet) {
    std::printf("fib: %s: %zu IPv4 routes (%llu IPv6 lines skipped, %llu next hops derived), "
                "loaded in %.2f s, DIR-24-8 built in %.2f s (%u tbl8 groups)\n",
                path.c_str(), t.fib.routes.size(), static_cast<unsigned long long>(t.fib.ipv6_skipped),
                static_cast<unsigned long long>(t.fib.derived_next_hops), t.load_seconds,
                t.build_seconds, t.table->tbl8_groups_in_use());
  }
  return t;
}

void warn(const std::string& text) {
  if (!text.empty()) std::fprintf(stderr, "warning: %s\n", text.c_str());
}

GenSpec parse_gen_flag(const std::string& flag, const std::string& spec) {
  try {
    return parse_gen_spec(spec);
  } catch (const std::invalid_argument& e) {
    throw UsageError(flag + ": " + e.what());
  }
}

std::vector<std::pair<uint32_t, uint8_t>> prefixes_of(const ipv4::Fib& fib) {
  std::vector<std::pair<uint32_t, uint8_t>> prefixes;
  prefixes.reserve(fib.routes.size());
  for (const auto& r : fib.routes) prefixes.emplace_back(r.prefix, r.len);
  return prefixes;
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
