#include "apps/acl/hypersplit.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace tandem::acl {

namespace {

struct Box {
  uint32_t lo[kFields];
  uint32_t hi[kFields];
};

// Whether r matches every header that reaches the box, so that the rules after it are shadowed
// there. kNoPorts headers reach a box as ports 0 and 0, and a rule that restricts ports does not
// match them (acl_core.h): such a rule covers no box that holds that corner.
bool covers(const Rule& r, const Box& b) {
  for (int f = 0; f < kFields; ++f) {
    if (r.lo[f] > b.lo[f] || r.hi[f] < b.hi[f]) return false;
  }
  if (b.lo[kSport] == 0 && b.lo[kDport] == 0 && restricts_ports(r)) return false;
  return r.proto_mask == 0 || (r.proto_mask == 0xFF && b.lo[kProto] == b.hi[kProto]);
}

// One field's range inside a node's box, and the rules that reach it.
struct Part {
  uint32_t lo, hi;
  std::vector<uint32_t> ids;
  bool settled = false;  // no threshold to cut at, or cutting would pass the node's copy limit
};

// A node's cut: a field and its parts, in ascending order of range.
struct Cut {
  int field = -1;
  std::vector<Part> parts;
  size_t largest = 0, total = 0;
};

class Builder {
 public:
  // spread: a node's children may hold at most `spread` times its rules in all; once the leaves
  // of all the trees hold max_refs rule copies, no node is cut any more. The budget is shared,
  // not per tree: a budget per tree reshaped ClassBench's trees, whose small parts copy their
  // rules more often than 64 times.
  Builder(const std::vector<Rule>& rules, const HyperSplit::Options& o, size_t spread, size_t max_refs,
          std::vector<HsNode>& nodes, std::vector<uint32_t>& leaf_rules, HyperSplit::Stats& st)
      : rules_(rules), o_(o), spread_(spread), max_refs_(max_refs), nodes_(nodes), leaf_rules_(leaf_rules), st_(st) {}

  bool budget_reached() const { return st_.leaf_rule_refs > max_refs_; }

  void build(uint32_t at, std::vector<uint32_t> ids, const Box& box, uint32_t depth) {
    for (size_t k = 0; k < ids.size(); ++k) {
      if (covers(rules_[ids[k]], box)) {
        ids.resize(k + 1);
        break;
      }
    }
    Cut c;
    if (ids.size() > o_.leaf_rules && depth < o_.max_depth && !budget_reached()) c = best_cut(ids, box);
    if (c.field < 0) {
      HsNode leaf{};
      leaf.kind = HsNode::kLeaf;
      leaf.first = static_cast<uint32_t>(leaf_rules_.size());
      leaf.count = static_cast<uint32_t>(ids.size());
      nodes_[at] = leaf;
      leaf_rules_.insert(leaf_rules_.end(), ids.begin(), ids.end());
      ++st_.leaves;
      st_.leaf_rule_refs += ids.size();
      st_.depth = std::max(st_.depth, depth);
      return;
    }
    ids.clear();
    ids.shrink_to_fit();
    const int f = c.field;
    HsNode x{};
    std::fill(std::begin(x.cut), std::end(x.cut), UINT32_MAX);
    for (size_t p = 0; p + 1 < c.parts.size(); ++p) x.cut[p] = c.parts[p].hi;
    x.kind = static_cast<uint32_t>(f);
    x.first = static_cast<uint32_t>(nodes_.size());
    x.count = static_cast<uint32_t>(c.parts.size());
    nodes_[at] = x;
    nodes_.resize(nodes_.size() + c.parts.size());
    for (size_t p = 0; p < c.parts.size(); ++p) {
      Box b = box;
      b.lo[f] = c.parts[p].lo;
      b.hi[f] = c.parts[p].hi;
      build(x.first + static_cast<uint32_t>(p), std::move(c.parts[p].ids), b, depth + 1);
    }
  }

 private:
  struct Threshold {
    bool found = false;
    uint32_t t = 0;
    size_t larger = 0, sum = 0;
  };

