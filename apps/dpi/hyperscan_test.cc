// Hyperscan as DPI's stage 1 (hyperscan_patterns.h, Stage1::kHyperscan) against Aho-Corasick,
// the engine it stands in for: the same pattern ids on every kind of payload (real captures,
// random bytes, match-heavy ones with patterns in random case, NUL bytes), the same rules through
// DpiEngine's every entry point, per-thread scratch across threads and databases, and the same
// answers through the dpi app's rule updates.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "apps/dpi/aho_corasick.h"
#include "apps/dpi/dpi_control.h"
#include "apps/dpi/dpi_match.h"
#include "apps/dpi/dpi_tables.h"
#include "apps/dpi/dpi_test_frames.h"
#include "apps/dpi/hyperscan_patterns.h"
#include "apps/dpi/ids_rules.h"
#include "apps/dpi/dpi_test_rules.h"
#include "core/rng.h"
#include "core/usage_error.h"
#include "io/pcap_io.h"
#include "io/traffic_gen.h"
#include "tests/test_util.h"

namespace tandem::dpi {
namespace {

using test_rules::et_files;
using test_rules::et_rules;

// The packets compared: the real captures, generated TCP and UDP traffic free of every pattern,
// and the same with patterns (nocase ones in random case) spliced over 5% and 30% of the bytes.
std::vector<PacketStore> traffic(const AhoCorasick& ac) {
  std::vector<PacketStore> v;
  for (const char* cap : {"example", "many-protocols", "tls2"}) {
    v.push_back(load_pcap(test::source_path(std::string("data/pcap/") + cap + ".pcap"), 400));
  }
  for (const double heavy : {0.0, 0.05, 0.3}) {
    for (const char* proto : {"tcp", "udp"}) {
      PacketStore s = generate(parse_gen_spec(std::string("count=1500,size=imix,flows=300,seed=17,proto=") + proto));
      make_match_free(s, ac, 0x77);
      if (heavy > 0) make_match_heavy(s, et_rules().patterns, heavy, 0x99);
      v.push_back(std::move(s));
    }
  }
  return v;
}

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
  Rng rng(5, 1);
  for (int k = 0; k < 2000; ++k) {
    std::string b(rng.next() % 300, '\0');
    for (char& c : b) c = (rng.next() % 4 == 0) ? '\0' : static_cast<char>(rng.next());
    const Pattern& pat = et_rules().patterns[rng.next() % et_rules().patterns.size()];
    b = (k % 2 ? pat.bytes + b : b + pat.bytes);
    compare(reinterpret_cast<const uint8_t*>(b.data()), static_cast<uint32_t>(b.size()), "random " + std::to_string(k));
  }
  compare(reinterpret_cast<const uint8_t*>(""), 0, "empty");
  EXPECT_GT(with_match, 3000u);
  EXPECT_LT(with_match, payloads);
  std::printf("%zu payloads, %zu with a pattern; Hyperscan %s, database %.1f MiB\n", payloads, with_match,
              HyperscanPatterns::version().c_str(), hs.database_bytes() / 1048576.0);
}

TEST(Hyperscan, EngineGivesTheSameRulesThroughEveryEntryPoint) {
  std::string why;
  if (skip_without_hyperscan(&why)) GTEST_SKIP() << why;
  const DpiEngine ref(et_rules(), Stage1::kAhoCorasick);
  const DpiEngine hs(et_rules(), Stage1::kHyperscan);
  EXPECT_EQ(hs.stage1(), Stage1::kHyperscan);
  EXPECT_LT(hs.memory_bytes(), ref.memory_bytes()) << "with Hyperscan the port groups need no automata";
  std::vector<PacketInfo> info;
  const std::vector<PacketStore> stores = traffic(ref.all_patterns());
  for (const PacketStore& s : stores) {
    for (size_t i = 0; i < s.size(); ++i) info.push_back(packet_info(s.frame(i), s.caplen[i]));
  }
  std::vector<std::vector<uint32_t>> want(info.size()), got(info.size(), std::vector<uint32_t>{7});
  std::vector<uint32_t> a, b;
  size_t matched = 0;
  for (size_t i = 0; i < info.size(); ++i) {
    ref.match(info[i], &want[i]);
    matched += !want[i].empty();
    hs.match(info[i], &a);
    ASSERT_EQ(a, want[i]) << "match, packet " << i;
    ref.match_rules(info[i], &a);
    hs.match_rules(info[i], &b);
    ASSERT_EQ(b, a) << "match_rules, packet " << i;
    ref.patterns_in(info[i], &a);
    hs.patterns_in(info[i], &b);
    ASSERT_EQ(b, a) << "patterns_in, packet " << i;
  }
  hs.match_batch(info.data(), info.size(), got.data());
  for (size_t i = 0; i < info.size(); ++i) ASSERT_EQ(got[i], want[i]) << "match_batch, packet " << i;
  EXPECT_GT(matched, 500u);
  EXPECT_THROW(hs.match_batch(info.data(), info.size(), got.data(), 0, 1), std::invalid_argument);
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

// Rule updates rebuild the tables with the stage 1 they were loaded with, and the new rules are
// found through Hyperscan's new database.
TEST(Hyperscan, RuleUpdatesKeepTheStage1AndFindTheNewRules) {
  if (!hyperscan_built()) GTEST_SKIP() << "built without Hyperscan";
  const DpiTables loaded(load_ids_rules({test::write_temp_file("hyperscan_control", "rules.rules",
                                                               "alert tcp any any -> any 80 (content:\"alpha\"; sid:1;)\n")}),
                         Stage1::kHyperscan);
  std::atomic<const DpiTables*> current{nullptr};
  RuleControl control(loaded, current);
  const auto info_of = [](const std::vector<uint8_t>& f) { return packet_info(f.data(), static_cast<uint32_t>(f.size())); };
  const std::vector<uint8_t> a = test_frames::frame("xx alpha xx"), b = test_frames::frame("xx BRAVO xx");
  std::vector<uint32_t> sids;
  current.load()->engine().match(info_of(b), &sids);
  EXPECT_TRUE(sids.empty());
  const auto result = control.apply({"add alert tcp any any -> any 80 (content:\"bravo\"; nocase; sid:2;)", "del 1"});
  ASSERT_EQ(result.size(), 2u);
  EXPECT_EQ(result[0], "") << result[0];
  EXPECT_EQ(result[1], "") << result[1];
  const DpiEngine& e = current.load()->engine();
  EXPECT_EQ(e.stage1(), Stage1::kHyperscan);
  e.match(info_of(b), &sids);
  EXPECT_EQ(sids, std::vector<uint32_t>{2});
  e.match(info_of(a), &sids);
  EXPECT_TRUE(sids.empty()) << "sid 1 was deleted";
  // The last rule deleted: no pattern left, so no database, and nothing matches.
  const auto emptied = control.apply({"del 2"});
  ASSERT_EQ(emptied.size(), 1u);
  EXPECT_EQ(emptied[0], "");
  EXPECT_EQ(current.load()->rules().patterns.size(), 0u);
  current.load()->engine().match(info_of(b), &sids);
  EXPECT_TRUE(sids.empty());
  const auto back = control.apply({"add alert tcp any any -> any 80 (content:\"alpha\"; sid:3;)"});
  EXPECT_EQ(back[0], "");
  current.load()->engine().match(info_of(a), &sids);
  EXPECT_EQ(sids, std::vector<uint32_t>{3});
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
  EXPECT_THROW(parse_stage1("regex", "--dpi-engine"), std::invalid_argument);
  if (hyperscan_built()) {
    EXPECT_EQ(parse_stage1("hyperscan", "--dpi-engine"), Stage1::kHyperscan);
  } else {
    EXPECT_THROW(parse_stage1("hyperscan", "--dpi-engine"), UsageError);
  }
}

TEST(Hyperscan, ABuildWithoutItRefusesClearly) {
  if (hyperscan_built()) GTEST_SKIP() << "built with Hyperscan";
  EXPECT_THROW(HyperscanPatterns({Pattern{"abc", false}}), std::runtime_error);
  EXPECT_EQ(default_stage1(), Stage1::kAhoCorasick);
}

}  // namespace
}  // namespace tandem::dpi
