// The offload modes: every mode returns exactly what the CPU computes, for every batch size, over
// many consecutive batches (so a stale input or result would show), and through several slots.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "apps/ipv4/ipv4_gpu.h"
#include "gpu/offload.h"
#include "tests/ipv4_table.h"

namespace tandem::gpu {
namespace {

constexpr GpuMode kModes[] = {GpuMode::kAsync, GpuMode::kGraph, GpuMode::kMapped, GpuMode::kPersistent};

TEST(GpuMode, NamesRoundTrip) {
  for (GpuMode m : kModes) EXPECT_EQ(parse_gpu_mode(gpu_mode_name(m)), m);
  EXPECT_THROW(parse_gpu_mode("warp-speed"), std::invalid_argument);
}

void fill(uint32_t* p, size_t n, std::mt19937_64& rng) {
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint32_t>(rng());
}

TEST(GpuOffload, EchoEveryModeEverySize) {
  TANDEM_REQUIRE_GPU();
  std::mt19937_64 rng(1);
  for (GpuMode m : kModes) {
    auto r = make_echo_runner({m, 100000, 2, 0});
    for (size_t n : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{1000}, size_t{4097}, size_t{100000}}) {
      auto* in = static_cast<uint32_t*>(r->in(0));
      auto* out = static_cast<uint32_t*>(r->out(0));
      fill(in, n, rng);
      std::fill_n(out, 100000, 0xDEADBEEF);
      r->run(n);
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i) bad += out[i] != in[i];
      EXPECT_EQ(bad, 0u) << gpu_mode_name(m) << " n=" << n;
    }
    EXPECT_THROW(r->submit(0, 100001), GpuError);
  }
}

TEST(GpuOffload, ManyConsecutiveSmallBatches) {
  TANDEM_REQUIRE_GPU();
  std::mt19937_64 rng(2);
  for (GpuMode m : kModes) {
    auto r = make_echo_runner({m, 4096, 1, 0});
    size_t bad = 0;
    for (int k = 0; k < 2000; ++k) {
      const size_t n = 1 + rng() % 4096;
      auto* in = static_cast<uint32_t*>(r->in(0));
      auto* out = static_cast<uint32_t*>(r->out(0));
      fill(in, n, rng);
      r->run(n);
      for (size_t i = 0; i < n; ++i) bad += out[i] != in[i];
    }
    EXPECT_EQ(bad, 0u) << gpu_mode_name(m);
  }
}

TEST(GpuOffload, SlotsOverlap) {
  TANDEM_REQUIRE_GPU();
  std::mt19937_64 rng(3);
  for (GpuMode m : {GpuMode::kAsync, GpuMode::kGraph, GpuMode::kMapped}) {
    auto r = make_echo_runner({m, 50000, 4, 0});
    ASSERT_EQ(r->slots(), 4);
    std::vector<std::vector<uint32_t>> want(4);
    for (int round = 0; round < 20; ++round) {
      for (int s = 0; s < 4; ++s) {
        const size_t n = 1 + rng() % 50000;
        want[s].resize(n);
        fill(want[s].data(), n, rng);
        std::copy(want[s].begin(), want[s].end(), static_cast<uint32_t*>(r->in(s)));
        r->submit(s, n);
      }
      for (int s = 0; s < 4; ++s) {
        r->wait(s);
        const auto* out = static_cast<const uint32_t*>(r->out(s));
        ASSERT_TRUE(std::equal(want[s].begin(), want[s].end(), out)) << gpu_mode_name(m) << " slot " << s;
      }
    }
  }
  EXPECT_EQ(make_echo_runner({GpuMode::kPersistent, 16, 4, 0})->slots(), 2);
}

TEST(GpuOffload, ReadyPollsUntilDone) {
  TANDEM_REQUIRE_GPU();
  std::mt19937_64 rng(4);
  for (GpuMode m : kModes) {
    auto r = make_echo_runner({m, 300000, 2, 0});
    for (size_t n : {size_t{1}, size_t{2048}, size_t{2049}, size_t{300000}}) {
      auto* in = static_cast<uint32_t*>(r->in(0));
      fill(in, n, rng);
      r->submit(0, n);
      uint64_t polls = 0;
      while (!r->ready(0)) ++polls;
      const auto* out = static_cast<const uint32_t*>(r->out(0));
      EXPECT_TRUE(std::equal(in, in + n, out)) << gpu_mode_name(m) << " n=" << n << " after " << polls << " polls";
      r->wait(0);  // returns at once after ready
    }
  }
}

