// The reference IPv4 longest-prefix match: a plain binary trie, one node per bit. Deliberately
// simple (no path compression, no tricks) so that it is obviously right; every fast path is checked
// against it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/lookup_result.h"

namespace tandem::ipv4 {

class RefTrie {
 public:
  RefTrie();
  // Inserts or replaces prefix ip/len (host bits ignored).
  void insert(uint32_t ip, uint8_t len, uint32_t next_hop);
  // Removes prefix ip/len; returns false if it was not present.
  bool remove(uint32_t ip, uint8_t len);
  // Next hop of the longest prefix containing ip, or kNoRoute.
  uint32_t lookup(uint32_t ip) const;
  size_t node_count() const { return nodes_.size(); }

 private:
  struct Node {
    uint32_t child[2];
    uint32_t next_hop;  // kNoRoute when no prefix ends here
  };
  static constexpr uint32_t kNull = 0;  // node 0 is the root, never anyone's child
  std::vector<Node> nodes_;
};

}  // namespace tandem::ipv4
