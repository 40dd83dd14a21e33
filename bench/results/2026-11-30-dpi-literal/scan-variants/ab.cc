// A/B of the literal filter's scan variants against Hyperscan in one process.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <glob.h>
#include "apps/dpi/aho_corasick.h"
#include "apps/dpi/dpi_match.h"
#include "apps/dpi/hyperscan_patterns.h"
#include "apps/dpi/ids_rules.h"
#include "bench/variants/dpi_literal_filter.h"
#include "io/traffic_gen.h"
using namespace tandem;
int main(int argc, char** argv) {
  const char* rules = argv[1];
  std::vector<std::string> files;
  glob_t g; glob(rules, 0, nullptr, &g);
  for (size_t i = 0; i < g.gl_pathc; ++i) files.push_back(g.gl_pathv[i]);
  dpi::IdsLoadOptions lo; lo.skip_bad = true;
  dpi::IdsRuleSet set = dpi::load_ids_rules(files, lo);
  dpi::AhoCorasick ac = dpi::AhoCorasick::build(set.patterns);
  dpi::LiteralFilter f = dpi::LiteralFilter::build(set.patterns);
  dpi::HyperscanPatterns hs(set.patterns);
  dpi::HyperscanPatterns::Scratch scratch(hs);
  for (double heavy : {0.0, 0.2}) {
    PacketStore s = generate(parse_gen_spec("count=200000,size=512,proto=tcp,flows=10000,seed=9"));
    dpi::make_match_free(s, ac);
    if (heavy > 0) dpi::make_match_heavy(s, set.patterns, heavy);
    std::vector<dpi::PacketInfo> info(s.size());
    size_t bytes = 0;
    for (size_t i = 0; i < s.size(); ++i) { info[i] = dpi::packet_info(s.frame(i), s.caplen[i]); bytes += info[i].len; }
    std::vector<uint32_t> a, b; size_t diff = 0;
    for (size_t i = 0; i < s.size(); ++i) { f.patterns_in(info[i].bytes(), info[i].len, &a); ac.patterns_in(info[i].bytes(), info[i].len, &b); diff += a != b; }
    double best_f = 0, best_h = 0;
    for (int r = 0; r < 5; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      for (size_t i = 0; i < s.size(); ++i) f.patterns_in(info[i].bytes(), info[i].len, &a);
      double sf = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      t0 = std::chrono::steady_clock::now();
      for (size_t i = 0; i < s.size(); ++i) hs.patterns_in(info[i].bytes(), info[i].len, scratch, &b);
      double sh = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best_f = std::max(best_f, bytes * 8 / sf / 1e9); best_h = std::max(best_h, bytes * 8 / sh / 1e9);
    }
    std::printf("%s heavy=%.1f: filter %.2f Gbps, hyperscan %.2f Gbps, ratio %.2f, differ %zu\n", argv[2], heavy, best_f, best_h, best_f / best_h, diff);
  }
}
