#include "apps/acl/hypersplit.h"
#include "apps/acl/acl_rules.h"
#include "core/flow_hash.h"
#include <cstdio>
using namespace tandem;
using namespace tandem::acl;
int main(int argc, char** argv) {
  auto set = load_rules(argv[1]);
  auto tree = HyperSplit::build(set.rules);
  auto v = tree.view();
  size_t n = 200000; double nodes = 0, leaves = 0, blocks = 0, trees = 0; size_t depth_hist[16] = {};
  for (size_t i = 0; i < n; ++i) {
    const uint64_t x = mix64(i + 1); Header h;
    if (i % 4 == 0) { h.src = x; h.dst = x >> 32; h.sport = mix64(x); h.dport = mix64(x) >> 16; h.proto = (x & 1) ? 6 : 17; }
    else h = header_in_rule(set.rules[x % set.rules.size()], mix64(x));
    auto f = fields_of(h); uint32_t best = kNoMatch;
    for (uint32_t t = 0; t < v.trees; ++t) {
      uint32_t at = v.roots[t];
      if (best <= v.nodes[at].min_rule) continue;
      trees++; int d = 0;
      while (v.nodes[at].kind != HsNode::kLeaf) { nodes++; d++; at = hs_child(v.nodes[at], f.v[v.nodes[at].kind]); }
      depth_hist[d]++;
      if (v.nodes[at].min_rule < best) { leaves++; blocks += (v.nodes[at].count + 7) / 8; }
      best = hs_match_leaf(v, v.nodes[at], h, best);
    }
  }
  printf("%s: trees %.2f nodes %.2f leaves %.2f blocks %.2f; depth hist:", argv[1], trees/n, nodes/n, leaves/n, blocks/n);
  for (int d = 0; d < 10; ++d) printf(" %d:%.2f", d, depth_hist[d]/(double)n);
  printf("\n");
}
