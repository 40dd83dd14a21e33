// DPI's two stages over one payload as flat arrays, written once as `__host__ __device__` code: what
// the dpi app's GPU paths (whole frames, resident, items) and its single-frame logic run. The CPU
// paths run DpiEngine (dpi_match.h: port groups, the G-Opt batched walk), which must decide the
// same; dpi_app_test.cc checks that on real rules and traffic.
//
//   stage 1: the automaton over every pattern (aho_corasick.h, ac_core.h's step and report);
//   stage 2: each rule is listed under one of its positive contents' patterns (the longest: the
//            rarest, as Snort's fast pattern), and evaluated when that pattern was found and so
//            were all its other positive patterns (as DpiEngine's groups require); rules with
//            negated contents only, for every packet. A rule matches when its protocol and ports
//            admit the packet (rule_applies) and its contents hold (contents_hold: the same
//            windows, tries and inspection budget, the recursion as an explicit stack).
//
// The patterns found are kept in a set of kFoundSlots ids. A payload with more distinct patterns
// than that is walked twice more: once to mark its patterns in a filter that may claim an absent
// one but never misses a present one, then in rounds of kFoundSlots distinct patterns, each
// round's rules evaluated when the filter holds all their patterns: the same answer (a rule whose
// contents all hold has all its patterns in the payload, and evaluating a rule twice gives the
// same result twice), at the cost of a few rules evaluated needlessly. The answer is the set of the matched rules' action bits (alert,
// drop, pass), not their sids: what a verdict needs, the same whatever order rules are met in.
#pragma once

#include <cstdint>

#include "apps/dpi/ac_core.h"
#include "core/compiler.h"

namespace tandem::dpi {

// The most contents (positive and negated) a rule may have: the depth of stage 2's stack. The
// Emerging Threats rules have at most 20.
inline constexpr uint32_t kMaxRuleContents = 64;
// Distinct pattern ids kept per payload (see above), and the bits of the filter of a payload with
// more.
inline constexpr uint32_t kFoundSlots = 96;
inline constexpr uint32_t kFilterBits = 4096;

// Action bits of a matched rule (flat_match's answer): alert (alert, log), drop (drop, reject,
// rejectsrc, rejectdst, rejectboth, sdrop), pass.
inline constexpr uint32_t kActAlert = 1, kActDrop = 2, kActPass = 4;

// Protocol classes (ids_rules.h's bits): TCP, UDP, other IP.
TANDEM_HD_INLINE uint32_t flat_proto_class(uint8_t proto) { return proto == 6 ? 1u : proto == 17 ? 2u : 4u; }

struct FlatContent {
  uint32_t begin;  // its bytes: DpiProgram::bytes[begin .. begin + len)
  uint32_t len;
  int32_t offset;    // -1: not given
  int32_t depth;     // -1: not given
  int32_t distance;  // INT32_MIN: not given
  int32_t within;    // -1: not given
  uint8_t nocase;
  uint8_t negated;
  uint8_t pad[2];
};

struct FlatRange {
  uint16_t lo, hi;  // closed
};

// PortSet (ids_rules.h): (any, or in one of the includes) and in none of the excludes.
struct FlatPortSet {
  uint32_t begin;  // ranges[begin .. begin + includes) then the excludes
  uint16_t includes, excludes;
  uint8_t any;
  uint8_t pad[3];
};

struct FlatRule {
  uint32_t index;          // in the rule set (IdsRuleSet::rules)
  uint32_t first_content;  // contents[first_content .. first_content + contents)
  uint32_t contents;       // 1..kMaxRuleContents
  uint32_t src_ports, dst_ports;  // port set indices
  uint32_t first_need, needs;     // its positive contents' pattern ids: DpiProgram::need_ids[first_need ..)
  uint8_t classes;      // protocol classes the keyword covers
  uint8_t exact_proto;  // icmp: 1, icmpv6: 58 (the class alone would admit any other IP protocol); else 0
  uint8_t bidirectional;
  uint8_t action;  // kAct* bit
};

// The program as plain arrays (host pointers, or device pointers in a GPU copy).
struct DpiProgram {
  AcView ac;  // the automaton over every pattern
  uint64_t ac_delta_entries, ac_rep_begin_entries, ac_rep_entries, ac_pattern_entries, ac_pattern_bytes;
  const FlatRule* rules;
  const FlatContent* contents;
  const uint8_t* bytes;
  const FlatPortSet* port_sets;
  const FlatRange* ranges;
  const uint32_t* trigger_begin;  // per pattern id + 1: its rules are triggers[trigger_begin[id] .. [id + 1])
  const uint32_t* triggers;       // rule indices
  const uint32_t* always;         // rules with negated contents only: evaluated for every packet
  const uint32_t* need_ids;
  uint64_t need_count;
  uint64_t rule_count, content_count, byte_count, port_set_count, range_count, trigger_begin_count, trigger_count,
      always_count;

