// The firewall classifier: rule parsing (ClassBench and Tandem's syntax, errors with file and line,
// --skip-bad), and HyperSplit (one at a time, and batched with vector steps) against brute-force first match on random
// headers and on headers drawn from the rules, for the ClassBench 1k and 10k sets and random rule
// sets with the report's protocol mix.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "apps/acl/acl_gpu.h"
#include "apps/acl/acl_rules.h"
#include "apps/acl/hypersplit.h"
#include "core/flow_hash.h"
#include "core/table_reader.h"
#include "tests/test_util.h"

namespace tandem::acl {
namespace {

// A header without ports (kNoPorts) matches only rules whose port ranges are both 0-65535.
uint32_t brute_force(const std::vector<Rule>& rules, const Header& h) {
  for (uint32_t i = 0; i < rules.size(); ++i) {
    const Rule& r = rules[i];
    const bool any_ports = r.lo[kSport] == 0 && r.hi[kSport] == 65535 && r.lo[kDport] == 0 && r.hi[kDport] == 65535;
    if (h.src >= r.lo[kSrc] && h.src <= r.hi[kSrc] && h.dst >= r.lo[kDst] && h.dst <= r.hi[kDst] &&
        h.sport >= r.lo[kSport] && h.sport <= r.hi[kSport] && h.dport >= r.lo[kDport] && h.dport <= r.hi[kDport] &&
        (h.proto & r.proto_mask) == r.proto_value && (h.flags != kNoPorts || any_ports)) {
      return i;
    }
  }
  return kNoMatch;
}

// A third random anywhere, the rest inside random rules; of those, one in five has no ports (as a
// later fragment or an ICMP packet reaches the firewall: kNoPorts, half of them with ports 0 and
// half with stray port values, which no lookup may use).
std::vector<Header> headers_for(const std::vector<Rule>& rules, size_t n, uint64_t seed) {
  std::vector<Header> hs;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t x = mix64(seed + i);
    if (i % 5 == 1) {
      Header h = rules.empty() ? Header{} : header_in_rule(rules[x % rules.size()], mix64(x));
      if (i % 10 == 1) h.sport = h.dport = 0;  // the others keep ports the lookup must ignore
      h.flags = kNoPorts;
      hs.push_back(h);
    } else if (i % 3 == 0 || rules.empty()) {  // random anywhere
      Header h;
      h.src = static_cast<uint32_t>(x);
      h.dst = static_cast<uint32_t>(x >> 32);
      const uint64_t y = mix64(x);
      h.sport = static_cast<uint16_t>(y);
      h.dport = static_cast<uint16_t>(y >> 16);
      h.proto = (y >> 32) % 4 == 0 ? static_cast<uint8_t>(y >> 40) : (y >> 32) % 4 == 1 ? 6 : (y >> 32) % 4 == 2 ? 17 : 1;
      hs.push_back(h);
    } else {
      hs.push_back(header_in_rule(rules[x % rules.size()], mix64(x)));
    }
  }
  return hs;
}

// Both lookups of a tree built with `opts` (one header at a time, as the device walks it; the
// batched walk with vector steps where the CPU has them) against brute force.
void check_all(const std::vector<Rule>& rules, size_t n, uint64_t seed, const char* what,
               const HyperSplit::Options& opts = {}) {
  const HyperSplit hs = HyperSplit::build(rules, opts);
  const std::vector<Header> hdr = headers_for(rules, n, seed);
  std::vector<uint32_t> batch(n + 1, 0xABCDu);
  hs.classify_batch(hdr.data(), batch.data(), n);
  EXPECT_EQ(batch[n], 0xABCDu) << what;
  size_t bad = 0, matched = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t want = brute_force(rules, hdr[i]);
    matched += want != kNoMatch;
    const uint32_t lin = classify_linear(rules.data(), static_cast<uint32_t>(rules.size()), hdr[i]);
    const uint32_t tree = hs.classify(hdr[i]);
    if (lin != want || tree != want || batch[i] != want) {
      if (++bad <= 5) {
        ADD_FAILURE() << what << ": header " << i << ": want " << want << " linear " << lin << " tree " << tree
                      << " batch " << batch[i];
      }
    }
  }
  EXPECT_EQ(bad, 0u) << what;
  EXPECT_GT(matched, n / 3) << what << ": the headers drawn from rules must mostly match";
  std::printf("%s: %zu rules, %zu nodes, %zu leaves, depth %u, %zu rule copies, %.2f MiB, built in %.3f s\n", what,
              rules.size(), hs.stats().nodes, hs.stats().leaves, hs.stats().depth, hs.stats().leaf_rule_refs,
              hs.memory_bytes() / 1048576.0, hs.stats().build_seconds);
}

