// Test support for the stage-1 tests: the payloads every stage 1 is compared on.
#pragma once

#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include "apps/dpi/aho_corasick.h"
#include "apps/dpi/dpi_match.h"
#include "apps/dpi/dpi_test_rules.h"
#include "core/rng.h"
#include "io/pcap_io.h"
#include "io/traffic_gen.h"
#include "tests/test_util.h"

namespace tandem::dpi::test_traffic {

// The first `pcap_packets` of each real capture, then generated TCP and UDP traffic (imix, 1,500
// packets each, generator seed `seed`) free of every pattern of `ac` (make_match_free's seed
// `free_seed`), as it is and with the ET patterns (nocase ones in random case) spliced over 5% and
// 30% of the bytes (make_match_heavy's seed `heavy_seed`).
inline std::vector<PacketStore> stage1_traffic(const AhoCorasick& ac, size_t pcap_packets, int seed, uint64_t free_seed,
                                               uint64_t heavy_seed) {
  std::vector<PacketStore> v;
  for (const char* cap : {"example", "many-protocols", "tls2"}) {
    v.push_back(load_pcap(test::source_path(std::string("data/pcap/") + cap + ".pcap"), pcap_packets));
  }
  for (const double heavy : {0.0, 0.05, 0.3}) {
    for (const char* proto : {"tcp", "udp"}) {
      PacketStore s = generate(parse_gen_spec("count=1500,size=imix,flows=300,seed=" + std::to_string(seed) +
                                              ",proto=" + proto));
      make_match_free(s, ac, free_seed);
      if (heavy > 0) make_match_heavy(s, test_rules::et_rules().patterns, heavy, heavy_seed);
      v.push_back(std::move(s));
    }
  }
  return v;
}

// `count` payloads of up to 299 random bytes (a quarter of them NUL), each with a random ET pattern
// at its start (odd k) or end (even k); with random_case, a nocase pattern's letters in random
// case. Rng(seed, 1) draws them.
inline std::vector<std::string> edge_payloads(uint64_t seed, int count, bool random_case) {
  const std::vector<Pattern>& pats = test_rules::et_rules().patterns;
  std::vector<std::string> v;
  Rng rng(seed, 1);
  for (int k = 0; k < count; ++k) {
    std::string b(rng.next() % 300, '\0');
    for (char& c : b) c = (rng.next() % 4 == 0) ? '\0' : static_cast<char>(rng.next());
    const Pattern& pat = pats[rng.next() % pats.size()];
    std::string w = pat.bytes;
    if (random_case && pat.nocase) {
      for (char& c : w) c = static_cast<char>(rng.next() % 2 ? std::toupper(static_cast<unsigned char>(c)) : c);
    }
    v.push_back(k % 2 ? w + b : b + w);
  }
  return v;
}

}  // namespace tandem::dpi::test_traffic
