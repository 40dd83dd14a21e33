// Test support for the dpi tests: the Emerging Threats rules of the repository's data
// (data/ids/et_open_2019-04-15, a copy of ../shared/data/ids), loaded once per test program.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "apps/dpi/ids_rules.h"
#include "tests/test_util.h"

namespace tandem::dpi::test_rules {

// The set's *.rules.gz files in name order; none where the data is missing.
inline std::vector<std::string> et_files() {
  std::vector<std::string> v;
  const std::string dir = test::source_path("data/ids/et_open_2019-04-15");
  if (!std::filesystem::exists(dir)) return v;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string p = e.path().string();
    if (p.size() > 9 && p.compare(p.size() - 9, 9, ".rules.gz") == 0) v.push_back(p);
  }
  std::sort(v.begin(), v.end());
  return v;
}

// The set loaded with malformed rules skipped (two in this set).
inline const IdsRuleSet& et_rules() {
  static const IdsRuleSet* s = [] {
    IdsLoadOptions o;
    o.skip_bad = true;
    return new IdsRuleSet(load_ids_rules(et_files(), o));
  }();
  return *s;
}

}  // namespace tandem::dpi::test_rules
