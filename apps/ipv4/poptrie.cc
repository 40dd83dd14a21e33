#include "apps/ipv4/poptrie.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "core/compiler.h"

namespace tandem::ipv4 {

namespace {

// ---- build --------------------------------------------------------------------------------------

// A plain binary trie of the routes, one node per bit: the input the Poptrie is emitted from. Each
// node records the leaf (deduplicated next-hop index) of the prefix ending there, if any. Nodes are
// only created on the way to a prefix, so a node with a child has some longer prefix below it.
class BinaryTrie {
 public:
  struct Node {
    uint32_t child[2];
    uint16_t leaf;  // kPoptrieNoRouteLeaf: no prefix ends here
  };
  static constexpr uint32_t kRoot = 0;  // never anyone's child, so 0 also means "no child"

  explicit BinaryTrie(size_t routes) {
    nodes_.reserve(routes * 3 + 1);
    nodes_.push_back({{0, 0}, kPoptrieNoRouteLeaf});
  }

  void insert(uint32_t prefix, uint32_t len, uint16_t leaf) {
    uint32_t n = kRoot;
    for (uint32_t i = 0; i < len; ++i) {
      const uint32_t bit = (prefix >> (31 - i)) & 1;
      if (nodes_[n].child[bit] == 0) {
        nodes_[n].child[bit] = static_cast<uint32_t>(nodes_.size());
        nodes_.push_back({{0, 0}, kPoptrieNoRouteLeaf});
      }
      n = nodes_[n].child[bit];
    }
    nodes_[n].leaf = leaf;  // a repeated prefix: the later route wins
  }

  const Node& operator[](uint32_t n) const { return nodes_[n]; }
  bool has_longer_prefixes(uint32_t n) const { return (nodes_[n].child[0] | nodes_[n].child[1]) != 0; }

 private:
  std::vector<Node> nodes_;
};

// Emits the Poptrie arrays from the binary trie in one depth-first walk. The best (longest) prefix
// seen on the way down is carried along, so every leaf slot gets the next hop of the longest
// prefix covering it ("leaf pushing"), and a node's slots need no lookups elsewhere.
class Emitter {
 public:
  Emitter(const BinaryTrie& trie, uint32_t direct_bits)
      : direct(size_t{1} << direct_bits), trie_(trie), direct_bits_(direct_bits) {}

  void run() { fill_direct(BinaryTrie::kRoot, 0, 0, kPoptrieNoRouteLeaf); }

  std::vector<uint32_t> direct;
  std::vector<PoptrieNode> nodes;
  std::vector<uint16_t> leaves;

 private:
  // Fills the direct entries under trie node `t`, which sits at `depth` on `path` (the top `depth`
  // bits). A range with no longer prefix below it is one leaf; at depth direct_bits, a subtree
  // with longer prefixes becomes an internal node.
  void fill_direct(uint32_t t, uint32_t depth, uint32_t path, uint16_t best) {
    if (trie_[t].leaf != kPoptrieNoRouteLeaf) best = trie_[t].leaf;
    const uint32_t first = path << (direct_bits_ - depth);
    if (!trie_.has_longer_prefixes(t)) {
      std::fill_n(direct.begin() + first, size_t{1} << (direct_bits_ - depth), kDirectLeafBit | best);
      return;
    }
    if (depth == direct_bits_) {
      direct[first] = new_node();
      build_node(direct[first], t, depth, best);
      return;
    }
    for (uint32_t bit = 0; bit < 2; ++bit) {
      const uint32_t c = trie_[t].child[bit];
      const uint32_t child_path = path * 2 + bit;
      if (c != 0) {
        fill_direct(c, depth + 1, child_path, best);
      } else {
        std::fill_n(direct.begin() + (child_path << (direct_bits_ - depth - 1)),
                    size_t{1} << (direct_bits_ - depth - 1), kDirectLeafBit | best);
      }
    }
  }

