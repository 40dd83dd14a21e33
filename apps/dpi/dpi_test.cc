// DPI, stage 1 and the rule parser: Snort/Suricata rules (content with |hex|, escapes, negation,
// nocase, offset/depth/distance/within; ports and variables; disabled rules; errors with file and
// line), pattern numbering, and the Aho-Corasick automaton against a naive search of every pattern
// in every payload: the Emerging Threats set on the payloads of the real captures, on random
// (match-free) payloads and on match-heavy payloads built from the patterns.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "apps/dpi/aho_corasick.h"
#include "apps/dpi/dpi_gpu.h"
#include "apps/dpi/dpi_match.h"
#include "apps/dpi/ids_rules.h"
#include "apps/dpi/dpi_test_rules.h"
#include "core/flow_hash.h"
#include "core/parse.h"
#include "gpu/gpu_runtime.h"
#include "io/flow_traffic.h"
#include "io/traffic_gen.h"
#include "io/pcap_io.h"
#include "tests/test_util.h"

namespace tandem::dpi {
namespace {

using test_rules::et_files;
using test_rules::et_rules;

// The TCP and UDP payloads among the first `max` frames of data/pcap/CAP.pcap.
std::vector<std::string> capture_payloads(const std::string& cap, size_t max) {
  std::vector<std::string> pays;
  const PacketStore st = load_pcap(test::source_path("data/pcap/" + cap + ".pcap"));
  for (size_t i = 0; i < st.size() && i < max; ++i) {
    ParsedPacket pp;
    uint32_t off = 0, len = 0;
    if (parse_packet(st.frame(i), st.caplen[i], &pp) != DropReason::kNone || !transport_payload(st.frame(i), pp, &off, &len)) continue;
    pays.emplace_back(reinterpret_cast<const char*>(st.frame(i) + off), len);
  }
  return pays;
}

// Random bytes until `size`; with `splice`, a third of the draws put in one of `pats` instead,
// nocase ones in random case (match-heavy traffic). `x` is the random state.
std::string random_payload(const std::vector<Pattern>& pats, size_t size, bool splice, uint64_t& x) {
  std::string s;
  while (s.size() < size) {
    if (splice && mix64(++x) % 3 == 0) {
      const Pattern& p = pats[mix64(++x) % pats.size()];
      std::string b = p.bytes;
      if (p.nocase) {
        for (char& ch : b) {
          if (std::isalpha(static_cast<unsigned char>(ch)) && mix64(++x) % 2) ch = static_cast<char>(ch ^ 0x20);
        }
      }
      s += b;
    } else {
      s += static_cast<char>(mix64(++x));
    }
  }
  return s;
}

TEST(IdsRules, ContentsAndModifiers) {
  IdsRule r;
  std::string why;
  std::map<std::string, uint64_t> ignored;
  uint64_t unknown = 0;
  ASSERT_TRUE(parse_ids_rule(
      R"(alert tcp $EXTERNAL_NET any -> $HOME_NET [80,8000:8100] (msg:"x;y"; flow:established; content:"GET |20|/a\"b\;c"; nocase; offset:2; depth:40; content:!"ZZ"; distance:-3; within:9; pcre:"/a;b/"; sid:42; rev:1;))",
      &r, &why, &ignored, &unknown))
      << why;
  EXPECT_EQ(r.sid, 42u);
  ASSERT_EQ(r.contents.size(), 2u);
  EXPECT_EQ(r.contents[0].bytes, "GET  /a\"b;c");  // "GET " then |20|
  EXPECT_TRUE(r.contents[0].nocase);
  EXPECT_EQ(r.contents[0].offset, 2);
  EXPECT_EQ(r.contents[0].depth, 40);
  EXPECT_TRUE(r.contents[1].negated);
  EXPECT_EQ(r.contents[1].distance, -3);
  EXPECT_EQ(r.contents[1].within, 9);
  EXPECT_TRUE(r.dst_ports.contains(80) && r.dst_ports.contains(8050) && !r.dst_ports.contains(81));
  EXPECT_TRUE(r.src_ports.contains(1));
  EXPECT_EQ(ignored["flow"], 1u);
  EXPECT_EQ(ignored["pcre"], 1u);
  ASSERT_TRUE(parse_ids_rule(R"(alert udp any !53 -> any $HTTP_PORTS (content:"|00 01 0a|abc"; sid:7;))", &r, &why, &ignored, &unknown));
  EXPECT_EQ(r.contents[0].bytes, std::string("\x00\x01\x0a" "abc", 6));
  EXPECT_FALSE(r.src_ports.contains(53));
  EXPECT_TRUE(r.src_ports.contains(54));
  EXPECT_TRUE(r.dst_ports.contains(80) && !r.dst_ports.contains(8080));
  ASSERT_TRUE(parse_ids_rule(R"(alert tcp any 5800,!445 -> any [1000:2000,!1500,!1600:1700] (content:"a"; sid:8;))", &r, &why, &ignored, &unknown)) << why;
  EXPECT_TRUE(r.src_ports.contains(5800) && !r.src_ports.contains(445) && !r.src_ports.contains(5801));
  EXPECT_TRUE(r.dst_ports.contains(1000) && !r.dst_ports.contains(1500) && !r.dst_ports.contains(1650) && r.dst_ports.contains(1701));
  ASSERT_TRUE(parse_ids_rule(R"(alert tcp any [!80,!443] -> any !any (content:"a"; sid:9;))", &r, &why, &ignored, &unknown)) << why;
  EXPECT_TRUE(r.src_ports.contains(22) && !r.src_ports.contains(80) && !r.src_ports.contains(443));
  EXPECT_FALSE(r.dst_ports.contains(22));
  for (const char* bad : {R"(alert tcp any any -> any any (content:"|0g|"; sid:1;))", R"(alert tcp any any -> any any (content:"a"; ))",
                          R"(alert tcp any any any any (content:"a"; sid:1;))", R"(alert tcp any any -> any any (nocase; content:"a"; sid:1;))",
                          R"(alert tcp any any -> any any (content:"|41"; sid:1;))", R"(alert tcp any any -> any 99999 (content:"a"; sid:1;))"}) {
    EXPECT_FALSE(parse_ids_rule(bad, &r, &why, &ignored, &unknown)) << bad;
  }
}

