// DPI over packets: stage 1 finds which patterns occur in a payload (Aho-Corasick), stage 2 decides
// which rules match (their protocol and ports, and all their content conditions).
//
// Port groups (as Snort): a rule whose destination ports are a short list of ports goes into the
// group of each of those ports, else one whose source ports are goes into those groups, else into
// its protocol's generic group. Each group has its own automaton over its rules' patterns, so a
// packet is searched only for the patterns of rules that could apply to it: the generic group of
// its protocol and the groups of its two ports. Addresses ($HOME_NET, ...) are not checked.
//
// Content conditions (Suricata's semantics): a content without distance/within is searched in
// [offset, offset + depth) of the payload (defaults: 0 and the whole payload). With distance D
// and/or within W it is relative to the end E of the previous content's match: it must start at or
// after E + D and end at or before E + D + W. Every way of matching the earlier contents is tried
// (up to kMaxTries occurrences per content), as Suricata's recursive inspection does, within a
// budget of kMaxInspections searches per rule and payload (Suricata's inspection recursion limit,
// 3000 by default): past it the rule does not match, so that no payload can make a rule of many
// relative contents cost exponential time. A negated content must not occur where it would be
// searched; it does not move E.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "apps/dpi/aho_corasick.h"
#include "apps/dpi/ids_rules.h"
#include "io/packet_store.h"

namespace tandem::dpi {

inline constexpr int kMaxTries = 64;
inline constexpr int kMaxInspections = 3000;

struct PacketInfo {
  bool ip = false;        // an IPv4/IPv6 packet that parsed
  uint8_t proto = 0;      // transport protocol
  uint16_t sport = 0, dport = 0;
  const uint8_t* payload = nullptr;
  uint32_t len = 0;  // 0 where there is no payload
  // Bytes DPI cannot see: a frame of an IP type that the parser rejects (cut, bad IPv4 options,
  // an IPv6 type 0 routing header, ...), a malformed or cut transport header (a tiny first
  // fragment among them), or an IP fragment after the first, whose bytes continue an earlier
  // fragment's payload (nothing here reassembles). Such a packet has no payload and ports 0: no
  // content is found in it, and callers count it as not inspected rather than as clean.
  bool not_inspected = false;
  // The payload, or an empty one: a pointer the walks and content checks can always take.
  const uint8_t* bytes() const { return payload ? payload : reinterpret_cast<const uint8_t*>(""); }
};

// The packet's payload: after the TCP or UDP header, after the IP header for other IP protocols;
// none for frames that are not IP or do not parse (PacketInfo::not_inspected says which).
PacketInfo packet_info(const uint8_t* frame, uint32_t caplen);

// Whether the rule's protocol and ports admit the packet (both directions for `<>`).
bool rule_applies(const IdsRule& r, const PacketInfo& p);
// Whether all of the rule's content conditions hold in the payload.
bool contents_hold(const IdsRule& r, const uint8_t* p, uint32_t n);

// Match-free traffic: every payload byte drawn at random, redrawn while a pattern of `ac` would
// end at it, so that no pattern occurs anywhere (random bytes alone match the short binary
// contents of real rule sets). Headers are left as they are.
void make_match_free(PacketStore& s, const AhoCorasick& ac, uint64_t seed = 0xf5ee);

// Match-heavy traffic (the G-Opt paper's and Koromilas et al.'s second case): random patterns
// (nocase ones in random case) spliced over about `fraction` of each payload's bytes, in place;
// headers are left as they are (transport checksums are not updated: DPI does not check them).
void make_match_heavy(PacketStore& s, const std::vector<Pattern>& patterns, double fraction, uint64_t seed = 0x5eed);

// Generated traffic for the dpi app: each payload's bytes are a function of (seed, packet index,
// position) alone: free of every pattern, then (fraction > 0) with patterns spliced over about
// that share of its bytes as make_match_heavy does, except in its last `clean_tail` bytes, which
// are drawn again so that no pattern ends in them. So the same traffic with payloads clean_tail
// bytes shorter (sequence trailers: io/traffic_gen.h) has the same payload prefixes and matches
// the same rules.
void make_dpi_payloads(PacketStore& s, const AhoCorasick& ac, const std::vector<Pattern>& patterns, double fraction,
                       uint64_t seed, uint32_t clean_tail);

class HyperscanPatterns;
class LiteralFilter;

// How stage 1 finds the patterns of a payload on the CPU. All find the same patterns, so every
// path gives the same rules (stage1_engines_test); they differ in speed with the traffic
// (docs/RESULTS.md).
enum class Stage1 {
  kAhoCorasick,  // the port groups' automata; batched paths walk them in lockstep (G-Opt)
  kHyperscan,    // Hyperscan over every pattern, one scan a payload, then stage 2 from its ids
  // The literal filter over every pattern (literal_filter.h), then stage 2 from its ids; payloads
  // dense with candidates take the port groups' automata as kAhoCorasick does (for pattern ids
  // alone, the automaton of every pattern: patterns_in_hybrid).
  kLiteral,
};
const char* stage1_name(Stage1 s);  // "aho-corasick", "hyperscan", "literal"
// A --dpi-engine value (one of the names above) as a Stage1; throws UsageError naming `flag` for
// "hyperscan" where this build has no Hyperscan, std::invalid_argument for another name.
Stage1 parse_stage1(const std::string& name, const char* flag);
// The default: the literal filter, in every build. Through the dpi app it carries more packets than
// Hyperscan on match-free and on match-heavy traffic, and more than the automata on the
// match-free traffic most links carry (docs/RESULTS.md, "DPI's stage 1 in the product").
Stage1 default_stage1();

class DpiEngine {
 public:
  // Throws std::runtime_error for kHyperscan where it was not built or cannot compile the patterns.
  explicit DpiEngine(const IdsRuleSet& rules, Stage1 stage1 = Stage1::kAhoCorasick);
  ~DpiEngine();
  Stage1 stage1() const { return stage1_; }

