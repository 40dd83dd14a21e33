s = s.replace('''      for (size_t q = 0; q < m; ++q) at[q] = root;
      for (bool moved = m != 0; moved;) {''','''      for (size_t q = 0; q < m; ++q) at[q] = root;
      const uint64_t t0 = __rdtsc();
      for (bool moved = m != 0; moved;) {''')
s = s.replace('''      // The same for the leaves: only''','''      const uint64_t t1 = __rdtsc();
      // The same for the leaves: only''')
s = s.replace('''      for (size_t q = 0; q < k; ++q) {
        const HsNode& leaf = nodes[at[q]];
        out[base + who[q]] = match_leaf_exp(blocks + leaf.block, leaf.count, hv[who[q]], out[base + who[q]]);
      }''','''      const uint64_t t2 = __rdtsc();
      for (size_t q = 0; q < k; ++q) {
        const HsNode& leaf = nodes[at[q]];
        out[base + who[q]] = match_leaf_exp(blocks + leaf.block, leaf.count, hv[who[q]], out[base + who[q]]);
      }
      const uint64_t t3 = __rdtsc();
      g_walk += t1 - t0; g_sel += t2 - t1; g_match += t3 - t2; g_walks += m; g_leaves += k;''')
s = 'uint64_t g_walk, g_sel, g_match, g_walks, g_leaves;\n' + s
