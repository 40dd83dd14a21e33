// The 5-tuple firewall's per-packet decision, written once as `__host__ __device__` code: a rule
// matches a header when the source and destination addresses lie in its prefixes, the ports in its
// ranges and the protocol equals its value under its mask; rules are in priority order (their
// order in the file) and the first match wins. Two classifiers give the same answer:
//
//   linear:     every rule in order until one matches (the GPU-router report's and iptables' way);
//   HyperSplit: (Qi et al., INFOCOM 2009) a decision tree over the five fields: each inner node
//               cuts one field at a few thresholds (the paper's nodes cut at one; hypersplit.h says
//               why more); a leaf holds the few rules (in priority order) that can still match in
//               its region, checked linearly. No hashing and one dependent read per level, so the
//               same code walks the tree on the CPU and the GPU.
#pragma once

#include <cstdint>

#include "core/compiler.h"

namespace tandem::acl {

inline constexpr uint32_t kNoMatch = 0xFFFFFFFFu;

// Header::flags: the packet has no transport ports (a protocol without them, or an IPv4 fragment
// after the first, whose bytes continue an earlier fragment's payload); sport and dport are 0.
// As in iptables, a rule that restricts either port never matches it, whatever its ports' ranges.
inline constexpr uint8_t kNoPorts = 1;

// Host byte order. 16 bytes, so that a GPU item is one aligned 16-byte load.
struct alignas(16) Header {
  uint32_t src = 0;
  uint32_t dst = 0;
  uint16_t sport = 0;
  uint16_t dport = 0;
  uint8_t proto = 0;
  uint8_t flags = 0;  // kNoPorts
  uint8_t pad[2] = {0, 0};
};
static_assert(sizeof(Header) == 16);

enum Field : uint8_t { kSrc = 0, kDst = 1, kSport = 2, kDport = 3, kProto = 4, kFields = 5 };

// A rule as closed ranges per field (prefixes become ranges), plus the protocol's value and mask
// (a mask other than 0 or 0xFF is not a range: its range is 0..255 and the match checks the mask).
struct Rule {
  uint32_t lo[kFields];
  uint32_t hi[kFields];
  uint8_t proto_value = 0;
  uint8_t proto_mask = 0;
  uint8_t action = 0;  // Action
  uint8_t pad = 0;
};

TANDEM_HD_INLINE uint32_t header_field(const Header& h, int f) {
  switch (f) {
    case kSrc: return h.src;
    case kDst: return h.dst;
    case kSport: return h.sport;
    case kDport: return h.dport;
    default: return h.proto;
  }
}

// Whether the rule names ports: a range other than 0-65535 for either one.
TANDEM_HD_INLINE bool restricts_ports(const Rule& r) {
  return (r.lo[kSport] | r.lo[kDport]) != 0 || r.hi[kSport] < 0xFFFF || r.hi[kDport] < 0xFFFF;
}

// The port check comes last: it is reached only by a header that matches otherwise.
TANDEM_HD_INLINE bool rule_matches(const Rule& r, const Header& h) {
  return h.src - r.lo[kSrc] <= r.hi[kSrc] - r.lo[kSrc] && h.dst - r.lo[kDst] <= r.hi[kDst] - r.lo[kDst] &&
         uint32_t{h.sport} - r.lo[kSport] <= r.hi[kSport] - r.lo[kSport] &&
         uint32_t{h.dport} - r.lo[kDport] <= r.hi[kDport] - r.lo[kDport] && (h.proto & r.proto_mask) == r.proto_value &&
         !((h.flags & kNoPorts) && restricts_ports(r));
}

// Index of the first rule matching h, or kNoMatch.
TANDEM_HD_INLINE uint32_t classify_linear(const Rule* rules, uint32_t n, const Header& h) {
  for (uint32_t i = 0; i < n; ++i) {
    if (rule_matches(rules[i], h)) return i;
  }
  return kNoMatch;
}

// A HyperSplit node. An inner node cuts one field at up to kCuts thresholds in ascending order;
// a header goes to child `first + r`, r being the number of thresholds below its field's value
// (value > cut), and the children are contiguous. Unused thresholds are UINT32_MAX, which no value
// exceeds, so the count needs no length: eight thresholds compare in one vector on the host, and a
// device thread counts seven without a branch. A leaf (kind kLeaf) names a run of `count` rule
// indices starting at `first` in the leaf-rule array, in priority order. One node per cache line.
struct alignas(64) HsNode {
  static constexpr uint32_t kLeaf = 0xFF;
  static constexpr int kCuts = 7;
  uint32_t cut[kCuts + 1];  // the last is always UINT32_MAX (a vector of eight)
  uint32_t kind;            // the field compared, or kLeaf
  uint32_t first;           // inner: the first child's index; leaf: the first leaf-rule index
  uint32_t count;           // inner: children (2..kCuts + 1); leaf: rules
  uint32_t block;           // leaf: its first block in the host's vector copy (hypersplit.h)
  uint32_t min_rule;        // the smallest rule index under the node (kNoMatch: none)
  uint32_t pad[3];
};
static_assert(sizeof(HsNode) == 64);

TANDEM_HD_INLINE uint32_t hs_child(const HsNode& x, uint32_t value) {
  uint32_t r = 0;
  for (int i = 0; i < HsNode::kCuts; ++i) r += value > x.cut[i];
  return x.first + r;
}

// Up to kMaxTrees trees over disjoint parts of the rule set (hypersplit.h: rules are split by how
// wide their address prefixes are, so wildcards do not multiply the narrow rules' copies). Leaves
// hold indices into the whole rule array, in priority order; the answer is the smallest index
// any tree finds.
inline constexpr int kMaxTrees = 4;
struct HsView {
  const HsNode* nodes;
  const uint32_t* leaf_rules;
  const Rule* rules;
  uint32_t roots[kMaxTrees];
  uint32_t trees;
};

// The header's fields as an array indexed by Field: a node reads its field with one indexed load
// instead of a switch (a jump per level that the branch predictor cannot learn). A kNoPorts
// header walks the tree as ports 0 and 0, whatever its port fields hold; its leaf then holds every
// rule that can match it (hypersplit.cc: a rule restricting ports does not shadow the rules after
// it in a region with ports 0 and 0), and rule_matches skips those that restrict ports.
struct HeaderFields {
  uint32_t v[kFields];
};
TANDEM_HD_INLINE HeaderFields fields_of(const Header& h) {
  const bool ports = !(h.flags & kNoPorts);
  return {{h.src, h.dst, ports ? h.sport : 0u, ports ? h.dport : 0u, h.proto}};
}

TANDEM_HD_INLINE uint32_t hs_leaf_of(const HsNode* nodes, uint32_t root, const HeaderFields& f) {
  uint32_t n = root;
  while (nodes[n].kind != HsNode::kLeaf) n = hs_child(nodes[n], f.v[nodes[n].kind]);
  return n;
}

// The first rule of the leaf matching h with an index below `best`, else `best`.
TANDEM_HD_INLINE uint32_t hs_match_leaf(const HsView& v, const HsNode& leaf, const Header& h, uint32_t best) {
  for (uint32_t k = 0; k < leaf.count; ++k) {
    const uint32_t r = v.leaf_rules[leaf.first + k];
    if (r >= best) break;
    if (rule_matches(v.rules[r], h)) return r;
  }
  return best;
}

// A tree none of whose rules comes before the best rule found so far is not walked.
TANDEM_HD_INLINE uint32_t classify_hypersplit(const HsView& v, const Header& h) {
  const HeaderFields f = fields_of(h);
  uint32_t best = kNoMatch;
  for (uint32_t t = 0; t < v.trees; ++t) {
    if (best <= v.nodes[v.roots[t]].min_rule) continue;
    best = hs_match_leaf(v, v.nodes[hs_leaf_of(v.nodes, v.roots[t], f)], h, best);
  }
  return best;
}

}  // namespace tandem::acl