  uint32_t new_node() {
    if (nodes.size() >= kDirectLeafBit) throw PoptrieError("poptrie: more than 2^31 internal nodes");
    nodes.push_back({});
    return static_cast<uint32_t>(nodes.size() - 1);
  }

  // Builds node `index` for the subtree of trie node `t` at bit offset `shift`, whose own prefix
  // (and every shorter one) is already folded into `best`. Its children are allocated as one
  // contiguous block in slot order, then built one after another.
  void build_node(uint32_t index, uint32_t t, uint32_t shift, uint16_t best) {
    constexpr uint32_t kSlots = 1u << kPoptrieStride;
    uint32_t child_trie[kSlots];
    uint16_t child_best[kSlots];
    uint16_t slot_leaf[kSlots];
    uint32_t children = 0;
    uint64_t vector = 0;
    for (uint32_t v = 0; v < kSlots; ++v) {
      // Follow the slot's 6 bits down the trie; bits past the 32nd are zero padding that no prefix
      // reaches, so the walk stops there with the slot a leaf.
      uint32_t n = t;
      uint16_t b = best;
      bool reached = true;
      for (uint32_t k = 0; k < kPoptrieStride && reached; ++k) {
        if (shift + k >= 32) {
          reached = false;
          break;
        }
        n = trie_[n].child[(v >> (kPoptrieStride - 1 - k)) & 1];
        if (n == 0) {
          reached = false;
          break;
        }
        if (trie_[n].leaf != kPoptrieNoRouteLeaf) b = trie_[n].leaf;
      }
      if (reached && trie_.has_longer_prefixes(n)) {
        vector |= uint64_t{1} << v;
        child_trie[children] = n;
        child_best[children] = b;
        ++children;
      } else {
        slot_leaf[v] = b;
      }
    }
    // Leaf compression: a leaf slot equal to the previous leaf slot shares its stored leaf.
    uint64_t leafvec = 0;
    const auto base0 = static_cast<uint32_t>(leaves.size());
    bool have_previous = false;
    uint16_t previous = 0;
    for (uint32_t v = 0; v < kSlots; ++v) {
      if ((vector >> v) & 1) continue;
      if (!have_previous || slot_leaf[v] != previous) {
        leafvec |= uint64_t{1} << v;
        leaves.push_back(slot_leaf[v]);
        previous = slot_leaf[v];
        have_previous = true;
      }
    }
    if (leaves.size() > UINT32_MAX) throw PoptrieError("poptrie: more than 2^32 leaves");
    const auto base1 = static_cast<uint32_t>(nodes.size());
    for (uint32_t c = 0; c < children; ++c) new_node();
    nodes[index] = {vector, leafvec, base0, base1};  // by index: new_node() may have moved nodes
    for (uint32_t c = 0; c < children; ++c) build_node(base1 + c, child_trie[c], shift + kPoptrieStride, child_best[c]);
  }

