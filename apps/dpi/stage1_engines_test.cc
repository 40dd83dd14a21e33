// DpiEngine over the stages 1 that search every pattern once (Hyperscan, the literal filter)
// against the port groups' automata: the same rules and pattern ids through every entry point, in
// batches that split the traffic's payloads every way, and the same answers through the dpi
// app's rule updates, which keep the stage 1 the tables were loaded with; hand-made edges, and two
// threads on one engine.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "apps/dpi/dpi_control.h"
#include "apps/dpi/dpi_match.h"
#include "apps/dpi/dpi_tables.h"
#include "apps/dpi/dpi_test_frames.h"
#include "apps/dpi/dpi_test_rules.h"
#include "apps/dpi/dpi_test_traffic.h"
#include "apps/dpi/hyperscan_patterns.h"
#include "apps/dpi/ids_rules.h"
#include "apps/dpi/literal_filter.h"
#include "tests/test_util.h"

namespace tandem::dpi {

// The parameter by name in the tests' descriptions (found by argument-dependent lookup).
static void PrintTo(Stage1 s, std::ostream* os) { *os << stage1_name(s); }

namespace {

using test_rules::et_files;
using test_rules::et_rules;

class Stage1Engine : public ::testing::TestWithParam<Stage1> {
 protected:
  void SetUp() override {
    if (GetParam() == Stage1::kHyperscan && !hyperscan_built()) GTEST_SKIP() << "built without Hyperscan";
  }
};

TEST_P(Stage1Engine, GivesTheAutomataRulesThroughEveryEntryPoint) {
  if (et_files().empty()) GTEST_SKIP() << "no ET rules";
  const DpiEngine ref(et_rules(), Stage1::kAhoCorasick);
  const DpiEngine e(et_rules(), GetParam());
  EXPECT_EQ(e.stage1(), GetParam());
  if (GetParam() == Stage1::kHyperscan) {
    EXPECT_LT(e.memory_bytes(), ref.memory_bytes()) << "with Hyperscan the port groups need no automata";
  } else {  // the groups' automata take the dense payloads: the filter comes on top of them
    EXPECT_LT(e.memory_bytes(), ref.memory_bytes() + (size_t{8} << 20));
  }
  std::vector<PacketInfo> info;
  const std::vector<PacketStore> stores = test_traffic::stage1_traffic(ref.all_patterns(), 400, 19, 0x79, 0x9b);
  for (const PacketStore& s : stores) {
    for (size_t i = 0; i < s.size(); ++i) info.push_back(packet_info(s.frame(i), s.caplen[i]));
  }
  const size_t n = info.size();
  if (GetParam() == Stage1::kLiteral) {
    // Both of the literal engine's ways are taken: payloads the filter keeps, payloads it hands
    // to the automata.
    const LiteralFilter filter = LiteralFilter::build(et_rules().patterns);
    size_t dense = 0, sparse = 0;
    std::vector<uint32_t> scratch;
    for (const PacketInfo& pi : info) {
      if (pi.payload) ++(filter.patterns_in_if_sparse(pi.payload, pi.len, &scratch) ? sparse : dense);
    }
    EXPECT_GT(dense, 500u);
    EXPECT_GT(sparse, 500u);
  }
  std::vector<std::vector<uint32_t>> want(n), want_ids(n);
  std::vector<uint32_t> a, b;
  size_t matched = 0;
  for (size_t i = 0; i < n; ++i) {
    ref.match(info[i], &want[i]);
    matched += !want[i].empty();
    e.match(info[i], &a);
    ASSERT_EQ(a, want[i]) << "match, packet " << i;
    ref.match_rules(info[i], &a);
    e.match_rules(info[i], &b);
    ASSERT_EQ(b, a) << "match_rules, packet " << i;
    ref.patterns_in(info[i], &want_ids[i]);
    e.patterns_in(info[i], &b);
    ASSERT_EQ(b, want_ids[i]) << "patterns_in, packet " << i;
  }
  EXPECT_GT(matched, 500u);
  std::vector<const uint8_t*> ptr(n);
  std::vector<uint32_t> len(n);
  for (size_t i = 0; i < n; ++i) {
    ptr[i] = info[i].bytes();
    len[i] = info[i].len;
  }
  // Batches of every size the traffic's sparse and dense payloads may split into; outputs stale.
  std::vector<std::vector<uint32_t>> got;
  for (const size_t batch : {size_t{8192}, size_t{7}, size_t{1}}) {
    got.assign(n, std::vector<uint32_t>{7});
    e.match_batch(info.data(), n, got.data(), batch, batch == 7 ? 3 : 32);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want[i]) << "match_batch, packet " << i << ", batches of " << batch;
    got.assign(n, std::vector<uint32_t>{7});
    e.patterns_in_batch(ptr.data(), len.data(), n, got.data(), batch, 32);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want_ids[i]) << "patterns_in_batch, packet " << i << ", batches of " << batch;
  }
  EXPECT_THROW(e.match_batch(info.data(), n, got.data(), 0, 1), std::invalid_argument);
}

