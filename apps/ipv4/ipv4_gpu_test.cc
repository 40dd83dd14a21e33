// The GPU lookup against the reference trie on the real table. Skipped (visibly) without a GPU.
#include <gtest/gtest.h>

#include "apps/ipv4/ipv4_gpu.h"
#include "tests/ipv4_table.h"

namespace tandem::ipv4 {
namespace {

using test::RealIpv4Table;

size_t mismatches(const RefTrie& trie, const std::vector<uint32_t>& ips, const uint32_t* got) {
  size_t bad = 0;
  for (size_t i = 0; i < ips.size(); ++i) bad += trie.lookup(ips[i]) != got[i];
  return bad;
}

TEST(Ipv4Gpu, TenMillionUniformAddressesAgreeWithTrie) {
  TANDEM_REQUIRE_GPU();
  const auto& t = RealIpv4Table::get();
  auto g = Ipv4GpuTable::create(*t.dir);
  const auto ips = test::uniform_addresses(10'000'000, 42);
  std::vector<uint32_t> got(ips.size(), 0xDEADBEEF);
  g->lookup(ips.data(), got.data(), ips.size());  // pageable memory: the staged path
  EXPECT_EQ(mismatches(t.trie, ips, got.data()), 0u);

  gpu::PinnedArray<uint32_t> pin_in(ips.size()), pin_out(ips.size());
  std::copy(ips.begin(), ips.end(), pin_in.data());
  std::fill_n(pin_out.data(), ips.size(), 0xDEADBEEF);
  g->lookup(pin_in.data(), pin_out.data(), ips.size());  // pinned memory: direct DMA
  EXPECT_EQ(mismatches(t.trie, ips, pin_out.data()), 0u);
}

TEST(Ipv4Gpu, AddressesInsidePrefixesAndOddSizes) {
  TANDEM_REQUIRE_GPU();
  const auto& t = RealIpv4Table::get();
  auto g = Ipv4GpuTable::create(*t.dir);
  for (size_t n : {1u, 3u, 4u, 5u, 1023u, 4'194'305u}) {
    const auto ips = test::addresses_in_prefixes(t.fib.routes, n, n);
    std::vector<uint32_t> got(n + 1, 0xDEADBEEF);
    g->lookup(ips.data(), got.data(), n);
    EXPECT_EQ(got[n], 0xDEADBEEFu) << "wrote past the end, n=" << n;
    EXPECT_EQ(mismatches(t.trie, ips, got.data()), 0u) << "n=" << n;
    // Host arrays at any alignment (they are staged into aligned device buffers).
    std::vector<uint32_t> shifted(n + 1), out(n + 1);
    std::copy(ips.begin(), ips.end(), shifted.begin() + 1);
    g->lookup(shifted.data() + 1, out.data() + 1, n);
    EXPECT_TRUE(std::equal(got.begin(), got.begin() + n, out.begin() + 1)) << "n=" << n;
  }
}

TEST(Ipv4Gpu, TableUpdatesReachTheDevice) {
  TANDEM_REQUIRE_GPU();
  Dir24_8 d(16);
  RefTrie trie;
  ASSERT_EQ(d.add(0x0A000000, 8, 1), Dir24_8::Status::kOk);
  auto g = Ipv4GpuTable::create(d);
  std::vector<uint32_t> ips = {0x0A010203, 0x0A0102FF, 0x0B000000};
  std::vector<uint32_t> got(3);
  g->lookup(ips.data(), got.data(), 3);
  EXPECT_EQ(got, (std::vector<uint32_t>{1, 1, kNoRoute}));
  ASSERT_EQ(d.add(0x0A010200, 25, 2), Dir24_8::Status::kOk);
  ASSERT_EQ(d.add(0x0A010280, 25, 3), Dir24_8::Status::kOk);
  ASSERT_EQ(d.add(0x0B000000, 8, 4), Dir24_8::Status::kOk);
  g->sync(d);
  g->lookup(ips.data(), got.data(), 3);
  EXPECT_EQ(got, (std::vector<uint32_t>{2, 3, 4}));
  ASSERT_EQ(d.remove(0x0A010280, 25), Dir24_8::Status::kOk);
  g->sync(d);
  g->lookup(ips.data(), got.data(), 3);
  EXPECT_EQ(got, (std::vector<uint32_t>{2, 1, 4}));
}

TEST(Ipv4Gpu, SyncGrowsTheDeviceTbl8) {
  TANDEM_REQUIRE_GPU();
  Dir24_8 d(1024);
  RefTrie trie;
  ASSERT_EQ(d.add(0x0A000000, 8, 1), Dir24_8::Status::kOk);
  trie.insert(0x0A000000, 8, 1);
  auto g = Ipv4GpuTable::create(d);  // the device copy starts with a single tbl8 group
  std::vector<uint32_t> ips;
  for (uint32_t k = 0; k < 600; ++k) {  // 600 /24s with longer prefixes: 600 groups
    const uint32_t p = 0x0A000000 | (k << 8) | 0x80;
    ASSERT_EQ(d.add(p, 25, 2 + k), Dir24_8::Status::kOk);
    trie.insert(p, 25, 2 + k);
    ips.push_back(p | 5);
    ips.push_back(p - 0x80 + 5);
  }
  ASSERT_GE(d.tbl8_groups_high_water(), 600u);
  g->sync(d);
  std::vector<uint32_t> got(ips.size());
  g->lookup(ips.data(), got.data(), ips.size());
  EXPECT_EQ(mismatches(trie, ips, got.data()), 0u);
}

TEST(Ipv4Gpu, ReportsAbsenceClearly) {
  std::string why;
  if (gpu::available(&why)) GTEST_SKIP() << "a GPU is present; this test covers machines without one";
  EXPECT_FALSE(why.empty());
  Dir24_8 d(1);
  EXPECT_THROW(Ipv4GpuTable::create(d), gpu::GpuError);
}

}  // namespace
}  // namespace tandem::ipv4