TEST(Acl, HyperSplitEqualsBruteForceOnClassBench) {
  int sets = 0;
  for (const char* name : {"acl1_1k", "fw1_1k", "ipc1_1k", "acl1_10k", "fw1_10k", "ipc2_10k", "acl5_10k"}) {
    const std::string path = test::shared_data_path(std::string("classbench/filters/") + name + ".gz");
    if (!std::ifstream(path).good()) continue;
    const RuleSet s = load_rules(path);
    EXPECT_TRUE(s.classbench);
    EXPECT_TRUE(s.errors.empty());
    ASSERT_GT(s.rules.size(), 500u) << name;
    check_all(s.rules, 60001, 11, name);  // not a multiple of the 32-header group
    ++sets;
  }
  if (sets == 0) GTEST_SKIP() << "no ClassBench sets under " << test::shared_data_path("classbench");
}

// Leaves larger than one vector block (a leaf's rules checked eight at a time, block after block,
// the first block with a match ending the search) and leaves of one rule (nodes cut until a rule
// covers a region), on a real set and a random one. The vector lookup is reported, so that a run
// on a CPU without AVX2 shows that its batches were the scalar lookup.
TEST(Acl, HyperSplitLeafSizesEqualBruteForce) {
  std::printf("vector lookup: %s\n", HyperSplit::vector_lookup_supported() ? "AVX2" : "not on this CPU");
  std::vector<RuleSet> sets;
  sets.push_back(random_rules(2000, 21));
  const std::string path = test::shared_data_path("classbench/filters/fw1_1k.gz");
  if (std::ifstream(path).good()) sets.push_back(load_rules(path));
  for (const RuleSet& s : sets) {
    for (uint32_t leaf : {1u, 3u, 8u, 9u, 20u, 64u}) {
      HyperSplit::Options o;
      o.leaf_rules = leaf;
      const HyperSplit hs = HyperSplit::build(s.rules, o);
      uint32_t largest = 0;
      for (const HsNode& x : hs.nodes()) largest = std::max(largest, x.kind == HsNode::kLeaf ? x.count : 0u);
      if (leaf > 8) {
        EXPECT_GT(largest, 8u) << "leaves of " << leaf << " must hold more than one block";
      }
      check_all(s.rules, 20003, leaf, ("leaves of " + std::to_string(leaf) + ", " + s.path).c_str(), o);
    }
  }
}

// The lookups skip a tree or leaf by the smallest rule index a node records: too high, and a
// better rule is missed (the brute-force tests see that); too low, and nothing is skipped, which
// only this test sees. Every node's figure must equal the smallest leaf rule under it, and a set
// whose parts start late in the rule order must have trees that can be skipped.
// Every node's min_rule is the smallest leaf rule under it, and the stats count what the arrays
// hold (a tree built twice must not keep the first build's figures).
void check_tree_bookkeeping(const HyperSplit& hs, const std::string& what) {
  const std::vector<HsNode>& nodes = hs.nodes();
  std::vector<uint32_t> want(nodes.size(), kNoMatch);
  size_t leaves = 0, blocks = 0;
  for (size_t i = nodes.size(); i-- > 0;) {  // children come after their parent
    const HsNode& x = nodes[i];
    if (x.kind == HsNode::kLeaf) {
      ++leaves;
      blocks += (x.count + 7) / 8;
      for (uint32_t k = 0; k < x.count; ++k) want[i] = std::min(want[i], hs.leaf_rules()[x.first + k]);
    } else {
      ASSERT_GT(x.first, i) << what;
      for (uint32_t c = 0; c < x.count; ++c) want[i] = std::min(want[i], want[x.first + c]);
    }
  }
  size_t wrong = 0;
  for (size_t i = 0; i < nodes.size(); ++i) wrong += nodes[i].min_rule != want[i];
  EXPECT_EQ(wrong, 0u) << what;
  EXPECT_EQ(hs.stats().nodes, nodes.size()) << what;
  EXPECT_EQ(hs.stats().leaves, leaves) << what;
  EXPECT_EQ(hs.stats().leaf_rule_refs, hs.leaf_rules().size()) << what;
  EXPECT_EQ(hs.leaf_blocks().size(), blocks) << what;
}

