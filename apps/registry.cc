#include "apps/registry.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

namespace tandem {

const std::string AppArgs::empty_;

namespace {

struct Registry {
  std::vector<AppSpec> apps;
  std::set<std::string> gpu_parts;  // may register before their app (static initialisation order)
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

const std::string& AppArgs::text(std::string_view flag, const std::string& fallback) const {
  const auto it = values_.find(flag);
  return it == values_.end() ? fallback : it->second;
}

uint64_t AppArgs::integer(std::string_view flag, uint64_t fallback) const {
  const auto it = values_.find(flag);
  if (it == values_.end()) return fallback;
  const std::string& s = it->second;
  char* end = nullptr;
  errno = 0;
  // Hexadecimal with 0x, as the command line's other number flags take; else decimal.
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const unsigned long long v = std::strtoull(s.c_str(), &end, hex ? 16 : 10);
  if (s.empty() || s[0] == '-' || *end != '\0' || errno == ERANGE) {
    throw UsageError("--" + std::string(flag) + ": not a whole number: '" + s + "'");
  }
  return v;
}

double AppArgs::real(std::string_view flag, double fallback) const {
  const auto it = values_.find(flag);
  if (it == values_.end()) return fallback;
  const std::string& s = it->second;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v)) {
    throw UsageError("--" + std::string(flag) + ": not a number: '" + s + "'");
  }
  return v;
}

void register_app(AppSpec spec) {
  Registry& r = registry();
  for (const AppSpec& a : r.apps) {
    if (a.name == spec.name) std::abort();  // two apps of one name: a build error, caught by any test
  }
  spec.gpu = r.gpu_parts.count(spec.name) > 0;
  const auto at = std::lower_bound(r.apps.begin(), r.apps.end(), spec.name,
                                   [](const AppSpec& a, const std::string& n) { return a.name < n; });
  r.apps.insert(at, std::move(spec));
}

void register_gpu_part(const std::string& app) {
  Registry& r = registry();
  r.gpu_parts.insert(app);
  for (AppSpec& a : r.apps) {
    if (a.name == app) a.gpu = true;
  }
}

const std::vector<AppSpec>& apps() { return registry().apps; }

std::vector<std::pair<std::string, int>> drop_reason_report(const std::string& app) {
  std::vector<std::pair<std::string, int>> v;
  for (int r = 1; r < static_cast<int>(DropReason::kCoreCount); ++r) v.emplace_back(drop_reason_name(DropReason(r)), r);
  for (const AppSpec& a : apps()) {
    for (const auto& [code, name] : a.drop_reasons) v.emplace_back(name, a.name == app ? static_cast<int>(code) : -1);
  }
  return v;
}

const AppSpec* find_app(std::string_view name) {
  for (const AppSpec& a : apps()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

LoadedApp load_app(const std::string& name, const AppArgs& args) {
  const AppSpec* spec = find_app(name);
  if (!spec) throw UsageError("--app: unknown app '" + name + "'");
  for (const auto& [flag, value] : args.values()) {
    const bool declared = std::any_of(spec->flags.begin(), spec->flags.end(), [&](const AppFlag& f) { return f.name == flag; });
    if (declared) continue;
    if (spec->flags.empty()) throw UsageError("--app " + name + " reads no table and no flags: leave out --" + flag);
    std::string users;
    for (const AppSpec& a : apps()) {
      if (std::any_of(a.flags.begin(), a.flags.end(), [&](const AppFlag& f) { return f.name == flag; })) {
        users += (users.empty() ? "" : " or ") + std::string("--app ") + a.name;
      }
    }
    throw UsageError("--" + flag + (users.empty() ? " is not an app flag" : " is for " + users));
  }
  return spec->load(args);
}

}  // namespace tandem
