// The reference longest-prefix match: a plain binary trie, one node per bit. Deliberately simple
// (no path compression, no tricks) so that it is obviously right; every fast path is checked
// against it. BitTrie is that trie over any key, RefTrie keys it by IPv4 addresses
// (apps/ipv6/ref_trie6.h by IPv6 ones).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/lookup_result.h"

namespace tandem::ipv4 {

// A trie of prefixes given as bit strings: bit(i) is bit i of the key, the most significant first.
class BitTrie {
 public:
  BitTrie() { nodes_.push_back({{kNull, kNull}, kNoRoute}); }

  // Inserts or replaces the prefix of the key's first `len` bits.
  template <class Bit>
  void insert(const Bit& bit, uint32_t len, uint32_t next_hop) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < len; ++i) {
      const uint32_t b = bit(i);
      if (nodes_[n].child[b] == kNull) {
        nodes_.push_back({{kNull, kNull}, kNoRoute});
        nodes_[n].child[b] = static_cast<uint32_t>(nodes_.size() - 1);
      }
      n = nodes_[n].child[b];
    }
    nodes_[n].next_hop = next_hop;
  }
  // Removes the prefix of the first `len` bits; returns false if it was not present.
  template <class Bit>
  bool remove(const Bit& bit, uint32_t len) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < len; ++i) {
      n = nodes_[n].child[bit(i)];
      if (n == kNull) return false;
    }
    if (nodes_[n].next_hop == kNoRoute) return false;
    nodes_[n].next_hop = kNoRoute;
    return true;
  }
  // Next hop of the longest prefix of a key of `bits` bits, or kNoRoute.
  template <class Bit>
  uint32_t lookup(const Bit& bit, uint32_t bits) const {
    uint32_t n = 0;
    uint32_t best = nodes_[0].next_hop;
    for (uint32_t i = 0; i < bits; ++i) {
      n = nodes_[n].child[bit(i)];
      if (n == kNull) break;
      if (nodes_[n].next_hop != kNoRoute) best = nodes_[n].next_hop;
    }
    return best;
  }
  size_t node_count() const { return nodes_.size(); }

 private:
  struct Node {
    uint32_t child[2];
    uint32_t next_hop;  // kNoRoute when no prefix ends here
  };
  static constexpr uint32_t kNull = 0;  // node 0 is the root, never anyone's child
  std::vector<Node> nodes_;
};

class RefTrie {
 public:
  // Inserts or replaces prefix ip/len (host bits ignored).
  void insert(uint32_t ip, uint8_t len, uint32_t next_hop);
  // Removes prefix ip/len; returns false if it was not present.
  bool remove(uint32_t ip, uint8_t len);
  // Next hop of the longest prefix containing ip, or kNoRoute.
  uint32_t lookup(uint32_t ip) const;
  size_t node_count() const { return trie_.node_count(); }

 private:
  BitTrie trie_;
};

}  // namespace tandem::ipv4
