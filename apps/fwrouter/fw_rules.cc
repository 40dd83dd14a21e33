#include "apps/fwrouter/fw_rules.h"

#include "core/flow_hash.h"
#include "core/table_reader.h"
#include "core/usage_error.h"

namespace tandem::fwrouter {

acl::RuleSet load_fw_rules(const std::string& path, uint64_t random_n, const std::string& default_policy,
                           double drop_share) {
  if (path.empty() == (random_n == 0)) throw UsageError("fw-router needs --rules FILE or --acl-random N (one of them)");
  if (!default_policy.empty() && default_policy != "accept" && default_policy != "drop") {
    throw UsageError("--acl-default: accept or drop, not '" + default_policy + "'");
  }
  acl::RuleSet s;
  try {
    s = path.empty() ? acl::random_rules(random_n, 1) : acl::load_rules(path);
  } catch (const TableError& e) {
    throw UsageError(e.what());
  }
  if (!default_policy.empty()) s.default_action = default_policy == "drop" ? acl::kDrop : acl::kAccept;
  if (drop_share > 1) throw UsageError("--acl-drop-share: a share 0..1");
  if (drop_share < 0 && s.classbench) drop_share = 0.2;
  if (drop_share >= 0) {
    for (size_t i = 0; i < s.rules.size(); ++i) {
      const double u = static_cast<double>(mix64(i + 0x5EED) >> 11) * 0x1.0p-53;
      s.rules[i].action = u < drop_share ? acl::kDrop : acl::kAccept;
    }
  }
  return s;
}

std::string describe_fw_rules(const acl::RuleSet& s) {
  size_t drops = 0;
  for (const acl::Rule& r : s.rules) drops += r.action == acl::kDrop;
  return s.path + ": " + std::to_string(s.rules.size()) + (s.rules.size() == 1 ? " rule (" : " rules (") +
         std::to_string(drops) + " drop), default " + (s.default_action == acl::kDrop ? "drop" : "accept");
}

}  // namespace tandem::fwrouter
