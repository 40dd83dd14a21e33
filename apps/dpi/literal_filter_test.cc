// The literal filter (literal_filter.h), DPI's own stage 1: the pattern ids naive search finds on
// small hand-made sets and random ones (short patterns, case, NUL bytes, matches at both ends),
// and the ids the automaton finds on the ET rules over real captures, match-free and match-heavy
// traffic and random payloads with patterns at their edges.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "apps/dpi/aho_corasick.h"
#include "apps/dpi/dpi_match.h"
#include "apps/dpi/dpi_test_rules.h"
#include "apps/dpi/dpi_test_traffic.h"
#include "apps/dpi/literal_filter.h"
#include "core/rng.h"
#include "io/pcap_io.h"
#include "io/traffic_gen.h"
#include "tests/test_util.h"

namespace tandem::dpi {
namespace {

using test_rules::et_files;
using test_rules::et_rules;

std::vector<uint32_t> filter_ids(const LiteralFilter& f, const std::string& s) {
  std::vector<uint32_t> got = {999999};  // stale: must be cleared
  f.patterns_in(reinterpret_cast<const uint8_t*>(s.data()), s.size(), &got);
  return got;
}

std::vector<uint32_t> naive_ids(const std::vector<Pattern>& pats, const std::string& s) {
  return naive_patterns_in(pats, reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

TEST(LiteralFilter, EqualsNaiveSearchOnSmallSets) {
  const std::vector<Pattern> pats = {{"he", false},   {"she", false}, {"his", false},  {"hers", false},
                                     {"HE", true},    {std::string("\x00\xff", 2), false},
                                     {"a", false},    {"aaaa", true}, {"xyz", true},   {"hershe", false},
                                     {"SheHer", true}, {"ushers", false}, {std::string(1, '\0'), false}};
  const LiteralFilter f = LiteralFilter::build(pats);
  size_t matched = 0;
  for (const std::string& s : std::vector<std::string>{"ushers", "SHE HErs", std::string("\x00\xff\x00", 3), "AAAAA", "",
                                                        "xYz", "nothing", "hershe", "sHEhEr", "a", "h"}) {
    EXPECT_EQ(filter_ids(f, s), naive_ids(pats, s)) << s;
  }
  Rng rng(5, 2);
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    const size_t n = rng.next() % 48;
    for (size_t k = 0; k < n; ++k) s += "aAhHeErsSuxyz\x00\xff"[rng.next() % 15];
    const std::vector<uint32_t> want = naive_ids(pats, s);
    ASSERT_EQ(filter_ids(f, s), want) << i;
    matched += !want.empty();
  }
  EXPECT_GT(matched, 10000u);
}

// Random sets: 1-12 bytes over a small alphabet (so that patterns overlap, share prefixes and
// occur often), a third case sensitive, some repeated with the other case flag.
TEST(LiteralFilter, EqualsNaiveSearchOnRandomSets) {
  Rng rng(11, 3);
  const std::string alphabet = std::string("abcABC\x00\xff-", 9);
  for (int set = 0; set < 40; ++set) {
    std::vector<Pattern> pats;
    const size_t count = 1 + rng.next() % 200;
    for (size_t k = 0; k < count; ++k) {
      Pattern p;
      const size_t len = 1 + rng.next() % 12;
      for (size_t j = 0; j < len; ++j) p.bytes += alphabet[rng.next() % alphabet.size()];
      p.nocase = rng.next() % 3 != 0;
      pats.push_back(p);
      if (rng.next() % 8 == 0) pats.push_back({p.bytes, !p.nocase});
    }
    const LiteralFilter f = LiteralFilter::build(pats);
    ASSERT_EQ(f.patterns(), pats.size());
    for (int i = 0; i < 500; ++i) {
      std::string s;
      const size_t n = rng.next() % 200;
      while (s.size() < n) {
        s += rng.next() % 5 == 0 ? pats[rng.next() % pats.size()].bytes : std::string(1, alphabet[rng.next() % alphabet.size()]);
      }
      ASSERT_EQ(filter_ids(f, s), naive_ids(pats, s)) << "set " << set << " payload " << i;
    }
  }
}

TEST(LiteralFilter, RefusesEmptyPatternsAndFindsNothingWithoutPatterns) {
  EXPECT_THROW(LiteralFilter::build({{"", false}}), std::length_error);
  EXPECT_THROW(LiteralFilter::build({{std::string(65536, 'a'), false}}), std::length_error);
  const LiteralFilter none = LiteralFilter::build({});
  EXPECT_TRUE(filter_ids(none, "anything").empty());
  const LiteralFilter one = LiteralFilter::build({{"x", false}});
  EXPECT_TRUE(filter_ids(one, "").empty());
}

TEST(LiteralFilter, EqualsTheAutomatonOnEmergingThreats) {
  if (et_files().empty()) GTEST_SKIP() << "no ET rules";
  const std::vector<Pattern>& pats = et_rules().patterns;
  const AhoCorasick ac = AhoCorasick::build(pats);
  const LiteralFilter f = LiteralFilter::build(pats);
  std::printf("literal filter: %zu patterns, %.2f MiB\n", f.patterns(), f.memory_bytes() / 1048576.0);
  std::vector<uint32_t> want, got;
  size_t payloads = 0, with_match = 0, sparse = 0;
  std::vector<std::string> kept;  // every payload, for the hybrid below
  auto compare = [&](const uint8_t* p, size_t n, const std::string& what) {
    ac.patterns_in(p, n, &want);
    got.assign(1, 999999);
    f.patterns_in(p, n, &got);
    ASSERT_EQ(got, want) << what;
    got.assign(1, 999999);
    if (f.patterns_in_if_sparse(p, n, &got)) {
      ASSERT_EQ(got, want) << what << " (sparse)";
      ++sparse;
    } else {
      ASSERT_TRUE(got.empty()) << what << " (dense)";
    }
    ++payloads;
    with_match += !want.empty();
    kept.emplace_back(reinterpret_cast<const char*>(p), n);
  };
  const std::vector<PacketStore> stores = test_traffic::stage1_traffic(ac, 2000, 23, 0x78, 0x9a);
  for (const PacketStore& s : stores) {
    for (size_t i = 0; i < s.size(); ++i) {
      const PacketInfo pi = packet_info(s.frame(i), s.caplen[i]);
      compare(pi.bytes(), pi.len, "packet " + std::to_string(i));
    }
  }
  // Random bytes with NUL bytes, patterns spliced at either edge (in random case where nocase).
  const std::vector<std::string> edges = test_traffic::edge_payloads(7, 4000, true);
  for (size_t k = 0; k < edges.size(); ++k) {
    compare(reinterpret_cast<const uint8_t*>(edges[k].data()), edges[k].size(), "random " + std::to_string(k));
  }
  EXPECT_GT(with_match, 5000u);
  EXPECT_LT(with_match, payloads);
  EXPECT_GT(sparse, payloads / 4);
  EXPECT_LT(sparse, payloads);
  std::printf("%zu payloads, %zu with a pattern, %zu sparse\n", payloads, with_match, sparse);
  // The hybrid: sparse payloads through the filter, dense ones through the batched walk, in
  // batches that split the two kinds in every way; outputs start stale.
  std::vector<const uint8_t*> ptr;
  std::vector<uint32_t> lens;
  for (const std::string& k : kept) {
    ptr.push_back(reinterpret_cast<const uint8_t*>(k.data()));
    lens.push_back(static_cast<uint32_t>(k.size()));
  }
  std::vector<std::vector<uint32_t>> outs;
  for (const size_t batch : {size_t{8192}, size_t{7}, size_t{1}}) {
    outs.assign(kept.size(), std::vector<uint32_t>{999999});
    patterns_in_hybrid(f, ac, ptr.data(), lens.data(), kept.size(), outs.data(), batch, 32);
    for (size_t i = 0; i < kept.size(); ++i) {
      ac.patterns_in(ptr[i], lens[i], &want);
      ASSERT_EQ(outs[i], want) << "payload " << i << ", batches of " << batch;
    }
  }
}

}  // namespace
}  // namespace tandem::dpi