  // Calls f(pointer&, count) for every array (gpu/device_core.cuh: a device copy repoints them).
  template <class F>
  void for_each_array(F&& f) {
    f(ac.delta, ac_delta_entries);
    f(ac.cls, uint64_t{256});
    f(ac.rep_begin, ac_rep_begin_entries);
    f(ac.rep, ac_rep_entries);
    f(ac.pats, ac_pattern_entries);
    f(ac.pat_bytes, ac_pattern_bytes);
    f(rules, rule_count);
    f(contents, content_count);
    f(bytes, byte_count);
    f(port_sets, port_set_count);
    f(ranges, range_count);
    f(trigger_begin, trigger_begin_count);
    f(triggers, trigger_count);
    f(always, always_count);
    f(need_ids, need_count);
  }
};

// What stage 2 reads of a packet (dpi_match.h's PacketInfo, for an IP packet that parsed).
struct FlatPacket {
  const uint8_t* payload;  // never null (an empty payload: any readable pointer)
  uint32_t len;
  uint8_t proto;
  uint16_t sport, dport;
};

TANDEM_HD_INLINE bool flat_ports_contain(const DpiProgram& pr, uint32_t set, uint16_t p) {
  const FlatPortSet& s = pr.port_sets[set];
  bool in = s.any != 0;
  for (uint32_t k = 0; k < s.includes; ++k) {
    const FlatRange r = pr.ranges[s.begin + k];
    in = in || (p >= r.lo && p <= r.hi);
  }
  for (uint32_t k = 0; k < s.excludes; ++k) {
    const FlatRange r = pr.ranges[s.begin + s.includes + k];
    in = in && !(p >= r.lo && p <= r.hi);
  }
  return in;
}

// rule_applies (dpi_match.h) for an IP packet.
TANDEM_HD_INLINE bool flat_rule_applies(const DpiProgram& pr, const FlatRule& r, const FlatPacket& p) {
  if (r.exact_proto ? p.proto != r.exact_proto : !(r.classes & flat_proto_class(p.proto))) return false;
  if (flat_ports_contain(pr, r.src_ports, p.sport) && flat_ports_contain(pr, r.dst_ports, p.dport)) return true;
  return r.bidirectional && flat_ports_contain(pr, r.src_ports, p.dport) && flat_ports_contain(pr, r.dst_ports, p.sport);
}

TANDEM_HD_INLINE uint8_t flat_lower(uint8_t c) { return c >= 'A' && c <= 'Z' ? static_cast<uint8_t>(c + 32) : c; }

// The first occurrence of c's bytes in p[from, to) (ending at or before `to`), or -1.
TANDEM_HD_INLINE int64_t flat_find(const DpiProgram& pr, const FlatContent& c, const uint8_t* p, int64_t from, int64_t to) {
  const int64_t m = c.len;
  const uint8_t* b = pr.bytes + c.begin;
  for (int64_t s = from < 0 ? 0 : from; s + m <= to; ++s) {
    int64_t k = 0;
    if (c.nocase) {
      while (k < m && flat_lower(p[s + k]) == flat_lower(b[k])) ++k;
    } else {
      while (k < m && p[s + k] == b[k]) ++k;
    }
    if (k == m) return s;
  }
  return -1;
}

// The window [from, to) a content may occupy, given the end of the previous content's match.
TANDEM_HD_INLINE void flat_window(const FlatContent& c, int64_t prev_end, int64_t n, int64_t* from, int64_t* to) {
  *from = c.offset >= 0 ? c.offset : 0;
  *to = n;
  if (c.depth >= 0 && *from + c.depth < *to) *to = *from + c.depth;
  if (c.distance != INT32_MIN || c.within >= 0) {
    const int64_t base = prev_end + (c.distance != INT32_MIN ? c.distance : 0);
    if (base > *from) *from = base;
    if (c.within >= 0 && base + c.within < *to) *to = base + c.within;
  }
}

// contents_hold (dpi_match.cc's recursive eval, kMaxTries and kMaxInspections as there): the
// recursion on an explicit stack, one frame per positive content being tried (a negated content
// is a tail call and needs none).
TANDEM_HD_INLINE bool flat_contents_hold(const DpiProgram& pr, const FlatRule& r, const uint8_t* p, uint32_t n_bytes,
                                         int max_tries, int max_inspections) {
  struct Frame {
    int64_t s, to;
    uint32_t i;
    int tries;
  };
  Frame st[kMaxRuleContents];
  uint32_t top = 0;
  int budget = max_inspections;
  const int64_t n = n_bytes;
  const FlatContent* cs = pr.contents + r.first_content;
  uint32_t i = 0;
  int64_t prev_end = 0;
  for (;;) {
    // Enter eval(i, prev_end).
    if (i == r.contents) return true;  // every content held: true goes up through every frame unchanged
    if (--budget >= 0) {
      const FlatContent& c = cs[i];
      int64_t from, to;
      flat_window(c, prev_end, n, &from, &to);
      if (c.negated) {
        if (flat_find(pr, c, p, from, to) < 0) {
          ++i;
          continue;
        }
      } else {
        const int64_t s = flat_find(pr, c, p, from, to);
        if (s >= 0 && max_tries > 0 && budget > 0) {
          st[top++] = Frame{s, to, i, 0};
          prev_end = s + c.len;
          ++i;
          continue;
        }
      }
    }
    // eval(i, prev_end) is false: the frame above tries its content's next occurrence.
    for (;;) {
      if (top == 0) return false;
      Frame& f = st[top - 1];
      const FlatContent& c = cs[f.i];
      f.s = flat_find(pr, c, p, f.s + 1, f.to);
      ++f.tries;
      if (f.s >= 0 && f.tries < max_tries && budget > 0) {
        prev_end = f.s + c.len;
        i = f.i + 1;
        break;
      }
      --top;
    }
  }
}

// The distinct pattern ids found in one payload, up to kFoundSlots; `full` once one more came.
struct FlatFound {
  uint32_t ids[kFoundSlots];
  uint32_t n = 0;
  bool full = false;
  TANDEM_HD_INLINE bool contains(uint32_t id) const {
    for (uint32_t k = 0; k < n; ++k) {
      if (ids[k] == id) return true;
    }
    return false;
  }
  TANDEM_HD_INLINE void add(uint32_t id) {
    if (n < kFoundSlots) {
      ids[n++] = id;
    } else {
      full = true;
    }
  }
};

// Both stages over one IP packet: the action bits of the rules that match (0: none). Each matched
// rule's index in the rule set goes to on_match(index) as well (possibly more than once, see
// above), for callers that want the rules.
template <class OnMatch>
TANDEM_HD_INLINE uint32_t flat_match(const DpiProgram& pr, const FlatPacket& p, int max_tries, int max_inspections,
                                     OnMatch& on_match) {
  uint32_t bits = 0;
  auto eval = [&](uint32_t rule) {
    const FlatRule& r = pr.rules[rule];
    if (flat_rule_applies(pr, r, p) && flat_contents_hold(pr, r, p.payload, p.len, max_tries, max_inspections)) {
      bits |= r.action;
      on_match(r.index);
    }
  };
  for (uint64_t k = 0; k < pr.always_count; ++k) {
    if (pr.always[k] != UINT32_MAX) eval(pr.always[k]);
  }
  // Stage 1: the distinct patterns, until there are too many to keep.
  FlatFound found;
  auto is_found = [&found](uint32_t id) { return found.contains(id); };
  auto add = [&found](uint32_t id) { found.add(id); };
  uint32_t x = 0;
  for (uint32_t k = 0; k < p.len && !found.full; ++k) {
    x = ac_step(pr.ac, x, p.payload[k]);
    if (x & kAcOutput) ac_report(pr.ac, x, p.payload, k + 1, is_found, add);
  }
  if (!found.full) {
    // Stage 2: the rules listed under a found pattern whose other patterns were all found.
    for (uint32_t f = 0; f < found.n; ++f) {
      const uint32_t id = found.ids[f];
      for (uint32_t k = pr.trigger_begin[id]; k < pr.trigger_begin[id + 1]; ++k) {
        const FlatRule& r = pr.rules[pr.triggers[k]];
        bool all = true;
        for (uint32_t q = 0; q < r.needs && all; ++q) all = found.contains(pr.need_ids[r.first_need + q]);
        if (all) eval(pr.triggers[k]);
      }
    }
    return bits;
  }
  // Too many patterns to keep. A first walk marks every pattern found in a filter of kFilterBits
  // (an id's bit: id mod kFilterBits; it may claim a pattern that is absent, never miss one that
  // is present). A second walk goes in rounds of kFoundSlots distinct patterns, each round's rules
  // evaluated when it fills (and at the end) if the filter holds all their patterns: a pattern
  // repeated within a round is evaluated once, and a rule whose patterns are absent is mostly
  // skipped, as with the exact check above.
  uint32_t filter[kFilterBits / 32] = {};
  auto never = [](uint32_t) { return false; };
  auto mark = [&filter](uint32_t id) { filter[(id % kFilterBits) / 32] |= 1u << (id % 32); };
  x = 0;
  for (uint32_t k = 0; k < p.len; ++k) {
    x = ac_step(pr.ac, x, p.payload[k]);
    if (x & kAcOutput) ac_report(pr.ac, x, p.payload, k + 1, never, mark);
  }
  auto marked = [&filter](uint32_t id) { return (filter[(id % kFilterBits) / 32] >> (id % 32)) & 1u; };
  found.n = 0;
  auto flush = [&] {
    for (uint32_t f = 0; f < found.n; ++f) {
      const uint32_t id = found.ids[f];
      for (uint32_t k = pr.trigger_begin[id]; k < pr.trigger_begin[id + 1]; ++k) {
        const FlatRule& r = pr.rules[pr.triggers[k]];
        bool all = true;
        for (uint32_t q = 0; q < r.needs && all; ++q) all = marked(pr.need_ids[r.first_need + q]);
        if (all) eval(pr.triggers[k]);
      }
    }
    found.n = 0;
  };
  auto in_round = [&](uint32_t id) {
    if (found.n == kFoundSlots) flush();
    found.ids[found.n++] = id;
  };
  x = 0;
  for (uint32_t k = 0; k < p.len; ++k) {
    x = ac_step(pr.ac, x, p.payload[k]);
    if (x & kAcOutput) ac_report(pr.ac, x, p.payload, k + 1, is_found, in_round);
  }
  flush();
  return bits;
}

}  // namespace tandem::dpi
