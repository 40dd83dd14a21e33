#include "apps/dpi/dpi_match.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "apps/dpi/hyperscan_patterns.h"
#include "apps/dpi/literal_filter.h"
#include "core/usage_error.h"
#include "core/flow_hash.h"
#include "core/parse.h"

namespace tandem::dpi {

namespace {

constexpr uint32_t kMaxGroupPorts = 64;  // a port set this small puts a rule into port groups

uint8_t lower(uint8_t c) { return c >= 'A' && c <= 'Z' ? static_cast<uint8_t>(c + 32) : c; }

// Protocol classes of the groups: TCP, UDP, other IP.
enum { kTcp, kUdp, kOtherIp, kClasses };

// Which classes a rule's protocol keyword covers (a bit per class; ids_rules.h's bits).
unsigned proto_classes(const std::string& p) {
  static_assert(kClassTcp == 1u << kTcp && kClassUdp == 1u << kUdp && kClassOtherIp == 1u << kOtherIp);
  return protocol_classes(p);
}

bool proto_admits(const std::string& p, uint8_t proto) {
  const unsigned c = proto_classes(p);
  if (p == "icmp") return proto == kProtoIcmp;
  if (p == "icmpv6") return proto == kProtoIcmpv6;
  const int k = proto == kProtoTcp ? kTcp : proto == kProtoUdp ? kUdp : kOtherIp;
  return (c >> k) & 1;
}

int class_of(uint8_t proto) { return proto == kProtoTcp ? kTcp : proto == kProtoUdp ? kUdp : kOtherIp; }

// The ports of a small, plain port set (no exclusions), or false.
bool small_port_list(const PortSet& s, std::vector<uint16_t>* ports) {
  if (s.any || !s.exclude.empty() || s.include.empty()) return false;
  uint32_t total = 0;
  for (const auto& [lo, hi] : s.include) total += uint32_t{hi} - lo + 1;
  if (total > kMaxGroupPorts) return false;
  ports->clear();
  for (const auto& [lo, hi] : s.include) {
    for (uint32_t p = lo; p <= hi; ++p) ports->push_back(static_cast<uint16_t>(p));
  }
  return true;
}

// The first occurrence of c's bytes in p[from, to) that ends at or before `to`, or -1.
long find_in(const Content& c, const uint8_t* p, long from, long to) {
  const long m = static_cast<long>(c.bytes.size());
  const auto* b = reinterpret_cast<const uint8_t*>(c.bytes.data());
  for (long s = std::max(0L, from); s + m <= to; ++s) {
    long k = 0;
    if (c.nocase) {
      while (k < m && lower(p[s + k]) == lower(b[k])) ++k;
    } else {
      while (k < m && p[s + k] == b[k]) ++k;
    }
    if (k == m) return s;
  }
  return -1;
}

// The window [from, to) content i may occupy, given the end of the previous match.
void window(const Content& c, long prev_end, long n, long* from, long* to) {
  *from = 0;
  *to = n;
  if (c.offset >= 0) *from = c.offset;
  if (c.depth >= 0) *to = std::min<long>(n, *from + c.depth);
  const bool relative = c.distance != INT32_MIN || c.within >= 0;
  if (relative) {
    const long base = prev_end + (c.distance != INT32_MIN ? c.distance : 0);
    *from = std::max(*from, base);
    if (c.within >= 0) *to = std::min<long>(*to, base + c.within);
  }
}

// `budget` counts the searches left for the whole rule: kMaxTries bounds each content's
// occurrences, but a rule of several relative contents multiplies them, so hostile payloads could
// make one rule cost 64^k searches without it.
bool eval(const std::vector<Content>& cs, size_t i, const uint8_t* p, long n, long prev_end, int& budget) {
  if (i == cs.size()) return true;
  if (--budget < 0) return false;
  const Content& c = cs[i];
  long from = 0, to = 0;
  window(c, prev_end, n, &from, &to);
  if (c.negated) {
    if (find_in(c, p, from, to) >= 0) return false;
    return eval(cs, i + 1, p, n, prev_end, budget);
  }
  int tries = 0;
  for (long s = find_in(c, p, from, to); s >= 0 && tries < kMaxTries && budget > 0;
       s = find_in(c, p, s + 1, to), ++tries) {
    if (eval(cs, i + 1, p, n, s + static_cast<long>(c.bytes.size()), budget)) return true;
  }
  return false;
}

}  // namespace

PacketInfo packet_info(const uint8_t* frame, uint32_t caplen) {
  PacketInfo info;
  ParsedPacket pp;
  const DropReason r = parse_packet(frame, caplen, &pp);
  if (r != DropReason::kNone) {
    info.not_inspected = r != DropReason::kNotIp;
    return info;
  }
  constexpr uint8_t kLaterFragment = kFlagFragment | kFlagL4Missing;
  info.not_inspected = (pp.flags & kFlagL4Malformed) || (pp.flags & kLaterFragment) == kLaterFragment;
  info.ip = true;
  info.proto = pp.tuple.proto;
  info.sport = pp.tuple.src_port;
  info.dport = pp.tuple.dst_port;
  uint32_t off = 0, len = 0;
  if (transport_payload(frame, pp, &off, &len)) {
    info.payload = frame + off;
    info.len = len;
  }
  return info;
}

namespace {

// Draws p[pos] until no pattern ends at it, given the walk's entry `*state` before it; then steps.
void draw_match_free(const AcView& v, uint8_t* p, uint32_t pos, uint32_t* state, uint64_t* x) {
  for (int tries = 0;; ++tries) {
    if (tries == 4096) throw std::runtime_error("match-free payloads: every byte value completes a pattern");
    *x = mix64(*x + 1);
    p[pos] = static_cast<uint8_t>(*x);
    const uint32_t e = ac_step(v, *state, p[pos]);
    bool found = false;
    if (e & kAcOutput) {
      auto never = [](uint32_t) { return false; };
      auto hit = [&found](uint32_t) { found = true; };
      ac_report(v, e, p, pos + 1, never, hit);
    }
    if (!found) {
      *state = e;
      return;
    }
  }
}

}  // namespace

void make_match_free(PacketStore& s, const AhoCorasick& ac, uint64_t seed) {
  const AcView& v = ac.view();
  uint64_t x = seed;
  for (size_t i = 0; i < s.size(); ++i) {
    uint8_t* frame = s.bytes.data() + s.offset[i];
    const PacketInfo info = packet_info(frame, s.caplen[i]);
    if (!info.payload) continue;
    uint8_t* p = frame + (info.payload - frame);
    // Bytes before pos are final, so a match ending earlier cannot appear later: one pass leaves
    // the payload match-free.
    uint32_t state = 0;
    for (uint32_t pos = 0; pos < info.len; ++pos) draw_match_free(v, p, pos, &state, &x);
  }
}

namespace {

// A pattern starts at a byte with probability fraction / (mean pattern length), so that about
// `fraction` of the bytes end up covered: the threshold of a 64-bit draw (0: none).
uint64_t splice_threshold(const std::vector<Pattern>& pats, double fraction) {
  if (pats.empty() || fraction <= 0) return 0;
  double mean = 0;
  for (const Pattern& p : pats) mean += static_cast<double>(p.bytes.size());
  mean /= static_cast<double>(pats.size());
  return static_cast<uint64_t>(std::min(1.0, fraction / mean) * 18446744073709551615.0);
}

// Patterns (nocase ones in random case) spliced over p[0, n), the last one cut at n.
void splice_patterns(uint8_t* p, uint32_t n, const std::vector<Pattern>& pats, uint64_t threshold, uint64_t* x) {
  for (uint32_t pos = 0; pos < n;) {
    *x = mix64(*x + 1);
    if (*x >= threshold) {
      ++pos;
      continue;
    }
    const Pattern& pat = pats[mix64(*x) % pats.size()];
    for (size_t k = 0; k < pat.bytes.size() && pos < n; ++k, ++pos) {
      uint8_t ch = static_cast<uint8_t>(pat.bytes[k]);
      if (pat.nocase && (ch | 0x20) >= 'a' && (ch | 0x20) <= 'z' && (mix64(*x + k) & 1)) ch ^= 0x20;
      p[pos] = ch;
    }
  }
}

}  // namespace

void make_match_heavy(PacketStore& s, const std::vector<Pattern>& pats, double fraction, uint64_t seed) {
  const uint64_t threshold = splice_threshold(pats, fraction);
  if (!threshold) return;
  uint64_t x = seed;
  for (size_t i = 0; i < s.size(); ++i) {
    uint8_t* frame = s.bytes.data() + s.offset[i];
    const PacketInfo info = packet_info(frame, s.caplen[i]);
    if (info.payload) splice_patterns(frame + (info.payload - frame), info.len, pats, threshold, &x);
  }
}

void make_dpi_payloads(PacketStore& s, const AhoCorasick& ac, const std::vector<Pattern>& pats, double fraction,
                       uint64_t seed, uint32_t clean_tail) {
  const AcView& v = ac.view();
  const uint64_t threshold = splice_threshold(pats, fraction);
  for (size_t i = 0; i < s.size(); ++i) {
    uint8_t* frame = s.bytes.data() + s.offset[i];
    const PacketInfo info = packet_info(frame, s.caplen[i]);
    if (!info.payload) continue;
    uint8_t* p = frame + (info.payload - frame);
    const uint32_t n = info.len, keep = n > clean_tail ? n - clean_tail : 0;
    uint64_t x = mix64(seed ^ (uint64_t{i} * 0x9E3779B97F4A7C15ull));
    uint32_t state = 0;
    for (uint32_t pos = 0; pos < keep; ++pos) draw_match_free(v, p, pos, &state, &x);
    if (threshold) {
      uint64_t y = mix64(x ^ 0x5eed);
      splice_patterns(p, keep, pats, threshold, &y);
    }
    // The tail: free of every pattern given the bytes before it as they now are.
    state = 0;
    for (uint32_t pos = 0; pos < keep; ++pos) state = ac_step(v, state, p[pos]);
    for (uint32_t pos = keep; pos < n; ++pos) draw_match_free(v, p, pos, &state, &x);
  }
}

bool rule_applies(const IdsRule& r, const PacketInfo& p) {
  if (!p.ip || !proto_admits(r.proto, p.proto)) return false;
  if (r.src_ports.contains(p.sport) && r.dst_ports.contains(p.dport)) return true;
  return r.bidirectional && r.src_ports.contains(p.dport) && r.dst_ports.contains(p.sport);
}

bool contents_hold(const IdsRule& r, const uint8_t* p, uint32_t n) {
  int budget = kMaxInspections;
  return !r.contents.empty() && eval(r.contents, 0, p, static_cast<long>(n), 0, budget);
}

struct DpiEngine::Group {
  std::vector<uint32_t> rules;                 // indices into the rule set
  std::vector<std::vector<uint32_t>> needs;    // per rule: local ids of its positive contents
  std::vector<uint32_t> always;                // rules with no positive content: always evaluated
  std::vector<std::vector<uint32_t>> users;    // per local pattern: positions (in `rules`) needing it
  AhoCorasick ac;
};

const char* stage1_name(Stage1 s) {
  switch (s) {
    case Stage1::kHyperscan: return "hyperscan";
    case Stage1::kLiteral: return "literal";
    case Stage1::kAhoCorasick: break;
  }
  return "aho-corasick";
}

Stage1 default_stage1() { return Stage1::kLiteral; }

Stage1 parse_stage1(const std::string& name, const char* flag) {
  if (name == "aho-corasick") return Stage1::kAhoCorasick;
  if (name == "literal") return Stage1::kLiteral;
  if (name != "hyperscan") throw std::invalid_argument(std::string(flag) + ": no stage 1 `" + name + "`");
  if (!hyperscan_built()) {
    throw UsageError(std::string(flag) + " hyperscan: this build has no Hyperscan (install libhyperscan-dev and rebuild)");
  }
  return Stage1::kHyperscan;
}

DpiEngine::DpiEngine(const IdsRuleSet& set, Stage1 stage1)
    : set_(set), stage1_(stage1), all_(AhoCorasick::build(set.patterns)) {
  if (stage1 == Stage1::kHyperscan) hs_ = std::make_unique<HyperscanPatterns>(set.patterns);
  if (stage1 == Stage1::kLiteral) literal_ = std::make_unique<LiteralFilter>(LiteralFilter::build(set.patterns));
  for (auto& v : port_group_) v.assign(65536, -1);
  std::vector<std::vector<uint32_t>> members;  // rules per group
  std::vector<std::pair<uint32_t, Membership>> memberships;  // (global pattern id, its group and local id)
  auto group_for = [&](int32_t& slot) -> std::vector<uint32_t>& {
    if (slot < 0) {
      slot = static_cast<int32_t>(members.size());
      members.emplace_back();
    }
    return members[slot];
  };
  std::vector<uint16_t> ports;
  for (uint32_t i = 0; i < set.rules.size(); ++i) {
    const IdsRule& r = set.rules[i];
    if (r.contents.empty()) continue;  // conditions not evaluated here (pcre, ...): never matches
    const unsigned classes = proto_classes(r.proto);
    for (int k = 0; k < kClasses; ++k) {
      if (!((classes >> k) & 1)) continue;
      if (!r.bidirectional && (small_port_list(r.dst_ports, &ports) || small_port_list(r.src_ports, &ports))) {
        for (uint16_t p : ports) group_for(port_group_[k][p]).push_back(i);
      } else {
        group_for(generic_[k]).push_back(i);
      }
    }
  }
  for (auto& m : members) {
    auto g = std::make_unique<Group>();
    g->rules = std::move(m);
    std::vector<Pattern> local;
    std::vector<int32_t> local_of(set.patterns.size() + 1, -1);
    for (size_t pos = 0; pos < g->rules.size(); ++pos) {
      std::vector<uint32_t> need;
      for (const Content& c : set.rules[g->rules[pos]].contents) {
        if (c.negated) continue;
        int32_t& l = local_of[c.pattern];
        if (l < 0) {
          l = static_cast<int32_t>(local.size());
          local.push_back(set.patterns[c.pattern - 1]);
          g->users.emplace_back();
        }
        need.push_back(static_cast<uint32_t>(l));
      }
      if (need.empty()) {
        g->always.push_back(static_cast<uint32_t>(pos));
      } else {
        g->users[need[0]].push_back(static_cast<uint32_t>(pos));  // evaluated when its first pattern occurs
      }
      g->needs.push_back(std::move(need));
    }
    // Hyperscan searches every pattern once for all of a packet's groups; the literal filter too,
    // but hands the payloads dense with candidates to the groups' automata.
    if (stage1 != Stage1::kHyperscan) g->ac = AhoCorasick::build(local);
    for (uint32_t id = 1; id < local_of.size(); ++id) {
      if (local_of[id] >= 0) {
        memberships.push_back({id, Membership{static_cast<uint32_t>(groups_.size()), static_cast<uint32_t>(local_of[id]) + 1}});
      }
    }
    groups_.push_back(std::move(g));
  }
  // By pattern id (stable: ascending group within an id), as compressed rows.
  std::stable_sort(memberships.begin(), memberships.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  member_begin_.assign(set.patterns.size() + 2, 0);
  for (const auto& [id, m] : memberships) ++member_begin_[id + 1];
  for (size_t id = 1; id < member_begin_.size(); ++id) member_begin_[id] += member_begin_[id - 1];
  members_.reserve(memberships.size());
  for (const auto& [id, m] : memberships) members_.push_back(m);
}

DpiEngine::~DpiEngine() = default;

size_t DpiEngine::groups() const { return groups_.size(); }

size_t DpiEngine::memory_bytes() const {
  size_t b = all_.memory_bytes() + (hs_ ? hs_->database_bytes() : 0) + (literal_ ? literal_->memory_bytes() : 0) +
             members_.size() * sizeof(Membership) + member_begin_.size() * sizeof(uint32_t);
  for (const auto& g : groups_) b += g->ac.memory_bytes();
  return b;
}

void DpiEngine::patterns_in(const PacketInfo& p, std::vector<uint32_t>* ids) const {
  ids->clear();
  if (!p.payload) return;
  if (hs_) return hs_->patterns_in(p.payload, p.len, ids);
  if (literal_ && literal_->patterns_in_if_sparse(p.payload, p.len, ids)) return;
  all_.patterns_in(p.payload, p.len, ids);
}

void DpiEngine::patterns_in_batch(const uint8_t* const* p, const uint32_t* len, size_t n, std::vector<uint32_t>* ids,
                                  size_t batch, size_t group) const {
  if (batch == 0 || group == 0) throw std::invalid_argument("patterns_in_batch: batch and group must be > 0");
  if (hs_) {
    for (size_t i = 0; i < n; ++i) hs_->patterns_in(p[i], len[i], &ids[i]);
  } else if (literal_) {
    patterns_in_hybrid(*literal_, all_, p, len, n, ids, batch, group);
  } else {
    all_.patterns_in_batch(p, len, n, ids, batch, group);
  }
}

int DpiEngine::candidate_groups(const PacketInfo& p, int32_t out[3]) const {
  if (!p.ip) return 0;
  const int k = class_of(p.proto);
  // Distinct slots have distinct groups, so the one repeat is a packet whose ports are equal.
  const int32_t cand[3] = {generic_[k], port_group_[k][p.dport], p.sport != p.dport ? port_group_[k][p.sport] : -1};
  int m = 0;
  for (int32_t gi : cand) {
    if (gi >= 0) out[m++] = gi;
  }
  return m;
}

void DpiEngine::group_rules(const Group& g, const PacketInfo& p, const std::vector<uint32_t>& found,
                            std::vector<uint32_t>* rules) const {
  // A flag per local pattern, all clear between calls: set for those found, cleared on every exit
  // (a flag left set would satisfy a later packet's rule). Only the found ones are touched: a
  // group may have thousands of patterns, a payload a few.
  thread_local std::vector<uint8_t> present;
  if (present.size() < g.users.size()) present.resize(g.users.size(), 0);
  struct ClearFound {
    std::vector<uint8_t>& present;
    const std::vector<uint32_t>& found;
    ~ClearFound() {
      for (uint32_t l : found) present[l - 1] = 0;
    }
  } clear_found{present, found};
  for (uint32_t l : found) present[l - 1] = 1;  // the group's automaton numbers its patterns from 1
  auto consider = [&](uint32_t pos) {
    for (uint32_t l : g.needs[pos]) {
      if (!present[l]) return;
    }
    const IdsRule& r = set_.rules[g.rules[pos]];
    if (rule_applies(r, p) && contents_hold(r, p.bytes(), p.len)) rules->push_back(g.rules[pos]);
  };
  for (uint32_t pos : g.always) consider(pos);
  for (uint32_t l : found) {
    for (uint32_t pos : g.users[l - 1]) consider(pos);
  }
}

namespace {

void sort_unique(std::vector<uint32_t>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

}  // namespace

void DpiEngine::group_patterns_among(int32_t group, const std::vector<uint32_t>& ids, std::vector<uint32_t>* found) const {
  const auto gi = static_cast<uint32_t>(group);
  for (uint32_t id : ids) {
    if (id >= member_begin_.size() - 1) continue;  // not a pattern of the rule set (size >= 2)
    for (uint32_t k = member_begin_[id]; k < member_begin_[id + 1]; ++k) {
      if (members_[k].group == gi) found->push_back(members_[k].local);
    }
  }
}

void DpiEngine::to_sids(std::vector<uint32_t>* v) const {
  for (uint32_t& x : *v) x = set_.rules[x].sid;
  sort_unique(v);
}

template <class FoundIn>
void DpiEngine::rules_over_groups(const PacketInfo& p, std::vector<uint32_t>* rules, FoundIn found_in) const {
  rules->clear();
  int32_t cand[3];
  const int m = candidate_groups(p, cand);
  thread_local std::vector<uint32_t> found;
  for (int c = 0; c < m; ++c) {
    const Group& g = *groups_[cand[c]];
    found.clear();
    found_in(cand[c], g, &found);
    group_rules(g, p, found, rules);
  }
  sort_unique(rules);
}

void DpiEngine::match_rules(const PacketInfo& p, std::vector<uint32_t>* rules) const {
  if (stage1_ != Stage1::kAhoCorasick) {
    // One scan for all of the packet's groups, made when the first of them asks (a packet no
    // group applies to needs none). A payload the literal filter finds dense with candidates
    // walks the groups' automata instead.
    thread_local std::vector<uint32_t> ids;
    bool scanned = false, dense = false;
    return rules_over_groups(p, rules, [&](int32_t gi, const Group& g, std::vector<uint32_t>* found) {
      if (!scanned) {
        ids.clear();
        if (hs_) {
          patterns_in(p, &ids);
        } else if (p.payload) {
          dense = !literal_->patterns_in_if_sparse(p.payload, p.len, &ids);
        }
        scanned = true;
      }
      if (dense) {
        g.ac.patterns_in(p.payload, p.len, found);
      } else {
        group_patterns_among(gi, ids, found);
      }
    });
  }
  rules_over_groups(p, rules, [&p](int32_t, const Group& g, std::vector<uint32_t>* found) {
    if (p.payload) g.ac.patterns_in(p.payload, p.len, found);
  });
}

void DpiEngine::match(const PacketInfo& p, std::vector<uint32_t>* sids) const {
  match_rules(p, sids);
  to_sids(sids);
}

void DpiEngine::match_batch(const PacketInfo* p, size_t n, std::vector<uint32_t>* sids, size_t batch, size_t group) const {
  match_batch_rules(p, n, sids, batch, group);
  for (size_t i = 0; i < n; ++i) to_sids(&sids[i]);
}

void DpiEngine::match_batch_rules(const PacketInfo* p, size_t n, std::vector<uint32_t>* sids, size_t batch,
                                  size_t group) const {
  for (size_t i = 0; i < n; ++i) sids[i].clear();
  if (batch == 0 || group == 0) throw std::invalid_argument("match_batch: batch and group must be > 0");
  if (hs_) {  // Hyperscan has no lockstep walk to batch: one scan per payload
    for (size_t i = 0; i < n; ++i) match_rules(p[i], &sids[i]);
    return;
  }
  if (literal_) return match_batch_literal(p, n, sids, batch, group);
  thread_local std::vector<BatchItem> items;
  for (size_t b0 = 0; b0 < n; b0 += batch) {
    const size_t b1 = std::min(n, b0 + batch);
    items_by_group(p, b0, b1, &items);
    walk_groups(p, items, batch, group, sids);
    for (size_t i = b0; i < b1; ++i) sort_unique(&sids[i]);
  }
}

void DpiEngine::items_by_group(const PacketInfo* p, size_t b0, size_t b1, std::vector<BatchItem>* items) const {
  items->clear();
  for (size_t i = b0; i < b1; ++i) {
    int32_t cand[3];
    const int m = candidate_groups(p[i], cand);
    for (int c = 0; c < m; ++c) items->push_back(BatchItem{static_cast<uint32_t>(cand[c]), static_cast<uint32_t>(i)});
  }
  sort_by_group(items);
}

void DpiEngine::sort_by_group(std::vector<BatchItem>* items) {
  // (group, packet) pairs are unique: sorted by both, the order is the stable one by group, without
  // the buffer std::stable_sort allocates.
  std::sort(items->begin(), items->end(),
            [](const BatchItem& a, const BatchItem& c) { return a.group != c.group ? a.group < c.group : a.packet < c.packet; });
}

void DpiEngine::walk_groups(const PacketInfo* p, const std::vector<BatchItem>& items, size_t batch, size_t group,
                            std::vector<uint32_t>* rules) const {
  thread_local std::vector<const uint8_t*> ptr;
  thread_local std::vector<uint32_t> len;
  thread_local std::vector<std::vector<uint32_t>> found;
  if (found.size() < items.size()) found.resize(items.size());
  ptr.resize(items.size());
  len.resize(items.size());
  for (size_t k = 0; k < items.size(); ++k) {
    const PacketInfo& pi = p[items[k].packet];
    ptr[k] = pi.bytes();
    len[k] = pi.len;
  }
  // One automaton's rows stay in the caches while its items are walked; patterns_in_batch then
  // sorts each automaton's items by length.
  for (size_t k0 = 0; k0 < items.size();) {
    size_t k1 = k0 + 1;
    while (k1 < items.size() && items[k1].group == items[k0].group) ++k1;
    const Group& g = *groups_[items[k0].group];
    g.ac.patterns_in_batch(ptr.data() + k0, len.data() + k0, k1 - k0, found.data() + k0, batch, group);
    for (size_t k = k0; k < k1; ++k) group_rules(g, p[items[k].packet], found[k], &rules[items[k].packet]);
    k0 = k1;
  }
}

void DpiEngine::match_batch_literal(const PacketInfo* p, size_t n, std::vector<uint32_t>* rules, size_t batch,
                                    size_t group) const {
  // Per thread, so that the app's bursts reuse them.
  thread_local std::vector<BatchItem> dense_items;
  thread_local std::vector<uint32_t> ids, found;
  for (size_t b0 = 0; b0 < n; b0 += batch) {
    const size_t b1 = std::min(n, b0 + batch);
    dense_items.clear();
    // Stage 1 once for each payload some group applies to (none for the others). Stage 2 of the
    // payloads the filter keeps starts from its ids, packet by packet (the order costs nothing
    // here: sorting a burst's items by group did not pay for itself); those dense with
    // candidates go to their groups' automata as the automata's batched path takes them.
    for (size_t i = b0; i < b1; ++i) {
      int32_t cand[3];
      const int m = candidate_groups(p[i], cand);
      if (m == 0) continue;
      ids.clear();
      if (p[i].payload && !literal_->patterns_in_if_sparse(p[i].payload, p[i].len, &ids)) {
        for (int c = 0; c < m; ++c) dense_items.push_back(BatchItem{static_cast<uint32_t>(cand[c]), static_cast<uint32_t>(i)});
        continue;
      }
      for (int c = 0; c < m; ++c) {
        found.clear();
        group_patterns_among(cand[c], ids, &found);
        group_rules(*groups_[cand[c]], p[i], found, &rules[i]);
      }
    }
    if (!dense_items.empty()) {
      sort_by_group(&dense_items);
      walk_groups(p, dense_items, batch, group, rules);
    }
    for (size_t i = b0; i < b1; ++i) sort_unique(&rules[i]);
  }
}

void DpiEngine::match_from_patterns(const PacketInfo& p, const std::vector<uint32_t>& ids, std::vector<uint32_t>* sids) const {
  match_rules_from_patterns(p, ids, sids);
  to_sids(sids);
}

void DpiEngine::match_rules_from_patterns(const PacketInfo& p, const std::vector<uint32_t>& ids,
                                          std::vector<uint32_t>* rules) const {
  rules_over_groups(p, rules, [this, &ids](int32_t gi, const Group&, std::vector<uint32_t>* found) {
    group_patterns_among(gi, ids, found);
  });
}

}  // namespace tandem::dpi
