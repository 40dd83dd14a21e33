// HyperSplit (Qi, Xu, Yang, Li, Li: "Packet Classification Algorithms: From Theory to Practice",
// INFOCOM 2009), reimplemented from the paper: a binary decision tree that cuts the 5-field space
// at one field's threshold per node. As in EffiCuts and CutSplit, the rules are first split into
// up to four parts by whether their source and destination ranges are wide (2^16 addresses or
// more), and each part gets its own tree: a wildcard address spans every cut of that field, and in
// one tree with narrow rules it is copied into most leaves (ClassBench fw1_10k: one tree of 280
// MiB and 7.8 M nodes; four trees of 0.8 MiB). A lookup walks every tree and keeps the smallest
// rule index found. The build picks, at each node, the field and threshold that
// best balance the rules on both sides (the smallest larger side, then the fewest copies); a rule
// that spans the threshold goes to both children. A node stops splitting when it holds at most
// `leaf_rules` rules, when its highest-priority rule covers its whole region (everything after it
// is shadowed there), or when no threshold separates anything. The lookup (acl_core.h) is
// `__host__ __device__`: one node per level, then a short linear scan of the leaf's rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "apps/acl/acl_core.h"

namespace tandem::acl {

class HyperSplit {
 public:
  struct Options {
    uint32_t leaf_rules = 8;   // binth: rules a leaf may hold
    uint32_t max_depth = 64;   // a leaf is made at this depth whatever it holds
  };
  struct Stats {
    size_t nodes = 0;
    size_t leaves = 0;
    size_t leaf_rule_refs = 0;  // rule indices over all leaves (copies included)
    size_t trees = 0;
    uint32_t depth = 0;         // the deepest leaf's depth
    double build_seconds = 0;
  };

  HyperSplit() = default;
  static HyperSplit build(const std::vector<Rule>& rules, const Options& opts);
  static HyperSplit build(const std::vector<Rule>& rules) { return build(rules, Options{}); }

  uint32_t classify(const Header& h) const { return classify_hypersplit(view(), h); }
  // The same for n headers, a group at a time walking the tree level by level, each level's nodes
  // prefetched for the whole group (their reads overlap instead of following each other).
  void classify_batch(const Header* h, uint32_t* out, size_t n) const;

  HsView view() const {
    HsView v{nodes_.data(), leaf_rules_.data(), rules_.data(), {0, 0, 0, 0}, static_cast<uint32_t>(roots_.size())};
    for (size_t t = 0; t < roots_.size(); ++t) v.roots[t] = roots_[t];
    return v;
  }
  const std::vector<uint32_t>& roots() const { return roots_; }
  const std::vector<HsNode>& nodes() const { return nodes_; }
  const std::vector<uint32_t>& leaf_rules() const { return leaf_rules_; }
  const std::vector<Rule>& rules() const { return rules_; }
  const Stats& stats() const { return stats_; }
  size_t memory_bytes() const {
    return nodes_.size() * sizeof(HsNode) + leaf_rules_.size() * sizeof(uint32_t) + rules_.size() * sizeof(Rule);
  }

 private:
  std::vector<HsNode> nodes_;
  std::vector<uint32_t> roots_;  // one per non-empty part
  std::vector<uint32_t> leaf_rules_;
  std::vector<Rule> rules_;
  Stats stats_;
};

}  // namespace tandem::acl