  const BinaryTrie& trie_;
  uint32_t direct_bits_;
};

size_t round_up_to_line(size_t bytes) { return (bytes + kCacheLine - 1) & ~(kCacheLine - 1); }

bool cpu_has_popcnt() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("popcnt");
#else
  return true;  // elsewhere the compiler's popcount is what the target has
#endif
}

// ---- lookup loops -------------------------------------------------------------------------------

// Every x86-64 CPU since 2008 has POPCNT, but the default x86-64 target does not assume it, and
// without it each popcount is a library call. The loops are therefore compiled twice, with and
// without the instruction, and build() picks one by CPUID.
#if (defined(__x86_64__) || defined(__i386__)) && !defined(__POPCNT__)
#define TANDEM_POPCNT_TARGET __attribute__((target("popcnt")))
#else
#define TANDEM_POPCNT_TARGET
#endif

// core/compiler.h's prefetch_read is a plain inline function, and GCC 12 drops calls to it from
// always_inline functions such as the ones below (it finds it free of side effects before it
// inlines it there), so these loops use the builtin directly.
TANDEM_HD_INLINE void prefetch_line(const void* p) { __builtin_prefetch(p, 0, 3); }

// lookup_batch: groups of kGroup addresses in two passes. Pass 1 is free of data-dependent
// branches: it prefetches the direct entry kAhead addresses on, loads this address's direct entry,
// writes the answer of a direct leaf (and a harmless one otherwise), and appends the addresses
// whose entry names a node to a list, prefetching that node. Pass 2 walks the nodes of the listed
// addresses (about a quarter of uniform random ones) and overwrites their answers. The one
// unpredictable branch of the plain loop, "leaf or node", is thus gone from 3 lookups in 4, and the
// walks start on nodes already on their way to L1.
//
// Chosen by measurement: full table, uniform random addresses, one core, millions of lookups/s,
// medians of 4-5 runs of a harness with the variants side by side (AMD: the shared 2-core VM Tandem
// is developed on, quiet moments; Intel: the Xeon of an H100/H200 machine, a different host per
// session, hence ranges):
//   variant                                                  AMD EPYC (KVM)   Intel Xeon
//   plain loop, lookup() inlined                             245              135-170
//   direct entry prefetched 16 / 32 addresses ahead          275 / 255        185-220
//   group prefetching of direct entries, groups of 64        240              190-195
//     and of first nodes, behind a branch / branch-free      150 / 235        120 / 175
//   direct entries of 64 / 128 loaded first, then resolved   275 / 285        165 / 175
//   two passes as below without any prefetch, groups of 64   280              150-190
//   two passes, direct entry prefetched 16 ahead             365              150-175
//   two passes, direct entry 16 ahead and first nodes (this) 395              175
//   all walkers one node level per pass; AMAC state machines ~190; ~90        -
// The two passes win clearly on the AMD machine; on the Intel one, the plain software pipelining
// is somewhat faster. DIR-24-8's own batched path (cpu_batched) runs at ~230 on the AMD machine
// and 180-240 on the Intel one, whose 300 MiB L3 holds its 64 MiB tbl24.
constexpr uint32_t kGroup = 64;
constexpr uint32_t kAhead = 16;

TANDEM_HD_INLINE void lookup_groups(const PoptrieView& t, const uint32_t* ips, uint32_t* out, size_t n) {
  size_t i = 0;
  for (; i + kGroup <= n; i += kGroup) {
    const uint32_t* ip = ips + i;
    const bool prefetch_ahead = i + kGroup + kAhead <= n;
    uint32_t walker_node[kGroup];
    uint32_t walker[kGroup];  // positions in the group of the addresses that need a node walk
    uint32_t walkers = 0;
    for (uint32_t k = 0; k < kGroup; ++k) {
      if (prefetch_ahead) prefetch_line(&t.direct[poptrie_direct_index(t, ip[k + kAhead])]);
      const uint32_t entry = t.direct[poptrie_direct_index(t, ip[k])];
      const uint32_t is_node = ~entry >> 31;
      const uint32_t leaf_mask = is_node - 1;  // all ones for a leaf, zero for a node
      out[i + k] = t.next_hops[entry & 0xFFFFu & leaf_mask];
      walker_node[walkers] = entry & ~leaf_mask;
      walker[walkers] = k;
      prefetch_line(&t.nodes[walker_node[walkers]]);
      walkers += is_node;
    }
    for (uint32_t w = 0; w < walkers; ++w) {
      out[i + walker[w]] = poptrie_descend(t, walker_node[w], ip[walker[w]]);
    }
  }
  for (; i < n; ++i) out[i] = poptrie_lookup(t, ips[i]);
}

// The view is passed by value so that the compiler knows the stores to `out` cannot change it.
TANDEM_POPCNT_TARGET uint32_t lookup_one_popcnt(PoptrieView t, uint32_t ip) { return poptrie_lookup(t, ip); }
TANDEM_POPCNT_TARGET void lookup_batch_popcnt(PoptrieView t, const uint32_t* ips, uint32_t* out, size_t n) {
  lookup_groups(t, ips, out, n);
}
// Out of line, so that the callers' fast path does not pay for their register spills.
__attribute__((noinline)) uint32_t lookup_one_generic(PoptrieView t, uint32_t ip) { return poptrie_lookup(t, ip); }
__attribute__((noinline)) void lookup_batch_generic(PoptrieView t, const uint32_t* ips, uint32_t* out, size_t n) {
  lookup_groups(t, ips, out, n);
}

}  // namespace

