// `tandem bench anchors`: Tandem's CPU lookups side by side with the libraries a user would use
// instead, on the same table and the same keys, in one run, one thread:
//   ipv4  the full real table, uniform random addresses: DPDK rte_lpm (lookup, lookup_bulk,
//         lookupx4) and rte_fib (DIR-24-8, scalar and the best vector lookup the CPU allows)
//         against Tandem's DIR-24-8 (scalar, batched) and Poptrie (scalar, batched), each batched
//         path both on bursts of 32 (what a receive burst gives) and on the whole array;
//   ipv6  see bench_anchors_ipv6.cc;
//   hash  a 2-8 cuckoo table of integer keys (the G-Opt benchmark's) against DPDK rte_hash with the
//         same keys and load, lookups of stored keys in random order;
//   l2    the L2 switch's MAC table (apps/l2) against rte_hash on the same MACs and slot count.
// Every row's results are checked against the reference row of its section; the command exits
// with 4 on any difference. Without DPDK (scripts/fetch-dpdk.sh) the DPDK rows say "skipped".

#include "bench/bench_anchors.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "apps/ipv4/dir24_8.h"
#include "apps/ipv4/fib_loader.h"
#include "apps/ipv4/ipv4_cpu.h"
#include "apps/ipv4/poptrie.h"
#include "apps/l2/mac_table.h"
#include "bench/cuckoo_bench.h"
#include "bench/variants/ipv4_variants.h"
#include "bench/variants/l2_variants.h"
#include "cli/commands.h"
#include "core/machine_info.h"

#ifdef TANDEM_HAVE_DPDK
#include <rte_fib.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_lpm.h>

#include "bench/dpdk_env.h"
#endif

