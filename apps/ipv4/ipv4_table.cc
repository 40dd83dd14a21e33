#include "apps/ipv4/ipv4_table.h"

#include <chrono>

#include "core/usage_error.h"

namespace tandem::ipv4 {

LoadedTable load_table(const std::string& path) {
  LoadedTable t;
  const auto t0 = std::chrono::steady_clock::now();
  t.fib = load_fib(path);
  const auto t1 = std::chrono::steady_clock::now();
  t.table = std::make_unique<Dir24_8>();
  for (const auto& r : t.fib.routes) {
    const auto s = t.table->add(r.prefix, r.len, r.next_hop);
    if (s != Dir24_8::Status::kOk) {
      throw UsageError(path + ": cannot add " + format_ipv4(r.prefix) + "/" + std::to_string(r.len) + ": " +
                       Dir24_8::status_name(s));
    }
  }
  warn(t.fib.duplicates.warning("routes"));
  const auto t2 = std::chrono::steady_clock::now();
  t.load_seconds = std::chrono::duration<double>(t1 - t0).count();
  t.build_seconds = std::chrono::duration<double>(t2 - t1).count();
  return t;
}

std::vector<std::pair<uint32_t, uint8_t>> prefixes_of(const Fib& fib) {
  std::vector<std::pair<uint32_t, uint8_t>> prefixes;
  prefixes.reserve(fib.routes.size());
  for (const auto& r : fib.routes) prefixes.emplace_back(r.prefix, r.len);
  return prefixes;
}

}  // namespace tandem::ipv4
