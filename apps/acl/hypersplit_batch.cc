// HyperSplit's batched lookup: a group of headers walks each tree level by level, each level's
// nodes prefetched for the whole group, so that their reads overlap instead of following each
// other; a node's eight thresholds and a leaf's rules, eight at a time, compare in one AVX2
// instruction per field. Chosen at run time: on CPUs without AVX2 the batch is classify() per
// header (acl_core.h's scalar steps), as rte_acl falls back to its scalar classifier.
#include <algorithm>

#include "apps/acl/hypersplit.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define TANDEM_ACL_X86 1
#endif

namespace tandem::acl {

#ifdef TANDEM_ACL_X86

namespace {

constexpr size_t kGroup = 32;
constexpr int32_t kFlip = static_cast<int32_t>(HyperSplit::LeafBlock::kFlip);

// The first rule of the leaf matching the header (its fields broadcast in hv: source, destination
// and ports flipped, then the protocol, then all ones when it has no ports) with an index below
// `best`, else `best`. A leaf's blocks hold its rules in priority order, so a block's first matching lane is its best
// rule, and a block starting at `best` or after cannot improve on it.
__attribute__((target("avx2,bmi"))) uint32_t match_leaf_avx2(const HyperSplit::LeafBlock* b, uint32_t rules,
                                                             const __m256i* hv, uint32_t best) {
  const __m256i* field = hv;
  const __m256i proto = hv[4];
  const __m256i no_ports = hv[5];
  for (uint32_t k = 0; k < rules; k += 8, ++b) {
    if (b->rule[0] >= best) break;  // the rest of the leaf comes after a rule already found
    __m256i miss = _mm256_and_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(b->names_ports)), no_ports);
    for (int f = 0; f < 4; ++f) {
      const __m256i lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(b->lo[f]));
      const __m256i hi = _mm256_load_si256(reinterpret_cast<const __m256i*>(b->hi[f]));
      miss = _mm256_or_si256(miss, _mm256_or_si256(_mm256_cmpgt_epi32(lo, field[f]), _mm256_cmpgt_epi32(field[f], hi)));
    }
    const __m256i masked = _mm256_and_si256(proto, _mm256_load_si256(reinterpret_cast<const __m256i*>(b->proto_mask)));
    const __m256i proto_ok =
        _mm256_cmpeq_epi32(masked, _mm256_load_si256(reinterpret_cast<const __m256i*>(b->proto_value)));
    const uint32_t hit = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_andnot_si256(miss, proto_ok))));
    // Without branches on the outcome (it follows the traffic, which no predictor learns): the
    // lane's rule, or no match when no lane hit.
    const uint32_t lane_rule = b->rule[_tzcnt_u32(hit) & 7];
    best = std::min(best, hit ? lane_rule : kNoMatch);
  }
  return best;
}

__attribute__((target("avx2,popcnt,bmi"))) void classify_batch_avx2(const HyperSplit& hs, const Header* h,
                                                                      uint32_t* out, size_t n) {
  const HsNode* nodes = hs.nodes().data();
  const HyperSplit::LeafBlock* blocks = hs.leaf_blocks().data();
  const std::vector<uint32_t>& roots = hs.roots();
  const __m256i flip = _mm256_set1_epi32(kFlip);
  uint32_t at[kGroup];     // the node each walking header is at
  uint8_t who[kGroup];     // which header of the group each walking one is
  HeaderFields f[kGroup];
  __m256i hv[kGroup][6];  // each header's fields broadcast once for every tree's leaf
  for (size_t base = 0; base < n; base += kGroup) {
    const size_t g = std::min(kGroup, n - base);
    for (size_t j = 0; j < g; ++j) {
      out[base + j] = kNoMatch;
      f[j] = fields_of(h[base + j]);
      for (int q = 0; q < 4; ++q) hv[j][q] = _mm256_set1_epi32(static_cast<int32_t>(f[j].v[q]) ^ kFlip);
      hv[j][4] = _mm256_set1_epi32(static_cast<int32_t>(f[j].v[kProto]));
      hv[j][5] = _mm256_set1_epi32((h[base + j].flags & kNoPorts) ? -1 : 0);
    }
    for (const uint32_t root : roots) {
      // A header whose best rule so far comes before every rule of the tree skips it. Who walks
      // is listed without a branch on each header's outcome: that follows the traffic, and
      // mispredicted branches cost more than the walks they would save.
      const uint32_t tree_min = nodes[root].min_rule;
      size_t m = 0;
      for (size_t j = 0; j < g; ++j) {
        who[m] = static_cast<uint8_t>(j);
        m += out[base + j] > tree_min;
      }
      for (size_t q = 0; q < m; ++q) at[q] = root;
      for (bool moved = m != 0; moved;) {
        moved = false;
        for (size_t q = 0; q < m; ++q) {
          const HsNode& x = nodes[at[q]];
          if (x.kind == HsNode::kLeaf) continue;
          const __m256i cut = _mm256_xor_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(x.cut)), flip);
          const __m256i value = _mm256_set1_epi32(static_cast<int32_t>(f[who[q]].v[x.kind]) ^ kFlip);
          const int above = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(value, cut)));
          at[q] = x.first + static_cast<uint32_t>(__builtin_popcount(static_cast<unsigned>(above)));
          __builtin_prefetch(&nodes[at[q]]);
          moved = true;
        }
      }
      // The same for the leaves: only those holding a rule before the header's best are checked.
      size_t k = 0;
      for (size_t q = 0; q < m; ++q) {
        const HsNode& leaf = nodes[at[q]];
        __builtin_prefetch(blocks + leaf.block);
        at[k] = at[q];
        who[k] = who[q];
        k += leaf.min_rule < out[base + who[q]];
      }
      for (size_t q = 0; q < k; ++q) {
        const HsNode& leaf = nodes[at[q]];
        out[base + who[q]] = match_leaf_avx2(blocks + leaf.block, leaf.count, hv[who[q]], out[base + who[q]]);
      }
    }
  }
}

}  // namespace

bool HyperSplit::vector_lookup_supported() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt") &&
                          __builtin_cpu_supports("bmi");
  return yes;
}

void HyperSplit::classify_batch(const Header* h, uint32_t* out, size_t n) const {
  if (vector_lookup_supported()) {
    classify_batch_avx2(*this, h, out, n);
  } else {
    for (size_t i = 0; i < n; ++i) out[i] = classify(h[i]);
  }
}

#else

bool HyperSplit::vector_lookup_supported() { return false; }

void HyperSplit::classify_batch(const Header* h, uint32_t* out, size_t n) const {
  for (size_t i = 0; i < n; ++i) out[i] = classify(h[i]);
}

#endif

}  // namespace tandem::acl