TEST(Acl, NodesKnowTheSmallestRuleUnderThem) {
  std::vector<RuleSet> sets;
  sets.push_back(random_rules(3000, 8));
  const std::string path = test::shared_data_path("classbench/filters/acl1_1k.gz");
  if (std::ifstream(path).good()) sets.push_back(load_rules(path));
  for (const RuleSet& s : sets) {
    const HyperSplit hs = HyperSplit::build(s.rules);
    const std::vector<HsNode>& nodes = hs.nodes();
    check_tree_bookkeeping(hs, s.path);
    uint32_t latest_root = 0;
    for (uint32_t r : hs.roots()) latest_root = std::max(latest_root, nodes[r].min_rule);
    EXPECT_GT(hs.roots().size(), 1u) << s.path;
    EXPECT_GT(latest_root, 0u) << s.path << ": no tree starts after rule 0, so none can be skipped";
  }
}

// Rules of random overlapping ranges (each field a random range, a quarter wildcards, random
// protocol masks) are copied into many leaves by any decision tree: 2,000 of them once made 3.1 M
// copies and 270 MB. The copy budget (hypersplit.cc) keeps the copies near 64 per rule, and the
// answers stay first-match.
TEST(Acl, OverlappingRangesStayWithinTheCopyBudget) {
  std::vector<Rule> rules(2000);
  uint64_t x = 99;
  auto next = [&] { return x = mix64(x); };
  for (Rule& r : rules) {
    for (int f = 0; f < 4; ++f) {
      const uint32_t top = f < 2 ? 0xFFFFFFFFu : 0xFFFFu;
      uint32_t a = static_cast<uint32_t>(next()) & top, b = static_cast<uint32_t>(next()) & top;
      if (next() % 4 == 0) a = 0, b = top;
      r.lo[f] = std::min(a, b);
      r.hi[f] = std::max(a, b);
    }
    r.lo[kProto] = 0;
    r.hi[kProto] = 255;
    r.proto_mask = static_cast<uint8_t>(next() % 3 == 0 ? 0 : next());
    r.proto_value = static_cast<uint8_t>(next()) & r.proto_mask;
  }
  const HyperSplit hs = HyperSplit::build(rules);
  EXPECT_TRUE(hs.stats().copy_budget_reached);
  EXPECT_FALSE(hs.stats().leaves_left_uncut);  // the limited build stays within it
  check_tree_bookkeeping(hs, "2000 overlapping random ranges");
  EXPECT_LT(hs.stats().leaf_rule_refs, 80 * rules.size());
  EXPECT_LT(hs.memory_bytes(), size_t{64} << 20);
  check_all(rules, 20003, 5, "2000 overlapping random ranges");
}

// Crossing rules in one part of the trees (all narrow): half span source addresses 0-65534 at one
// destination, half the reverse. Every cut of one field copies the rules spanning it, so
// separating them takes about (n/2)^2 copies, far over the budget even with binary-like cuts:
// both builds reach it, the nodes left stay leaves with all their rules, and the tree stays
// bounded and correct.
TEST(Acl, CrossingRulesReachTheCopyBudgetTwice) {
  std::vector<Rule> rules(3000);
  for (size_t i = 0; i < rules.size(); ++i) {
    Rule& r = rules[i];
    const uint32_t at = static_cast<uint32_t>(i / 2) * 43;  // within [0, 65534)
    const int point = i % 2 ? kSrc : kDst, span = i % 2 ? kDst : kSrc;
    r.lo[point] = r.hi[point] = at;
    r.lo[span] = 0;
    r.hi[span] = 65534;
    r.lo[kSport] = r.lo[kDport] = 0;
    r.hi[kSport] = r.hi[kDport] = 0xFFFF;
    r.lo[kProto] = 0;
    r.hi[kProto] = 255;
  }
  const HyperSplit hs = HyperSplit::build(rules);
  EXPECT_TRUE(hs.stats().copy_budget_reached);
  EXPECT_TRUE(hs.stats().leaves_left_uncut);
  EXPECT_EQ(hs.stats().trees, 1u);
  check_tree_bookkeeping(hs, "crossing rules");
  std::printf("crossing rules: %zu nodes, %zu rule copies, %.2f MiB\n", hs.stats().nodes, hs.stats().leaf_rule_refs,
              hs.memory_bytes() / 1048576.0);
  EXPECT_GT(hs.stats().leaf_rule_refs, 64 * rules.size());
  EXPECT_LT(hs.memory_bytes(), size_t{64} << 20);
  // Headers on the crossings' lines and between them.
  std::vector<Header> hdr;
  uint64_t x = 7;
  for (int i = 0; i < 20000; ++i) {
    x = mix64(x);
    Header h{};
    h.src = static_cast<uint32_t>(x % 65536);
    h.dst = i % 2 ? static_cast<uint32_t>((x >> 20) % 1500) * 43 : static_cast<uint32_t>((x >> 20) % 65536);
    if (i % 4 == 1) std::swap(h.src, h.dst);  // on a source line
    h.proto = 6;
    hdr.push_back(h);
  }
  std::vector<uint32_t> batch(hdr.size());
  hs.classify_batch(hdr.data(), batch.data(), hdr.size());
  size_t matched = 0;
  for (size_t i = 0; i < hdr.size(); ++i) {
    const uint32_t want = classify_linear(rules.data(), static_cast<uint32_t>(rules.size()), hdr[i]);
    ASSERT_EQ(hs.classify(hdr[i]), want) << i;
    ASSERT_EQ(batch[i], want) << i;
    matched += want != kNoMatch;
  }
  EXPECT_GT(matched, hdr.size() / 4);
}

