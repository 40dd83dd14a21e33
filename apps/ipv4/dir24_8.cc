#include "apps/ipv4/dir24_8.h"

#include <cassert>
#include <cstring>

namespace tandem::ipv4 {

using E = Dir24_8Entry;

Dir24_8::Dir24_8(uint32_t max_tbl8_groups)
    : tbl24_mem_(size_t{kTbl24Entries} * sizeof(uint32_t)),
      tbl8_mem_(size_t{max_tbl8_groups ? max_tbl8_groups : 1} * kTbl8GroupEntries * sizeof(uint32_t)),
      max_tbl8_groups_(max_tbl8_groups) {
  // Group indices must fit the 24-bit value field of a tbl24 entry.
  if (max_tbl8_groups > E::kValueMask + 1) max_tbl8_groups_ = E::kValueMask + 1;
  tbl24_ = static_cast<uint32_t*>(tbl24_mem_.data());  // zero-filled: every entry invalid
  tbl8_ = static_cast<uint32_t*>(tbl8_mem_.data());
  tbl8_free_.reserve(max_tbl8_groups_);
  for (uint32_t g = max_tbl8_groups_; g > 0; --g) tbl8_free_.push_back(g - 1);
}

const char* Dir24_8::status_name(Status s) {
  switch (s) {
    case Status::kOk: return "ok";
    case Status::kBadDepth: return "prefix length must be 0..32";
    case Status::kBadNextHop: return "next hop must be < 2^24";
    case Status::kNoTbl8Space: return "out of tbl8 groups (too many distinct /24s with longer prefixes)";
    case Status::kNotFound: return "no such prefix";
  }
  return "unknown";
}

// The next hop and depth of the longest rule covering `ip` that is shorter than `below_depth`;
// returns kNoRoute when there is none.
uint32_t Dir24_8::find_covering(uint32_t ip, int below_depth, uint32_t* depth_out) const {
  for (int d = below_depth - 1; d >= 0; --d) {
    const auto& rules = rules_[d];
    auto it = rules.find(ip & depth_mask(d));
    if (it != rules.end()) {
      *depth_out = static_cast<uint32_t>(d);
      return it->second;
    }
  }
  return kNoRoute;
}

Dir24_8::Status Dir24_8::add(uint32_t ip, uint8_t depth, uint32_t next_hop) {
  if (depth > 32) return Status::kBadDepth;
  if (next_hop > kMaxNextHop) return Status::kBadNextHop;
  ip &= depth_mask(depth);
  if (depth <= 24) {
    add_small(ip, depth, E::make(next_hop, depth));
  } else {
    Status s = add_big(ip, depth, next_hop);
    if (s != Status::kOk) return s;
  }
  auto [it, inserted] = rules_[depth].insert_or_assign(ip, next_hop);
  (void)it;
  if (inserted) ++rule_count_;
  ++version_;
  return Status::kOk;
}

// Writes `entry` (a route of `depth` <= 24) over every tbl24 entry, and every slot of extended
// entries' tbl8 groups, in the prefix's range that no longer prefix already owns.
void Dir24_8::add_small(uint32_t ip, uint32_t depth, uint32_t entry) {
  const uint32_t first = ip >> 8;
  const uint32_t count = 1u << (24 - depth);
  for (uint32_t i = first; i < first + count; ++i) {
    const uint32_t e = tbl24_[i];
    if (!E::ext(e)) {
      if (!E::valid(e) || E::depth(e) <= depth) tbl24_[i] = entry;
      continue;
    }
    uint32_t* group = tbl8_ + size_t{E::value(e)} * kTbl8GroupEntries;
    for (uint32_t j = 0; j < kTbl8GroupEntries; ++j) {
      if (!E::valid(group[j]) || E::depth(group[j]) <= depth) group[j] = entry;
    }
  }
}

Dir24_8::Status Dir24_8::add_big(uint32_t ip, uint32_t depth, uint32_t next_hop) {
  const uint32_t i24 = ip >> 8;
  uint32_t e = tbl24_[i24];
  if (!E::ext(e)) {
    if (tbl8_free_.empty()) return Status::kNoTbl8Space;
    const uint32_t g = tbl8_free_.back();
    tbl8_free_.pop_back();
    if (g + 1 > tbl8_high_water_) tbl8_high_water_ = g + 1;
    // The new group starts as a copy of what the /24 resolved to, then is published: readers
    // never see a half-filled group.
    uint32_t* group = tbl8_ + size_t{g} * kTbl8GroupEntries;
    const uint32_t fill = E::valid(e) ? e : 0;
    for (uint32_t j = 0; j < kTbl8GroupEntries; ++j) group[j] = fill;
    __atomic_store_n(&tbl24_[i24], E::make_ext(g), __ATOMIC_RELEASE);
    e = tbl24_[i24];
  }
  uint32_t* group = tbl8_ + size_t{E::value(e)} * kTbl8GroupEntries;
  const uint32_t first = ip & 0xFF;
  const uint32_t count = 1u << (32 - depth);
  const uint32_t entry = E::make(next_hop, depth);
  for (uint32_t j = first; j < first + count; ++j) {
    if (!E::valid(group[j]) || E::depth(group[j]) <= depth) group[j] = entry;
  }
  return Status::kOk;
}

Dir24_8::Status Dir24_8::remove(uint32_t ip, uint8_t depth) {
  if (depth > 32) return Status::kBadDepth;
  ip &= depth_mask(depth);
  auto it = rules_[depth].find(ip);
  if (it == rules_[depth].end()) return Status::kNotFound;
  rules_[depth].erase(it);
  --rule_count_;
  ++version_;
  uint32_t sub_depth = 0;
  const uint32_t sub_nh = find_covering(ip, depth, &sub_depth);
  const uint32_t replacement = sub_nh == kNoRoute ? 0u : E::make(sub_nh, sub_depth);
  if (depth <= 24) {
    remove_small(ip, depth, replacement);
  } else {
    remove_big(ip, depth, replacement);
  }
  return Status::kOk;
}

// Entries the deleted route owned (depth <= its depth: shorter ones cannot remain inside its
// range, since adding it overwrote them) get the covering route, or become invalid.
void Dir24_8::remove_small(uint32_t ip, uint32_t depth, uint32_t replacement) {
  const uint32_t first = ip >> 8;
  const uint32_t count = 1u << (24 - depth);
  for (uint32_t i = first; i < first + count; ++i) {
    const uint32_t e = tbl24_[i];
    if (!E::ext(e)) {
      if (E::valid(e) && E::depth(e) <= depth) tbl24_[i] = replacement;
      continue;
    }
    uint32_t* group = tbl8_ + size_t{E::value(e)} * kTbl8GroupEntries;
    for (uint32_t j = 0; j < kTbl8GroupEntries; ++j) {
      if (E::valid(group[j]) && E::depth(group[j]) <= depth) group[j] = replacement;
    }
    recycle_tbl8(i);
  }
}

void Dir24_8::remove_big(uint32_t ip, uint32_t depth, uint32_t replacement) {
  const uint32_t i24 = ip >> 8;
  const uint32_t e = tbl24_[i24];
  assert(E::ext(e));  // a rule longer than /24 exists, so its /24 is extended
  uint32_t* group = tbl8_ + size_t{E::value(e)} * kTbl8GroupEntries;
  const uint32_t first = ip & 0xFF;
  const uint32_t count = 1u << (32 - depth);
  for (uint32_t j = first; j < first + count; ++j) {
    if (E::valid(group[j]) && E::depth(group[j]) <= depth) group[j] = replacement;
  }
  recycle_tbl8(i24);
}

// A tbl8 group whose 256 slots all hold the same route of depth <= 24 (or are all invalid) adds
// nothing: fold it back into its tbl24 entry and free it, as rte_lpm's tbl8_recycle_check does.
void Dir24_8::recycle_tbl8(uint32_t tbl24_index) {
  const uint32_t e = tbl24_[tbl24_index];
  const uint32_t g = E::value(e);
  uint32_t* group = tbl8_ + size_t{g} * kTbl8GroupEntries;
  const uint32_t first = group[0];
  if (E::valid(first) && E::depth(first) > 24) return;
  for (uint32_t j = 1; j < kTbl8GroupEntries; ++j) {
    if (group[j] != first) return;
  }
  __atomic_store_n(&tbl24_[tbl24_index], first, __ATOMIC_RELEASE);
  std::memset(group, 0, kTbl8GroupEntries * sizeof(uint32_t));
  tbl8_free_.push_back(g);
}

}  // namespace tandem::ipv4
