#include "apps/ipv6/ref_trie6.h"

namespace tandem::ipv6 {

RefTrie6::RefTrie6() { nodes_.push_back({{kNull, kNull}, kNoRoute}); }

void RefTrie6::insert(const uint8_t prefix[16], uint8_t len, uint32_t next_hop) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < len; ++i) {
    const uint32_t b = bit(prefix, i);
    if (nodes_[n].child[b] == kNull) {
      nodes_.push_back({{kNull, kNull}, kNoRoute});
      nodes_[n].child[b] = static_cast<uint32_t>(nodes_.size() - 1);
    }
    n = nodes_[n].child[b];
  }
  nodes_[n].next_hop = next_hop;
}

bool RefTrie6::remove(const uint8_t prefix[16], uint8_t len) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < len; ++i) {
    n = nodes_[n].child[bit(prefix, i)];
    if (n == kNull) return false;
  }
  if (nodes_[n].next_hop == kNoRoute) return false;
  nodes_[n].next_hop = kNoRoute;
  return true;
}

uint32_t RefTrie6::lookup(const uint8_t addr[16]) const {
  uint32_t n = 0;
  uint32_t best = nodes_[0].next_hop;
  for (uint32_t i = 0; i < 128; ++i) {
    n = nodes_[n].child[bit(addr, i)];
    if (n == kNull) break;
    if (nodes_[n].next_hop != kNoRoute) best = nodes_[n].next_hop;
  }
  return best;
}

}  // namespace tandem::ipv6
