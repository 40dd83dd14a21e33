// The dpi app: the flat program (dpi_program.h, what the GPU runs) matches exactly the rules
// DpiEngine matches (the CPU paths), rule by rule, on the real Emerging Threats rules over real
// captures, generated match-free and match-heavy payloads and payloads made to exhaust the
// inspection budget; verdicts follow the actions' order and the policy; bytes DPI cannot see
// never pass as clean; bad rule sets are refused. The paths of the app as a whole (scalar,
// batched, items, whole frames, GPU) are tests/apps_pipeline_test.cc's, over the cases the app
// registers.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "apps/dpi/dpi_app.h"
#include "apps/dpi/dpi_item_gpu.h"
#include "apps/dpi/dpi_test_frames.h"
#include "apps/dpi/dpi_test_rules.h"
#include "apps/registry.h"
#include "core/checksum.h"
#include "core/parse.h"
#include "gpu/gpu_runtime.h"
#include "io/pcap_io.h"
#include "io/traffic_gen.h"
#include "tests/test_util.h"

namespace tandem::dpi {
namespace {

using Bytes = std::vector<uint8_t>;

using test_rules::et_files;

const DpiTables& et_tables() {
  static const DpiTables* t = [] {
    IdsLoadOptions o;
    o.skip_bad = true;
    return new DpiTables(load_ids_rules(et_files(), o));
  }();
  return *t;
}

DpiTables tables_of(const std::string& text) {
  const std::string path = test::write_temp_file("dpi_app", "rules.rules", text);
  return DpiTables(load_ids_rules({path}));
}

// The rules the flat program matches (sorted, unique), and its action bits.
std::vector<uint32_t> flat_rules(const DpiTables& t, const DpiKey& k, uint32_t* bits) {
  std::vector<uint32_t> got;
  auto note = [&got](uint32_t r) { got.push_back(r); };
  *bits = flat_match(t.program(), FlatPacket{k.payload, k.len, k.proto, k.sport, k.dport}, kFlatMaxTries,
                     kFlatMaxInspections, note);
  std::sort(got.begin(), got.end());
  got.erase(std::unique(got.begin(), got.end()), got.end());
  return got;
}

// Every inspected packet of the store: the same rules from both, the same action bits. Returns how
// many matched a rule; *crowded gets how many had more distinct patterns than the flat program
// keeps (its second walk).
size_t expect_same_rules(const DpiTables& t, const PacketStore& s, const std::string& what, size_t* crowded = nullptr) {
  size_t matched = 0;
  std::vector<uint32_t> want, ids;
  for (size_t i = 0; i < s.size(); ++i) {
    DpiKey k{};
    uint16_t l3 = 0;
    uint32_t flow = 0;
    if (dpi_classify(s.frame(i), s.caplen[i], &k, &l3, &flow) != DropReason::kNone || !k.inspect) continue;
    const PacketInfo p = packet_info_of(k);
    t.engine().match_rules(p, &want);
    uint32_t bits = 0;
    const std::vector<uint32_t> got = flat_rules(t, k, &bits);
    EXPECT_EQ(got, want) << what << " packet " << i;
    EXPECT_EQ(bits, t.action_bits(want)) << what << " packet " << i;
    EXPECT_EQ(engine_result(t, k), bits) << what << " packet " << i;
    matched += !want.empty();
    if (crowded) {
      t.engine().patterns_in(p, &ids);
      *crowded += ids.size() > kFoundSlots;
    }
    if (::testing::Test::HasFailure()) return matched;
  }
  return matched;
}

TEST(DpiProgram, MatchesTheEnginesRulesOnRealCaptures) {
  const DpiTables& t = et_tables();
  size_t matched = 0;
  for (const char* cap : {"example", "many-protocols", "tls2"}) {
    matched += expect_same_rules(t, load_pcap(test::source_path(std::string("data/pcap/") + cap + ".pcap")), cap);
  }
  EXPECT_GT(matched, 0u) << "real traffic that matches no rule tests little";
}

TEST(DpiProgram, MatchesTheEnginesRulesOnGeneratedTraffic) {
  const DpiTables& t = et_tables();
  LoadedApp a;
  for (const char* heavy : {"0", "0.05", "0.5", "1"}) {
    AppArgs args;
    args.set("ids-rules", test::source_path("data/ids/et_open_2019-04-15"));
    args.set("ids-skip-bad", "on");
    args.set("match-heavy", heavy);
    a = load_app("dpi", args);
    const PacketStore s = a.generate(parse_gen_spec("count=3000,flows=0,proto=tcp,size=imix,seed=7"));
    size_t crowded = 0;
    const size_t m = expect_same_rules(t, s, std::string("match-heavy ") + heavy, &crowded);
    if (std::string(heavy) == "0") {
      EXPECT_EQ(m, 0u) << "match-free traffic matched";
    } else {
      EXPECT_GT(m, 100u) << heavy;
    }
    if (std::string(heavy) == "1") EXPECT_GT(crowded, 10u) << "payloads with more patterns than the program keeps";
  }
}

using test_frames::frame;

uint32_t verdict_of(const ForwardApp& app, Bytes f) { return app.forward_frame(f.data(), uint32_t(f.size())); }

TEST(DpiApp, VerdictsFollowTheActionsOrderAndThePolicy) {
  const DpiTables t = tables_of(
      "alert tcp any any -> any 80 (msg:\"a\"; content:\"evil\"; sid:1;)\n"
      "drop tcp any any -> any 80 (msg:\"d\"; content:\"worse\"; sid:2;)\n"
      "pass tcp any any -> any 80 (msg:\"p\"; content:\"trusted\"; sid:3;)\n"
      "alert udp any any -> any any (msg:\"n\"; content:!\"hello\"; sid:4;)\n");
  for (bool drop_alerts : {false, true}) {
    DpiPolicy pol;
    pol.drop_alerts = drop_alerts;
    const auto app = make_dpi_app(t, pol);
    const uint32_t alert = drop_alerts ? Verdict::drop(kDpiRuleDrop) : Verdict::port(kAlertPort);
    EXPECT_EQ(verdict_of(*app, frame("nothing here")), Verdict::port(kCleanPort));
    EXPECT_EQ(verdict_of(*app, frame("an evil payload")), alert);
    EXPECT_EQ(verdict_of(*app, frame("evil, worse")), Verdict::drop(kDpiRuleDrop));
    EXPECT_EQ(verdict_of(*app, frame("evil, worse, trusted")), Verdict::port(kCleanPort)) << "pass wins";
    EXPECT_EQ(verdict_of(*app, frame("an evil payload", 81)), Verdict::port(kCleanPort)) << "other port";
    // A rule of negated contents only: evaluated for every packet.
    EXPECT_EQ(verdict_of(*app, frame("bye", 53, 17)), alert);
    EXPECT_EQ(verdict_of(*app, frame("hello", 53, 17)), Verdict::port(kCleanPort));
    // The CPU paths agree (DpiEngine), frame by frame.
    for (const std::string p : {"nothing", "evil", "evil worse", "worse trusted evil"}) {
      Bytes f = frame(p);
      DpiKey k{};
      uint16_t l3 = 0;
      uint32_t flow = 0;
      ASSERT_EQ(dpi_classify(f.data(), uint32_t(f.size()), &k, &l3, &flow), DropReason::kNone);
      EXPECT_EQ(dpi_verdict(engine_result(t, k), pol), verdict_of(*app, f)) << p;
    }
  }
}

TEST(DpiApp, BytesItCannotSeeNeverPassAsClean) {
  const DpiTables t = tables_of("alert tcp any any -> any any (msg:\"a\"; content:\"evil\"; sid:1;)\n");
  const auto ips = make_dpi_app(t, DpiPolicy{});
  DpiPolicy fwd;
  fwd.forward_uninspected = 1;
  const auto ids = make_dpi_app(t, fwd);
  // The pattern in a later fragment (offset 8 bytes): its bytes continue the first fragment's.
  const Bytes later = frame("xxevil", 80, 6, 0x10);
  EXPECT_EQ(verdict_of(*ips, later), Verdict::drop(kDpiNotInspected));
  EXPECT_EQ(verdict_of(*ids, later), Verdict::port(kUninspectedPort));
  // A first fragment with a whole header is inspected as far as it goes.
  EXPECT_EQ(verdict_of(*ids, frame("an evil start", 80, 6, 0x2000)), Verdict::port(kAlertPort));
  EXPECT_EQ(verdict_of(*ids, frame("a clean start", 80, 6, 0x2000)), Verdict::port(kCleanPort));
  // A malformed transport header (UDP length past the datagram).
  Bytes bad_udp = frame("evil", 53, 17);
  bad_udp[14 + 20 + 4] = 0x7F;
  EXPECT_EQ(verdict_of(*ips, bad_udp), Verdict::drop(kDpiNotInspected));
  // Not IP at all: the parser's drop, as every app.
  Bytes arp = frame("evil");
  arp[12] = 0x08;
  arp[13] = 0x06;
  EXPECT_EQ(verdict_of(*ips, arp), Verdict::drop(DropReason::kNotIp));
}

TEST(DpiProgram, AgreesWithTheEngineWhereTheInspectionBudgetRunsOut) {
  // Relative contents over a payload of one repeated byte: every occurrence of each content is
  // tried, 64 per content, until the budget of 3000 searches is spent; the last content never
  // occurs, so the rule fails either way, and a variant whose last content does occur late shows
  // whether both stop at the same point.
  std::string r;
  for (int k = 0; k < 6; ++k) r += "content:\"aa\"; distance:0; ";
  const DpiTables t = tables_of("alert tcp any any -> any any (msg:\"x\"; " + r + "content:\"b\"; distance:0; sid:1;)\n" +
                                "alert tcp any any -> any any (msg:\"y\"; " + r + "content:\"aaab\"; within:400; sid:2;)\n" +
                                "alert tcp any any -> any any (msg:\"z\"; content:\"aa\"; content:\"ab\"; distance:0; sid:3;)\n");
  PacketStore s;
  for (size_t n : {16, 200, 1000, 1400}) {
    for (const std::string tail : {"", "b", "ab", "aaab"}) {
      const Bytes f = frame(std::string(n, 'a') + tail);
      s.add(f.data(), uint32_t(f.size()), uint32_t(f.size()), 0);
    }
  }
  EXPECT_GT(expect_same_rules(t, s, "budget"), 0u);
  // Where the budget decides: rule y's chain holds within 200,000 searches but not within 3,000,
  // and both implementations stop at 3,000.
  const FlatRule* y = nullptr;
  for (uint64_t k = 0; k < t.program().rule_count; ++k) {
    if (t.rules().rules[t.program().rules[k].index].sid == 2) y = &t.program().rules[k];
  }
  ASSERT_NE(y, nullptr);
  for (size_t n : {524, 532, 540}) {
    const std::string pl = std::string(n, 'a') + "aaab";
    const auto* b = reinterpret_cast<const uint8_t*>(pl.data());
    EXPECT_TRUE(flat_contents_hold(t.program(), *y, b, uint32_t(pl.size()), kFlatMaxTries, 200000)) << n;
    EXPECT_FALSE(flat_contents_hold(t.program(), *y, b, uint32_t(pl.size()), kFlatMaxTries, kFlatMaxInspections)) << n;
    EXPECT_FALSE(contents_hold(t.rules().rules[y->index], b, uint32_t(pl.size()))) << n;
    const Bytes f = frame(pl);
    s.add(f.data(), uint32_t(f.size()), uint32_t(f.size()), 0);
  }
  expect_same_rules(t, s, "budget decides");
}

TEST(DpiApp, RefusesRulesItCannotRunAsWritten) {
  EXPECT_THROW(tables_of("block tcp any any -> any any (msg:\"x\"; content:\"a\"; sid:1;)\n"), std::invalid_argument);
  std::string many;
  for (uint32_t k = 0; k <= kMaxRuleContents; ++k) many += "content:\"c" + std::to_string(k) + "\"; ";
  EXPECT_THROW(tables_of("alert tcp any any -> any any (msg:\"x\"; " + many + "sid:1;)\n"), std::invalid_argument);
  AppArgs args;
  args.set("ids-rules", test::write_temp_file("dpi_app", "bad.rules", "block tcp any any -> any any (content:\"a\"; sid:9;)\n"));
  EXPECT_THROW(load_app("dpi", args), UsageError);
  AppArgs empty_dir;
  const std::string dir = std::filesystem::path(test::write_temp_file("dpi_app_dir", "notes.txt", "x")).parent_path().string();
  empty_dir.set("ids-rules", dir);
  EXPECT_THROW(load_app("dpi", empty_dir), UsageError);
}

TEST(DpiProgram, TheGpuMatchesTheFlatProgramOnItems) {
  TANDEM_REQUIRE_GPU();
  const DpiTables& t = et_tables();
  AppArgs args;
  args.set("ids-rules", test::source_path("data/ids/et_open_2019-04-15"));
  args.set("ids-skip-bad", "on");
  args.set("match-heavy", "0.3");
  LoadedApp a = load_app("dpi", args);
  const PacketStore s = a.generate(parse_gen_spec("count=20000,flows=0,proto=tcp,size=512,seed=9"));
  std::vector<DpiItem> items;
  for (size_t i = 0; i < s.size(); ++i) {
    DpiKey k{};
    uint16_t l3 = 0;
    uint32_t flow = 0;
    if (dpi_classify(s.frame(i), s.caplen[i], &k, &l3, &flow) != DropReason::kNone) continue;
    make_dpi_item(k, &items.emplace_back());
  }
  std::vector<uint32_t> want(items.size()), got(items.size());
  size_t alerts = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    want[i] = dpi_item_result(t.program(), items[i]);
    alerts += want[i] != 0 && want[i] != kResultOnWorker;
  }
  auto gpu = DpiGpuProgram::create(DpiCore{t.program(), DpiPolicy{}});
  gpu::OffloadOptions o;
  o.capacity = 1000;
  auto runner = gpu->make_runner(o);
  gpu::run_all(*runner, items.data(), got.data(), items.size());
  EXPECT_EQ(got, want);
  EXPECT_GT(alerts, 100u);
}

}  // namespace
}  // namespace tandem::dpi