Poptrie Poptrie::build(const std::vector<Route>& routes, int direct_bits) {
  if (direct_bits < kMinDirectBits || direct_bits > kMaxDirectBits) {
    throw PoptrieError("poptrie: direct_bits must be " + std::to_string(kMinDirectBits) + ".." +
                       std::to_string(kMaxDirectBits) + ", got " + std::to_string(direct_bits));
  }
  // Deduplicate the next hops into 16-bit leaves; leaf 0 is "no route".
  std::vector<uint32_t> next_hops{kNoRoute};
  std::unordered_map<uint32_t, uint16_t> leaf_of;
  BinaryTrie trie(routes.size());
  for (const Route& r : routes) {
    if (r.len > 32) {
      throw PoptrieError("poptrie: prefix " + format_ipv4(r.prefix) + "/" + std::to_string(r.len) +
                         ": length must be 0..32");
    }
    auto [it, inserted] = leaf_of.try_emplace(r.next_hop, static_cast<uint16_t>(next_hops.size()));
    if (inserted) {
      if (next_hops.size() > kMaxNextHops) {
        throw PoptrieError("poptrie: more than " + std::to_string(kMaxNextHops) +
                           " distinct next hops (leaves are 16-bit indices)");
      }
      next_hops.push_back(r.next_hop);
    }
    trie.insert(r.prefix, r.len, it->second);
  }

  Emitter emit(trie, static_cast<uint32_t>(direct_bits));
  emit.run();

  // One region, each array starting on a cache line.
  const size_t direct_bytes = round_up_to_line(emit.direct.size() * sizeof(uint32_t));
  const size_t node_bytes = round_up_to_line(emit.nodes.size() * sizeof(PoptrieNode));
  const size_t leaf_bytes = round_up_to_line(emit.leaves.size() * sizeof(uint16_t));
  const size_t hop_bytes = round_up_to_line(next_hops.size() * sizeof(uint32_t));
  Poptrie p;
  p.memory_bytes_ = direct_bytes + node_bytes + leaf_bytes + hop_bytes;
  p.memory_ = HugeRegion(p.memory_bytes_);
  auto* base = static_cast<unsigned char*>(p.memory_.data());
  auto* direct = reinterpret_cast<uint32_t*>(base);
  auto* nodes = reinterpret_cast<PoptrieNode*>(base + direct_bytes);
  auto* leaves = reinterpret_cast<uint16_t*>(base + direct_bytes + node_bytes);
  auto* hops = reinterpret_cast<uint32_t*>(base + direct_bytes + node_bytes + leaf_bytes);
  std::copy(emit.direct.begin(), emit.direct.end(), direct);
  std::copy(emit.nodes.begin(), emit.nodes.end(), nodes);
  std::copy(emit.leaves.begin(), emit.leaves.end(), leaves);
  std::copy(next_hops.begin(), next_hops.end(), hops);
  p.view_ = {direct, nodes, leaves, hops, static_cast<uint32_t>(direct_bits)};
  p.node_count_ = emit.nodes.size();
  p.leaf_count_ = emit.leaves.size();
  p.next_hop_count_ = next_hops.size();
  p.have_popcnt_ = cpu_has_popcnt();
  return p;
}

uint32_t Poptrie::lookup(uint32_t ip) const {
  return have_popcnt_ ? lookup_one_popcnt(view_, ip) : lookup_one_generic(view_, ip);
}

void Poptrie::lookup_batch(const uint32_t* ips, uint32_t* next_hops, size_t n) const {
  if (have_popcnt_) {
    lookup_batch_popcnt(view_, ips, next_hops, n);
  } else {
    lookup_batch_generic(view_, ips, next_hops, n);
  }
}

}  // namespace tandem::ipv4
