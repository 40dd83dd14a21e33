// Hyperscan as DPI's stage 1 (hyperscan_patterns.h, Stage1::kHyperscan) against Aho-Corasick,
// the engine it stands in for: the same pattern ids on every kind of payload (real captures,
// random bytes, match-heavy ones with patterns in random case, NUL bytes) and per-thread scratch
// across threads and databases. DpiEngine over it: stage1_engines_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "apps/dpi/aho_corasick.h"
#include "apps/dpi/dpi_match.h"
#include "apps/dpi/hyperscan_patterns.h"
#include "apps/dpi/ids_rules.h"
#include "apps/dpi/dpi_test_rules.h"
#include "apps/dpi/dpi_test_traffic.h"
#include "core/usage_error.h"
#include "tests/test_util.h"

namespace tandem::dpi {
namespace {

using test_rules::et_files;
using test_rules::et_rules;

// The packets compared: the real captures, generated TCP and UDP traffic free of every pattern,
// and the same with patterns spliced over 5% and 30% of the bytes.
std::vector<PacketStore> traffic(const AhoCorasick& ac) { return test_traffic::stage1_traffic(ac, 400, 17, 0x77, 0x99); }

bool skip_without_hyperscan(std::string* why) {
  if (!hyperscan_built()) {
    *why = "built without Hyperscan";
    return true;
  }
  if (et_files().empty()) {
    *why = "no ET rules";
    return true;
  }
  return false;
}

TEST(Hyperscan, FindsWhatAhoCorasickFindsOnEveryKindOfPayload) {
  std::string why;
  if (skip_without_hyperscan(&why)) GTEST_SKIP() << why;
  const AhoCorasick ac = AhoCorasick::build(et_rules().patterns);
  const HyperscanPatterns hs(et_rules().patterns);
  const HyperscanPatterns::Scratch scratch(hs);
  std::vector<uint32_t> want, got, got_own;
  size_t payloads = 0, with_match = 0;
  auto compare = [&](const uint8_t* p, uint32_t n, const std::string& what) {
    ac.patterns_in(p, n, &want);
    hs.patterns_in(p, n, scratch, &got);
    hs.patterns_in(p, n, &got_own);
    ASSERT_EQ(got, want) << what;
    ASSERT_EQ(got_own, want) << what << " (thread scratch)";
    ++payloads;
    with_match += !want.empty();
  };
  for (const PacketStore& s : traffic(ac)) {
    for (size_t i = 0; i < s.size(); ++i) {
      const PacketInfo pi = packet_info(s.frame(i), s.caplen[i]);
      compare(pi.bytes(), pi.len, "packet " + std::to_string(i));
    }
  }
  // Random bytes with NUL bytes and patterns spliced at the edges of the payload.
  const std::vector<std::string> edges = test_traffic::edge_payloads(5, 2000, false);
  for (size_t k = 0; k < edges.size(); ++k) {
    compare(reinterpret_cast<const uint8_t*>(edges[k].data()), static_cast<uint32_t>(edges[k].size()),
            "random " + std::to_string(k));
  }
  compare(reinterpret_cast<const uint8_t*>(""), 0, "empty");
  EXPECT_GT(with_match, 3000u);
  EXPECT_LT(with_match, payloads);
  std::printf("%zu payloads, %zu with a pattern; Hyperscan %s, database %.1f MiB\n", payloads, with_match,
              HyperscanPatterns::version().c_str(), hs.database_bytes() / 1048576.0);
}

// Each thread scans with a scratch of its own, grown as it meets a second database; two threads
// on two engines at once give each engine's answers.
TEST(Hyperscan, ThreadsAndDatabasesShareNoScratch) {
  std::string why;
  if (skip_without_hyperscan(&why)) GTEST_SKIP() << why;
  const std::vector<Pattern>& all = et_rules().patterns;
  const std::vector<Pattern> half(all.begin(), all.begin() + static_cast<long>(all.size() / 2));
  const HyperscanPatterns big(all), small(half);
  const AhoCorasick ac_big = AhoCorasick::build(all), ac_small = AhoCorasick::build(half);
  const std::vector<PacketStore> stores = traffic(ac_big);
  auto worker = [&](bool start_small, int* bad) {
    std::vector<uint32_t> want, got;
    for (int round = 0; round < 2; ++round) {
      for (const PacketStore& s : stores) {
        for (size_t i = 0; i < s.size(); ++i) {
          const PacketInfo pi = packet_info(s.frame(i), s.caplen[i]);
          const bool use_small = ((i + round) % 2 == 0) == start_small;
          (use_small ? ac_small : ac_big).patterns_in(pi.bytes(), pi.len, &want);
          (use_small ? small : big).patterns_in(pi.bytes(), pi.len, &got);
          *bad += got != want;
        }
      }
    }
  };
  int bad1 = 0, bad2 = 0;
  std::thread t1(worker, true, &bad1), t2(worker, false, &bad2);
  t1.join();
  t2.join();
  EXPECT_EQ(bad1, 0);
  EXPECT_EQ(bad2, 0);
}

TEST(Hyperscan, NoPatternsFindNothing) {
  if (!hyperscan_built()) GTEST_SKIP() << "built without Hyperscan";
  const HyperscanPatterns none({});
  const HyperscanPatterns::Scratch scratch(none);
  std::vector<uint32_t> out{7};
  none.patterns_in(reinterpret_cast<const uint8_t*>("abc"), 3, &out);
  EXPECT_TRUE(out.empty());
  out = {7};
  none.patterns_in(reinterpret_cast<const uint8_t*>("abc"), 3, scratch, &out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(none.database_bytes(), 0u);
}

TEST(Hyperscan, TheEngineFlagIsParsed) {
  EXPECT_EQ(parse_stage1("aho-corasick", "--dpi-engine"), Stage1::kAhoCorasick);
  EXPECT_EQ(parse_stage1("literal", "--dpi-engine"), Stage1::kLiteral);
  for (const Stage1 s : {Stage1::kAhoCorasick, Stage1::kLiteral}) EXPECT_EQ(parse_stage1(stage1_name(s), "x"), s);
  EXPECT_THROW(parse_stage1("regex", "--dpi-engine"), std::invalid_argument);
  if (hyperscan_built()) {
    EXPECT_EQ(parse_stage1("hyperscan", "--dpi-engine"), Stage1::kHyperscan);
    EXPECT_STREQ(stage1_name(Stage1::kHyperscan), "hyperscan");
  } else {
    EXPECT_THROW(parse_stage1("hyperscan", "--dpi-engine"), UsageError);
  }
}

TEST(Hyperscan, ABuildWithoutItRefusesClearly) {
  if (hyperscan_built()) GTEST_SKIP() << "built with Hyperscan";
  EXPECT_THROW(HyperscanPatterns({Pattern{"abc", false}}), std::runtime_error);
  EXPECT_EQ(default_stage1(), Stage1::kLiteral);
}

}  // namespace
}  // namespace tandem::dpi
