// What the rule-file fuzz targets check (fuzz/ids_rules_fuzz.cc, fuzz/acl_rules_fuzz.cc), shared
// with tests/rules_fuzz_test.cc, which runs the same checks on mutated real rule files under any
// compiler. Each check takes a rule file's bytes, loads it (with --skip-bad: bad lines reported,
// never fatal), and returns nullptr when every invariant holds, else what broke:
//   IDS rules: every content of a loaded rule has its pattern id, and the pattern its bytes; the
//     Aho-Corasick automaton of the patterns (one payload at a time and batched) finds exactly what
//     a naive search finds, the input itself being the payload; the engine's rules (one packet at
//     a time, batched, and from a stage 1 over every pattern) are those whose conditions hold when
//     each rule is evaluated alone.
//   Firewall rules (ClassBench or Tandem's syntax): each loaded rule prints in Tandem's syntax and
//     reads back the same; HyperSplit (scalar and batched) classifies headers drawn from the rules
//     and from the input's bytes as linear search does; the file read as a ClassBench trace either
//     loads or fails with a TableError.
// A load that throws its documented error (an unreadable file, TableError) is a clean rejection.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "apps/acl/acl_rules.h"
#include "apps/acl/hypersplit.h"
#include "apps/dpi/aho_corasick.h"
#include "apps/dpi/dpi_match.h"
#include "apps/dpi/ids_rules.h"
#include "core/table_reader.h"
#include "fuzz/input_file.h"