namespace tandem::cli::anchors {

using bench::seconds_since;
using bench::time_reps;

void Section::row(const std::string& name, const std::string& note, double items, std::vector<double> secs,
                  std::vector<uint32_t>& got) {
  size_t differing = got.size() == want.size() ? 0 : want.size();
  for (size_t i = 0; !differing && i < want.size(); ++i) differing += want[i] != got[i];
  // Poisoned for the next row, so that a path that leaves results unwritten cannot pass.
  std::fill(got.begin(), got.end(), 0xDEADBEEFu);
  bench::Row r{name, note, items, std::move(secs)};
  if (differing) {
    std::fprintf(stderr, "bench anchors: %s: %s: %zu results differ from %s\n", title.c_str(), name.c_str(),
                 differing, baseline.c_str());
    r.note += " [RESULTS DIFFER]";
    ++mismatched_rows;
  }
  checks[name] = differing;
  rows.push_back(std::move(r));
}

void Section::skip(const std::string& name, const std::string& why) {
  skipped.push_back({name, why});
}

void Section::print() const {
  bench::print_table(title, "lookups", rows, baseline);
  for (const auto& [name, why] : skipped) std::printf("%-28s  skipped: %s\n", name.c_str(), why.c_str());
}

nlohmann::json Section::json() const {
  nlohmann::json sk = nlohmann::json::object();
  for (const auto& [name, why] : skipped) sk[name] = why;
  return {{"title", title}, {"baseline", baseline}, {"config", config}, {"results", bench::rows_json(rows)},
          {"differing_results", checks}, {"skipped", sk}};
}

namespace {

// ---- IPv4: rte_lpm and rte_fib vs DIR-24-8 and Poptrie ----

Section bench_ipv4(const Options& o) {
  Section s{"IPv4 LPM, full table, uniform random addresses", "dpdk_lpm_bulk_b32"};
  const auto t0 = std::chrono::steady_clock::now();
  const ipv4::Fib fib = ipv4::load_fib(o.fib);
  if (fib.routes.empty()) throw UsageError(o.fib + ": no IPv4 routes to benchmark");
  ipv4::Dir24_8 dir;
  for (const auto& r : fib.routes) {
    if (dir.add(r.prefix, r.len, r.next_hop) != ipv4::Dir24_8::Status::kOk) {
      throw UsageError(o.fib + ": cannot add " + ipv4::format_ipv4(r.prefix) + "/" + std::to_string(r.len));
    }
  }
  std::printf("ipv4: %s: %zu routes, Tandem DIR-24-8 built in %.2f s (%u tbl8 groups)\n", o.fib.c_str(),
              fib.routes.size(), seconds_since(t0), dir.tbl8_groups_in_use());
  const size_t n = o.n;
  std::vector<uint32_t> ips(n);
  fill_uniform_addresses(ips.data(), n, o.seed);
  s.config = {{"fib", o.fib}, {"routes", fib.routes.size()}, {"addresses", n}, {"distribution", "uniform"},
              {"tbl24_hugepage_bytes", bench::hugepage_bytes_in(dir.tbl24(), size_t{ipv4::Dir24_8::kTbl24Entries} * 4)}};

  // The reference: Tandem's scalar DIR-24-8 (itself checked against the trie by the tests).
  std::vector<uint32_t>& want = s.want;
  std::vector<uint32_t> got(n, 0xDEADBEEFu);
  want.resize(n);
  ipv4::lookup_scalar(dir, ips.data(), want.data(), n);

#ifdef TANDEM_HAVE_DPDK
  const int socket = bench::dpdk_start(o.dpdk_mem_mib).socket;
  {
    const auto t1 = std::chrono::steady_clock::now();
    rte_lpm_config cfg{};
    cfg.max_rules = static_cast<uint32_t>(fib.routes.size() + 16);
    cfg.number_tbl8s = std::max<uint32_t>(dir.tbl8_groups_in_use() * 2, 1u << 16);
    rte_lpm* lpm = rte_lpm_create("anchors_lpm", socket, &cfg);
    if (!lpm) throw std::runtime_error("rte_lpm_create failed (is --dpdk-mem-mib large enough?)");
    for (const auto& r : fib.routes) {
      if (rte_lpm_add(lpm, r.prefix, r.len, r.next_hop) != 0) throw std::runtime_error("rte_lpm_add failed");
    }
    std::printf("ipv4: rte_lpm built in %.2f s\n", seconds_since(t1));
    s.config["rte_lpm_tbl24_hugepage_bytes"] = bench::hugepage_bytes_in(lpm->tbl24, sizeof(lpm->tbl24[0]) << 24);
    auto hop_of = [](uint32_t e) { return (e & RTE_LPM_LOOKUP_SUCCESS) ? (e & 0x00FFFFFFu) : ipv4::kNoRoute; };
    s.row("dpdk_lpm_lookup", "rte_lpm_lookup, one address at a time", double(n), time_reps(o.reps, [&] {
            for (size_t i = 0; i < n; ++i) {
              uint32_t h = 0;
              got[i] = rte_lpm_lookup(lpm, ips[i], &h) == 0 ? h : ipv4::kNoRoute;
            }
          }), got);
    s.row("dpdk_lpm_bulk_b32", "rte_lpm_lookup_bulk on bursts of 32 (as l3fwd)", double(n),
          time_reps(o.reps, [&] {
            for (size_t i = 0; i < n; i += 32) {
              rte_lpm_lookup_bulk(lpm, ips.data() + i, got.data() + i, static_cast<unsigned>(std::min<size_t>(32, n - i)));
            }
            for (auto& h : got) h = hop_of(h);
          }), got);
    // Not on the whole array at once: rte_lpm_lookup_bulk keeps an n-entry array on the stack.
    s.row("dpdk_lpm_bulk_b256", "rte_lpm_lookup_bulk on bursts of 256", double(n), time_reps(o.reps, [&] {
            for (size_t i = 0; i < n; i += 256) {
              rte_lpm_lookup_bulk(lpm, ips.data() + i, got.data() + i, static_cast<unsigned>(std::min<size_t>(256, n - i)));
            }
            for (auto& h : got) h = hop_of(h);
          }), got);
    s.row("dpdk_lpm_lookupx4", "rte_lpm_lookupx4 (SSE, 4 addresses per call)", double(n), time_reps(o.reps, [&] {
            size_t i = 0;
            for (; i + 4 <= n; i += 4) {
              const xmm_t v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ips.data() + i));
              rte_lpm_lookupx4(lpm, v, got.data() + i, ipv4::kNoRoute);
            }
            for (; i < n; ++i) {
              uint32_t h = 0;
              got[i] = rte_lpm_lookup(lpm, ips[i], &h) == 0 ? h : ipv4::kNoRoute;
            }
          }), got);
    rte_lpm_free(lpm);
  }
  {
    const auto t1 = std::chrono::steady_clock::now();
    constexpr uint64_t kMiss = 0x7FFFFFFF;  // rte_fib's default next hop: no route
    rte_fib_conf cfg{};
    cfg.type = RTE_FIB_DIR24_8;
    cfg.default_nh = kMiss;
    cfg.max_routes = static_cast<int>(fib.routes.size() + 16);
    cfg.dir24_8.nh_sz = RTE_FIB_DIR24_8_4B;
    cfg.dir24_8.num_tbl8 = std::max<uint32_t>(dir.tbl8_groups_in_use() * 2, 1u << 16);
    rte_fib* f = rte_fib_create("anchors_fib", socket, &cfg);
    if (!f) throw std::runtime_error("rte_fib_create failed (is --dpdk-mem-mib large enough?)");
    for (const auto& r : fib.routes) {
      if (rte_fib_add(f, r.prefix, r.len, r.next_hop) != 0) throw std::runtime_error("rte_fib_add failed");
    }
    std::printf("ipv4: rte_fib (DIR24_8) built in %.2f s\n", seconds_since(t1));
    std::vector<uint64_t> nh(n);
    auto run_fib = [&] {
      for (size_t i = 0; i < n; i += 32) {
        rte_fib_lookup_bulk(f, ips.data() + i, nh.data() + i, static_cast<int>(std::min<size_t>(32, n - i)));
      }
      for (size_t i = 0; i < n; ++i) got[i] = nh[i] == kMiss ? ipv4::kNoRoute : static_cast<uint32_t>(nh[i]);
    };
    rte_fib_select_lookup(f, RTE_FIB_LOOKUP_DIR24_8_SCALAR_MACRO);
    s.row("dpdk_fib_scalar_b32", "rte_fib DIR24_8, scalar bulk lookup, bursts of 32", double(n),
          time_reps(o.reps, run_fib), got);
    if (rte_fib_select_lookup(f, RTE_FIB_LOOKUP_DIR24_8_VECTOR_AVX512) == 0) {
      s.row("dpdk_fib_avx512_b32", "rte_fib DIR24_8, AVX-512 vector lookup, bursts of 32", double(n),
            time_reps(o.reps, run_fib), got);
    } else {
      s.skip("dpdk_fib_avx512_b32", "this CPU or DPDK build has no AVX-512 lookup");
    }
    rte_fib_free(f);
  }
#else
  s.baseline = "tandem_dir24_8_scalar";
  s.skip("dpdk_*", "not built with DPDK (run scripts/fetch-dpdk.sh and rebuild)");
#endif

