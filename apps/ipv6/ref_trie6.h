// The reference IPv6 longest-prefix match: the reference trie (apps/ipv4/ref_trie.h) over the 128
// address bits. Deliberately simple (no path compression, no strides) so that it is obviously
// right; every fast path is checked against it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "apps/ipv4/ref_trie.h"

namespace tandem::ipv6 {

class RefTrie6 {
 public:
  // Inserts or replaces prefix/len (16 bytes, network order; host bits ignored), len 0..128.
  void insert(const uint8_t prefix[16], uint8_t len, uint32_t next_hop);
  // Removes prefix/len; returns false if it was not present.
  bool remove(const uint8_t prefix[16], uint8_t len);
  // Next hop of the longest prefix containing addr, or kNoRoute.
  uint32_t lookup(const uint8_t addr[16]) const;
  size_t node_count() const { return trie_.node_count(); }

 private:
  ipv4::BitTrie trie_;
};

}  // namespace tandem::ipv6
