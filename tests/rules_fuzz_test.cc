// A deterministic mutation fuzzer for the rule loaders, run as an ordinary test so that it runs
// under any compiler (fuzz/ids_rules_fuzz.cc and fuzz/acl_rules_fuzz.cc are the libFuzzer targets
// with the same checks, fuzz/rules_invariants.h). Inputs: slices of the real rule files (Emerging
// Threats, ClassBench) and of Tandem's firewall syntax, mutated by byte edits that aim at the
// syntax (quotes, pipes, escapes, separators, digits, truncation, duplicated spans).
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "fuzz/rules_invariants.h"
#include "tests/mutation.h"
#include "tests/test_util.h"

namespace tandem::fuzz {
namespace {

using Bytes = std::string;

// `rounds` inputs, each a few lines drawn from `lines` and mutated; every check must pass, and at
// least `min_loaded` inputs must load rules (of which `min_matched` match), or little was tested.
template <class Check>
void run(const std::vector<std::string>& lines, int rounds, uint64_t seed, Check check, const char* what, int min_loaded,
         int min_matched) {
  ASSERT_FALSE(lines.empty());
  g_inputs_with_rules = g_inputs_with_matches = 0;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < rounds; ++i) {
    Bytes in;
    const int n = 1 + static_cast<int>(rng() % 6);
    for (int k = 0; k < n; ++k) in += lines[rng() % lines.size()];
    if (i % 8 != 0) mutate(in, rng);  // every eighth input unmutated: the checks on real rules too
    const char* broke = check(reinterpret_cast<const uint8_t*>(in.data()), in.size());
    ASSERT_EQ(broke, nullptr) << what << " input " << i << ": " << broke << "\n--- input ---\n" << in;
  }
  std::printf("%s: %d inputs, %zu loaded rules, %zu of those matched\n", what, rounds, g_inputs_with_rules, g_inputs_with_matches);
  EXPECT_GE(g_inputs_with_rules, static_cast<size_t>(min_loaded));
  EXPECT_GE(g_inputs_with_matches, static_cast<size_t>(min_matched));
}

TEST(RulesFuzz, IdsRulesFromEmergingThreats) {
  const std::string dir = test::shared_data_path("ids/et_open_2019-04-15");
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no ET rules";
  std::vector<std::string> lines;
  for (const char* f : {"emerging-web_server.rules.gz", "emerging-exploit.rules.gz", "emerging-dns.rules.gz"}) {
    for (std::string& l : lines_of_gz(dir + "/" + f, 400)) {
      if (l.find("content:") != std::string::npos) lines.push_back(std::move(l));
    }
  }
  run(lines, 5000, 1, check_ids_rules_input, "ids", 2500, 500);
}

TEST(RulesFuzz, AclRulesFromClassBenchAndTandemSyntax) {
  std::vector<std::string> lines;
  const std::string dir = test::shared_data_path("classbench/filters");
  if (std::filesystem::exists(dir)) {
    for (const char* f : {"acl1_1k.gz", "fw1_1k.gz", "ipc1_1k.gz"}) {
      for (std::string& l : lines_of_gz(dir + "/" + f, 300)) lines.push_back(std::move(l));
    }
  }
  for (const char* l : {"accept src 10.0.0.0/8 dport 80-443 proto tcp\n", "drop dst 192.168.1.1/32 sport 53 proto udp\n",
                        "accept proto 0x11/0xff\n", "drop src 0.0.0.0/0 dst 1.2.3.0/24 sport 0-65535 dport 22\n",
                        "default drop\n", "# a comment\n", "accept\n"}) {
    lines.emplace_back(l);
  }
  run(lines, 10000, 2, check_acl_rules_input, "acl", 5000, 3000);
}

}  // namespace
}  // namespace tandem::fuzz
