#include <immintrin.h>
#include "apps/acl/hypersplit.h"
#include "apps/acl/acl_rules.h"
#include "core/flow_hash.h"
#include <algorithm>
#include <chrono>
#include <cstdio>
using namespace tandem;
using namespace tandem::acl;
constexpr size_t kGroup = 32;
namespace {
constexpr int32_t kFlip = INT32_MIN;  // LeafBlock: values with their top bit flipped

// The first rule of the leaf matching the header (its fields broadcast in hv: source, destination,
// ports flipped, protocol, all ones when it has no ports) with an index below `best`, else `best`.
// A leaf's blocks hold its rules in priority order, so a block's first matching lane is its best
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
  uint32_t at[kGroup];
  HeaderFields f[kGroup];
  __m256i hv[kGroup][6];  // each header's fields broadcast once for every tree's leaf
  for (size_t base = 0; base < n; base += kGroup) {
    const size_t g = std::min(kGroup, n - base);
    for (size_t j = 0; j < g; ++j) {
      out[base + j] = kNoMatch;
      f[j] = fields_of(h[base + j]);
      const Header& x = h[base + j];
      hv[j][0] = _mm256_set1_epi32(static_cast<int32_t>(x.src) ^ kFlip);
      hv[j][1] = _mm256_set1_epi32(static_cast<int32_t>(x.dst) ^ kFlip);
      hv[j][2] = _mm256_set1_epi32(static_cast<int32_t>(x.sport) ^ kFlip);
      hv[j][3] = _mm256_set1_epi32(static_cast<int32_t>(x.dport) ^ kFlip);
      hv[j][4] = _mm256_set1_epi32(x.proto);
      hv[j][5] = _mm256_set1_epi32((x.flags & kNoPorts) ? -1 : 0);
    }
    for (const uint32_t root : roots) {
      for (size_t j = 0; j < g; ++j) at[j] = root;
      for (bool moved = true; moved;) {
        moved = false;
        for (size_t j = 0; j < g; ++j) {
          const HsNode& x = nodes[at[j]];
          if (x.kind == HsNode::kLeaf) continue;
          const __m256i cut = _mm256_xor_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(x.cut)), flip);
          const __m256i value = _mm256_set1_epi32(static_cast<int32_t>(f[j].v[x.kind]) ^ kFlip);
          const int above = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(value, cut)));
          at[j] = x.first + static_cast<uint32_t>(__builtin_popcount(static_cast<unsigned>(above)));
          __builtin_prefetch(&nodes[at[j]]);
          moved = true;
        }
      }
      for (size_t j = 0; j < g; ++j) {
        const HsNode& leaf = nodes[at[j]];
        if (leaf.count) __builtin_prefetch(&blocks[leaf.block]);
      }
      for (size_t j = 0; j < g; ++j) {
        const HsNode& leaf = nodes[at[j]];
        out[base + j] = match_leaf_avx2(blocks + leaf.block, leaf.count, hv[j], out[base + j]);
      }
    }
  }
}

  // LeafBlock: values with their top bit flipped