TEST(IdsRules, FilesNumberPatternsAndNameBadLines) {
  const std::string a = ::testing::TempDir() + "/a.rules", b = ::testing::TempDir() + "/b.rules";
  std::ofstream(a) << "# comment\n"
                      "#alert tcp any any -> any any (content:\"off\"; sid:1;)\n"
                      "alert tcp any any -> any any (content:\"one\"; content:\"two\"; nocase; sid:2;)\n"
                      "alert tcp any any -> any any (content:\"one\"; content:!\"neg\"; sid:3;)\n"
                      "alert tcp any any -> any any \\\n  (content:\"ONE\"; sid:4;)\n";
  std::ofstream(b) << "alert udp any any -> any any (content:\"two\"; nocase; content:\"three\"; sid:5;)\n"
                      "alert udp any any -> any any (content:\"bad|zz|\"; sid:6;)\n";
  EXPECT_THROW(load_ids_rules({a, b}), std::runtime_error);
  try {
    load_ids_rules({a, b});
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("b.rules:2:"), std::string::npos) << e.what();
  }
  IdsLoadOptions o;
  o.skip_bad = true;
  const IdsRuleSet s = load_ids_rules({a, b}, o);
  EXPECT_EQ(s.rules.size(), 4u);
  EXPECT_EQ(s.disabled, 1u);
  ASSERT_EQ(s.errors.size(), 1u);
  ASSERT_EQ(s.patterns.size(), 4u);  // one, two (nocase), ONE, three
  EXPECT_EQ(s.patterns[0].bytes, "one");
  EXPECT_EQ(s.patterns[1].bytes, "two");
  EXPECT_TRUE(s.patterns[1].nocase);
  EXPECT_EQ(s.patterns[2].bytes, "ONE");
  EXPECT_EQ(s.patterns[3].bytes, "three");
  EXPECT_EQ(s.rules[2].line, 5u);  // the continued rule starts on line 5
}