TEST(Acl, HyperSplitEqualsBruteForceOnRandomSets) {
  for (size_t n : {0, 1, 7, 100, 3000}) {
    const RuleSet s = random_rules(n, n + 3);
    ASSERT_EQ(s.rules.size(), n);
    if (n) check_all(s.rules, 20000, n, ("random " + std::to_string(n)).c_str());
  }
  // The report's protocol mix.
  const RuleSet s = random_rules(100000, 9);
  size_t tcp = 0, udp = 0, icmp = 0, any = 0;
  for (const Rule& r : s.rules) {
    tcp += r.proto_mask == 0xFF && r.proto_value == 6;
    udp += r.proto_mask == 0xFF && r.proto_value == 17;
    icmp += r.proto_mask == 0xFF && r.proto_value == 1;
    any += r.proto_mask == 0;
  }
  EXPECT_NEAR(tcp / 1e5, 0.75, 0.01);
  EXPECT_NEAR(udp / 1e5, 0.14, 0.01);
  EXPECT_NEAR(icmp / 1e5, 0.04, 0.005);
  EXPECT_NEAR(any / 1e5, 0.06, 0.005);
}

// A header without ports skips every rule that names ports, and HyperSplit still finds the first
// rule that does not: a rule naming ports must not shadow later rules in the region where such
// headers land (ports 0 and 0), even where it covers every port value of that region.
TEST(Acl, HeadersWithoutPortsSkipPortRules) {
  const std::string path = ::testing::TempDir() + "/noports.txt";
  {
    std::ofstream f(path);
    f << "accept dport 0-1023\n";  // covers the whole region dport 0-1023 once the tree cuts there
    for (int k = 1; k <= 16; ++k) f << "accept proto tcp dport " << k * 2000 << "-" << k * 2000 + 999 << "\n";
    f << "drop sport 0-0\n";  // names a port, even if only port 0
    f << "drop proto tcp\n";
  }
  const RuleSet s = load_rules(path);
  ASSERT_EQ(s.rules.size(), 19u);
  EXPECT_TRUE(restricts_ports(s.rules[0]));
  EXPECT_TRUE(restricts_ports(s.rules[17]));
  EXPECT_FALSE(restricts_ports(s.rules[18]));
  HyperSplit::Options one_rule_leaves;  // so that the tree cuts until a rule covers a region
  one_rule_leaves.leaf_rules = 1;
  const HyperSplit hs = HyperSplit::build(s.rules, one_rule_leaves);
  ASSERT_GT(hs.stats().leaves, 10u) << "the test needs a tree that cuts the port fields";
  Header h;
  h.src = 0x0A000001;
  h.dst = 0x0B000001;
  h.proto = 6;
  EXPECT_EQ(classify_linear(s.rules.data(), 19, h), 0u);  // ports present and 0: rule 0
  h.flags = kNoPorts;
  EXPECT_EQ(classify_linear(s.rules.data(), 19, h), 18u);
  EXPECT_EQ(hs.classify(h), 18u);
  uint32_t batched = 0;
  hs.classify_batch(&h, &batched, 1);
  EXPECT_EQ(batched, 18u);
  h.proto = 1;  // ICMP: no rule without ports admits it
  EXPECT_EQ(classify_linear(s.rules.data(), 19, h), kNoMatch);
  EXPECT_EQ(hs.classify(h), kNoMatch);
  hs.classify_batch(&h, &batched, 1);
  EXPECT_EQ(batched, kNoMatch);
  h.flags = 0;
  EXPECT_EQ(hs.classify(h), 0u);
}

