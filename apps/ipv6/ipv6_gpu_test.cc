// The IPv6 lookup on the GPU (apps/ipv6/ipv6_gpu.h) against the CPU's on the real table and on the
// G-Opt paper's random /48-/64 table, through every offload mode and across table updates.
// Skipped (visibly) without a GPU.
#include <gtest/gtest.h>

#include <vector>

#include "apps/ipv6/fib6_loader.h"
#include "apps/ipv6/ipv6_gpu.h"
#include "apps/ipv6/lpm6.h"
#include "tests/test_util.h"

namespace tandem::ipv6 {
namespace {

void build(Lpm6& t, const std::vector<Route6>& routes) {
  for (const auto& r : routes) ASSERT_EQ(t.add(r.prefix.data(), r.len, r.next_hop), Lpm6::Status::kOk);
}

size_t mismatches(const Lpm6& t, const std::vector<Addr6>& a, const uint32_t* got) {
  size_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) bad += t.lookup(a[i].data()) != got[i];
  return bad;
}

TEST(Ipv6Gpu, RealAndRandomTablesAgreeWithCpu) {
  TANDEM_REQUIRE_GPU();
  const Fib6 fib = load_fib6(test::source_path("data/fib/iprbench_tier1_fulltable_prefixes.txt.gz"));
  const std::vector<Route6> random = random_table(200'000, 48, 64, 5);
  for (const auto* routes : {&fib.routes, &random}) {
    Lpm6 t;
    build(t, *routes);
    auto g = Ipv6GpuTable::create(t);
    std::vector<Addr6> a = sample_addresses(*routes, 2'000'000, 9);
    const std::vector<Addr6> u = uniform_addresses(500'000, 10);
    a.insert(a.end(), u.begin(), u.end());
    for (size_t n : {size_t{1}, size_t{3}, size_t{1000}, a.size()}) {
      std::vector<Addr6> part(a.begin(), a.begin() + static_cast<long>(n));
      std::vector<uint32_t> got(n + 1, 0xDEADBEEF);
      g->lookup(addr_rows(part.data()), got.data(), n);
      EXPECT_EQ(got[n], 0xDEADBEEFu) << "wrote past the end, n=" << n;
      EXPECT_EQ(mismatches(t, part, got.data()), 0u) << "n=" << n << ", " << routes->size() << " routes";
    }
  }
}

TEST(Ipv6Gpu, EveryModeMatchesCpu) {
  TANDEM_REQUIRE_GPU();
  const std::vector<Route6> routes = random_table(50'000, 16, 128, 6);
  Lpm6 t;
  build(t, routes);
  auto g = Ipv6GpuTable::create(t);
  const std::vector<Addr6> a = sample_addresses(routes, 300'000, 7);
  for (auto mode : {gpu::GpuMode::kAsync, gpu::GpuMode::kGraph, gpu::GpuMode::kMapped, gpu::GpuMode::kPersistent}) {
    gpu::OffloadOptions o;
    o.mode = mode;
    o.capacity = 4096;
    auto r = g->make_runner(o);
    std::vector<uint32_t> got(a.size(), 0xDEADBEEF);
    gpu::run_all(*r, a.data(), got.data(), a.size());
    EXPECT_EQ(mismatches(t, a, got.data()), 0u) << gpu::gpu_mode_name(mode);
  }
}

TEST(Ipv6Gpu, UpdatesReachTheDevice) {
  TANDEM_REQUIRE_GPU();
  Lpm6 t;
  auto g = Ipv6GpuTable::create(t, 4);
  std::vector<Route6> routes = random_table(20'000, 32, 96, 8);
  const std::vector<Addr6> a = sample_addresses(routes, 100'000, 9);
  std::vector<uint32_t> got(a.size());
  for (size_t k = 0; k < routes.size(); k += 5000) {  // grow the table past the device array
    for (size_t i = k; i < k + 5000 && i < routes.size(); ++i) t.add(routes[i].prefix.data(), routes[i].len, routes[i].next_hop);
    g->sync(t);
    g->lookup(addr_rows(a.data()), got.data(), a.size());
    EXPECT_EQ(mismatches(t, a, got.data()), 0u) << "after " << k + 5000 << " routes";
  }
  for (size_t i = 0; i < routes.size(); i += 2) t.remove(routes[i].prefix.data(), routes[i].len);
  g->sync(t);
  g->lookup(addr_rows(a.data()), got.data(), a.size());
  EXPECT_EQ(mismatches(t, a, got.data()), 0u) << "after deleting half";
}

}  // namespace
}  // namespace tandem::ipv6
