# usage: mkab.py TRANSFORM.py [OUT.cc]: OUT holds the production batched lookup (cur) and the transformed
# one (exp) with a timing main; run as ab_V_leafN RULES N. device.log came from ab_id (also as ab_id_leaf12,
# ab_id_leaf16), ab_pA, ab_pB, ab_nobreak and ab_avx512 (as ab_avx512_leaf8, ab_avx512_leaf16), made
# against apps/acl/hypersplit_batch.cc of dbb5a0b with the nodes' min_rule added.
import sys, os
src=open('/work/main/apps/acl/hypersplit_batch.cc').read()
a=src.index('constexpr int32_t kFlip')
b=src.index('}  // namespace\n\nbool HyperSplit::vector_lookup_supported')
body=src[a:b]
exp=body.replace('classify_batch_avx2','classify_batch_exp').replace('match_leaf_avx2','match_leaf_exp').replace('constexpr int32_t kFlip = INT32_MIN;','')
env={'s':exp}
exec(open(sys.argv[1]).read(), env)
exp=env['s']
head='''#include <immintrin.h>
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
'''
main='''}
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
    printf("%s cur %.1f ns exp %.1f ns exp/cur %.3f same %d\\n", argv[1], a / n * 1e9, b / n * 1e9, b / a, int(out == ref));
  }
}
'''
out=sys.argv[2] if len(sys.argv)>2 else '/tmp/fw/ab.cc'
open(out,'w').write(head+body+exp+main)