TEST(IdsRules, AnOverlongLineIsReportedWithItsNumber) {
  const std::string a = ::testing::TempDir() + "/long.rules";
  std::ofstream(a) << "alert tcp any any -> any any (content:\"" << std::string(70000, 'x') << "\"; sid:1;)\n"
                   << "alert tcp any any -> any any (content:\"ok\"; sid:2;)\n";
  try {
    load_ids_rules({a});
    ADD_FAILURE() << "an overlong line must fail the load";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("long.rules:1: line too long"), std::string::npos) << e.what();
  }
  IdsLoadOptions o;
  o.skip_bad = true;
  const IdsRuleSet s = load_ids_rules({a}, o);
  ASSERT_EQ(s.errors.size(), 1u);
  ASSERT_EQ(s.rules.size(), 1u);
  EXPECT_EQ(s.rules[0].sid, 2u);
  EXPECT_EQ(s.rules[0].line, 2u);
}

TEST(IdsRules, EmergingThreatsLoads) {
  if (et_files().empty()) GTEST_SKIP() << "no ET rules under " << test::shared_data_path("ids");
  const IdsRuleSet& s = et_rules();
  // Two rules of this set are broken (a pcre with one unbalanced quote each): reported, skipped.
  for (const std::string& e : s.errors) std::printf("skipped: %s\n", e.c_str());
  EXPECT_LE(s.errors.size(), 2u);
  EXPECT_GT(s.rules.size(), 15000u);
  EXPECT_GT(s.patterns.size(), 18000u);  // ~20,500 unique contents in enabled rules (data README)
  EXPECT_LT(s.patterns.size(), 23000u);
  std::printf("ET: %zu enabled rules, %llu disabled, %zu patterns, %zu bad lines\n", s.rules.size(),
              static_cast<unsigned long long>(s.disabled), s.patterns.size(), s.errors.size());
}

void expect_same(const AhoCorasick& ac, const std::vector<Pattern>& pats, const std::string& payload, const char* what,
                 size_t* matched) {
  std::vector<uint32_t> got;
  const auto* p = reinterpret_cast<const uint8_t*>(payload.data());
  ac.patterns_in(p, payload.size(), &got);
  const std::vector<uint32_t> want = naive_patterns_in(pats, p, payload.size());
  EXPECT_EQ(got, want) << what;
  *matched += !want.empty();
}

TEST(AhoCorasick, EqualsNaiveSearchOnSmallSets) {
  const std::vector<Pattern> pats = {{"he", false}, {"she", false}, {"his", false}, {"hers", false}, {"HE", true},
                                     {std::string("\x00\xff", 2), false}, {"a", false}, {"aaaa", true}, {"xyz", true}};
  const AhoCorasick ac = AhoCorasick::build(pats);
  size_t m = 0;
  for (const std::string& s : std::vector<std::string>{"ushers", "SHE HErs", std::string("\x00\xff\x00", 3), "AAAAA", "", "xYz", "nothing"}) {
    expect_same(ac, pats, s, s.c_str(), &m);
  }
  uint64_t x = 5;
  for (int i = 0; i < 2000; ++i) {
    std::string s;
    for (int k = 0; k < 40; ++k) s += "aAhHeErsSxyz\x00\xff"[mix64(++x) % 14];
    expect_same(ac, pats, s, "random", &m);
  }
}