namespace tandem::fuzz {

// Inputs that loaded at least one rule, and of those how many had a rule match (IDS) or rules
// whose HyperSplit tree was checked (firewall): a run whose inputs all fail to load tests little.
inline size_t g_inputs_with_rules = 0;
inline size_t g_inputs_with_matches = 0;

inline const char* check_ids_rules_input(const uint8_t* data, size_t size) {
  const InputFile in(data, size, ".rules");
  const std::string& path = in.path;
  if (path.empty()) return nullptr;  // no room to write: nothing tested
  dpi::IdsRuleSet s;
  try {
    dpi::IdsLoadOptions o;
    o.skip_bad = true;
    s = dpi::load_ids_rules({path}, o);
  } catch (const std::runtime_error&) {
    return nullptr;
  }
  for (const dpi::IdsRule& r : s.rules) {
    for (const dpi::Content& c : r.contents) {
      if (c.bytes.empty()) return "a content with no bytes";
      if (c.negated) continue;
      if (c.pattern == 0 || c.pattern > s.patterns.size()) return "a content without its pattern id";
      const dpi::Pattern& p = s.patterns[c.pattern - 1];
      if (p.bytes != c.bytes || p.nocase != c.nocase) return "a pattern id naming another content";
    }
  }
  if (s.patterns.empty()) return nullptr;
  ++g_inputs_with_rules;
  const dpi::DpiEngine engine(s);
  const dpi::AhoCorasick& ac = engine.all_patterns();
  std::vector<uint32_t> ids;
  ac.patterns_in(data, size, &ids);
  if (ids != dpi::naive_patterns_in(s.patterns, data, size)) return "the automaton differs from a naive search";
  const uint8_t* ptr[3] = {data, data + size / 2, data + size / 3};
  const uint32_t len[3] = {static_cast<uint32_t>(size), static_cast<uint32_t>(size - size / 2), static_cast<uint32_t>(size / 7)};
  std::vector<uint32_t> batched[3], one;
  for (size_t group : {size_t{1}, size_t{2}, size_t{32}}) {
    ac.patterns_in_batch(ptr, len, 3, batched, 8192, group);
    for (int k = 0; k < 3; ++k) {
      ac.patterns_in(ptr[k], len[k], &one);
      if (batched[k] != one) return "the batched walk differs from the one-payload walk";
    }
  }
  // Stage 2 on the input as a TCP and a UDP payload, to a port the rules may name.
  dpi::PacketInfo pk[2];
  for (int k = 0; k < 2; ++k) {
    pk[k].ip = true;
    pk[k].proto = k == 0 ? 6 : 17;
    pk[k].sport = static_cast<uint16_t>(size > 1 ? data[0] << 8 | data[1] : 1024);
    pk[k].dport = k == 0 ? 80 : 53;
    pk[k].payload = data;
    pk[k].len = static_cast<uint32_t>(size);
  }
  std::vector<uint32_t> want, got, sids[2];
  engine.match_batch(pk, 2, sids);
  for (int k = 0; k < 2; ++k) {
    want.clear();
    for (const dpi::IdsRule& r : s.rules) {
      if (dpi::rule_applies(r, pk[k]) && dpi::contents_hold(r, data, static_cast<uint32_t>(size))) want.push_back(r.sid);
    }
    std::sort(want.begin(), want.end());
    want.erase(std::unique(want.begin(), want.end()), want.end());
    g_inputs_with_matches += k == 0 && !want.empty();
    engine.match(pk[k], &got);
    if (got != want) return "the engine's rules differ from every rule evaluated alone";
    if (sids[k] != want) return "the batched engine differs from every rule evaluated alone";
    engine.match_from_patterns(pk[k], ids, &got);
    if (got != want) return "stage 2 from the patterns differs from every rule evaluated alone";
  }
  return nullptr;
}

inline const char* check_acl_rules_input(const uint8_t* data, size_t size) {
  const InputFile in(data, size, ".acl");
  const std::string& path = in.path;
  if (path.empty()) return nullptr;
  try {
    acl::load_trace(path);
  } catch (const TableError&) {
  }
  acl::RuleSet s;
  try {
    acl::LoadOptions o;
    o.skip_bad = true;
    s = acl::load_rules(path, o);
  } catch (const TableError&) {
    return nullptr;
  }
  for (const acl::Rule& r : s.rules) {
    acl::Rule back{};
    std::string why;
    if (!acl::parse_rule(acl::format_rule(r), &back, &why)) return "a loaded rule does not read back from its printed form";
    if (std::memcmp(back.lo, r.lo, sizeof r.lo) != 0 || std::memcmp(back.hi, r.hi, sizeof r.hi) != 0 ||
        back.proto_value != r.proto_value || back.proto_mask != r.proto_mask || back.action != r.action) {
      return "a rule's printed form reads back as another rule";
    }
  }
  if (s.rules.empty() || s.rules.size() > 2000) return nullptr;
  ++g_inputs_with_rules;
  const acl::HyperSplit tree = acl::HyperSplit::build(s.rules);
  std::vector<acl::Header> h;
  for (size_t i = 0; i < s.rules.size() && i < 256; ++i) h.push_back(acl::header_in_rule(s.rules[i], i * 0x9E3779B97F4A7C15ull + size));
  for (size_t off = 0; off + 13 <= size && h.size() < 512; off += 13) {
    acl::Header x{};
    std::memcpy(&x.src, data + off, 4);
    std::memcpy(&x.dst, data + off + 4, 4);
    x.sport = static_cast<uint16_t>(data[off + 8] << 8 | data[off + 9]);
    x.dport = static_cast<uint16_t>(data[off + 10] << 8 | data[off + 11]);
    x.proto = data[off + 12];
    // About half say they have no ports (a fragment, a protocol without them), whatever their
    // port fields hold: such a header never matches a rule that restricts ports.
    x.flags = (data[off + 8] ^ data[off + 12]) & acl::kNoPorts;
    h.push_back(x);
  }
  std::vector<uint32_t> batched(h.size());
  tree.classify_batch(h.data(), batched.data(), h.size());
  for (size_t i = 0; i < h.size(); ++i) {
    const uint32_t want = acl::classify_linear(s.rules.data(), static_cast<uint32_t>(s.rules.size()), h[i]);
    if (tree.classify(h[i]) != want) return "HyperSplit differs from linear search";
    if (batched[i] != want) return "batched HyperSplit differs from linear search";
    g_inputs_with_matches += i == 0 && want != acl::kNoMatch;
  }
  return nullptr;
}

}  // namespace tandem::fuzz