// The first rule of the leaf matching the header (its fields broadcast in hv: source, destination,
// ports flipped, protocol, all ones when it has no ports) with an index below `best`, else `best`.
// A leaf's blocks hold its rules in priority order, so a block's first matching lane is its best
// rule, and a block starting at `best` or after cannot improve on it.
__attribute__((target("avx2,bmi"))) uint32_t match_leaf_exp(const HyperSplit::LeafBlock* b, uint32_t rules,
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

__attribute__((target("avx2,popcnt,bmi"))) void classify_batch_exp(const HyperSplit& hs, const Header* h,
                                                                      uint32_t* out, size_t n) {
  const HsNode* nodes = hs.nodes().data();
  const HyperSplit::LeafBlock* blocks = hs.leaf_blocks().data();
  const std::vector<uint32_t>& roots = hs.roots();
  const __m256i flip = _mm256_set1_epi32(kFlip);
  uint32_t at[kGroup];
  HeaderFields f[kGroup];
  __m256i hv[kGroup][6];  // each header's fields broadcast once for every tree's leaf
  for (size_t base = 0; base < n; base += kGroup) {
    const size_t g = std::min(kGroup, n - base);
    for (size_t j = 0; j < g; ++j) {
      out[base + j] = kNoMatch;
      f[j] = fields_of(h[base + j]);
      const Header& x = h[base + j];
      hv[j][0] = _mm256_set1_epi32(static_cast<int32_t>(x.src) ^ kFlip);
      hv[j][1] = _mm256_set1_epi32(static_cast<int32_t>(x.dst) ^ kFlip);
      hv[j][2] = _mm256_set1_epi32(static_cast<int32_t>(x.sport) ^ kFlip);
      hv[j][3] = _mm256_set1_epi32(static_cast<int32_t>(x.dport) ^ kFlip);
      hv[j][4] = _mm256_set1_epi32(x.proto);
      hv[j][5] = _mm256_set1_epi32((x.flags & kNoPorts) ? -1 : 0);
    }
    for (const uint32_t root : roots) {
      for (size_t j = 0; j < g; ++j) at[j] = root;
      for (bool moved = true; moved;) {
        moved = false;
        for (size_t j = 0; j < g; ++j) {
          const HsNode& x = nodes[at[j]];
          if (x.kind == HsNode::kLeaf) continue;
          const __m256i cut = _mm256_xor_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(x.cut)), flip);
          const __m256i value = _mm256_set1_epi32(static_cast<int32_t>(f[j].v[x.kind]) ^ kFlip);
          const int above = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(value, cut)));
          at[j] = x.first + static_cast<uint32_t>(__builtin_popcount(static_cast<unsigned>(above)));
          __builtin_prefetch(&nodes[at[j]]);
          moved = true;
        }
      }
      for (size_t j = 0; j < g; ++j) {
        const HsNode& leaf = nodes[at[j]];
        if (leaf.count) __builtin_prefetch(&blocks[leaf.block]);
      }
      for (size_t j = 0; j < g; ++j) {
        const HsNode& leaf = nodes[at[j]];
        out[base + j] = match_leaf_exp(blocks + leaf.block, leaf.count, hv[j], out[base + j]);
      }
    }
  }
}

}
template <class F> double timeit(F&& f) { f(); double best = 1e9; for (int r = 0; r < 5; ++r) { auto t0 = std::chrono::steady_clock::now(); f(); best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()); } return best; }
int main(int argc, char** argv) {
  auto set = load_rules(argv[1]);
  size_t n = 1000000; std::vector<Header> hdr(n); std::vector<uint32_t> out(n), ref(n);
  for (size_t i = 0; i < n; ++i) { const uint64_t x = mix64(i + 1); Header h;
    if (i % 4 == 0) { h.src = x; h.dst = x >> 32; h.sport = mix64(x); h.dport = mix64(x) >> 16; h.proto = (x & 1) ? 6 : 17; }
    else h = header_in_rule(set.rules[x % set.rules.size()], mix64(x)); hdr[i] = h; }
  auto tree = HyperSplit::build(set.rules);
  HyperSplit::Options eo; eo.leaf_rules = argc > 2 ? atoi(argv[2]) : 8;
  auto etree = HyperSplit::build(set.rules, eo);
  for (int r = 0; r < 3; ++r) {
    double a = timeit([&] { classify_batch_avx2(tree, hdr.data(), out.data(), n); });
    double b = timeit([&] { classify_batch_exp(etree, hdr.data(), ref.data(), n); });
    printf("%s cur %.1f ns exp %.1f ns exp/cur %.3f same %d\n", argv[1], a / n * 1e9, b / n * 1e9, b / a, int(out == ref));
  }
}