TEST(AhoCorasick, EqualsNaiveSearchOnEmergingThreats) {
  if (et_files().empty()) GTEST_SKIP() << "no ET rules";
  const IdsRuleSet& s = et_rules();
  const AhoCorasick ac = AhoCorasick::build(s.patterns);
  std::printf("automaton: %zu states, %u input classes, %.1f MiB\n", ac.states(), ac.classes(), ac.memory_bytes() / 1048576.0);
  size_t matched = 0, payloads = 0;
  // The real captures' TCP/UDP payloads.
  for (const char* cap : {"example", "many-protocols", "tls2"}) {
    for (const std::string& p : capture_payloads(cap, 400)) {
      expect_same(ac, s.patterns, p, cap, &matched);
      ++payloads;
    }
  }
  // Match-heavy: random bytes with patterns spliced in, nocase ones in random case.
  uint64_t x = 17;
  for (int i = 0; i < 150; ++i) {
    expect_same(ac, et_rules().patterns, random_payload(et_rules().patterns, 1400, true, x), "match-heavy", &matched);
    ++payloads;
  }
  EXPECT_GT(matched, 150u) << "the match-heavy payloads must match";
  // The batched, lockstep walk gives every payload the same ids (several batch and group sizes).
  std::vector<std::string> pays;
  for (int i = 0; i < 500; ++i) {
    std::string s;
    const size_t n = mix64(++x) % 1500;
    while (s.size() < n) {
      const Pattern& pt = et_rules().patterns[mix64(++x) % et_rules().patterns.size()];
      s += mix64(++x) % 4 == 0 ? pt.bytes : std::string(1, static_cast<char>(mix64(++x)));
    }
    pays.push_back(s);
  }
  std::vector<const uint8_t*> ptr;
  std::vector<uint32_t> lens;
  for (const auto& pay : pays) {
    ptr.push_back(reinterpret_cast<const uint8_t*>(pay.data()));
    lens.push_back(static_cast<uint32_t>(pay.size()));
  }
  // The outputs are reused from run to run, and start with stale ids: each must be cleared first.
  std::vector<std::vector<uint32_t>> got(pays.size(), std::vector<uint32_t>{999999});
  for (auto [batch, group] : {std::pair<size_t, size_t>{8192, 16}, {8192, 8}, {64, 32}, {100, 7}, {1, 1}, {33, 64}}) {
    ac.patterns_in_batch(ptr.data(), lens.data(), pays.size(), got.data(), batch, group);
    for (size_t i = 0; i < pays.size(); ++i) {
      std::vector<uint32_t> want;
      ac.patterns_in(ptr[i], lens[i], &want);
      ASSERT_EQ(got[i], want) << "payload " << i << " batch " << batch << " group " << group;
    }
  }
  std::printf("%zu payloads, %zu with a match\n", payloads, matched);
}

IdsRule rule_of(const std::string& options) {
  IdsRule r;
  std::string why;
  std::map<std::string, uint64_t> ignored;
  uint64_t unknown = 0;
  EXPECT_TRUE(parse_ids_rule("alert tcp any any -> any any (" + options + " sid:1;)", &r, &why, &ignored, &unknown)) << why;
  return r;
}

bool holds(const std::string& options, const std::string& payload) {
  const IdsRule r = rule_of(options);
  return contents_hold(r, reinterpret_cast<const uint8_t*>(payload.data()), static_cast<uint32_t>(payload.size()));
}

// Payloads of every kind the benches use: real captures, random bytes, match-heavy (patterns in
// random case spliced in), and some with so many patterns that the GPU's per-thread list overflows.
std::vector<std::string> mixed_payloads(size_t n) {
  std::vector<std::string> pays;
  for (const char* cap : {"example", "many-protocols", "tls2"}) {
    for (std::string& p : capture_payloads(cap, 300)) pays.push_back(std::move(p));
  }
  uint64_t x = 99;
  while (pays.size() < n) {
    const uint64_t kind = mix64(++x) % 4;
    const size_t want = kind == 3 ? 9000 : mix64(++x) % 1500;
    pays.push_back(random_payload(et_rules().patterns, want, kind >= 2, x));
  }
  return pays;
}

TEST(AhoCorasick, MatchFreeTrafficHasNoPattern) {
  if (et_files().empty()) GTEST_SKIP() << "no ET rules";
  const AhoCorasick ac = AhoCorasick::build(et_rules().patterns);
  GenSpec spec;
  spec.count = 300;
  spec.frame_size = 700;
  PacketStore st = generate(spec);
  make_match_free(st, ac);
  size_t with_payload = 0;
  for (size_t i = 0; i < st.size(); ++i) {
    const PacketInfo pi = packet_info(st.frame(i), st.caplen[i]);
    if (!pi.payload) continue;
    ++with_payload;
    EXPECT_TRUE(naive_patterns_in(et_rules().patterns, pi.payload, pi.len).empty()) << "packet " << i;
  }
  EXPECT_EQ(with_payload, st.size());
  // And splicing patterns in makes it match again.
  make_match_heavy(st, et_rules().patterns, 0.2);
  size_t matched = 0;
  for (size_t i = 0; i < st.size(); ++i) {
    const PacketInfo pi = packet_info(st.frame(i), st.caplen[i]);
    matched += !naive_patterns_in(et_rules().patterns, pi.payload, pi.len).empty();
  }
  EXPECT_GT(matched, st.size() * 9 / 10);
}