TEST(Acl, TandemSyntaxRoundTripsAndErrorsNameTheLine) {
  const std::string path = ::testing::TempDir() + "/rules.txt";
  std::ofstream(path) << "# a firewall\n"
                         "accept src 10.0.0.0/8 dport 80-443 proto tcp\n"
                         "drop proto udp sport 53\n"
                         "accept dst 192.168.1.1 proto 47/255\n"
                         "default drop\n"
                         "drop src 1.2.3.4/33\n"
                         "accept dport 70000\n"
                         "allow everything\n";
  EXPECT_THROW(load_rules(path), TableError);
  try {
    load_rules(path);
  } catch (const TableError& e) {
    EXPECT_NE(std::string(e.what()).find("rules.txt:6:"), std::string::npos) << e.what();
  }
  LoadOptions o;
  o.skip_bad = true;
  const RuleSet s = load_rules(path, o);
  ASSERT_EQ(s.rules.size(), 3u);
  ASSERT_EQ(s.errors.size(), 3u);
  EXPECT_NE(s.errors[0].find(":6:"), std::string::npos);
  EXPECT_NE(s.errors[1].find(":7:"), std::string::npos);
  EXPECT_NE(s.errors[2].find(":8:"), std::string::npos);
  EXPECT_EQ(s.default_action, kDrop);
  EXPECT_EQ(s.rules[1].action, kDrop);
  for (const Rule& r : s.rules) {
    Rule back{};
    std::string why;
    ASSERT_TRUE(parse_rule(format_rule(r), &back, &why)) << format_rule(r) << ": " << why;
    EXPECT_EQ(format_rule(back), format_rule(r));
  }
  Header h;
  h.src = (10u << 24) | 5;
  h.dport = 443;
  h.proto = 6;
  EXPECT_EQ(classify_linear(s.rules.data(), 3, h), 0u);
  h.proto = 17;
  h.sport = 53;
  EXPECT_EQ(classify_linear(s.rules.data(), 3, h), 1u);
  h.sport = 54;
  EXPECT_EQ(classify_linear(s.rules.data(), 3, h), kNoMatch);
}

TEST(Acl, BrokenClassBenchLinesNameTheLine) {
  const std::string path = ::testing::TempDir() + "/cb.txt";
  std::ofstream(path) << "@1.2.3.4/32\t5.6.7.8/32\t0 : 65535\t80 : 80\t0x06/0xFF\t0x1000/0x1000\n"
                         "@1.2.3.4/32\t5.6.7.8/32\t0 : 65535\t90 : 80\t0x06/0xFF\n"
                         "@1.2.3.4/40\t5.6.7.8/32\t0 : 65535\t80 : 80\t0x06/0xFF\n"
                         "@1.2.3.4/32\t5.6.7.8/32\t0 : 65535\t80 : 80\t6/255\n";
  try {
    load_rules(path);
    ADD_FAILURE() << "loaded a broken file";
  } catch (const TableError& e) {
    EXPECT_NE(std::string(e.what()).find("cb.txt:2:"), std::string::npos) << e.what();
  }
  LoadOptions o;
  o.skip_bad = true;
  const RuleSet s = load_rules(path, o);
  EXPECT_EQ(s.rules.size(), 1u);
  EXPECT_EQ(s.errors.size(), 3u);
}

TEST(Acl, GpuEqualsCpu) {
  TANDEM_REQUIRE_GPU();
  std::vector<RuleSet> sets;
  sets.push_back(random_rules(5000, 4));
  const std::string path = test::shared_data_path("classbench/filters/acl1_10k.gz");
  if (std::ifstream(path).good()) sets.push_back(load_rules(path));
  for (const RuleSet& s : sets) {
    const HyperSplit hs = HyperSplit::build(s.rules);
    const std::vector<Header> hdr = headers_for(s.rules, 300000, 5);
    std::vector<uint32_t> cpu(hdr.size()), gpu_out(hdr.size());
    hs.classify_batch(hdr.data(), cpu.data(), hdr.size());
    for (auto mode : {gpu::GpuMode::kAsync, gpu::GpuMode::kGraph, gpu::GpuMode::kMapped, gpu::GpuMode::kPersistent}) {
      auto g = AclGpuTable::create(hs);
      gpu::OffloadOptions oo;
      oo.mode = mode;
      oo.capacity = 50000;
      auto runner = g->make_runner(oo);
      std::fill(gpu_out.begin(), gpu_out.end(), 0xABCDu);
      gpu::run_all(*runner, hdr.data(), gpu_out.data(), hdr.size());
      EXPECT_EQ(cpu, gpu_out) << s.path << " " << gpu::gpu_mode_name(mode);
    }
  }
}

}  // namespace
}  // namespace tandem::acl
