// The IPv4 longest-prefix-match lookup on a Poptrie (Asai & Ohara, "Poptrie: A Compressed Trie
// with Population Count for Fast and Scalable Software IP Routing Table Lookup", SIGCOMM 2015),
// written once for the CPU paths and a GPU kernel: plain pointers, no allocation, no I/O.
//
// The structure (built by apps/ipv4/poptrie.cc):
//   direct[]    2^direct_bits 32-bit entries indexed by the address's top direct_bits bits
//               ("direct pointing"). kDirectLeafBit set: the low 16 bits are a leaf (the whole
//               range has one answer); clear: the entry is the index of an internal node.
//   nodes[]     internal nodes, each resolving the next 6 address bits (a 64-way stride).
//   leaves[]    16-bit indices into next_hops[]; leaf 0 means "no route".
//   next_hops[] the deduplicated next hops; next_hops[0] = kNoRoute, so a miss needs no branch.
//
// In a node, slot v (the 6 address bits at this level) is an internal child when bit v of
// `vector` is set; that child is nodes[base1 + popcount(vector & bits 0..v) - 1], since the
// children of one node are stored contiguously in slot order. Otherwise the slot is a leaf. Runs
// of equal leaves are stored once ("leaf compression"): bit v of `leafvec` is set where a leaf
// slot starts a new run (its value differs from the previous leaf slot's), so the leaf of slot v
// is leaves[base0 + popcount(leafvec & bits 0..v) - 1].
//
// Levels below the 32nd bit: the address is read as a 64-bit key padded with zeros, so a stride
// that runs past bit 31 (e.g. bits 30..35 with direct_bits 18) sees zero padding; the builder
// fills the unreachable slots like their neighbours, which leaf compression then folds away.
#pragma once

#include "apps/ipv4/dir24_8_core.h"  // kNoRoute
#include "core/compiler.h"

namespace tandem::ipv4 {

// 24 bytes, as in the paper: two 64-bit bitmaps (the 6-bit stride makes one slot per bit of a
// machine word, so one popcount instruction ranks a slot) and two 32-bit bases. A 16-byte node
// would have to give up either leaf compression (several times more leaves and cache lines) or the
// 64-way stride (32-bit maps, one more level on long prefixes); 24 bytes keeps both, and a node
// still spans at most two cache lines.
struct PoptrieNode {
  uint64_t vector;   // bit v set: slot v is an internal child node
  uint64_t leafvec;  // bit v set: slot v is a leaf that starts a new run of equal leaves
  uint32_t base0;    // index in leaves[] of this node's first leaf
  uint32_t base1;    // index in nodes[] of this node's first child
};
static_assert(sizeof(PoptrieNode) == 24, "PoptrieNode layout");

inline constexpr uint32_t kPoptrieStride = 6;
inline constexpr uint32_t kDirectLeafBit = 1u << 31;
inline constexpr uint16_t kPoptrieNoRouteLeaf = 0;  // next_hops[0] == kNoRoute

// What a lookup reads: four arrays and the direct-pointing width. Copied by value into kernels.
struct PoptrieView {
  const uint32_t* direct;
  const PoptrieNode* nodes;
  const uint16_t* leaves;
  const uint32_t* next_hops;
  uint32_t direct_bits;  // 8..24
};

// One popcount instruction where the target has it (x86 POPCNT, PTX popc). Host code compiled
// without POPCNT gets a library call: apps/ipv4/poptrie.cc compiles its loops for a POPCNT target
// and picks them at run time, so include this header in a TU of your own only with that in mind.
TANDEM_HD_INLINE uint32_t poptrie_popcount(uint64_t x) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint32_t>(__popcll(x));
#else
  return static_cast<uint32_t>(__builtin_popcountll(x));
#endif
}

// Bits 0..v set (v = 0..63). For v = 63, 2 << 63 wraps to 0 and 0 - 1 sets all 64 bits.
TANDEM_HD_INLINE uint64_t poptrie_mask_through(uint32_t v) { return (uint64_t{2} << v) - 1; }

// The 6-bit slot of the key at bit offset `shift` (0..58); the key is the address in the top half.
TANDEM_HD_INLINE uint32_t poptrie_slot(uint64_t key, uint32_t shift) {
  return static_cast<uint32_t>((key << shift) >> (64 - kPoptrieStride));
}

TANDEM_HD_INLINE uint32_t poptrie_direct_index(const PoptrieView& t, uint32_t ip) {
  return ip >> (32 - t.direct_bits);
}

// Walks the internal nodes from node `index`, which resolves the address bits from `shift` on,
// down to the address's leaf, and returns its next hop.
TANDEM_HD_INLINE uint32_t poptrie_walk(const PoptrieView& t, uint32_t index, uint32_t shift, uint32_t ip) {
  const uint64_t key = static_cast<uint64_t>(ip) << 32;
  const PoptrieNode* node = &t.nodes[index];
  uint32_t v = poptrie_slot(key, shift);
  uint64_t vector = node->vector;
  while ((vector >> v) & 1) {
    node = &t.nodes[node->base1 + poptrie_popcount(vector & poptrie_mask_through(v)) - 1];
    shift += kPoptrieStride;
    v = poptrie_slot(key, shift);
    vector = node->vector;
  }
  const uint32_t leaf = t.leaves[node->base0 + poptrie_popcount(node->leafvec & poptrie_mask_through(v)) - 1];
  return t.next_hops[leaf];
}

// The walk from a direct-pointing entry's node (the subtree of the address's direct_bits prefix).
TANDEM_HD_INLINE uint32_t poptrie_descend(const PoptrieView& t, uint32_t index, uint32_t ip) {
  return poptrie_walk(t, index, t.direct_bits, ip);
}

// Resolves a direct-pointing entry already loaded (the batched CPU path loads it after a prefetch).
TANDEM_HD_INLINE uint32_t poptrie_resolve(const PoptrieView& t, uint32_t direct_entry, uint32_t ip) {
  if (direct_entry & kDirectLeafBit) return t.next_hops[direct_entry & 0xFFFFu];
  return poptrie_descend(t, direct_entry, ip);
}

// Next hop of `ip` (host byte order), or kNoRoute.
TANDEM_HD_INLINE uint32_t poptrie_lookup(const PoptrieView& t, uint32_t ip) {
  return poptrie_resolve(t, t.direct[poptrie_direct_index(t, ip)], ip);
}

}  // namespace tandem::ipv4
