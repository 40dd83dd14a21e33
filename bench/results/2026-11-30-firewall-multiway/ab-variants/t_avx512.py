i = s.index('__attribute__((target("avx2,popcnt,bmi"))) void classify_batch_exp')
s = s[:i] + r'''
struct alignas(64) Block16 {
  uint32_t lo[4][16];
  uint32_t hi[4][16];
  uint32_t proto_mask[16];
  uint32_t proto_value[16];
  uint32_t names_ports[16];
  uint32_t rule[16];
};
struct Tree16 { std::vector<Block16> blocks; std::vector<uint32_t> leaf_block; };
const Tree16& tree16(const HyperSplit& hs) {
  static const HyperSplit* built = nullptr; static Tree16 t;
  if (built == &hs) return t;
  built = &hs; t = Tree16{};
  t.leaf_block.assign(hs.nodes().size(), 0);
  for (size_t i = 0; i < hs.nodes().size(); ++i) {
    const HsNode& x = hs.nodes()[i];
    if (x.kind != HsNode::kLeaf) continue;
    t.leaf_block[i] = static_cast<uint32_t>(t.blocks.size());
    for (uint32_t k = 0; k < x.count; k += 16) {
      Block16 b{};
      for (int lane = 0; lane < 16; ++lane) {
        if (k + lane >= x.count) { for (int f = 0; f < 4; ++f) { b.lo[f][lane] = UINT32_MAX; b.hi[f][lane] = 0; } b.rule[lane] = kNoMatch; continue; }
        const uint32_t id = hs.leaf_rules()[x.first + k + lane];
        const Rule& r = hs.rules()[id];
        for (int f = 0; f < 4; ++f) { b.lo[f][lane] = r.lo[f]; b.hi[f][lane] = r.hi[f]; }
        b.proto_mask[lane] = r.proto_mask; b.proto_value[lane] = r.proto_value;
        b.names_ports[lane] = restricts_ports(r) ? ~0u : 0u; b.rule[lane] = id;
      }
      t.blocks.push_back(b);
    }
  }
  return t;
}
__attribute__((target("avx512f,avx512vl,popcnt,bmi"))) uint32_t match16(const Block16* b, uint32_t rules, const __m512i* hv, uint32_t best) {
  for (uint32_t k = 0; k < rules; k += 16, ++b) {
    if (b->rule[0] >= best) break;
    __mmask16 m = _mm512_testn_epi32_mask(_mm512_load_si512(b->names_ports), hv[5]);
    for (int f = 0; f < 4; ++f) {
      m = _mm512_mask_cmple_epu32_mask(m, _mm512_load_si512(b->lo[f]), hv[f]);
      m = _mm512_mask_cmple_epu32_mask(m, hv[f], _mm512_load_si512(b->hi[f]));
    }
    m = _mm512_mask_cmpeq_epi32_mask(m, _mm512_and_si512(hv[4], _mm512_load_si512(b->proto_mask)), _mm512_load_si512(b->proto_value));
    const uint32_t hit = m;
    const uint32_t lane_rule = b->rule[_tzcnt_u32(hit) & 15];
    best = std::min(best, hit ? lane_rule : kNoMatch);
  }
  return best;
}
__attribute__((target("avx512f,avx512vl,popcnt,bmi"))) void classify_batch_exp(const HyperSplit& hs, const Header* h, uint32_t* out, size_t n) {
  const HsNode* nodes = hs.nodes().data();
  const Tree16& t16 = tree16(hs);
  const Block16* blocks = t16.blocks.data();
  const uint32_t* lb = t16.leaf_block.data();
  const std::vector<uint32_t>& roots = hs.roots();
  uint32_t at[kGroup];
  HeaderFields f[kGroup];
  __m512i hv[kGroup][6];
  for (size_t base = 0; base < n; base += kGroup) {
    const size_t g = std::min(kGroup, n - base);
    for (size_t j = 0; j < g; ++j) {
      out[base + j] = kNoMatch;
      f[j] = fields_of(h[base + j]);
      const Header& x = h[base + j];
      hv[j][0] = _mm512_set1_epi32(x.src); hv[j][1] = _mm512_set1_epi32(x.dst);
      hv[j][2] = _mm512_set1_epi32(x.sport); hv[j][3] = _mm512_set1_epi32(x.dport);
      hv[j][4] = _mm512_set1_epi32(x.proto); hv[j][5] = _mm512_set1_epi32((x.flags & kNoPorts) ? -1 : 0);
    }
    for (const uint32_t root : roots) {
      for (size_t j = 0; j < g; ++j) at[j] = root;
      for (bool moved = true; moved;) {
        moved = false;
        for (size_t j = 0; j < g; ++j) {
          const HsNode& x = nodes[at[j]];
          if (x.kind == HsNode::kLeaf) continue;
          const __mmask8 above = _mm256_cmpgt_epu32_mask(_mm256_set1_epi32(static_cast<int>(f[j].v[x.kind])), _mm256_load_si256(reinterpret_cast<const __m256i*>(x.cut)));
          at[j] = x.first + static_cast<uint32_t>(__builtin_popcount(above));
          __builtin_prefetch(&nodes[at[j]]);
          moved = true;
        }
      }
      for (size_t j = 0; j < g; ++j) if (nodes[at[j]].count) __builtin_prefetch(&blocks[lb[at[j]]]);
      for (size_t j = 0; j < g; ++j) out[base + j] = match16(blocks + lb[at[j]], nodes[at[j]].count, hv[j], out[base + j]);
    }
  }
}
'''