  s.row("tandem_dir24_8_scalar", "Tandem DIR-24-8, one address at a time", double(n),
        time_reps(o.reps, [&] { ipv4::lookup_scalar(dir, ips.data(), got.data(), n); }), got);
  s.row("tandem_dir24_8_pipeline_b32", "Tandem DIR-24-8 prefetch pipeline on bursts of 32", double(n),
        time_reps(o.reps, [&] {
          for (size_t i = 0; i < n; i += 32) {
            ipv4::lookup_prefetch_stream(dir, ips.data() + i, got.data() + i, std::min<size_t>(32, n - i), ipv4::kPrefetchDistance);
          }
        }), got);
  s.row("tandem_dir24_8_batched_all", "Tandem DIR-24-8 batched path (the app's: AVX-512 where the CPU has it, else the prefetch pipeline), whole array",
        double(n), time_reps(o.reps, [&] { ipv4::lookup_batched(dir, ips.data(), got.data(), n); }), got);
  if (ipv4::dir24_8_avx512_supported()) {
    s.row("tandem_dir24_8_avx512_b32", "Tandem DIR-24-8, AVX-512 gathers, bursts of 32", double(n), time_reps(o.reps, [&] {
            for (size_t i = 0; i < n; i += 32) ipv4::lookup_avx512(dir, ips.data() + i, got.data() + i, std::min<size_t>(32, n - i));
          }), got);
    s.row("tandem_dir24_8_avx512_all", "Tandem DIR-24-8, AVX-512 gathers, prefetch 64 ahead, whole array", double(n),
          time_reps(o.reps, [&] { ipv4::lookup_avx512(dir, ips.data(), got.data(), n); }), got);
  } else {
    s.skip("tandem_dir24_8_avx512_*", "this CPU has no AVX-512");
  }
  // Poptrie (apps/ipv4/poptrie.h): a few MiB that stay in the caches.
  const auto t2 = std::chrono::steady_clock::now();
  const ipv4::Poptrie pop = ipv4::Poptrie::build(fib.routes);
  std::printf("ipv4: Tandem Poptrie built in %.2f s (%.2f MiB)\n", seconds_since(t2), pop.memory_bytes() / 1048576.0);
  s.config["poptrie_bytes"] = pop.memory_bytes();
  s.row("tandem_poptrie_scalar", "Tandem Poptrie, one address at a time", double(n), time_reps(o.reps, [&] {
          for (size_t i = 0; i < n; ++i) got[i] = pop.lookup(ips[i]);
        }), got);
  s.row("tandem_poptrie_batched_b32", "Tandem Poptrie batched path on bursts of 32", double(n), time_reps(o.reps, [&] {
          for (size_t i = 0; i < n; i += 32) pop.lookup_batch(ips.data() + i, got.data() + i, std::min<size_t>(32, n - i));
        }), got);
  s.row("tandem_poptrie_batched_all", "Tandem Poptrie batched path, whole array", double(n),
        time_reps(o.reps, [&] { pop.lookup_batch(ips.data(), got.data(), n); }), got);
  return s;
}

