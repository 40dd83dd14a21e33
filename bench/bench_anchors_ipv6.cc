// `tandem bench anchors`, IPv6 sections: DPDK rte_lpm6 (scalar and bulk lookups) and rte_fib6
// (TRIE, scalar and the best vector lookup the CPU allows) against Tandem's rte_lpm6-style table
// (apps/ipv6: scalar, batched, G-Opt), on the real table's IPv6 routes with addresses inside them,
// and on the G-Opt paper's worst case (random /48-/64 prefixes) when --ipv6-random > 0.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/ipv6/fib6_loader.h"
#include "apps/ipv6/lpm6.h"
#include "bench/bench_anchors.h"
#include "bench/variants/ipv6_variants.h"
#include "cli/commands.h"

#ifdef TANDEM_HAVE_DPDK
#include <rte_fib6.h>
#include <rte_lpm6.h>

#include "bench/dpdk_env.h"
#endif

namespace tandem::cli::anchors {

namespace {

using bench::seconds_since;
using bench::time_reps;

Section bench_table(const Options& o, const std::string& title, const std::vector<ipv6::Route6>& routes,
                    const std::vector<ipv6::Addr6>& addrs, nlohmann::json config) {
  Section s{title, "dpdk_lpm6_bulk_b32"};
  s.config = std::move(config);
  const auto t0 = std::chrono::steady_clock::now();
  ipv6::Lpm6 t;
  for (const auto& r : routes) {
    const auto st = t.add(r.prefix.data(), r.len, r.next_hop);
    if (st != ipv6::Lpm6::Status::kOk) throw UsageError(title + ": cannot add a route: " + ipv6::Lpm6::status_name(st));
  }
  std::printf("ipv6: %s: %zu routes, Tandem table built in %.2f s (%u groups, %zu MiB)\n", title.c_str(), routes.size(),
              seconds_since(t0), t.groups_in_use(), t.memory_bytes_in_use() >> 20);
  const size_t n = addrs.size();
  const uint8_t(*a)[16] = ipv6::addr_rows(addrs.data());
  s.config["routes"] = routes.size();
  s.config["addresses"] = n;
  s.config["tandem_groups"] = t.groups_in_use();
  s.want.resize(n);
  ipv6::lpm6_lookup_scalar(t, a, s.want.data(), n);
  std::vector<uint32_t> got(n, 0xDEADBEEFu);

#ifdef TANDEM_HAVE_DPDK
  const int socket = bench::dpdk_start(o.dpdk_mem_mib).socket;
  // The addresses as DPDK's lookups take them (non-const rows).
  std::vector<ipv6::Addr6> mut = addrs;
  auto* m = reinterpret_cast<uint8_t(*)[16]>(mut.data());
  const uint32_t groups = t.groups_in_use() + t.groups_in_use() / 4 + 1024;
  {
    const auto t1 = std::chrono::steady_clock::now();
    rte_lpm6_config cfg{};
    cfg.max_rules = static_cast<uint32_t>(routes.size() + 16);
    cfg.number_tbl8s = groups;
    rte_lpm6* lpm = rte_lpm6_create("anchors_lpm6", socket, &cfg);
    if (!lpm) throw std::runtime_error("rte_lpm6_create failed (is --dpdk-mem-mib large enough?)");
    for (const auto& r : routes) {
      if (rte_lpm6_add(lpm, r.prefix.data(), r.len, r.next_hop) != 0) throw std::runtime_error("rte_lpm6_add failed");
    }
    std::printf("ipv6: rte_lpm6 built in %.2f s\n", seconds_since(t1));
    std::vector<int32_t> nh(n);
    s.row("dpdk_lpm6_lookup", "rte_lpm6_lookup, one address at a time", double(n), time_reps(o.reps, [&] {
            for (size_t i = 0; i < n; ++i) {
              uint32_t h = 0;
              got[i] = rte_lpm6_lookup(lpm, addrs[i].data(), &h) == 0 ? h : ipv6::kNoRoute;
            }
          }), got);
    s.row("dpdk_lpm6_bulk_b32", "rte_lpm6_lookup_bulk_func on bursts of 32", double(n), time_reps(o.reps, [&] {
            for (size_t i = 0; i < n; i += 32) {
              rte_lpm6_lookup_bulk_func(lpm, m + i, nh.data() + i, static_cast<unsigned>(std::min<size_t>(32, n - i)));
            }
            for (size_t i = 0; i < n; ++i) got[i] = nh[i] < 0 ? ipv6::kNoRoute : static_cast<uint32_t>(nh[i]);
          }), got);
    rte_lpm6_free(lpm);
  }
  {
    const auto t1 = std::chrono::steady_clock::now();
    constexpr uint64_t kMiss = 0x7FFFFFFF;
    rte_fib6_conf cfg{};
    cfg.type = RTE_FIB6_TRIE;
    cfg.default_nh = kMiss;
    cfg.max_routes = static_cast<int>(routes.size() + 16);
    cfg.trie.nh_sz = RTE_FIB6_TRIE_4B;
    // The trie splits groups differently from rte_lpm6 and may need more: grow until the table fits.
    rte_fib6* f = nullptr;
    for (uint32_t tbl8 = groups * 2; !f; tbl8 *= 2) {
      cfg.trie.num_tbl8 = tbl8;
      f = rte_fib6_create("anchors_fib6", socket, &cfg);
      if (!f) throw std::runtime_error("rte_fib6_create failed (is --dpdk-mem-mib large enough?)");
      for (const auto& r : routes) {
        if (const int rc = rte_fib6_add(f, r.prefix.data(), r.len, r.next_hop); rc != 0) {
          rte_fib6_free(f);
          f = nullptr;
          if (rc != -ENOSPC || tbl8 >= (1u << 24)) {
            throw std::runtime_error("rte_fib6_add failed: " + std::to_string(rc) + " at " +
                                     ipv6::format_ipv6(r.prefix.data()) + "/" + std::to_string(r.len));
          }
          break;
        }
      }
    }
    s.config["rte_fib6_tbl8"] = cfg.trie.num_tbl8;
    std::printf("ipv6: rte_fib6 (TRIE) built in %.2f s\n", seconds_since(t1));
    std::vector<uint64_t> nh(n);
    auto run_fib = [&] {
      for (size_t i = 0; i < n; i += 32) {
        rte_fib6_lookup_bulk(f, m + i, nh.data() + i, static_cast<int>(std::min<size_t>(32, n - i)));
      }
      for (size_t i = 0; i < n; ++i) got[i] = nh[i] == kMiss ? ipv6::kNoRoute : static_cast<uint32_t>(nh[i]);
    };
    rte_fib6_select_lookup(f, RTE_FIB6_LOOKUP_TRIE_SCALAR);
    s.row("dpdk_fib6_scalar_b32", "rte_fib6 TRIE, scalar bulk lookup, bursts of 32", double(n),
          time_reps(o.reps, run_fib), got);
    if (rte_fib6_select_lookup(f, RTE_FIB6_LOOKUP_TRIE_VECTOR_AVX512) == 0) {
      s.row("dpdk_fib6_avx512_b32", "rte_fib6 TRIE, AVX-512 vector lookup, bursts of 32", double(n),
            time_reps(o.reps, run_fib), got);
      s.row("dpdk_fib6_avx512_all", "rte_fib6 TRIE, AVX-512 vector lookup, whole array in one call", double(n),
            time_reps(o.reps, [&] {
              rte_fib6_lookup_bulk(f, m, nh.data(), static_cast<int>(n));
              for (size_t i = 0; i < n; ++i) got[i] = nh[i] == kMiss ? ipv6::kNoRoute : static_cast<uint32_t>(nh[i]);
            }), got);
    } else {
      s.skip("dpdk_fib6_avx512_b32", "this CPU or DPDK build has no AVX-512 lookup");
    }
    rte_fib6_free(f);
  }
#else
  s.baseline = "tandem_lpm6_scalar";
  s.skip("dpdk_*", "not built with DPDK (run scripts/fetch-dpdk.sh and rebuild)");
#endif

  s.row("tandem_lpm6_scalar", "Tandem lpm6, one address at a time", double(n),
        time_reps(o.reps, [&] { ipv6::lpm6_lookup_scalar(t, a, got.data(), n); }), got);
  s.row("tandem_lpm6_window_b32", "Tandem lpm6, window of 128 lookups in flight, bursts of 32", double(n), time_reps(o.reps, [&] {
          for (size_t i = 0; i < n; i += 32) ipv6::lpm6_lookup_window(t, a + i, got.data() + i, std::min<size_t>(32, n - i), ipv6::kBatchWindow);
        }), got);
  s.row("tandem_lpm6_window_all", "Tandem lpm6, window of 128 lookups in flight, whole array", double(n),
        time_reps(o.reps, [&] { ipv6::lpm6_lookup_window(t, a, got.data(), n, ipv6::kBatchWindow); }), got);
  if (ipv6::lpm6_avx512_supported()) {
    s.row("tandem_lpm6_avx512_b32", "Tandem lpm6, AVX-512 gathers, 2 x 16 lanes, bursts of 32", double(n), time_reps(o.reps, [&] {
            for (size_t i = 0; i < n; i += 32) ipv6::lpm6_lookup_avx512(t, a + i, got.data() + i, std::min<size_t>(32, n - i));
          }), got);
    s.row("tandem_lpm6_avx512_all", "Tandem lpm6, AVX-512 gathers, 8 x 16 lanes, whole array", double(n),
          time_reps(o.reps, [&] { ipv6::lpm6_lookup_avx512(t, a, got.data(), n); }), got);
  } else {
    s.skip("tandem_lpm6_avx512_*", "this CPU has no AVX-512 F+BW");
  }
  s.row("tandem_lpm6_gopt_all", "Tandem lpm6 G-Opt path (tools/gopt), whole array", double(n),
        time_reps(o.reps, [&] { ipv6::lpm6_lookup_gopt(t, a, got.data(), n); }), got);
  return s;
}

}  // namespace

std::vector<Section> bench_ipv6(const Options& o) {
  std::vector<Section> out;
  const ipv6::Fib6 fib = ipv6::load_fib6(o.fib);
  if (!fib.routes.empty()) {
    out.push_back(bench_table(o, "IPv6 LPM, real table, addresses inside its prefixes", fib.routes,
                              ipv6::sample_addresses(fib.routes, o.n, o.seed + 10),
                              {{"fib", o.fib}, {"distribution", "inside prefixes"}}));
  } else {
    std::printf("ipv6: %s has no IPv6 routes: the real-table section is skipped\n", o.fib.c_str());
  }
  if (o.ipv6_random > 0) {
    const auto routes = ipv6::random_table(o.ipv6_random, 48, 64, o.seed + 11);
    out.push_back(bench_table(o, "IPv6 LPM, " + std::to_string(routes.size()) + " random /48-/64 prefixes (G-Opt paper)",
                              routes, ipv6::sample_addresses(routes, o.n, o.seed + 12),
                              {{"random_prefixes", routes.size()}, {"min_len", 48}, {"max_len", 64},
                               {"distribution", "inside prefixes"}}));
  }
  return out;
}

}  // namespace tandem::cli::anchors