TEST(AhoCorasickGpu, EqualsCpuOnEmergingThreats) {
  std::string why;
  if (!gpu::available(&why)) GTEST_SKIP() << "no GPU: " << why;
  if (et_files().empty()) GTEST_SKIP() << "no ET rules";
  const AhoCorasick ac = AhoCorasick::build(et_rules().patterns);
  const std::vector<std::string> pays = mixed_payloads(4000);
  std::vector<const uint8_t*> ptr;
  std::vector<uint32_t> lens;
  for (const auto& pay : pays) {
    ptr.push_back(reinterpret_cast<const uint8_t*>(pay.data()));
    lens.push_back(static_cast<uint32_t>(pay.size()));
  }
  // Small batches: many batches through both slots; large: one batch.
  for (size_t batch_bytes : {size_t{1} << 17, size_t{16} << 20}) {
    auto g = AhoCorasickGpu::create(ac, batch_bytes);
    std::vector<std::vector<uint32_t>> got(pays.size(), std::vector<uint32_t>{999999});
    g->patterns_in_batch(ptr.data(), lens.data(), pays.size(), got.data());
    size_t matched = 0;
    for (size_t i = 0; i < pays.size(); ++i) {
      std::vector<uint32_t> want;
      ac.patterns_in(ptr[i], lens[i], &want);
      ASSERT_EQ(got[i], want) << "payload " << i << " (" << lens[i] << " bytes), batch bytes " << batch_bytes;
      matched += !want.empty();
    }
    EXPECT_GT(g->stats().cpu_fallbacks, 0u) << "the 9000-byte match-heavy payloads overflow the per-thread list";
    EXPECT_GT(matched, pays.size() / 3);
    if (batch_bytes == (size_t{1} << 17)) EXPECT_GT(g->stats().batches, 10u);
    std::printf("batch bytes %zu: %zu batches, %zu CPU fallbacks, kernels %.2f ms\n", batch_bytes, g->stats().batches,
                g->stats().cpu_fallbacks, g->stats().kernel_ms);
  }
}

TEST(DpiStage2, EachModifier) {
  // offset and depth: [offset, offset + depth) of the payload.
  EXPECT_TRUE(holds(R"(content:"abc"; offset:2;)", "xxabc"));
  EXPECT_FALSE(holds(R"(content:"abc"; offset:3;)", "xxabc"));
  EXPECT_TRUE(holds(R"(content:"abc"; depth:5;)", "xxabc"));
  EXPECT_FALSE(holds(R"(content:"abc"; depth:4;)", "xxabc"));
  EXPECT_TRUE(holds(R"(content:"abc"; offset:1; depth:4;)", "xxabc"));
  EXPECT_FALSE(holds(R"(content:"abc"; offset:1; depth:3;)", "xxabc"));
  // nocase.
  EXPECT_FALSE(holds(R"(content:"ABC";)", "xxabc"));
  EXPECT_TRUE(holds(R"(content:"ABC"; nocase;)", "xxabc"));
  // distance and within: from the previous match's end, within counted after distance.
  EXPECT_TRUE(holds(R"(content:"ab"; content:"cd"; distance:2;)", "ab..cd"));
  EXPECT_FALSE(holds(R"(content:"ab"; content:"cd"; distance:3;)", "ab..cd"));
  EXPECT_TRUE(holds(R"(content:"ab"; content:"cd"; within:4;)", "ab..cd"));
  EXPECT_FALSE(holds(R"(content:"ab"; content:"cd"; within:3;)", "ab..cd"));
  EXPECT_TRUE(holds(R"(content:"ab"; content:"cd"; distance:1; within:3;)", "ab..cd"));
  EXPECT_FALSE(holds(R"(content:"ab"; content:"cd"; distance:1; within:2;)", "ab..cd"));
  EXPECT_TRUE(holds(R"(content:"cd"; content:"ab"; distance:-6;)", "ab..cd"));  // negative distance looks back
  EXPECT_TRUE(holds(R"(content:"ab"; content:"cd";)", "cd..ab"));  // without relative modifiers: anywhere
  // Every way of matching earlier contents is tried: the first "ab" fails within, the second fits.
  EXPECT_TRUE(holds(R"(content:"ab"; content:"cd"; within:2;)", "ab....abcd"));
  // Negated contents: absent where they would be searched; they do not move the anchor.
  EXPECT_FALSE(holds(R"(content:"ab"; content:!"cd";)", "ab..cd"));
  EXPECT_TRUE(holds(R"(content:"ab"; content:!"cd"; within:3;)", "ab..cd"));
  EXPECT_TRUE(holds(R"(content:"ab"; content:!"zz"; content:"cd"; distance:2; within:2;)", "ab..cd"));
  // Hex bytes.
  EXPECT_TRUE(holds(R"(content:"|00 01|A"; offset:1;)", std::string("x\x00\x01" "A", 4)));
}

