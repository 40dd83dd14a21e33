#include "apps/ipv4/ipv4_table.h"

#include <chrono>

#include "core/usage_error.h"

namespace tandem::ipv4 {

std::unique_ptr<Dir24_8> build_dir24_8(const Fib& fib) {
  auto table = std::make_unique<Dir24_8>();
  for (const auto& r : fib.routes) {
    const auto s = table->add(r.prefix, r.len, r.next_hop);
    if (s != Dir24_8::Status::kOk) {
      throw UsageError(fib.path + ": cannot add " + format_ipv4(r.prefix) + "/" + std::to_string(r.len) + ": " +
                       Dir24_8::status_name(s));
    }
  }
  return table;
}

LoadedTable load_table(const std::string& path) {
  LoadedTable t;
  const auto t0 = std::chrono::steady_clock::now();
  t.fib = load_fib(path);
  const auto t1 = std::chrono::steady_clock::now();
  t.table = build_dir24_8(t.fib);
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

bool known_table(const std::string& name) { return name == "dir24-8" || name == "poptrie"; }

RouteTable make_table(const std::string& name, const Fib& fib) {
  if (!known_table(name)) throw UsageError("--table: unknown IPv4 table '" + name + "' (tables: " + kTableNames + ")");
  RouteTable t;
  t.name = name;
  const auto t0 = std::chrono::steady_clock::now();
  if (name == "dir24-8") {
    t.dir24_8 = build_dir24_8(fib);
  } else {
    try {
      t.poptrie = std::make_unique<Poptrie>(Poptrie::build(fib.routes));
    } catch (const PoptrieError& e) {
      throw UsageError(fib.path + ": " + e.what());
    }
  }
  t.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return t;
}

}  // namespace tandem::ipv4
