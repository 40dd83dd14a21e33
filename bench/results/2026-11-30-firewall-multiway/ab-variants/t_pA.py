PRUNE = globals().get("PRUNE", "")  # t_pB.py sets it
old_walk = s[s.index('    for (const uint32_t root : roots) {'):s.index('  }\n}\n', s.index('    for (const uint32_t root : roots) {'))]
new_walk = '''    for (const uint32_t root : roots) {
      const HsNode* r = &nodes[root];
      for (size_t j = 0; j < g; ++j) at[j] = out[base + j] <= r->min_rule ? &kEmptyLeaf : r;
      for (bool moved = true; moved;) {
        moved = false;
        for (size_t j = 0; j < g; ++j) {
          const HsNode& x = *at[j];
          if (x.kind == HsNode::kLeaf) continue;
          PRUNE
          const __m256i cut = _mm256_xor_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(x.cut)), flip);
          const __m256i value = _mm256_set1_epi32(static_cast<int32_t>(f[j].v[x.kind]) ^ kFlip);
          const int above = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(value, cut)));
          at[j] = &nodes[x.first + static_cast<uint32_t>(__builtin_popcount(static_cast<unsigned>(above)))];
          __builtin_prefetch(at[j]);
          moved = true;
        }
      }
      for (size_t j = 0; j < g; ++j) {
        if (at[j]->count) __builtin_prefetch(&blocks[at[j]->block]);
      }
      for (size_t j = 0; j < g; ++j) {
        out[base + j] = match_leaf_exp(blocks + at[j]->block, at[j]->count, hv[j], out[base + j]);
      }
    }
'''
new_walk = new_walk.replace('PRUNE', PRUNE)
s = s.replace(old_walk, new_walk)
s = s.replace('  uint32_t at[kGroup];\n  HeaderFields f[kGroup];\n  __m256i hv', '  const HsNode* at[kGroup];\n  HeaderFields f[kGroup];\n  __m256i hv')
s = 'const HsNode kEmptyLeaf = [] { HsNode x{}; x.kind = HsNode::kLeaf; return x; }();\n' + s