// ---- hash: rte_hash vs the 2-8 cuckoo table ----

#ifdef TANDEM_HAVE_DPDK
// values[i] = the data stored with keys[i] (a 32-bit value in the pointer), or `miss`: DPDK's bulk
// lookup on bursts of `burst` (<= 64) 8-byte keys, as an application would call it.
void hash_bulk_lookup(const rte_hash* h, const uint64_t* keys, uint32_t* values, size_t n, unsigned burst, uint32_t miss) {
  const void* kp[64];
  void* data[64];
  for (size_t i = 0; i < n; i += burst) {
    const unsigned m = static_cast<unsigned>(std::min<size_t>(burst, n - i));
    for (unsigned j = 0; j < m; ++j) kp[j] = &keys[i + j];
    uint64_t hits = 0;
    rte_hash_lookup_bulk_data(h, kp, m, &hits, data);
    for (unsigned j = 0; j < m; ++j) {
      values[i + j] = (hits >> j & 1) ? static_cast<uint32_t>(reinterpret_cast<uintptr_t>(data[j])) : miss;
    }
  }
}
#endif

Section bench_hash(const Options& o) {
  Section s{"cuckoo hash, integer keys, lookups of stored keys", "dpdk_hash_bulk_b32"};
  uint64_t nb = 1;
  while (nb * CUCKOO_SLOTS / 2 < o.hash_keys) nb *= 2;  // about 50% load, as bench gopt
  const auto t0 = std::chrono::steady_clock::now();
  const bench::CuckooBench cb(nb, o.seed + 1);
  const size_t n = o.n;
  const std::vector<uint64_t> keys = cb.sample_keys(n, o.seed + 2);
  std::printf("hash: %zu keys in %llu buckets of 8 (%zu MiB), built in %.2f s; %zu lookups\n", cb.stored.size(),
              static_cast<unsigned long long>(nb), (nb * sizeof(Bucket)) >> 20, seconds_since(t0), n);
  s.config = {{"keys", cb.stored.size()}, {"buckets", nb}, {"table_mib", (nb * sizeof(Bucket)) >> 20}, {"lookups", n}};
  std::vector<uint32_t>& want = s.want;
  std::vector<uint32_t> got(n, 0xDEADBEEFu);
  want.resize(n);
  const int ni = static_cast<int>(n);
  tandem_gopt_cuckoo_naive(&cb.table, keys.data(), want.data(), ni);

#ifdef TANDEM_HAVE_DPDK
  const int socket = bench::dpdk_start(o.dpdk_mem_mib).socket;
  {
    const auto t1 = std::chrono::steady_clock::now();
    rte_hash_parameters p{};
    p.name = "anchors_hash";
    p.entries = static_cast<uint32_t>(nb * CUCKOO_SLOTS);  // same slots and load as the cuckoo table
    p.key_len = sizeof(uint64_t);
    p.hash_func = rte_hash_crc;
    p.socket_id = socket;
    rte_hash* h = rte_hash_create(&p);
    if (!h) throw std::runtime_error("rte_hash_create failed (is --dpdk-mem-mib large enough?)");
    for (size_t j = 0; j < cb.stored.size(); ++j) {
      // The value of a stored key is its insertion number in the cuckoo table; read it back there.
      uint32_t v = 0;
      tandem_gopt_cuckoo_naive(&cb.table, &cb.stored[j], &v, 1);
      if (rte_hash_add_key_data(h, &cb.stored[j], reinterpret_cast<void*>(uintptr_t{v})) != 0) {
        throw std::runtime_error("rte_hash_add_key_data failed at key " + std::to_string(j));
      }
    }
    std::printf("hash: rte_hash built in %.2f s\n", seconds_since(t1));
    s.row("dpdk_hash_lookup", "rte_hash_lookup_data, one key at a time", double(n), time_reps(o.reps, [&] {
            for (size_t i = 0; i < n; ++i) {
              void* d = nullptr;
              got[i] = rte_hash_lookup_data(h, &keys[i], &d) >= 0 ? static_cast<uint32_t>(reinterpret_cast<uintptr_t>(d))
                                                                  : CUCKOO_NOT_FOUND;
            }
          }), got);
    for (unsigned burst : {32u, 64u}) {
      s.row("dpdk_hash_bulk_b" + std::to_string(burst),
            "rte_hash_lookup_bulk_data, bursts of " + std::to_string(burst), double(n),
            time_reps(o.reps, [&] { hash_bulk_lookup(h, keys.data(), got.data(), n, burst, CUCKOO_NOT_FOUND); }), got);
    }
    rte_hash_free(h);
  }
#else
  s.baseline = "tandem_cuckoo_naive";
  s.skip("dpdk_*", "not built with DPDK (run scripts/fetch-dpdk.sh and rebuild)");
#endif

  s.row("tandem_cuckoo_naive", "2-8 cuckoo, one key at a time", double(n),
        time_reps(o.reps, [&] { tandem_gopt_cuckoo_naive(&cb.table, keys.data(), got.data(), ni); }), got);
  for (int b : {16, 32, 64}) {
    s.row("tandem_cuckoo_gopt_b" + std::to_string(b), "2-8 cuckoo, tools/gopt output, chunks of " + std::to_string(b),
          double(n), time_reps(o.reps, [&] {
            for (int j = 0; j < ni; j += b) tandem_gopt_cuckoo_gopt(&cb.table, keys.data() + j, got.data() + j, std::min(b, ni - j));
          }), got);
    s.row("tandem_cuckoo_amac_b" + std::to_string(b), "2-8 cuckoo, AMAC, ring of " + std::to_string(b), double(n),
          time_reps(o.reps, [&] { bench::cuckoo_amac(&cb.table, keys.data(), got.data(), ni, b); }), got);
  }
  return s;
}

