#include "apps/ipv4/ref_trie.h"

namespace tandem::ipv4 {

RefTrie::RefTrie() { nodes_.push_back({{kNull, kNull}, kNoRoute}); }

void RefTrie::insert(uint32_t ip, uint8_t len, uint32_t next_hop) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < len; ++i) {
    const uint32_t bit = (ip >> (31 - i)) & 1;
    if (nodes_[n].child[bit] == kNull) {
      nodes_.push_back({{kNull, kNull}, kNoRoute});
      nodes_[n].child[bit] = static_cast<uint32_t>(nodes_.size() - 1);
    }
    n = nodes_[n].child[bit];
  }
  nodes_[n].next_hop = next_hop;
}

bool RefTrie::remove(uint32_t ip, uint8_t len) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < len; ++i) {
    n = nodes_[n].child[(ip >> (31 - i)) & 1];
    if (n == kNull) return false;
  }
  if (nodes_[n].next_hop == kNoRoute) return false;
  nodes_[n].next_hop = kNoRoute;
  return true;
}

uint32_t RefTrie::lookup(uint32_t ip) const {
  uint32_t n = 0;
  uint32_t best = nodes_[0].next_hop;
  for (uint32_t i = 0; i < 32; ++i) {
    n = nodes_[n].child[(ip >> (31 - i)) & 1];
    if (n == kNull) break;
    if (nodes_[n].next_hop != kNoRoute) best = nodes_[n].next_hop;
  }
  return best;
}

}  // namespace tandem::ipv4