TEST(GpuOffload, PersistentSmallAndLargeBatchesAlternate) {
  // Small batches are done by block 0 alone, large ones by every block: alternating them checks
  // that the blocks' hand-off and completion count stay right when they skip batches.
  TANDEM_REQUIRE_GPU();
  std::mt19937_64 rng(5);
  for (int blocks : {0, 1, 3}) {
    auto r = make_echo_runner({GpuMode::kPersistent, 100000, 1, blocks});
    size_t bad = 0;
    for (int k = 0; k < 600; ++k) {
      const size_t n = (k % 3 == 0) ? 2049 + rng() % 97951 : 1 + rng() % 2048;
      auto* in = static_cast<uint32_t*>(r->in(0));
      auto* out = static_cast<uint32_t*>(r->out(0));
      fill(in, n, rng);
      r->run(n);
      for (size_t i = 0; i < n; ++i) bad += out[i] != in[i];
    }
    EXPECT_EQ(bad, 0u) << "persistent blocks=" << blocks;
  }
}

TEST(GpuOffload, PersistentTwoSlotsAlternate) {
  // The caller fills one slot while the kernel works on the other; submitting waits for the
  // kernel to have finished the previous batch. Every batch's results must be its own.
  TANDEM_REQUIRE_GPU();
  std::mt19937_64 rng(6);
  auto r = make_echo_runner({GpuMode::kPersistent, 50000, 2, 0});
  ASSERT_EQ(r->slots(), 2);
  std::vector<uint32_t> want[2];
  size_t bad = 0;
  for (int k = 0; k < 1000; ++k) {
    const int s = k % 2;
    const size_t n = (k % 5 == 0) ? 1 + rng() % 50000 : 1 + rng() % 1500;
    want[s].resize(n);
    fill(want[s].data(), n, rng);
    std::copy(want[s].begin(), want[s].end(), static_cast<uint32_t*>(r->in(s)));
    r->submit(s, n);
    if (k > 0) {
      const int p = 1 - s;
      r->wait(p);
      const auto* out = static_cast<const uint32_t*>(r->out(p));
      bad += !std::equal(want[p].begin(), want[p].end(), out);
    }
  }
  r->wait(1);
  bad += !std::equal(want[1].begin(), want[1].end(), static_cast<const uint32_t*>(r->out(1)));
  EXPECT_EQ(bad, 0u);
}

TEST(GpuOffload, Ipv4LookupEveryModeMatchesCpu) {
  TANDEM_REQUIRE_GPU();
  const auto& t = test::RealIpv4Table::get();
  auto g = ipv4::Ipv4GpuTable::create(*t.dir);
  const auto uniform = test::uniform_addresses(200000, 9);
  const auto inside = test::addresses_in_prefixes(t.fib.routes, 200000, 10);
  for (GpuMode m : kModes) {
    auto r = g->make_runner({m, 200000, 1, 0});
    for (const auto* ips : {&uniform, &inside}) {
      std::copy(ips->begin(), ips->end(), static_cast<uint32_t*>(r->in(0)));
      r->run(ips->size());
      const auto* out = static_cast<const uint32_t*>(r->out(0));
      size_t bad = 0;
      for (size_t i = 0; i < ips->size(); ++i) bad += out[i] != t.trie.lookup((*ips)[i]);
      EXPECT_EQ(bad, 0u) << gpu_mode_name(m);
    }
  }
}

TEST(GpuOffload, NoGpuIsAClearError) {
  std::string why;
  if (available(&why)) GTEST_SKIP() << "a GPU is present; this test covers machines without one";
  EXPECT_THROW(make_echo_runner({}), GpuError);
}

}  // namespace
}  // namespace tandem::gpu