// ---- l2: the switch's MAC table vs rte_hash on the same MACs ----

Section bench_l2(const Options& o) {
  Section s{"L2 MAC table (CuckooSwitch 2-8), lookups of learned MACs", "dpdk_hash_bulk_b32"};
  const size_t entries = o.hash_keys;
  const auto t0 = std::chrono::steady_clock::now();
  l2::MacTable table(entries);
  bench::Rng rng{o.seed + 20};
  std::vector<uint64_t> stored;
  stored.reserve(entries);
  while (stored.size() < entries) {
    const uint64_t mac = rng.next() & l2::kMacMask & ~l2::kMacGroupBit;
    const uint32_t port = static_cast<uint32_t>(stored.size() % 64);
    if (table.insert(mac, port) == l2::MacTable::Status::kInserted) stored.push_back(mac);
  }
  std::printf("l2: %zu MACs in %zu buckets (%zu MiB, load %.2f), built in %.2f s\n", stored.size(), table.bucket_count(),
              table.memory_bytes() >> 20, table.load_factor(), seconds_since(t0));
  const size_t n = o.n;
  std::vector<uint64_t> macs(n);
  for (auto& m : macs) m = stored[rng.below(stored.size())];
  s.config = {{"entries", stored.size()}, {"table_mib", table.memory_bytes() >> 20}, {"load", table.load_factor()},
              {"lookups", n}};
  s.want.resize(n);
  l2::mac_lookup_scalar(table, macs.data(), s.want.data(), n);
  std::vector<uint32_t> got(n, 0xDEADBEEFu);
#ifdef TANDEM_HAVE_DPDK
  const int socket = bench::dpdk_start(o.dpdk_mem_mib).socket;
  {
    rte_hash_parameters p{};
    p.name = "anchors_l2";
    p.entries = static_cast<uint32_t>(table.slot_count());  // the same slots as the MAC table
    p.key_len = sizeof(uint64_t);
    p.hash_func = rte_hash_crc;
    p.socket_id = socket;
    rte_hash* h = rte_hash_create(&p);
    if (!h) throw std::runtime_error("rte_hash_create failed (is --dpdk-mem-mib large enough?)");
    for (uint64_t m : stored) {
      if (rte_hash_add_key_data(h, &m, reinterpret_cast<void*>(uintptr_t{table.lookup(m)})) != 0) {
        throw std::runtime_error("rte_hash_add_key_data failed");
      }
    }
    s.row("dpdk_hash_bulk_b32", "rte_hash_lookup_bulk_data on 8-byte MACs, bursts of 32", double(n),
          time_reps(o.reps, [&] { hash_bulk_lookup(h, macs.data(), got.data(), n, 32, l2::kMiss); }), got);
    rte_hash_free(h);
  }
#else
  s.baseline = "tandem_l2_scalar";
  s.skip("dpdk_*", "not built with DPDK (run scripts/fetch-dpdk.sh and rebuild)");
#endif
  s.row("tandem_l2_scalar", "Tandem MAC table, one MAC at a time", double(n),
        time_reps(o.reps, [&] { l2::mac_lookup_scalar(table, macs.data(), got.data(), n); }), got);
  s.row("tandem_l2_batched_b32", "Tandem MAC table batched path on bursts of 32", double(n), time_reps(o.reps, [&] {
          for (size_t i = 0; i < n; i += 32) table.lookup_batch(macs.data() + i, got.data() + i, std::min<size_t>(32, n - i));
        }), got);
  s.row("tandem_l2_batched_all", "Tandem MAC table batched path, whole array", double(n),
        time_reps(o.reps, [&] { table.lookup_batch(macs.data(), got.data(), n); }), got);
  return s;
}

