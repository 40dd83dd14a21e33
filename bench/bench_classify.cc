// `tandem bench classify --rules FILE`: 5-tuple classification rate on one core for linear search
// (the GPU-router report's and iptables' way) and HyperSplit (one at a time, and batched with
// vector steps), and on the GPU,
// on headers drawn from the rules (each a random point inside a random rule) mixed with uniform
// random headers; every path's results must equal linear search's. DPDK's rte_acl runs on the same
// rules and headers in the same run where DPDK was found.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "apps/acl/acl_gpu.h"
#include "apps/acl/acl_rules.h"
#include "apps/acl/hypersplit.h"
#include "bench/bench_report.h"
#include "cli/commands.h"
#include "core/flow_hash.h"
#include "core/machine_info.h"
#include "core/table_reader.h"
#ifdef TANDEM_HAVE_DPDK
#include "bench/dpdk_acl.h"
#include "bench/dpdk_env.h"
#endif

namespace tandem::cli {

namespace {

struct BenchClassifyOptions {
  std::string rules;
  size_t random_rules = 0;
  size_t n = 1'000'000;
  size_t linear_n = 20'000;
  int reps = 5;
  int core = -1;
  std::string device = "auto";
  size_t dpdk_mem_mib = 1024;
  std::string json;
};

int run_bench(const BenchClassifyOptions& o) {
  if (o.core >= 0 && !pin_this_thread(o.core)) throw UsageError("--core " + std::to_string(o.core) + ": cannot pin to that CPU");
  acl::RuleSet set;
  try {
    set = o.rules.empty() ? acl::random_rules(o.random_rules, 1) : acl::load_rules(o.rules);
  } catch (const TableError& e) {
    throw UsageError(e.what());
  }
  if (set.rules.empty()) throw UsageError("no rules to classify with");
  const acl::HyperSplit tree = acl::HyperSplit::build(set.rules);
  const auto& st = tree.stats();
  std::printf("rules: %s: %zu rules; HyperSplit: %zu nodes, %zu leaves, depth %u, %.2f MiB, built in %.2f s\n",
              set.path.c_str(), set.rules.size(), st.nodes, st.leaves, st.depth, tree.memory_bytes() / 1048576.0,
              st.build_seconds);
  std::vector<acl::Header> hdr(o.n);
  for (size_t i = 0; i < o.n; ++i) {
    const uint64_t x = mix64(i + 1);
    if (i % 4 == 0) {
      hdr[i].src = static_cast<uint32_t>(x);
      hdr[i].dst = static_cast<uint32_t>(x >> 32);
      hdr[i].sport = static_cast<uint16_t>(mix64(x));
      hdr[i].dport = static_cast<uint16_t>(mix64(x) >> 16);
      hdr[i].proto = (x & 1) ? 6 : 17;
    } else {
      hdr[i] = acl::header_in_rule(set.rules[x % set.rules.size()], mix64(x));
    }
  }
  // Linear search is slow: timed on the first linear_n headers, its rate compared per header.
  const size_t ln = std::min(o.linear_n, o.n);
  std::vector<uint32_t> lin(o.n), got(o.n);
  std::vector<bench::Row> rows;
  nlohmann::json checks = nlohmann::json::object();
  const uint32_t nr = static_cast<uint32_t>(set.rules.size());
  rows.push_back({"cpu_linear", "every rule in order, first " + std::to_string(ln) + " headers, 1 thread", double(ln),
                  bench::time_reps(o.reps, [&] {
                    for (size_t i = 0; i < ln; ++i) lin[i] = acl::classify_linear(set.rules.data(), nr, hdr[i]);
                  })});
  auto add_row = [&](const std::string& name, const std::string& note, std::vector<double> secs) {
    size_t diff = 0;
    for (size_t i = 0; i < ln; ++i) diff += got[i] != lin[i];
    checks[name] = diff;
    if (diff) std::fprintf(stderr, "bench classify: %s: %zu results differ from linear search\n", name.c_str(), diff);
    rows.push_back({name, note, double(o.n), std::move(secs)});
  };
  add_row("cpu_hypersplit", "one header at a time, 1 thread",
          bench::time_reps(o.reps, [&] { for (size_t i = 0; i < o.n; ++i) got[i] = tree.classify(hdr[i]); }));
  const bool vector = acl::HyperSplit::vector_lookup_supported();
  add_row("cpu_hypersplit_batched",
          vector ? "groups of 32 walked level by level with prefetching, 8 thresholds or rules per AVX2 compare, 1 thread"
                 : "one header at a time (no AVX2 here), 1 thread",
          bench::time_reps(o.reps, [&] { tree.classify_batch(hdr.data(), got.data(), o.n); }));
  nlohmann::json dpdk = nullptr;
#ifdef TANDEM_HAVE_DPDK
  try {
    const bench::DpdkEnv& env = bench::dpdk_start(o.dpdk_mem_mib);
    const auto t_build = std::chrono::steady_clock::now();
    bench::DpdkAcl rte(set.rules, env.socket);
    const std::string best = rte.algorithm();
    dpdk = {{"version", env.version}, {"build_seconds", bench::seconds_since(t_build)}, {"algorithm", best}};
    rte.set_headers(hdr.data(), o.n);
    for (uint32_t burst : {32u, 256u}) {
      add_row("dpdk_rte_acl_b" + std::to_string(burst),
              "DPDK rte_acl_classify (" + best + "), bursts of " + std::to_string(burst) + ", 1 thread",
              bench::time_reps(o.reps, [&] { rte.classify(got.data(), burst); }));
    }
    // rte_acl's AVX2 method beside its widest, where that is wider: the same vector width as
    // Tandem's batched lookup.
    if (best.rfind("avx512", 0) == 0 && rte.set_algorithm("avx2")) {
      add_row("dpdk_rte_acl_avx2_b32", "DPDK rte_acl_classify (avx2), bursts of 32, 1 thread",
              bench::time_reps(o.reps, [&] { rte.classify(got.data(), 32); }));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench classify: DPDK rte_acl skipped: %s\n", e.what());
    rows.push_back({"dpdk_rte_acl_b32", std::string("skipped: ") + e.what(), double(o.n), {}});
  }
#else
  rows.push_back({"dpdk_rte_acl_b32", "skipped: built without DPDK", double(o.n), {}});
#endif
  std::string why;
  if (o.device != "cpu" && gpu::available(&why)) {
    auto g = acl::AclGpuTable::create(tree);
    gpu::OffloadOptions oo;
    oo.capacity = size_t{1} << 18;
    oo.slots = 4;
    auto runner = g->make_runner(oo);
    add_row("gpu_hypersplit", "GPU, headers through pinned slots, batches of 256k, 4 in flight",
            bench::time_reps(o.reps, [&] { gpu::run_all(*runner, hdr.data(), got.data(), o.n); }));
  } else {
    if (o.device == "gpu") throw UsageError("--device gpu: no GPU: " + why);
    rows.push_back({"gpu_hypersplit", "skipped: " + (o.device == "cpu" ? std::string("--device cpu") : why), double(o.n), {}});
  }
  bench::print_table("5-tuple classification (" + set.path + ", " + std::to_string(set.rules.size()) + " rules)",
                     "headers", rows, "cpu_linear");
  bool ok = true;
  for (auto& [k, v] : checks.items()) ok = ok && v.get<size_t>() == 0;
  std::printf("results: %s\n", ok ? "every path agrees with linear search" : "MISMATCH (see above)");
  if (!o.json.empty()) {
    nlohmann::json report = {
        {"bench", "classify"},
        {"machine", bench::machine_json()},
        {"config", {{"rules", set.path}, {"rule_count", set.rules.size()}, {"headers", o.n}, {"linear_headers", ln},
                    {"reps", o.reps}, {"core", o.core}}},
        {"hypersplit", {{"nodes", st.nodes}, {"leaves", st.leaves}, {"depth", st.depth}, {"rule_copies", st.leaf_rule_refs},
                        {"trees", st.trees}, {"bytes", tree.memory_bytes()}, {"build_seconds", st.build_seconds},
                        {"copy_budget_reached", st.copy_budget_reached},
                        {"leaves_left_uncut", st.leaves_left_uncut},
                        {"vector_lookup", vector ? "avx2" : "none"}}},
        {"results", bench::rows_json(rows)},
        {"dpdk", dpdk},
        {"mismatches_vs_linear", checks}};
    bench::write_json(o.json, report);
    std::printf("wrote %s\n", o.json.c_str());
  }
  return ok ? 0 : 4;
}

}  // namespace

void register_bench_classify(CLI::App& bench) {
  auto o = std::make_shared<BenchClassifyOptions>();
  CLI::App* c = bench.add_subcommand("classify", "5-tuple classification: linear search vs HyperSplit (CPU, GPU)");
  auto* r = c->add_option("--rules", o->rules, "rules (ClassBench or Tandem's syntax)")->check(CLI::ExistingFile);
  auto* rr = c->add_option("--random-rules", o->random_rules, "or this many random rules (the report's protocol mix)")
                 ->check(CLI::Range(size_t{1}, size_t{1} << 22));
  r->excludes(rr);
  rr->excludes(r);
  c->add_option("--n", o->n, "headers per repetition")->capture_default_str()->check(CLI::Range(size_t{1}, size_t{1} << 28));
  c->add_option("--linear-n", o->linear_n, "headers for linear search (it is slow)")->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1} << 28));
  c->add_option("--reps", o->reps, "repetitions (the median is reported)")->capture_default_str()->check(CLI::Range(1, 1000));
  c->add_option("--core", o->core, "pin the benchmark thread to this CPU")->capture_default_str();
  c->add_option("--device", o->device, "cpu, gpu or auto")->capture_default_str()->check(CLI::IsMember({"cpu", "gpu", "auto"}));
  c->add_option("--dpdk-mem-mib", o->dpdk_mem_mib, "MiB for DPDK's heap (rte_acl's tables)")->capture_default_str()
      ->check(CLI::Range(size_t{64}, size_t{1} << 16));
  c->add_option("--json", o->json, "write the report here");
  c->callback([o] {
    if (o->rules.empty() && o->random_rules == 0) throw UsageError("bench classify: give --rules FILE or --random-rules N");
    const int rc = run_bench(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
