// Live rule updates (dpi_control.h): the commands and their errors, one build per batch, and
// random batches checked against a reference: each rule searched for on its own
// (rule_applies, contents_hold) over the rules the commands leave, on every CPU path of the app and
// on the flat program (forward_frame).
#include "apps/dpi/dpi_control.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "apps/dpi/dpi_app.h"
#include "apps/dpi/dpi_test_frames.h"
#include "core/packet_pool.h"
#include "tests/test_util.h"

namespace tandem::dpi {
namespace {

using test_frames::frame;
using Bytes = std::vector<uint8_t>;

DpiTables tables_of(const std::string& text) {
  return DpiTables(load_ids_rules({tandem::test::write_temp_file("dpi_control", "rules.rules", text)}));
}

// The verdicts of frames through the app's scalar or batched path.
std::vector<uint32_t> forward(const ForwardApp& app, const std::vector<Bytes>& frames, bool batched) {
  std::vector<uint32_t> v;
  PacketPool pool(PacketBatch::kCapacity);
  Counters c(app.ports());
  for (size_t base = 0; base < frames.size(); base += PacketBatch::kCapacity) {
    PacketBatch b;
    b.size = static_cast<uint32_t>(std::min<size_t>(PacketBatch::kCapacity, frames.size() - base));
    for (uint32_t i = 0; i < b.size; ++i) {
      const Bytes& f = frames[base + i];
      b.cell[i] = i;
      b.len[i] = static_cast<uint16_t>(f.size());
      b.wire_len[i] = static_cast<uint32_t>(f.size());
      std::copy(f.begin(), f.end(), pool.data(i));
    }
    if (batched) {
      app.forward_batched(pool, b, c);
    } else {
      app.forward_scalar(pool, b, c);
    }
    v.insert(v.end(), b.verdict.begin(), b.verdict.begin() + b.size);
  }
  return v;
}

uint32_t verdict_of(const ForwardApp& app, const Bytes& f, bool batched) { return forward(app, {f}, batched)[0]; }

TEST(RuleControl, CommandsAndErrors) {
  const DpiTables t = tables_of(
      "alert tcp any any -> any 80 (msg:\"a\"; content:\"alpha\"; sid:1;)\n"
      "drop tcp any any -> any any (msg:\"b\"; content:\"bravo\"; sid:2;)\n"
      "alert udp any any -> any any (content:\"dup\"; sid:3;)\n"
      "alert udp any any -> any any (content:\"twin\"; sid:3;)\n");
  std::unique_ptr<ForwardApp> app = make_dpi_app(t, DpiPolicy{});
  auto* tc = dynamic_cast<RuleControl*>(app->table_control());
  ASSERT_NE(tc, nullptr);
  EXPECT_EQ(app->table_control(), tc) << "made once";
  const Bytes charlie = frame("a charlie payload", 8080);
  const Bytes bravo = frame("bravo", 8080);
  const Bytes twin = frame("twin", 53, 17);
  for (bool batched : {false, true}) {
    EXPECT_EQ(verdict_of(*app, charlie, batched), Verdict::port(kCleanPort));
    EXPECT_EQ(verdict_of(*app, bravo, batched), Verdict::drop(kDpiRuleDrop));
    EXPECT_EQ(verdict_of(*app, twin, batched), Verdict::port(kAlertPort));
  }
  const std::vector<std::string> lines = {
      "add alert tcp any any -> any any (msg:\"c\"; content:\"charlie\"; sid:10;)",  // 0
      "add alert tcp any any -> any any (content:\"x\"; sid:10;)",                  // 1
      "add alert tcp any any -> any any (content:\"x\";)",                          // 2
      "add frobnicate tcp any any -> any any (content:\"x\"; sid:11;)",             // 3
      "add alert tcp any any -> any any (content:\"x\"; sid:12;) trailing",         // 4
      "del 999",                                                                     // 5
      "del abc",                                                                     // 6
      "del 0",                                                                       // 7
      "del 1 2",                                                                     // 8
      "del",                                                                         // 9
      "frob",                                                                        // 10
      "del 3",                                                                       // 11: both rules of sid 3
      "add bogus",                                                                   // 12
      "del 2",                                                                       // 13
      "add alert tcp any any -> any any (content:\"bravo\"; sid:2;)",               // 14: sid 2 again, now alert
      "add alert tcp any any -> any 80 (content:\"x\"; sid:99999999999;)",          // 15
      "add alert xyz any any -> any any (content:\"x\"; sid:13;)",                  // 16
      "add alert tcp any any -> any any (content:\"\"; sid:14;)",                   // 17
      "  add   alert udp any any -> any 53 (content:\"twin\"; sid:15;)  ",          // 18
  };
  const auto r = tc->apply(lines);
  ASSERT_EQ(r.size(), lines.size());
  EXPECT_EQ(r[0], "");
  EXPECT_EQ(r[1], "add: sid 10 is there already");
  EXPECT_EQ(r[2], "add: no sid");
  EXPECT_NE(r[3].find("add: action `frobnicate`"), std::string::npos) << r[3];
  EXPECT_EQ(r[4], "add: text after the rule's option list");
  EXPECT_EQ(r[5], "del: no rule with sid 999");
  EXPECT_NE(r[6].find("del: bad sid 'abc'"), std::string::npos) << r[6];
  EXPECT_NE(r[7].find("del: bad sid '0'"), std::string::npos) << r[7];
  EXPECT_EQ(r[8], "del: unexpected words after the sid");
  EXPECT_EQ(r[9], "del: missing SID");
  EXPECT_NE(r[10].find("unknown command 'frob'"), std::string::npos) << r[10];
  EXPECT_EQ(r[11], "");
  EXPECT_EQ(r[12], "add: no option list in parentheses");
  EXPECT_EQ(r[13], "");
  EXPECT_EQ(r[14], "");
  EXPECT_NE(r[15].find("bad sid"), std::string::npos) << r[15];
  EXPECT_NE(r[16].find("unknown protocol"), std::string::npos) << r[16];
  EXPECT_NE(r[17].find("empty content"), std::string::npos) << r[17];
  EXPECT_EQ(r[18], "");
  EXPECT_EQ(tc->version(), 5u);
  EXPECT_EQ(tc->builds(), 1u) << "one build per batch";
  EXPECT_EQ(tc->tables().rules().rules.size(), 4u);
  for (bool batched : {false, true}) {
    EXPECT_EQ(verdict_of(*app, charlie, batched), Verdict::port(kAlertPort));
    EXPECT_EQ(verdict_of(*app, bravo, batched), Verdict::port(kAlertPort)) << "sid 2 is an alert now";
    EXPECT_EQ(verdict_of(*app, twin, batched), Verdict::port(kAlertPort)) << "sid 15";
    EXPECT_EQ(verdict_of(*app, frame("dup", 53, 17), batched), Verdict::port(kCleanPort)) << "sid 3 is gone";
  }
  EXPECT_EQ(app->forward_frame(Bytes(charlie).data(), uint32_t(charlie.size())), Verdict::port(kAlertPort))
      << "the flat program follows too";
  // A batch of refused lines builds nothing and publishes nothing.
  EXPECT_EQ(tc->apply({"del 999", "add alert tcp any any -> any any (content:\"x\"; sid:10;)"})[0],
            "del: no rule with sid 999");
  EXPECT_EQ(tc->builds(), 1u);
  EXPECT_EQ(tc->version(), 5u);
  // Added, then deleted within one batch: never there, but the batch counts both.
  const auto r2 = tc->apply({"add alert tcp any any -> any any (content:\"delta\"; sid:20;)", "del 20", "del 10"});
  EXPECT_EQ(r2, (std::vector<std::string>{"", "", ""}));
  EXPECT_EQ(tc->version(), 8u);
  EXPECT_EQ(tc->builds(), 2u);
  EXPECT_EQ(verdict_of(*app, frame("delta charlie", 8080), true), Verdict::port(kCleanPort));
}

// Random rules over a small vocabulary, so that packets match several at once.
const std::vector<std::string> kWords = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
                                         "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"};

std::string random_rule(std::mt19937_64& rng, uint32_t sid) {
  static const char* kActions[] = {"alert", "alert", "drop", "pass", "log", "reject"};
  static const char* kProtos[] = {"tcp", "udp", "ip"};
  static const char* kPorts[] = {"any", "any", "80", "[80,443]", "!22", "53", "1024:"};
  std::string r = std::string(kActions[rng() % 6]) + " " + kProtos[rng() % 3] + " any " +
                  (rng() % 4 ? "any" : kPorts[rng() % 7]) + (rng() % 8 ? " -> " : " <> ") + "any " +
                  kPorts[rng() % 7] + " (msg:\"r\"; ";
  const int contents = 1 + static_cast<int>(rng() % 3);
  for (int c = 0; c < contents; ++c) {
    const bool negated = c > 0 && rng() % 5 == 0;
    std::string w = kWords[rng() % kWords.size()];
    if (rng() % 4 == 0) w[0] = static_cast<char>(w[0] - 32);
    r += "content:" + std::string(negated ? "!" : "") + "\"" + w + "\"; ";
    if (rng() % 3 == 0) r += "nocase; ";
    if (c > 0 && rng() % 3 == 0) r += "distance:0; ";
    if (c == 0 && rng() % 4 == 0) r += "depth:" + std::to_string(8 + rng() % 40) + "; ";
  }
  return r + "sid:" + std::to_string(sid) + ";)";
}

// The reference verdict: every rule searched for on its own.
uint32_t reference(const std::map<uint32_t, IdsRule>& rules, const Bytes& f) {
  const PacketInfo p = packet_info(f.data(), static_cast<uint32_t>(f.size()));
  if (p.not_inspected) return dpi_verdict(kResultUninspected, DpiPolicy{});
  uint32_t bits = 0;
  for (const auto& [sid, r] : rules) {
    if (rule_applies(r, p) && contents_hold(r, p.bytes(), p.len)) bits |= action_bit(r.action);
  }
  return dpi_verdict(bits, DpiPolicy{});
}

TEST(RuleControl, RandomBatchesFollowTheReference) {
  std::mt19937_64 rng(3);
  std::map<uint32_t, IdsRule> ref;
  std::string file;
  uint32_t next_sid = 1;
  for (int i = 0; i < 30; ++i) {
    const std::string text = random_rule(rng, next_sid++);
    file += text + "\n";
    IdsRule r;
    std::string why;
    std::map<std::string, uint64_t> ignored;
    uint64_t vars = 0;
    ASSERT_TRUE(parse_ids_rule(text, &r, &why, &ignored, &vars)) << why;
    ref[r.sid] = r;
  }
  const DpiTables t = tables_of(file);
  std::unique_ptr<ForwardApp> app = make_dpi_app(t, DpiPolicy{});
  auto* tc = dynamic_cast<RuleControl*>(app->table_control());
  uint64_t matched = 0, refused = 0;
  for (int batch = 0; batch < 40; ++batch) {
    std::vector<std::string> lines, want;
    const int n = 1 + static_cast<int>(rng() % 15);
    for (int k = 0; k < n; ++k) {
      const unsigned what = static_cast<unsigned>(rng() % 10);
      if (what < 4 && !ref.empty()) {
        auto it = ref.begin();
        std::advance(it, rng() % ref.size());
        lines.push_back("del " + std::to_string(it->first));
        want.push_back("");
        ref.erase(it);
      } else if (what == 4) {
        lines.push_back("del " + std::to_string(next_sid + 1000));
        want.push_back("del: no rule");
      } else if (what == 5 && !ref.empty()) {
        lines.push_back("add " + random_rule(rng, ref.begin()->first));
        want.push_back("is there already");
      } else {
        const std::string text = random_rule(rng, next_sid++);
        lines.push_back("add " + text);
        want.push_back("");
        IdsRule r;
        std::string why;
        std::map<std::string, uint64_t> ignored;
        uint64_t vars = 0;
        ASSERT_TRUE(parse_ids_rule(text, &r, &why, &ignored, &vars)) << why;
        ref[r.sid] = r;
      }
    }
    const uint64_t builds = tc->builds();
    const auto got = tc->apply(lines);
    bool changed = false;
    for (size_t k = 0; k < got.size(); ++k) {
      if (want[k].empty()) {
        ASSERT_EQ(got[k], "") << lines[k];
        changed = true;
      } else {
        ASSERT_NE(got[k].find(want[k]), std::string::npos) << got[k];
        ++refused;
      }
    }
    ASSERT_EQ(tc->builds(), builds + changed) << "one build per batch that changes something";
    ASSERT_EQ(tc->tables().rules().rules.size(), ref.size());
    // Payloads of a few words, some in upper case, to TCP and UDP ports the rules name and others.
    std::vector<Bytes> frames;
    for (int i = 0; i < 200; ++i) {
      std::string pl;
      const int words = static_cast<int>(rng() % 5);
      for (int w = 0; w < words; ++w) {
        std::string x = kWords[rng() % kWords.size()];
        if (rng() % 3 == 0) x[0] = static_cast<char>(x[0] - 32);
        pl += x + (rng() % 2 ? " " : "");
      }
      static const uint16_t kDports[] = {80, 443, 22, 53, 8080, 5000};
      frames.push_back(frame(pl, kDports[rng() % 6], rng() % 2 ? 6 : 17));
    }
    const std::vector<uint32_t> scalar = forward(*app, frames, false), batched = forward(*app, frames, true);
    for (size_t i = 0; i < frames.size(); ++i) {
      const uint32_t want_v = reference(ref, frames[i]);
      ASSERT_EQ(scalar[i], want_v) << "batch " << batch << " frame " << i;
      ASSERT_EQ(batched[i], want_v) << "batch " << batch << " frame " << i;
      Bytes f = frames[i];
      ASSERT_EQ(app->forward_frame(f.data(), uint32_t(f.size())), want_v) << "flat program, batch " << batch;
      matched += want_v != Verdict::port(kCleanPort);
    }
  }
  EXPECT_GT(matched, 1000u);
  EXPECT_GT(refused, 20u);
}

}  // namespace
}  // namespace tandem::dpi
