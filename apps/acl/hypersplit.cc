#include "apps/acl/hypersplit.h"

#include <algorithm>
#include <chrono>

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

struct Split {
  int field = -1;
  uint32_t threshold = 0;
  size_t left = 0, right = 0;
};

class Builder {
 public:
  Builder(const std::vector<Rule>& rules, const HyperSplit::Options& o, std::vector<HsNode>& nodes,
          std::vector<uint32_t>& leaf_rules, HyperSplit::Stats& st)
      : rules_(rules), o_(o), nodes_(nodes), leaf_rules_(leaf_rules), st_(st) {}

  void build(uint32_t at, std::vector<uint32_t> ids, const Box& box, uint32_t depth) {
    for (size_t k = 0; k < ids.size(); ++k) {
      if (covers(rules_[ids[k]], box)) {
        ids.resize(k + 1);
        break;
      }
    }
    Split s;
    if (ids.size() > o_.leaf_rules && depth < o_.max_depth) s = best_split(ids, box);
    if (s.field < 0) {
      nodes_[at] = {HsNode::kLeaf, static_cast<uint32_t>(leaf_rules_.size()), static_cast<uint32_t>(ids.size()), 0};
      leaf_rules_.insert(leaf_rules_.end(), ids.begin(), ids.end());
      ++st_.leaves;
      st_.leaf_rule_refs += ids.size();
      st_.depth = std::max(st_.depth, depth);
      return;
    }
    const int f = s.field;
    std::vector<uint32_t> left, right;
    left.reserve(s.left);
    right.reserve(s.right);
    for (uint32_t id : ids) {
      if (std::max(rules_[id].lo[f], box.lo[f]) <= s.threshold) left.push_back(id);
      if (std::min(rules_[id].hi[f], box.hi[f]) > s.threshold) right.push_back(id);
    }
    ids.clear();
    ids.shrink_to_fit();
    const uint32_t l = static_cast<uint32_t>(nodes_.size());
    nodes_.push_back({});
    nodes_.push_back({});
    nodes_[at] = {static_cast<uint32_t>(f), s.threshold, l, l + 1};
    Box lb = box, rb = box;
    lb.hi[f] = s.threshold;
    rb.lo[f] = s.threshold + 1;
    build(l, std::move(left), lb, depth + 1);
    build(l + 1, std::move(right), rb, depth + 1);
  }

 private:
  // For each field: the thresholds at the rules' range ends inside the box; the one minimizing the
  // larger side (then the total, i.e. the copies) wins over all fields. No split when the best one
  // leaves every rule on both sides.
  Split best_split(const std::vector<uint32_t>& ids, const Box& box) {
    Split best;
    size_t best_max = ids.size(), best_sum = 2 * ids.size() + 1;
    std::vector<uint32_t> los(ids.size()), his(ids.size()), cand;
    for (int f = 0; f < kFields; ++f) {
      cand.clear();
      for (size_t k = 0; k < ids.size(); ++k) {
        const Rule& r = rules_[ids[k]];
        los[k] = std::max(r.lo[f], box.lo[f]);
        his[k] = std::min(r.hi[f], box.hi[f]);
        if (los[k] > box.lo[f]) cand.push_back(los[k] - 1);
        if (his[k] < box.hi[f]) cand.push_back(his[k]);
      }
      if (cand.empty()) continue;
      std::sort(cand.begin(), cand.end());
      cand.erase(std::unique(cand.begin(), cand.end()), cand.end());
      std::sort(los.begin(), los.end());
      std::sort(his.begin(), his.end());
      for (uint32_t t : cand) {
        const size_t left = static_cast<size_t>(std::upper_bound(los.begin(), los.end(), t) - los.begin());
        const size_t right = ids.size() - static_cast<size_t>(std::upper_bound(his.begin(), his.end(), t) - his.begin());
        const size_t mx = std::max(left, right), sum = left + right;
        if (mx < best_max || (mx == best_max && sum < best_sum)) {
          best = {f, t, left, right};
          best_max = mx;
          best_sum = sum;
        }
      }
    }
    if (best.field >= 0 && best_max >= ids.size()) best.field = -1;  // no side gets smaller
    return best;
  }

  const std::vector<Rule>& rules_;
  const HyperSplit::Options& o_;
  std::vector<HsNode>& nodes_;
  std::vector<uint32_t>& leaf_rules_;
  HyperSplit::Stats& st_;
};

}  // namespace

HyperSplit HyperSplit::build(const std::vector<Rule>& rules, const Options& opts) {
  const auto t0 = std::chrono::steady_clock::now();
  HyperSplit h;
  h.rules_ = rules;
  // The parts: narrow/wide source x narrow/wide destination, each in priority order.
  std::vector<uint32_t> part[kMaxTrees];
  for (uint32_t i = 0; i < rules.size(); ++i) {
    const bool wide_src = rules[i].hi[kSrc] - rules[i].lo[kSrc] >= (1u << 16);
    const bool wide_dst = rules[i].hi[kDst] - rules[i].lo[kDst] >= (1u << 16);
    part[(wide_src ? 2 : 0) + (wide_dst ? 1 : 0)].push_back(i);
  }
  Box box;
  for (int f = 0; f < kFields; ++f) box.lo[f] = 0;
  box.hi[kSrc] = box.hi[kDst] = 0xFFFFFFFFu;
  box.hi[kSport] = box.hi[kDport] = 0xFFFF;
  box.hi[kProto] = 0xFF;
  Builder b(h.rules_, opts, h.nodes_, h.leaf_rules_, h.stats_);
  for (auto& ids : part) {
    if (ids.empty()) continue;
    const uint32_t root = static_cast<uint32_t>(h.nodes_.size());
    h.nodes_.push_back({});
    h.roots_.push_back(root);
    b.build(root, std::move(ids), box, 0);
  }
  if (h.roots_.empty()) {  // no rules: one empty leaf, so that every lookup finds no match
    h.nodes_.push_back({HsNode::kLeaf, 0, 0, 0});
    h.roots_.push_back(0);
    h.stats_.leaves = 1;
  }
  h.stats_.trees = h.roots_.size();
  h.stats_.nodes = h.nodes_.size();
  h.stats_.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return h;
}

void HyperSplit::classify_batch(const Header* h, uint32_t* out, size_t n) const {
  constexpr size_t kGroup = 32;
  const HsView v = view();
  uint32_t at[kGroup];
  HeaderFields f[kGroup];
  for (size_t base = 0; base < n; base += kGroup) {
    const size_t g = std::min(kGroup, n - base);
    for (size_t j = 0; j < g; ++j) {
      out[base + j] = kNoMatch;
      f[j] = fields_of(h[base + j]);
    }
    for (uint32_t t = 0; t < v.trees; ++t) {
      for (size_t j = 0; j < g; ++j) at[j] = v.roots[t];
      for (bool moved = true; moved;) {
        moved = false;
        for (size_t j = 0; j < g; ++j) {
          const HsNode& x = v.nodes[at[j]];
          if (x.kind == HsNode::kLeaf) continue;
          at[j] = f[j].v[x.kind] <= x.threshold ? x.left : x.right;
          __builtin_prefetch(&v.nodes[at[j]]);
          moved = true;
        }
      }
      for (size_t j = 0; j < g; ++j) {
        const HsNode& leaf = v.nodes[at[j]];
        if (leaf.left) __builtin_prefetch(&v.rules[v.leaf_rules[leaf.threshold]]);
      }
      for (size_t j = 0; j < g; ++j) out[base + j] = hs_match_leaf(v, v.nodes[at[j]], h[base + j], out[base + j]);
    }
  }
}

}  // namespace tandem::acl