  // Stage 1 over every pattern (no port groups): sorted pattern ids found in the payload. Through
  // Hyperscan or the literal filter where that is the engine's stage 1.
  void patterns_in(const PacketInfo& p, std::vector<uint32_t>* ids) const;
  // patterns_in for n payloads (p[i][0 .. len[i])): the automaton's lockstep walk, or the literal
  // filter with the payloads dense in candidates handed to that walk, or Hyperscan one at a time.
  // Throws std::invalid_argument where batch or group is 0.
  void patterns_in_batch(const uint8_t* const* p, const uint32_t* len, size_t n, std::vector<uint32_t>* ids,
                         size_t batch = 8192, size_t group = 32) const;
  // Stages 1 and 2: sorted sids of the rules that match. One packet at a time: the baseline.
  void match(const PacketInfo& p, std::vector<uint32_t>* sids) const;

  // match() for n packets, with the G-Opt paper's optimizations: packets taken in batches of
  // `batch`; each packet's automata (its protocol's generic group, its ports' groups) make work
  // items, sorted by automaton and then by payload length, and each automaton's items are walked
  // `group` at a time in lockstep (AhoCorasick::patterns_in_batch); stage 2 then runs per item.
  // With Hyperscan as stage 1: one scan per payload, then stage 2 from its ids. With the literal
  // filter: the filter over each payload and stage 2 from its ids; the payloads dense with
  // candidates through their groups' automata as above.
  // sids[0 .. n) get what match() gives (each vector cleared first).
  void match_batch(const PacketInfo* p, size_t n, std::vector<uint32_t>* sids, size_t batch = 8192,
                   size_t group = 32) const;

