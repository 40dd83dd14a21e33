// `tandem bench ipv4`: lookups per second of every IPv4 lookup path on one table and one address
// array, in one run: scalar CPU (baseline), batched CPU, Poptrie, GPU kernel only, GPU with transfers.

#include <chrono>
#include <fstream>
#include <string>
#include <cstdio>
#include <memory>
#include <vector>

#include "apps/ipv4/dir24_8.h"
#include "apps/ipv4/fib_loader.h"
#include "apps/ipv4/ipv4_cpu.h"
#include "apps/ipv4/ipv4_gpu.h"
#include "apps/ipv4/poptrie.h"
#include "bench/bench_report.h"
#include "bench/variants/ipv4_gpu_variants.h"
#include "bench/variants/ipv4_variants.h"
#include "cli/commands.h"
#include "core/machine_info.h"
#include "core/flow_hash.h"

namespace tandem::cli {

namespace {

struct BenchIpv4Options {
  std::string fib;
  std::string addresses = "uniform";
  size_t n = 10'000'000;
  int reps = 7;
  int core = -1;
  uint64_t seed = 1;
  std::string json;
  std::string device = "auto";
};

using bench::seconds_since;
using bench::time_reps;

size_t count_diff(const std::vector<uint32_t>& a, const uint32_t* b) {
  size_t d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += a[i] != b[i];
  return d;
}

int run_bench(const BenchIpv4Options& o) {
  if (o.core >= 0) {
    if (!pin_this_thread(o.core)) throw UsageError("--core " + std::to_string(o.core) + ": cannot pin to that CPU");
  }
  const auto t0 = std::chrono::steady_clock::now();
  const ipv4::Fib fib = ipv4::load_fib(o.fib);
  ipv4::Dir24_8 table;
  for (const auto& r : fib.routes) {
    const auto s = table.add(r.prefix, r.len, r.next_hop);
    if (s != ipv4::Dir24_8::Status::kOk) {
      throw UsageError(o.fib + ": cannot add " + ipv4::format_ipv4(r.prefix) + "/" +
                       std::to_string(r.len) + ": " + ipv4::Dir24_8::status_name(s));
    }
  }
  if (fib.routes.empty()) throw UsageError(o.fib + ": no IPv4 routes to benchmark");
  std::printf("table: %s: %zu IPv4 routes, %u tbl8 groups, built in %.2f s\n", o.fib.c_str(),
              fib.routes.size(), table.tbl8_groups_in_use(), seconds_since(t0));
  // The compressed alternative (apps/ipv4/poptrie.h): rebuilt from the routes, never updated.
  const auto t_poptrie = std::chrono::steady_clock::now();
  const ipv4::Poptrie poptrie = ipv4::Poptrie::build(fib.routes);
  const double poptrie_build_s = seconds_since(t_poptrie);
  std::printf("poptrie: direct bits %d, %zu nodes, %zu leaves, %zu next hops, %.2f MiB, built in %.3f s\n",
              poptrie.direct_bits(), poptrie.node_count(), poptrie.leaf_count(), poptrie.next_hop_count(),
              poptrie.memory_bytes() / 1048576.0, poptrie_build_s);

  std::vector<uint32_t> ips(o.n);
  if (o.addresses == "uniform") {
    fill_uniform_addresses(ips.data(), o.n, o.seed);
  } else {  // "fib": a random host inside a random prefix
    uint64_t s = o.seed;
    for (auto& a : ips) {
      s += 0x9e3779b97f4a7c15ULL;
      const uint64_t x = mix64(s);
      const auto& r = fib.routes[x % fib.routes.size()];
      a = r.prefix | (static_cast<uint32_t>(x >> 32) & (r.len == 32 ? 0u : ~0u >> r.len));
    }
  }
  std::printf("addresses: %zu, %s, seed %llu; %d repetitions\n", o.n, o.addresses.c_str(),
              static_cast<unsigned long long>(o.seed), o.reps);

  std::vector<uint32_t> expect(o.n), got(o.n);
  std::vector<bench::Row> rows;
  nlohmann::json checks = nlohmann::json::object();
  auto add_row = [&](const std::string& name, const std::string& note, std::vector<double> secs,
                     const uint32_t* results) {
    const size_t diff = count_diff(expect, results);
    checks[name] = diff;
    if (diff) std::fprintf(stderr, "bench ipv4: %s: %zu results differ from the scalar path\n", name.c_str(), diff);
    rows.push_back({name, note, static_cast<double>(o.n), std::move(secs)});
  };

  add_row("cpu_scalar", "one address at a time, 1 thread",
          time_reps(o.reps, [&] { ipv4::lookup_scalar(table, ips.data(), expect.data(), o.n); }),
          expect.data());
  for (uint32_t g : {8u, 16u, 32u}) {
    add_row("cpu_group_g" + std::to_string(g), "group prefetching (G-Opt sec. 3.1), 1 thread",
            time_reps(o.reps, [&] { ipv4::lookup_batched_group(table, ips.data(), got.data(), o.n, g); }),
            got.data());
  }

  add_row("cpu_gopt", "G-Opt output of tools/gopt (batches of 16), 1 thread",
          time_reps(o.reps, [&] { ipv4::lookup_gopt(table, ips.data(), got.data(), o.n); }), got.data());
  add_row("cpu_batched", "Tandem's batched path (AVX-512 where the CPU has it, else the prefetch pipeline), 1 thread",
          time_reps(o.reps, [&] { ipv4::lookup_batched(table, ips.data(), got.data(), o.n); }), got.data());
  for (uint32_t d : {16u, 32u, 64u, 128u}) {
    add_row("cpu_prefetch_d" + std::to_string(d), "software-pipelined prefetch, 1 thread",
            time_reps(o.reps, [&] { ipv4::lookup_prefetch_stream(table, ips.data(), got.data(), o.n, d); }),
            got.data());
  }

  add_row("cpu_prefetch_l2_d64", "prefetch into L2 only, distance 64, 1 thread",
          time_reps(o.reps, [&] { ipv4::lookup_prefetch_stream_l2(table, ips.data(), got.data(), o.n, 64); }),
          got.data());
  if (ipv4::dir24_8_avx512_supported()) {
    add_row("cpu_avx512", "AVX-512 gathers, 16 addresses per step, prefetch 64 ahead, 1 thread",
            time_reps(o.reps, [&] { ipv4::lookup_avx512(table, ips.data(), got.data(), o.n); }), got.data());
  }
  add_row("cpu_poptrie_scalar", "Poptrie, lookup() one address at a time, 1 thread",
          time_reps(o.reps, [&] { for (size_t i = 0; i < o.n; ++i) got[i] = poptrie.lookup(ips[i]); }), got.data());
  add_row("cpu_poptrie_batched", "Poptrie, lookup_batch (two passes over groups of 64), 1 thread",
          time_reps(o.reps, [&] { poptrie.lookup_batch(ips.data(), got.data(), o.n); }), got.data());

  std::string why;
  const bool want_gpu = o.device != "cpu";
  if (want_gpu && gpu::available(&why)) {
    auto gtable = ipv4::Ipv4GpuTable::create(table);
    std::vector<double> ms =
        ipv4::Ipv4GpuVariants::create(*gtable)->time_kernel(ips.data(), got.data(), o.n, o.reps, bench::min_rep_seconds());
    for (double& m : ms) m /= 1e3;
    add_row("gpu_kernel", "table and addresses in device memory", ms, got.data());
    gpu::PinnedArray<uint32_t> pin_in(o.n), pin_out(o.n);
    std::copy(ips.begin(), ips.end(), pin_in.data());
    add_row("gpu_with_transfers", "pinned host memory in and out, 4 streams",
            time_reps(o.reps, [&] { gtable->lookup(pin_in.data(), pin_out.data(), o.n); }), pin_out.data());
    std::fill(got.begin(), got.end(), 0);
    add_row("gpu_with_transfers_pageable", "pageable host memory, staged",
            time_reps(o.reps, [&] { gtable->lookup(ips.data(), got.data(), o.n); }), got.data());
  } else {
    if (o.device == "gpu") throw UsageError("--device gpu: no GPU: " + why);
    if (!want_gpu) why = "--device cpu";
    for (const char* name : {"gpu_kernel", "gpu_with_transfers", "gpu_with_transfers_pageable"}) {
      rows.push_back({name, "skipped: " + why, static_cast<double>(o.n), {}});
    }
  }

  bench::print_table("IPv4 lookups (DIR-24-8 and Poptrie, " + std::to_string(fib.routes.size()) + " routes)",
                     "lookups", rows, "cpu_scalar");
  bool all_ok = true;
  for (auto& [k, v] : checks.items()) all_ok = all_ok && v.get<size_t>() == 0;
  std::printf("results: %s\n", all_ok ? "every path agrees with the scalar path" : "MISMATCH (see above)");

  if (!o.json.empty()) {
    nlohmann::json report = {
        {"bench", "ipv4"},
        {"machine", bench::machine_json()},
        {"config",
         {{"fib", o.fib}, {"routes", fib.routes.size()}, {"tbl8_groups", table.tbl8_groups_in_use()},
          {"addresses", o.addresses}, {"n", o.n}, {"reps", o.reps}, {"seed", o.seed},
          {"core", o.core}, {"threads", 1},
          {"poptrie", {{"direct_bits", poptrie.direct_bits()}, {"nodes", poptrie.node_count()},
                       {"leaves", poptrie.leaf_count()}, {"memory_bytes", poptrie.memory_bytes()},
                       {"build_seconds", poptrie_build_s}}},
          {"tbl24_hugepage_bytes", bench::hugepage_bytes_in(table.tbl24(), size_t{ipv4::Dir24_8::kTbl24Entries} * 4)}}},
        {"results", bench::rows_json(rows)},
        {"mismatches_vs_scalar", checks}};
    bench::write_json(o.json, report);
    std::printf("wrote %s\n", o.json.c_str());
  }
  return all_ok ? 0 : 4;
}

}  // namespace

void register_bench_ipv4(CLI::App& bench) {
  auto o = std::make_shared<BenchIpv4Options>();
  CLI::App* c = bench.add_subcommand("ipv4", "IPv4 LPM lookups/s: scalar CPU, batched CPU, GPU kernel, GPU with transfers");
  c->add_option("--fib", o->fib, "forwarding table (PREFIX/LEN [NEXTHOP] per line, .gz ok)")
      ->required()->check(CLI::ExistingFile);
  c->add_option("--n", o->n, "addresses per repetition")->capture_default_str()->check(CLI::Range(size_t{1}, size_t{1} << 31));
  c->add_option("--reps", o->reps, "repetitions (the median is reported)")->capture_default_str()->check(CLI::Range(1, 1000));
  c->add_option("--addresses", o->addresses, "uniform (over 2^32) or fib (inside the table's prefixes)")
      ->capture_default_str()->check(CLI::IsMember({"uniform", "fib"}));
  c->add_option("--seed", o->seed, "address generator seed")->capture_default_str();
  c->add_option("--core", o->core, "pin the benchmark thread to this CPU")->capture_default_str();
  c->add_option("--device", o->device, "cpu, gpu or auto (GPU rows when a GPU is present)")
      ->capture_default_str()->check(CLI::IsMember({"cpu", "gpu", "auto"}));
  c->add_option("--json", o->json, "write the report here");
  c->callback([o] {
    const int rc = run_bench(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
