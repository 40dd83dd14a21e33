#include "cli/app_setup.h"

#include <map>
#include <vector>

#include "cli/commands.h"

namespace tandem::cli {

namespace {

std::string app_list(const char* sep) {
  std::string s;
  for (const AppSpec& a : apps()) s += (s.empty() ? "" : sep) + a.name;
  return s;
}

}  // namespace

void add_app_options(CLI::App* c, AppOptions& o) {
  std::vector<std::string> names;
  std::string help = "application:";
  for (const AppSpec& a : apps()) {
    names.push_back(a.name);
    help += "\n  " + a.name + ": " + a.description;
  }
  c->add_option("--app", o.app, help)->capture_default_str()->check(CLI::IsMember(names));

  // Each flag once, its help gathered from the apps that read it.
  std::map<std::string, std::vector<std::pair<const AppSpec*, const AppFlag*>>> users;
  std::vector<std::string> order;
  for (const AppSpec& a : apps()) {
    for (const AppFlag& f : a.flags) {
      if (users[f.name].empty()) order.push_back(f.name);
      users[f.name].push_back({&a, &f});
    }
  }
  for (const std::string& name : order) {
    const auto& u = users[name];
    const AppFlag& f = *u.front().second;
    // Apps with the same help share one entry: "l2, ndn: ports of generated tables".
    std::vector<std::pair<std::string, std::string>> groups;  // app names, help
    for (const auto& [app, flag] : u) {
      if (!groups.empty() && groups.back().second == flag->help) {
        groups.back().first += ", " + app->name;
      } else {
        groups.push_back({app->name, flag->help});
      }
    }
    std::string text;
    for (const auto& [who, what] : groups) text += (text.empty() ? "" : "; ") + who + ": " + what;
    if (!f.default_value.empty()) text += " (default " + f.default_value + ")";
    CLI::Option* opt = c->add_option_function<std::string>(
        "--" + name, [&o, name](const std::string& v) { o.args.set(name, v); }, text);
    switch (f.kind) {
      case AppFlag::Kind::kFile: opt->check(CLI::ExistingFile); break;
      case AppFlag::Kind::kPath: opt->check(CLI::ExistingPath); break;
      case AppFlag::Kind::kChoice: {
        std::vector<std::string> choices;
        for (size_t b = 0; b <= f.choices.size();) {
          const size_t e = std::min(f.choices.find('|', b), f.choices.size());
          choices.push_back(f.choices.substr(b, e - b));
          b = e + 1;
        }
        opt->check(CLI::IsMember(choices));
        break;
      }
      case AppFlag::Kind::kInteger:
        opt->check(CLI::Range(static_cast<uint64_t>(f.min), static_cast<uint64_t>(f.max)));
        break;
      case AppFlag::Kind::kShare: opt->check(FiniteRange(f.min, f.max)); break;
    }
  }
}

std::string no_gpu_path(const AppOptions& o) {
  const AppSpec* spec = find_app(o.app);
  return spec && spec->no_gpu_path ? spec->no_gpu_path(o.args) : std::string();
}

bool resident_only(const AppOptions& o) {
  const AppSpec* spec = find_app(o.app);
  return spec && spec->resident_only;
}

LoadedApp load_app(const AppOptions& o) {
  if (!find_app(o.app)) throw UsageError("--app: unknown app '" + o.app + "' (apps: " + app_list(", ") + ")");
  return tandem::load_app(o.app, o.args);
}

}  // namespace tandem::cli
