#include "cli/output_guard.h"

#include <algorithm>
#include <string>
#include <vector>

#include "io/output_file.h"

namespace tandem::cli {
namespace {

constexpr const char* kOutputFlags[] = {"--out", "--json"};

void collect(const CLI::App& cmd, std::vector<NamedPath>& inputs, std::vector<NamedPath>& outputs) {
  for (const CLI::Option* opt : cmd.get_options()) {
    if (opt->count() == 0) continue;
    const std::string flag = opt->get_name();
    const bool output = std::find(std::begin(kOutputFlags), std::end(kOutputFlags), flag) != std::end(kOutputFlags);
    for (const std::string& value : opt->results()) {
      if (value.empty()) continue;
      (output ? outputs : inputs).push_back({flag, value});  // values naming no file are skipped later
    }
  }
}

void check_parsed(const CLI::App& app) {
  std::vector<NamedPath> inputs, outputs;
  for (const CLI::App* cmd = &app; cmd != nullptr;) {
    collect(*cmd, inputs, outputs);
    const std::vector<CLI::App*> chosen = cmd->get_subcommands();
    cmd = chosen.empty() ? nullptr : chosen.front();
  }
  if (!outputs.empty()) check_outputs(inputs, outputs);
}

}  // namespace

void guard_outputs(CLI::App& app) {
  app.parse_complete_callback([&app] { check_parsed(app); });
}

}  // namespace tandem::cli