// The engine (port groups, one automaton per group, candidates by their first pattern) against
// every rule evaluated on its own.
std::vector<uint32_t> brute_force(const IdsRuleSet& s, const PacketInfo& p) {
  std::vector<uint32_t> sids;
  for (const IdsRule& r : s.rules) {
    if (rule_applies(r, p) && contents_hold(r, p.bytes(), p.len)) {
      sids.push_back(r.sid);
    }
  }
  std::sort(sids.begin(), sids.end());
  sids.erase(std::unique(sids.begin(), sids.end()), sids.end());
  return sids;
}

// Frames that match rules: for random ET rules, a payload made of the rule's positive contents in
// order (3 random bytes before each), to one of the ports rules name, over TCP or UDP.
std::vector<std::vector<uint8_t>> rule_frames(const IdsRuleSet& s, int count, uint64_t x) {
  const uint16_t kPorts[] = {80, 443, 25, 53, 21, 8080, 1234};
  std::vector<std::vector<uint8_t>> frames;
  for (int i = 0; i < count; ++i) {
    const IdsRule& r = s.rules[mix64(++x) % s.rules.size()];
    GenFlow f;
    f.dst[0] = 10;
    f.src[0] = 192;
    f.sport = 40000;
    f.dport = kPorts[mix64(++x) % 7];
    for (const Content& c : r.contents) {
      if (c.negated) continue;
      for (int k = 0; k < 3; ++k) f.payload.push_back(static_cast<uint8_t>(mix64(++x)));
      f.payload.insert(f.payload.end(), c.bytes.begin(), c.bytes.end());
    }
    const uint8_t proto = mix64(++x) % 2 ? 6 : 17;
    std::vector<uint8_t> frame(min_frame_len(f, proto) + 8);
    write_flow_frame(frame.data(), static_cast<uint32_t>(frame.size()), f, proto, i);
    frames.push_back(std::move(frame));
  }
  return frames;
}

TEST(DpiStage2, ManyRelativeContentsStayWithinTheInspectionBudget) {
  // Eight relative contents that all occur everywhere, then one that never does: every way of
  // placing the first eight would be tried (64^8 searches) without the per-rule budget. Found by
  // ids_rules_fuzz (a timeout on a rule file read as its own payload).
  std::string options;
  for (int i = 0; i < 8; ++i) options += i ? "content:\"a\"; distance:0;" : "content:\"a\";";
  options += " content:\"b\"; distance:0;";
  EXPECT_FALSE(holds(options, std::string(4000, 'a')));
  // Within the budget the search is complete: the b after the a's is found.
  EXPECT_TRUE(holds(options, std::string(20, 'a') + "b"));
}

TEST(DpiStage2, EngineEqualsEveryRuleOnItsOwn) {
  if (et_files().empty()) GTEST_SKIP() << "no ET rules";
  const IdsRuleSet& s = et_rules();
  const DpiEngine engine(s);
  size_t packets = 0, matched = 0;
  std::vector<uint32_t> got;
  for (const char* cap : {"example", "many-protocols", "tls2"}) {
    const PacketStore st = load_pcap(test::source_path(std::string("data/pcap/") + cap + ".pcap"), 150);
    for (size_t i = 0; i < st.size(); ++i) {
      const PacketInfo p = packet_info(st.frame(i), st.caplen[i]);
      engine.match(p, &got);
      EXPECT_EQ(got, brute_force(s, p)) << cap << " packet " << i + 1;
      matched += !got.empty();
      ++packets;
    }
  }
  // Match-heavy frames on the ports the rules name: payloads made of a rule's contents in order.
  for (const auto& frame : rule_frames(s, 200, 3)) {
    const PacketInfo p = packet_info(frame.data(), static_cast<uint32_t>(frame.size()));
    engine.match(p, &got);
    EXPECT_EQ(got, brute_force(s, p)) << "frame " << packets;
    matched += !got.empty();
    ++packets;
  }
  EXPECT_GT(matched, 50u);
  std::printf("%zu packets, %zu with a matching rule; %zu port groups\n", packets, matched, engine.groups());
}