  // Stage 2 alone, from stage 1 over every pattern (the sorted ids of all_patterns() found in the
  // payload, however they were found: patterns_in, the batched walk, the GPU kernel): the same
  // sids as match(). The port groups' rules are evaluated without walking their automata.
  void match_from_patterns(const PacketInfo& p, const std::vector<uint32_t>& ids, std::vector<uint32_t>* sids) const;

  // The same three, giving the indices (into the rule set's `rules`, sorted, unique) of the rules
  // that match instead of their sids: a sid may name two rules (IdsRuleSet::duplicate_sids).
  void match_rules(const PacketInfo& p, std::vector<uint32_t>* rules) const;
  void match_batch_rules(const PacketInfo* p, size_t n, std::vector<uint32_t>* rules, size_t batch = 8192,
                         size_t group = 32) const;
  void match_rules_from_patterns(const PacketInfo& p, const std::vector<uint32_t>& ids, std::vector<uint32_t>* rules) const;
  const IdsRuleSet& rule_set() const { return set_; }

  size_t groups() const;
  size_t memory_bytes() const;
  const AhoCorasick& all_patterns() const { return all_; }

 private:
  struct Group;
  // A batch's work items: packet p[i] (b0 <= i < b1) with each group that applies to it, by group.
  struct BatchItem {
    uint32_t group, packet;
  };
  void items_by_group(const PacketInfo* p, size_t b0, size_t b1, std::vector<BatchItem>* items) const;
  static void sort_by_group(std::vector<BatchItem>* items);
  // Stages 1 and 2 of the items (sorted by group) through their groups' automata, each group's
  // items walked in lockstep; appends to rules[packet].
  void walk_groups(const PacketInfo* p, const std::vector<BatchItem>& items, size_t batch, size_t group,
                   std::vector<uint32_t>* rules) const;
  // match_batch_rules with the literal filter as stage 1.
  void match_batch_literal(const PacketInfo* p, size_t n, std::vector<uint32_t>* rules, size_t batch, size_t group) const;
  // The groups whose rules apply to the packet (up to 3: generic, destination port, source port).
  int candidate_groups(const PacketInfo& p, int32_t out[3]) const;
  // Stage 2 over p's candidate groups: found_in(group index, group, &ids) gives each group's local
  // pattern ids found in p's payload (match: the group's automaton; match_from_patterns: stage 1's
  // ids).
  template <class FoundIn>
  void rules_over_groups(const PacketInfo& p, std::vector<uint32_t>* rules, FoundIn found_in) const;
  // Appends the indices of group g's rules that match p, given the group's local pattern ids
  // (from 1, any order) found in p's payload.
  void group_rules(const Group& g, const PacketInfo& p, const std::vector<uint32_t>& found, std::vector<uint32_t>* rules) const;
  // Group `group`'s local pattern ids (from 1) of those among `ids` (global pattern ids).
  void group_patterns_among(int32_t group, const std::vector<uint32_t>& ids, std::vector<uint32_t>* found) const;
  // Rule indices to their sids, sorted and unique, in place.
  void to_sids(std::vector<uint32_t>* v) const;

  const IdsRuleSet& set_;
  Stage1 stage1_;
  AhoCorasick all_;
  std::unique_ptr<HyperscanPatterns> hs_;  // kHyperscan: every pattern
  // kLiteral: every pattern (dense payloads: the groups' automata for rules, all_ for ids alone)
  std::unique_ptr<LiteralFilter> literal_;
  std::vector<std::unique_ptr<Group>> groups_;
  // The groups each pattern is in, with its local id there: pattern id k's are
  // members_[member_begin_[k] .. member_begin_[k + 1]) (stage 2 from a stage 1 over every pattern).
  struct Membership {
    uint32_t group, local;
  };
  std::vector<uint32_t> member_begin_;
  std::vector<Membership> members_;
  // group index per (protocol class, port) and per protocol class (generic); -1: none.
  std::vector<int32_t> port_group_[3];
  int32_t generic_[3] = {-1, -1, -1};
};

}  // namespace tandem::dpi