  // The threshold of field f inside [lo, hi] at a rule's range end that minimizes the larger side
  // (then the total, i.e. the copies) of `ids`; not found when no rule ends inside the range.
  Threshold best_threshold(const std::vector<uint32_t>& ids, int f, uint32_t lo, uint32_t hi) {
    los_.resize(ids.size());
    his_.resize(ids.size());
    cand_.clear();
    for (size_t k = 0; k < ids.size(); ++k) {
      const Rule& r = rules_[ids[k]];
      los_[k] = std::max(r.lo[f], lo);
      his_[k] = std::min(r.hi[f], hi);
      if (los_[k] > lo) cand_.push_back(los_[k] - 1);
      if (his_[k] < hi) cand_.push_back(his_[k]);
    }
    Threshold best;
    if (cand_.empty()) return best;
    std::sort(cand_.begin(), cand_.end());
    cand_.erase(std::unique(cand_.begin(), cand_.end()), cand_.end());
    std::sort(los_.begin(), los_.end());
    std::sort(his_.begin(), his_.end());
    best.larger = ids.size();
    best.sum = 2 * ids.size() + 1;
    for (uint32_t t : cand_) {
      const size_t left = static_cast<size_t>(std::upper_bound(los_.begin(), los_.end(), t) - los_.begin());
      const size_t right = ids.size() - static_cast<size_t>(std::upper_bound(his_.begin(), his_.end(), t) - his_.begin());
      const size_t mx = std::max(left, right), sum = left + right;
      if (mx < best.larger || (mx == best.larger && sum < best.sum)) {
        best = {true, t, mx, sum};
      }
    }
    return best;
  }

  // Field f's parts: the part with the most rules cut at its best threshold, up to kCuts times,
  // while the parts hold at most spread_ times the node's rules in all.
  Cut cut_field(const std::vector<uint32_t>& ids, const Box& box, int f) {
    Cut c;
    c.field = f;
    c.parts.push_back({box.lo[f], box.hi[f], ids});
    size_t total = ids.size();
    const size_t limit = spread_ > SIZE_MAX / ids.size() ? SIZE_MAX : spread_ * ids.size();
    while (c.parts.size() <= static_cast<size_t>(HsNode::kCuts)) {
      size_t p = c.parts.size();
      for (size_t q = 0; q < c.parts.size(); ++q) {
        if (c.parts[q].settled || c.parts[q].ids.size() <= o_.leaf_rules) continue;
        if (p == c.parts.size() || c.parts[q].ids.size() > c.parts[p].ids.size()) p = q;
      }
      if (p == c.parts.size()) break;
      Part& part = c.parts[p];
      const Threshold t = best_threshold(part.ids, f, part.lo, part.hi);
      if (!t.found) {
        part.settled = true;
        continue;
      }
      if (total - part.ids.size() + t.sum > limit) {
        part.settled = true;
        continue;
      }
      total += t.sum - part.ids.size();
      Part left{part.lo, t.t, {}}, right{t.t + 1, part.hi, {}};
      for (uint32_t id : part.ids) {
        if (std::max(rules_[id].lo[f], part.lo) <= t.t) left.ids.push_back(id);
        if (std::min(rules_[id].hi[f], part.hi) > t.t) right.ids.push_back(id);
      }
      c.parts[p] = std::move(right);
      c.parts.insert(c.parts.begin() + static_cast<std::ptrdiff_t>(p), std::move(left));
    }
    for (const Part& part : c.parts) {
      c.largest = std::max(c.largest, part.ids.size());
      c.total += part.ids.size();
    }
    return c;
  }

  // The field whose largest part is smallest (then the fewest copies); none when no field cuts.
  Cut best_cut(const std::vector<uint32_t>& ids, const Box& box) {
    Cut best;
    for (int f = 0; f < kFields; ++f) {
      Cut c = cut_field(ids, box, f);
      if (c.parts.size() < 2 || c.largest >= ids.size()) continue;
      if (best.field < 0 || c.largest < best.largest || (c.largest == best.largest && c.total < best.total)) {
        best = std::move(c);
      }
    }
    return best;
  }

  const std::vector<Rule>& rules_;
  const HyperSplit::Options& o_;
  const size_t spread_, max_refs_;
  std::vector<HsNode>& nodes_;
  std::vector<uint32_t>& leaf_rules_;
  HyperSplit::Stats& st_;
  std::vector<uint32_t> los_, his_, cand_;  // best_threshold's scratch
};

int32_t flipped(uint32_t v) { return static_cast<int32_t>(v ^ HyperSplit::LeafBlock::kFlip); }

// The leaves' rules as LeafBlocks; each leaf's `block` names its first.
std::vector<HyperSplit::LeafBlock> blocks_of_leaves(std::vector<HsNode>& nodes, const std::vector<uint32_t>& leaf_rules,
                                               const std::vector<Rule>& rules) {
  std::vector<HyperSplit::LeafBlock> blocks;
  for (HsNode& x : nodes) {
    if (x.kind != HsNode::kLeaf) continue;
    x.block = static_cast<uint32_t>(blocks.size());
    for (uint32_t k = 0; k < x.count; k += 8) {
      HyperSplit::LeafBlock b{};
      for (int lane = 0; lane < 8; ++lane) {
        if (k + lane >= x.count) {
          for (int f = 0; f < 4; ++f) {
            b.lo[f][lane] = flipped(UINT32_MAX);
            b.hi[f][lane] = flipped(0);
          }
          b.rule[lane] = kNoMatch;
          continue;
        }
        const uint32_t id = leaf_rules[x.first + k + lane];
        const Rule& r = rules[id];
        for (int f = 0; f < 4; ++f) {
          b.lo[f][lane] = flipped(r.lo[f]);
          b.hi[f][lane] = flipped(r.hi[f]);
        }
        b.proto_mask[lane] = r.proto_mask;
        b.proto_value[lane] = r.proto_value;
        b.names_ports[lane] = restricts_ports(r) ? ~0u : 0u;
        b.rule[lane] = id;
      }
      blocks.push_back(b);
    }
  }
  return blocks;
}

}  // namespace