// Rule updates rebuild the tables with the stage 1 they were loaded with, and the new rules are
// found through its new tables; with every rule deleted nothing matches, and a rule added back is
// found again.
TEST_P(Stage1Engine, RuleUpdatesKeepTheStage1AndFindTheNewRules) {
  const DpiTables loaded(load_ids_rules({test::write_temp_file("stage1_control", "rules.rules",
                                                               "alert tcp any any -> any 80 (content:\"alpha\"; sid:1;)\n")}),
                         GetParam());
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
  EXPECT_EQ(e.stage1(), GetParam());
  e.match(info_of(b), &sids);
  EXPECT_EQ(sids, std::vector<uint32_t>{2});
  e.match(info_of(a), &sids);
  EXPECT_TRUE(sids.empty()) << "sid 1 was deleted";
  const PacketInfo both[2] = {info_of(a), info_of(b)};
  std::vector<uint32_t> batch[2];
  e.match_batch(both, 2, batch);
  EXPECT_TRUE(batch[0].empty());
  EXPECT_EQ(batch[1], std::vector<uint32_t>{2});
  const auto emptied = control.apply({"del 2"});
  ASSERT_EQ(emptied.size(), 1u);
  EXPECT_EQ(emptied[0], "");
  EXPECT_EQ(current.load()->rules().patterns.size(), 0u);
  current.load()->engine().match(info_of(b), &sids);
  EXPECT_TRUE(sids.empty());
  current.load()->engine().match_batch(both, 2, batch);
  EXPECT_TRUE(batch[0].empty() && batch[1].empty());
  const auto back = control.apply({"add alert tcp any any -> any 80 (content:\"alpha\"; sid:3;)"});
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0], "");
  current.load()->engine().match(info_of(a), &sids);
  EXPECT_EQ(sids, std::vector<uint32_t>{3});
}

