#include "apps/ipv4/ref_trie.h"

namespace tandem::ipv4 {

namespace {

auto bits_of(uint32_t ip) {
  return [ip](uint32_t i) { return (ip >> (31 - i)) & 1; };
}

}  // namespace

void RefTrie::insert(uint32_t ip, uint8_t len, uint32_t next_hop) { trie_.insert(bits_of(ip), len, next_hop); }

bool RefTrie::remove(uint32_t ip, uint8_t len) { return trie_.remove(bits_of(ip), len); }

uint32_t RefTrie::lookup(uint32_t ip) const { return trie_.lookup(bits_of(ip), 32); }

}  // namespace tandem::ipv4