// The trees' leaves may hold this many copies of each rule (plus 4,096) before cutting stops
// (ClassBench's twelve 10k sets hold 1.0-42). Rule sets of many overlapping ranges would
// otherwise copy their rules into leaves without bound: 2,000 random ranges made 3.1 M copies
// and 270 MB.
constexpr size_t kCopiesPerRule = 64;

void HyperSplit::build_trees(const Options& opts, size_t spread) {
  nodes_.clear();
  roots_.clear();
  leaf_rules_.clear();
  stats_ = Stats{};
  // The parts: narrow/wide source x narrow/wide destination, each in priority order.
  std::vector<uint32_t> part[kMaxTrees];
  for (uint32_t i = 0; i < rules_.size(); ++i) {
    const bool wide_src = rules_[i].hi[kSrc] - rules_[i].lo[kSrc] >= (1u << 16);
    const bool wide_dst = rules_[i].hi[kDst] - rules_[i].lo[kDst] >= (1u << 16);
    part[(wide_src ? 2 : 0) + (wide_dst ? 1 : 0)].push_back(i);
  }
  Box box;
  for (int f = 0; f < kFields; ++f) box.lo[f] = 0;
  box.hi[kSrc] = box.hi[kDst] = 0xFFFFFFFFu;
  box.hi[kSport] = box.hi[kDport] = 0xFFFF;
  box.hi[kProto] = 0xFF;
  Builder b(rules_, opts, spread, kCopiesPerRule * rules_.size() + 4096, nodes_, leaf_rules_, stats_);
  for (auto& ids : part) {
    if (ids.empty()) continue;
    const uint32_t root = static_cast<uint32_t>(nodes_.size());
    nodes_.push_back({});
    roots_.push_back(root);
    b.build(root, std::move(ids), box, 0);
  }
  stats_.copy_budget_reached = b.budget_reached();
}

// Cut first as freely as kCuts allows. When the trees reach the copy budget, build them again
// with each node's children holding at most twice its rules, as a binary cut does; should that
// reach the budget too, the nodes left uncut stay leaves with all their rules (correct, slower to
// check).
HyperSplit HyperSplit::build(const std::vector<Rule>& rules, const Options& opts) {
  const auto t0 = std::chrono::steady_clock::now();
  HyperSplit h;
  h.rules_ = rules;
  h.build_trees(opts, SIZE_MAX);
  if (h.stats_.copy_budget_reached) {
    h.build_trees(opts, 2);
    h.stats_.leaves_left_uncut = h.stats_.copy_budget_reached;
    h.stats_.copy_budget_reached = true;
  }
  if (h.roots_.empty()) {  // no rules: one empty leaf, so that every lookup finds no match
    HsNode leaf{};
    leaf.kind = HsNode::kLeaf;
    h.nodes_.push_back(leaf);
    h.roots_.push_back(0);
    h.stats_.leaves = 1;
  }
  // Children come after their parent, so one pass from the end sees a node's children first.
  for (size_t i = h.nodes_.size(); i-- > 0;) {
    HsNode& x = h.nodes_[i];
    x.min_rule = kNoMatch;
    if (x.kind == HsNode::kLeaf) {
      if (x.count) x.min_rule = h.leaf_rules_[x.first];
    } else {
      for (uint32_t c = 0; c < x.count; ++c) x.min_rule = std::min(x.min_rule, h.nodes_[x.first + c].min_rule);
    }
  }
  h.blocks_ = blocks_of_leaves(h.nodes_, h.leaf_rules_, h.rules_);
  h.stats_.trees = h.roots_.size();
  h.stats_.nodes = h.nodes_.size();
  h.stats_.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return h;
}

}  // namespace tandem::acl
