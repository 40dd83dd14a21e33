// The benchmarks' MAC-table lookup variants (bench/variants/l2_variants.h) against
// std::unordered_map: after random insert/update/erase sequences, on a table filled to its first
// kFull (entries in both buckets, cuckoo-moved ones among them), and with the MACs that collide
// with naive empty markers (all zeros, all ones); present and absent keys, odd sizes.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "apps/l2/mac_table.h"
#include "bench/variants/l2_variants.h"

namespace tandem::l2 {
namespace {

using Reference = std::unordered_map<uint64_t, uint32_t>;

// Distinct random 48-bit MACs, the all-zero and all-ones MACs first.
std::vector<uint64_t> random_macs(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::unordered_map<uint64_t, bool> seen;
  std::vector<uint64_t> macs = {0, kMacMask};
  seen[0] = seen[kMacMask] = true;
  while (macs.size() < n) {
    const uint64_t m = rng() & kMacMask;
    if (seen.emplace(m, true).second) macs.push_back(m);
  }
  return macs;
}

void expect_variants_match(const MacTable& t, const Reference& ref, const std::vector<uint64_t>& keys) {
  for (size_t n : {keys.size(), size_t{0}, size_t{1}, size_t{5}, size_t{33}, size_t{65}}) {
    if (n > keys.size()) continue;
    std::vector<uint32_t> want(n);
    for (size_t i = 0; i < n; ++i) {
      const auto it = ref.find(keys[i]);
      want[i] = it == ref.end() ? kMiss : it->second;
    }
    auto check = [&](const std::string& what, const std::vector<uint32_t>& got) {
      ASSERT_EQ(got[n], 12345u) << what << " wrote past the end, n=" << n;
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(got[i], want[i]) << what << ", key " << i << " of " << n << ", MAC " << format_mac(keys[i]);
      }
    };
    std::vector<uint32_t> got(n + 1, 12345u);
    mac_lookup_scalar(t, keys.data(), got.data(), n);
    check("scalar", got);
    for (uint32_t g : {1u, 4u, 8u, 16u, 32u, 64u}) {
      std::fill(got.begin(), got.end(), 12345u);
      mac_lookup_groups(t, keys.data(), got.data(), n, g);
      check("groups " + std::to_string(g), got);
    }
  }
}

TEST(L2Variants, RandomOperationsMatchAReferenceMap) {
  std::mt19937_64 rng(7);
  MacTable t(20000);
  Reference ref;
  const auto macs = random_macs(30000, 8);
  for (int step = 0; step < 60000; ++step) {
    const uint64_t mac = macs[rng() % macs.size()];
    if (rng() % 4 == 0) {
      EXPECT_EQ(t.erase(mac), ref.erase(mac) == 1);
    } else {
      const uint32_t port = static_cast<uint32_t>(rng() % 4096);
      const MacTable::Status s = t.insert(mac, port);
      ASSERT_TRUE(s == MacTable::Status::kInserted || s == MacTable::Status::kUpdated) << MacTable::status_name(s);
      ref[mac] = port;
    }
  }
  expect_variants_match(t, ref, macs);  // present and erased or never inserted
}

TEST(L2Variants, TableFilledToItsFirstKFull) {
  MacTable t(8192, 1.0);
  Reference ref;
  const auto macs = random_macs(t.slot_count() + 1000, 5);
  for (size_t i = 0; i < macs.size(); ++i) {
    const uint32_t port = static_cast<uint32_t>(i % 1000);
    if (t.insert(macs[i], port) != MacTable::Status::kInserted) break;
    ref[macs[i]] = port;
  }
  ASSERT_GT(t.load_factor(), 0.9);
  ASSERT_GT(t.cuckoo_moves(), 0u);
  expect_variants_match(t, ref, macs);
}

}  // namespace
}  // namespace tandem::l2