// The packets the batched and GPU stage-2 paths are compared on: the real captures, frames built
// from rules (on the rules' ports), and generated traffic with patterns spliced in.
struct Stage2Packets {
  std::vector<PacketStore> stores;
  std::vector<std::vector<uint8_t>> frames;
  std::vector<PacketInfo> info;
};

const Stage2Packets& stage2_packets() {
  static const Stage2Packets* pk = [] {
    auto* k = new Stage2Packets;
    for (const char* cap : {"example", "many-protocols", "tls2"}) {
      k->stores.push_back(load_pcap(test::source_path(std::string("data/pcap/") + cap + ".pcap"), 300));
    }
    PacketStore gen = generate(parse_gen_spec("count=3000,size=600,proto=tcp,flows=500,seed=5"));
    make_match_heavy(gen, et_rules().patterns, 0.2);
    k->stores.push_back(std::move(gen));
    k->frames = rule_frames(et_rules(), 1500, 11);
    for (const PacketStore& st : k->stores) {
      for (size_t i = 0; i < st.size(); ++i) k->info.push_back(packet_info(st.frame(i), st.caplen[i]));
    }
    for (const auto& f : k->frames) k->info.push_back(packet_info(f.data(), static_cast<uint32_t>(f.size())));
    return k;
  }();
  return *pk;
}

TEST(DpiStage2, BatchedAndFromPatternsEqualOnePacketAtATime) {
  if (et_files().empty()) GTEST_SKIP() << "no ET rules";
  const DpiEngine engine(et_rules());
  const std::vector<PacketInfo>& info = stage2_packets().info;
  std::vector<std::vector<uint32_t>> want(info.size());
  size_t matched = 0;
  for (size_t i = 0; i < info.size(); ++i) {
    engine.match(info[i], &want[i]);
    matched += !want[i].empty();
  }
  EXPECT_GT(matched, 1000u);
  // Outputs start with stale sids: each must be cleared first.
  std::vector<std::vector<uint32_t>> got(info.size(), std::vector<uint32_t>{7});
  for (auto [batch, group] : {std::pair<size_t, size_t>{8192, 32}, {8192, 16}, {100, 7}, {1, 1}, {333, 64}}) {
    engine.match_batch(info.data(), info.size(), got.data(), batch, group);
    for (size_t i = 0; i < info.size(); ++i) ASSERT_EQ(got[i], want[i]) << "packet " << i << ", batch " << batch << ", group " << group;
  }
  std::vector<uint32_t> ids, sids{7};
  for (size_t i = 0; i < info.size(); ++i) {
    engine.patterns_in(info[i], &ids);
    engine.match_from_patterns(info[i], ids, &sids);
    ASSERT_EQ(sids, want[i]) << "packet " << i;
  }
  std::printf("%zu packets, %zu with a matching rule\n", info.size(), matched);
}

TEST(DpiStage2Gpu, GpuPatternsThenRulesEqualOnePacketAtATime) {
  std::string why;
  if (!gpu::available(&why)) GTEST_SKIP() << "no GPU: " << why;
  if (et_files().empty()) GTEST_SKIP() << "no ET rules";
  const DpiEngine engine(et_rules());
  const std::vector<PacketInfo>& info = stage2_packets().info;
  std::vector<const uint8_t*> ptr;
  std::vector<uint32_t> len;
  for (const PacketInfo& p : info) {
    ptr.push_back(p.bytes());
    len.push_back(p.len);
  }
  auto g = AhoCorasickGpu::create(engine.all_patterns());
  std::vector<std::vector<uint32_t>> ids(info.size());
  g->patterns_in_batch(ptr.data(), len.data(), info.size(), ids.data());
  std::vector<uint32_t> want, got;
  size_t matched = 0;
  for (size_t i = 0; i < info.size(); ++i) {
    engine.match(info[i], &want);
    engine.match_from_patterns(info[i], ids[i], &got);
    ASSERT_EQ(got, want) << "packet " << i;
    matched += !want.empty();
  }
  EXPECT_GT(matched, 1000u);
}

}  // namespace
}  // namespace tandem::dpi
