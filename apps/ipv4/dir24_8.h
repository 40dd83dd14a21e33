// DIR-24-8 IPv4 forwarding table (the control plane: add, delete, and the tables the data plane
// reads). Modelled on DPDK's rte_lpm, plus /0 routes. Not thread-safe for concurrent writers;
// readers on other threads see each entry update atomically (32-bit stores), as in rte_lpm; a
// group freed by delete is reused at once (no RCU grace period yet), as in rte_lpm without RCU.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "apps/ipv4/dir24_8_core.h"
#include "core/huge_memory.h"

namespace tandem::ipv4 {

class Dir24_8 {
 public:
  static constexpr uint32_t kTbl24Entries = 1u << 24;
  static constexpr uint32_t kTbl8GroupEntries = 256;
  static constexpr uint32_t kDefaultTbl8Groups = 1u << 16;  // 64 MiB of tbl8, mapped lazily

  enum class Status { kOk, kBadDepth, kBadNextHop, kNoTbl8Space, kNotFound };

  explicit Dir24_8(uint32_t max_tbl8_groups = kDefaultTbl8Groups);
  Dir24_8(const Dir24_8&) = delete;
  Dir24_8& operator=(const Dir24_8&) = delete;

  // Adds (or replaces the next hop of) prefix ip/depth; host bits of ip are ignored.
  // kNoTbl8Space leaves the table unchanged.
  Status add(uint32_t ip, uint8_t depth, uint32_t next_hop);
  // Deletes prefix ip/depth; addresses it covered fall back to the next shorter covering prefix.
  Status remove(uint32_t ip, uint8_t depth);

  uint32_t lookup(uint32_t ip) const { return dir24_8_lookup(tbl24_, tbl8_, ip); }

  const uint32_t* tbl24() const { return tbl24_; }
  const uint32_t* tbl8() const { return tbl8_; }
  // One past the highest tbl8 group ever used: the part of tbl8 a copy (e.g. to a GPU) needs.
  uint32_t tbl8_groups_high_water() const { return tbl8_high_water_; }
  uint32_t tbl8_groups_in_use() const { return max_tbl8_groups_ - static_cast<uint32_t>(tbl8_free_.size()); }
  uint32_t max_tbl8_groups() const { return max_tbl8_groups_; }
  size_t rule_count() const { return rule_count_; }
  // Incremented by every successful add/remove: lets copies (GPU tables) know they are stale.
  uint64_t version() const { return version_; }

  static const char* status_name(Status s);

 private:
  uint32_t find_covering(uint32_t ip, int below_depth, uint32_t* depth_out) const;
  void add_small(uint32_t ip, uint32_t depth, uint32_t entry);
  Status add_big(uint32_t ip, uint32_t depth, uint32_t next_hop);
  void remove_small(uint32_t ip, uint32_t depth, uint32_t replacement);
  void remove_big(uint32_t ip, uint32_t depth, uint32_t replacement);
  void recycle_tbl8(uint32_t tbl24_index);

  HugeRegion tbl24_mem_;
  HugeRegion tbl8_mem_;
  uint32_t* tbl24_ = nullptr;
  uint32_t* tbl8_ = nullptr;
  uint32_t max_tbl8_groups_;
  uint32_t tbl8_high_water_ = 0;
  std::vector<uint32_t> tbl8_free_;  // free group indices (a stack)
  // The rules, by depth: what delete needs to find the next shorter covering prefix.
  std::array<std::unordered_map<uint32_t, uint32_t>, 33> rules_;
  size_t rule_count_ = 0;
  uint64_t version_ = 0;
};

// Mask of the top `depth` bits (depth 0..32).
constexpr uint32_t depth_mask(uint32_t depth) { return depth == 0 ? 0u : ~0u << (32 - depth); }

}  // namespace tandem::ipv4