int run(const Options& o) {
  if (o.core >= 0 && !pin_this_thread(o.core)) {
    throw UsageError("--core " + std::to_string(o.core) + ": cannot pin to that CPU");
  }
  std::printf("anchors: Tandem against DPDK, 1 thread, %d repetitions\n", o.reps);
  std::fflush(stdout);
#ifdef TANDEM_HAVE_DPDK
  const auto& env = bench::dpdk_start(o.dpdk_mem_mib);
  std::printf("%s: EAL without hugepages or PCI; tables on a %zu MiB external heap, %lld MiB of it on transparent "
              "hugepages (as Tandem's tables)\n", env.version.c_str(), env.heap_mib, env.heap_hugepage_bytes >> 20);
  std::fflush(stdout);
#else
  std::printf("DPDK: not built in (scripts/fetch-dpdk.sh, then rebuild); Tandem rows only\n");
#endif
  std::vector<Section> sections;
  auto add = [&](Section x) {
    x.print();
    std::fflush(stdout);
    sections.push_back(std::move(x));
  };
  for (const auto& which : o.sections) {
    if (which == "ipv4") {
      add(bench_ipv4(o));
    } else if (which == "ipv6") {
      for (auto& x : bench_ipv6(o)) add(std::move(x));
    } else if (which == "hash") {
      add(bench_hash(o));
    } else if (which == "l2") {
      add(bench_l2(o));
    } else {
      throw UsageError("--only: unknown section '" + which + "' (ipv4, ipv6, hash, l2)");
    }
  }
  size_t bad = 0;
  for (const auto& s : sections) bad += s.mismatched_rows;
  std::printf("results: %s\n", bad ? "MISMATCH (see above)" : "every row agrees with its section's reference");
  if (!o.json.empty()) {
    nlohmann::json secs = nlohmann::json::array();
    for (const auto& s : sections) secs.push_back(s.json());
    nlohmann::json report = {{"bench", "anchors"},
                             {"machine", bench::machine_json()},
                             {"config", {{"n", o.n}, {"reps", o.reps}, {"core", o.core}, {"seed", o.seed}, {"threads", 1}}},
#ifdef TANDEM_HAVE_DPDK
                             {"dpdk", {{"version", bench::dpdk_start(o.dpdk_mem_mib).version},
                                       {"heap_mib", bench::dpdk_start(o.dpdk_mem_mib).heap_mib},
                                       {"heap_hugepage_bytes", bench::dpdk_start(o.dpdk_mem_mib).heap_hugepage_bytes}}},
#else
                             {"dpdk", nullptr},
#endif
                             {"sections", secs},
                             {"all_agree", bad == 0}};
    bench::write_json(o.json, report);
    std::printf("wrote %s\n", o.json.c_str());
  }
  return bad ? 4 : 0;
}

}  // namespace

}  // namespace tandem::cli::anchors

