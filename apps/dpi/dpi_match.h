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
// (up to kMaxTries occurrences per content), as Suricata's recursive inspection does. A negated
// content must not occur where it would be searched; it does not move E.
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

struct PacketInfo {
  bool ip = false;        // an IPv4/IPv6 packet that parsed
  uint8_t proto = 0;      // transport protocol
  uint16_t sport = 0, dport = 0;
  const uint8_t* payload = nullptr;
  uint32_t len = 0;
};

// The packet's payload: after the TCP or UDP header, after the IP header for other IP protocols;
// none for frames that are not IP or do not parse.
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

class DpiEngine {
 public:
  explicit DpiEngine(const IdsRuleSet& rules);
  ~DpiEngine();

  // Stage 1 over every pattern (no port groups): sorted pattern ids found in the payload.
  void patterns_in(const PacketInfo& p, std::vector<uint32_t>* ids) const;
  // Stages 1 and 2: sorted sids of the rules that match.
  void match(const PacketInfo& p, std::vector<uint32_t>* sids) const;

  size_t groups() const;
  size_t memory_bytes() const;
  const AhoCorasick& all_patterns() const { return all_; }

 private:
  struct Group;
  const IdsRuleSet& set_;
  AhoCorasick all_;
  std::vector<std::unique_ptr<Group>> groups_;
  // group index per (protocol class, port) and per protocol class (generic); -1: none.
  std::vector<int32_t> port_group_[3];
  int32_t generic_[3] = {-1, -1, -1};
};

}  // namespace tandem::dpi