// Hand-made packets at the edges: no payload (a rule of negated contents alone applies), equal
// ports (one port group, not two), payloads dense with candidates, one at a time and batched.
TEST_P(Stage1Engine, HandMadeEdgesGiveTheAutomataRules) {
  const IdsRuleSet set = load_ids_rules({test::write_temp_file(
      "stage1_edges", "edges.rules",
      "alert tcp any any -> any any (content:!\"evil\"; sid:10;)\n"
      "alert udp any any -> any 53 (content:\"abc\"; sid:11;)\n"
      "alert udp any 53 -> any any (content:\"abcd\"; nocase; sid:12;)\n"
      "alert tcp any any -> any 80 (content:\"GET\"; content:\"host\"; distance:0; sid:13;)\n")});
  const DpiEngine ref(set, Stage1::kAhoCorasick), e(set, GetParam());
  std::vector<std::string> payloads = {"", "xxabcdxx", "GET / host evil", "xx"};
  std::string dense_udp, dense_tcp;
  for (int k = 0; k < 100; ++k) dense_udp += k % 2 ? "ABCD" : "abcd";
  for (int k = 0; k < 50; ++k) dense_tcp += "GET host ";
  payloads.push_back(dense_udp);
  payloads.push_back(dense_tcp);
  std::vector<PacketInfo> info;
  for (const std::string& s : payloads) {
    for (const auto& [proto, sport, dport] : {std::tuple<uint8_t, uint16_t, uint16_t>{17, 53, 53}, {6, 40000, 80}}) {
      PacketInfo p;
      p.ip = true;
      p.proto = proto;
      p.sport = sport;
      p.dport = dport;
      p.payload = s.empty() ? nullptr : reinterpret_cast<const uint8_t*>(s.data());
      p.len = static_cast<uint32_t>(s.size());
      info.push_back(p);
    }
  }
  std::vector<std::vector<uint32_t>> want(info.size()), got(info.size());
  for (size_t i = 0; i < info.size(); ++i) {
    ref.match(info[i], &want[i]);
    e.match(info[i], &got[i]);
    EXPECT_EQ(got[i], want[i]) << "packet " << i;
  }
  EXPECT_EQ(want[1], std::vector<uint32_t>{10}) << "no payload: the negated rule alone";
  EXPECT_EQ(want[2], (std::vector<uint32_t>{11, 12})) << "udp 53 -> 53";
  EXPECT_EQ(want[5], std::vector<uint32_t>{13}) << "evil";
  EXPECT_EQ(want[8], (std::vector<uint32_t>{11, 12})) << "dense udp";
  EXPECT_EQ(want[11], (std::vector<uint32_t>{10, 13})) << "dense tcp";
  for (const size_t batch : {size_t{8192}, size_t{3}, size_t{1}}) {
    got.assign(info.size(), std::vector<uint32_t>{7});
    e.match_batch(info.data(), info.size(), got.data(), batch, 2);
    for (size_t i = 0; i < info.size(); ++i) EXPECT_EQ(got[i], want[i]) << "packet " << i << ", batches of " << batch;
  }
}

// Two threads on one engine at once, with batches of different sizes: the per-thread buffers of
// the batched path are each thread's own.
TEST_P(Stage1Engine, ThreadsShareNoBuffers) {
  if (et_files().empty()) GTEST_SKIP() << "no ET rules";
  const DpiEngine e(et_rules(), GetParam());
  std::vector<PacketInfo> info;
  const std::vector<PacketStore> stores = test_traffic::stage1_traffic(e.all_patterns(), 200, 29, 0x7a, 0x9c);
  for (const PacketStore& s : stores) {
    for (size_t i = 0; i < s.size(); ++i) info.push_back(packet_info(s.frame(i), s.caplen[i]));
  }
  std::vector<std::vector<uint32_t>> want(info.size());
  for (size_t i = 0; i < info.size(); ++i) e.match(info[i], &want[i]);
  auto worker = [&](size_t batch, int* bad) {
    std::vector<std::vector<uint32_t>> got(info.size());
    for (int round = 0; round < 3; ++round) {
      for (size_t b = 0; b < info.size(); b += 32) {  // the app's bursts
        const size_t m = std::min<size_t>(32, info.size() - b);
        e.match_batch(info.data() + b, m, got.data() + b, batch, 8);
      }
      for (size_t i = 0; i < info.size(); ++i) *bad += got[i] != want[i];
    }
  };
  int bad1 = 0, bad2 = 0;
  std::thread t1(worker, size_t{8192}, &bad1), t2(worker, size_t{5}, &bad2);
  t1.join();
  t2.join();
  EXPECT_EQ(bad1, 0);
  EXPECT_EQ(bad2, 0);
}

INSTANTIATE_TEST_SUITE_P(Engines, Stage1Engine, ::testing::Values(Stage1::kHyperscan, Stage1::kLiteral),
                         [](const auto& info) { return std::string(stage1_name(info.param)); });

}  // namespace
}  // namespace tandem::dpi
