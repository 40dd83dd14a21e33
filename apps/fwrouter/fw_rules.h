// The fw-router's rule set from its flags: a file or random rules, the default policy, the share
// of rules that drop.
#pragma once

#include <cstdint>
#include <string>

#include "apps/acl/acl_rules.h"

namespace tandem::fwrouter {

// The rules: from `path` (ClassBench or Tandem's syntax) or `random_n` random rules, exactly one of
// them. The default policy is `default_policy` ("accept", "drop") when given, else the file's
// (`default ...` lines; accept when absent). With `drop_share` in [0, 1] every rule's action is
// drawn again: drop for that share of the rules, picked by a hash of the rule's position (the same
// every run), accept for the rest. ClassBench sets have no actions (every rule accepts, and each
// set ends with a rule matching everything), so a negative `drop_share` means 0.2 for them
// (random_rules' and the GPU-router report's 80/20 mix) and leaves other sets as loaded. Throws
// UsageError naming the flag or the line.
acl::RuleSet load_fw_rules(const std::string& path, uint64_t random_n, const std::string& default_policy,
                           double drop_share = -1);
// One line: the set, its size, how many rules drop, the default policy.
std::string describe_fw_rules(const acl::RuleSet& s);

}  // namespace tandem::fwrouter
