// HyperSplit (Qi, Xu, Yang, Li, Li: "Packet Classification Algorithms: From Theory to Practice",
// INFOCOM 2009), reimplemented from the paper: a decision tree that cuts the 5-field space at
// thresholds of one field per node. As in EffiCuts and CutSplit, the rules are first split into
// up to four parts by whether their source and destination ranges are wide (2^16 addresses or
// more), and each part gets its own tree: a wildcard address spans every cut of that field, and in
// one tree with narrow rules it is copied into most leaves (ClassBench fw1_10k with binary nodes:
// one tree of 280 MiB and 7.8 M nodes; four trees of 0.8 MiB). A lookup walks the trees and keeps
// the smallest rule index found; each node knows the smallest rule index under it, so a tree (and
// on the host's batched path, a leaf) that cannot hold a better rule than the one found is skipped.
//
// The paper's nodes cut at one threshold. Here a node cuts its field at up to seven (eight
// children): on the host the thresholds compare in one 8-lane vector and on the device in seven
// branch-free steps, so a level costs about what a binary one does, and far fewer are walked
// (ClassBench's acl1, fw1 and ipc1 10k sets: 25-39 binary nodes per header over the trees, 5.5-11.3
// multiway ones with the skipping). The build picks, at each node and for each field, thresholds
// by cutting the part with the most rules at its most balanced threshold (the smallest larger
// side, then the fewest copies), up to seven times; the field whose largest part is smallest
// (then the fewest copies) wins, if that part is smaller than the node. A rule that spans a
// threshold goes to both sides. A node stays a leaf when it holds at most `leaf_rules` rules, when
// its highest-priority rule covers its whole region (everything after it is shadowed there), when
// no cut makes its largest part smaller, at `max_depth`, or once the trees' leaves hold their copy
// budget (hypersplit.cc; such leaves may hold many rules). The lookup (acl_core.h) is `__host__
// __device__`: one node per level, then a linear scan of the leaf's rules. The host's batched
// lookup checks a leaf's rules eight at a time from a copy of them laid out by field (LeafBlock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "apps/acl/acl_core.h"

namespace tandem::acl {

class HyperSplit {
 public:
  struct Options {
    uint32_t leaf_rules = 8;   // binth: a node with more is cut, where a threshold separates them
    uint32_t max_depth = 64;   // a leaf is made at this depth whatever it holds
  };
  struct Stats {
    size_t nodes = 0;
    size_t leaves = 0;
    size_t leaf_rule_refs = 0;  // rule indices over all leaves (copies included)
    size_t trees = 0;
    uint32_t depth = 0;         // the deepest leaf's depth (nodes above it)
    bool copy_budget_reached = false;  // the tree was built again with copies limited (hypersplit.cc)
    bool leaves_left_uncut = false;    // that build's leaves passed the budget too, after which no
                                       // node was cut
    double build_seconds = 0;
  };

  HyperSplit() = default;
  static HyperSplit build(const std::vector<Rule>& rules, const Options& opts);
  static HyperSplit build(const std::vector<Rule>& rules) { return build(rules, Options{}); }

  uint32_t classify(const Header& h) const { return classify_hypersplit(view(), h); }
  // The same for n headers, a group at a time walking the trees level by level, each level's nodes
  // prefetched for the whole group (their reads overlap instead of following each other), a
  // node's thresholds and a leaf's rules compared eight at a time with AVX2, and a tree or leaf
  // skipped by the headers that have already found a rule before all of its rules. Without AVX2
  // (vector_lookup_supported), classify() per header.
  void classify_batch(const Header* h, uint32_t* out, size_t n) const;
  static bool vector_lookup_supported();

  // A leaf's rules, eight per block, laid out by field for one vector compare per field. Values
  // are stored with their top bit flipped, so that signed compares order them as unsigned. Lanes
  // past a leaf's rules never match (lo above hi).
  struct alignas(32) LeafBlock {
    int32_t lo[4][8];  // src, dst, sport, dport
    int32_t hi[4][8];
    uint32_t proto_mask[8];
    uint32_t proto_value[8];
    uint32_t names_ports[8];  // ~0 where the rule restricts ports (it never matches a kNoPorts header)
    uint32_t rule[8];         // rule indices, ascending; kNoMatch past the leaf's rules
    static constexpr uint32_t kFlip = 0x80000000u;  // what lo and hi are stored xor'ed with
  };

  HsView view() const {
    HsView v{nodes_.data(), leaf_rules_.data(), rules_.data(), {0, 0, 0, 0}, static_cast<uint32_t>(roots_.size())};
    for (size_t t = 0; t < roots_.size(); ++t) v.roots[t] = roots_[t];
    return v;
  }
  const std::vector<uint32_t>& roots() const { return roots_; }
  const std::vector<HsNode>& nodes() const { return nodes_; }
  const std::vector<uint32_t>& leaf_rules() const { return leaf_rules_; }
  const std::vector<Rule>& rules() const { return rules_; }
  const std::vector<LeafBlock>& leaf_blocks() const { return blocks_; }
  const Stats& stats() const { return stats_; }
  // The arrays a lookup reads (the device's copy has all but the leaf blocks).
  size_t memory_bytes() const {
    return nodes_.size() * sizeof(HsNode) + leaf_rules_.size() * sizeof(uint32_t) + rules_.size() * sizeof(Rule) +
           blocks_.size() * sizeof(LeafBlock);
  }

 private:
  std::vector<HsNode> nodes_;
  std::vector<uint32_t> roots_;  // one per non-empty part
  std::vector<uint32_t> leaf_rules_;
  std::vector<Rule> rules_;
  std::vector<LeafBlock> blocks_;
  Stats stats_;

  void build_trees(const Options& opts, size_t spread);
};

}  // namespace tandem::acl