namespace tandem::cli {

void register_bench_anchors(CLI::App& bench) {
  auto o = std::make_shared<anchors::Options>();
  CLI::App* c = bench.add_subcommand("anchors", "Tandem's CPU lookups against DPDK (rte_lpm, rte_fib, rte_lpm6, "
                                                "rte_fib6, rte_hash) on the same tables and keys, one thread");
  c->add_option("--fib", o->fib, "IPv4/IPv6 table (text, .gz)")->required()->check(CLI::ExistingFile);
  c->add_option("--only", o->sections, "sections to run: ipv4, ipv6, hash, l2")->delimiter(',')->capture_default_str();
  c->add_option("--n", o->n, "lookups per repetition")->capture_default_str()->check(CLI::Range(size_t{64}, size_t{1} << 28));
  c->add_option("--hash-keys", o->hash_keys, "keys stored in the hash tables")
      ->capture_default_str()->check(CLI::Range(size_t{64}, size_t{1} << 28));
  c->add_option("--ipv6-random", o->ipv6_random, "also a table of this many random /48-/64 prefixes (the G-Opt "
                "paper's IPv6 worst case); 0: off")->capture_default_str();
  c->add_option("--reps", o->reps, "repetitions (the median is reported)")->capture_default_str()->check(CLI::Range(1, 1000));
  c->add_option("--core", o->core, "pin the benchmark thread to this CPU")->capture_default_str();
  c->add_option("--seed", o->seed, "address and key generator seed")->capture_default_str();
  c->add_option("--dpdk-mem-mib", o->dpdk_mem_mib, "DPDK EAL heap (-m) in MiB")
      ->capture_default_str()->check(CLI::Range(size_t{64}, size_t{1} << 20));
  c->add_option("--json", o->json, "write the report here");
  c->callback([o] {
    const int rc = anchors::run(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
