#include "apps/ipv6/ref_trie6.h"

namespace tandem::ipv6 {

namespace {

auto bits_of(const uint8_t* a) {
  return [a](uint32_t i) -> uint32_t { return (a[i / 8] >> (7 - i % 8)) & 1; };
}

}  // namespace

void RefTrie6::insert(const uint8_t prefix[16], uint8_t len, uint32_t next_hop) {
  trie_.insert(bits_of(prefix), len, next_hop);
}

bool RefTrie6::remove(const uint8_t prefix[16], uint8_t len) { return trie_.remove(bits_of(prefix), len); }

uint32_t RefTrie6::lookup(const uint8_t addr[16]) const { return trie_.lookup(bits_of(addr), 128); }

}  // namespace tandem::ipv6
