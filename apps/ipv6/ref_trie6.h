// The reference IPv6 longest-prefix match: a plain binary trie over the 128 address bits, one node
// per bit. Deliberately simple (no path compression, no strides) so that it is obviously right;
// every fast path is checked against it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/lookup_result.h"

namespace tandem::ipv6 {

class RefTrie6 {
 public:
  RefTrie6();
  // Inserts or replaces prefix/len (16 bytes, network order; host bits ignored), len 0..128.
  void insert(const uint8_t prefix[16], uint8_t len, uint32_t next_hop);
  // Removes prefix/len; returns false if it was not present.
  bool remove(const uint8_t prefix[16], uint8_t len);
  // Next hop of the longest prefix containing addr, or kNoRoute.
  uint32_t lookup(const uint8_t addr[16]) const;
  size_t node_count() const { return nodes_.size(); }

 private:
  struct Node {
    uint32_t child[2];
    uint32_t next_hop;  // kNoRoute when no prefix ends here
  };
  static constexpr uint32_t kNull = 0;  // node 0 is the root, never anyone's child
  static uint32_t bit(const uint8_t* a, uint32_t i) { return (a[i / 8] >> (7 - i % 8)) & 1; }
  std::vector<Node> nodes_;
};

}  // namespace tandem::ipv6
