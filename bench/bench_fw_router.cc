// `tandem bench fw-router --fib FILE (--rules FILE | --acl-random N)`: the IPv4 router with a
// 5-tuple firewall in front (apps/fwrouter), decisions per second on headers alone (no packet
// path), on one core and on the GPU.
//
// CPU, one core: linear first-match search + DIR-24-8 (the reference, and the GPU-router report's
// firewall), HyperSplit + DIR-24-8 one header at a time, and batched (HyperSplit's level-by-level
// group walk, then the prefetching DIR-24-8 lookup); and each function alone for reference.
//
// GPU (the report's Fig. 8 question): per batch size, the fused kernel (one thread per packet does
// both) against the split plan (a classify kernel writes rule indices to device memory, an LPM
// kernel reads them back), each kernel alone, all with the headers already on the GPU (CUDA
// events, median of --gpu-reps); and host to host (pinned headers copied in, results copied out).
//
// Every decision path is checked against linear search + DIR-24-8 on the first --linear-n headers
// and against HyperSplit + DIR-24-8 on all of them; the command exits with 4 on any difference.
// Headers: fwrouter::mixed_headers (half inside random rules, a quarter with destinations in the
// table, a quarter uniform).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "apps/fwrouter/fw_router_app.h"
#include "apps/ipv4/ipv4_cpu.h"
#include "bench/bench_report.h"
#include "bench/variants/fw_router_lab.h"
#include "bench/variants/fw_router_plans.h"
#include "bench/variants/ipv4_variants.h"
#include "cli/app_setup.h"
#include "cli/commands.h"
#include "cli/table_setup.h"
#include "core/machine_info.h"
#include "gpu/gpu_runtime.h"

namespace tandem::cli {

namespace {

struct BenchFwRouterOptions {
  std::string fib;
  std::string rules;
  uint64_t acl_random = 0;
  std::string acl_default;
  double acl_drop_share = -1;
  size_t n = 2'000'000;
  size_t linear_n = 20'000;
  int reps = 5;
  int core = -1;
  std::string device = "auto";
  std::string gpu_batches = "1024,8192,65536,1048576";
  int gpu_reps = 20;
  std::string json;
};

std::vector<size_t> parse_batches(const std::string& s) {
  std::vector<size_t> v;
  for (const std::string& x : bench::split_list(s)) {
    size_t pos = 0;
    unsigned long long b = 0;
    try {
      b = std::stoull(x, &pos);
    } catch (const std::exception&) {
      pos = 0;
    }
    if (pos != x.size() || b == 0 || b > (1ull << 26)) throw UsageError("--gpu-batches: '" + x + "' is not a size 1..2^26");
    v.push_back(static_cast<size_t>(b));
  }
  if (v.empty()) throw UsageError("--gpu-batches: no sizes");
  return v;
}

// How the decisions split: denied by the firewall, accepted without a route, routed.
nlohmann::json decision_mix(const std::vector<uint32_t>& d) {
  size_t denied = 0, no_route = 0;
  for (uint32_t r : d) {
    denied += r == fwrouter::kDenied;
    no_route += r == ipv4::kNoRoute;
  }
  return {{"denied", denied}, {"no_route", no_route}, {"routed", d.size() - denied - no_route}};
}

size_t count_diff(const uint32_t* a, const uint32_t* b, size_t n) {
  size_t d = 0;
  for (size_t i = 0; i < n; ++i) d += a[i] != b[i];
  return d;
}

double median_us(const std::vector<double>& ms) { return bench::median(ms) * 1e3; }

int run_bench(const BenchFwRouterOptions& o) {
  if (o.core >= 0 && !pin_this_thread(o.core)) throw UsageError("--core " + std::to_string(o.core) + ": cannot pin to that CPU");
  const std::vector<size_t> batches = parse_batches(o.gpu_batches);
  const acl::RuleSet set = load_fw_rules(o.rules, o.acl_random, o.acl_default, o.acl_drop_share);
  const LoadedTable lt = load_table(o.fib, /*quiet=*/true);
  const acl::HyperSplit tree = acl::HyperSplit::build(set.rules);
  const fwrouter::FwRouterTables t(set, tree, *lt.table, lt.fib);
  const auto& st = tree.stats();
  std::printf("fw-router: %s: %zu routes; firewall %s; HyperSplit %zu nodes, depth %u, %.2f MiB, built in %.2f s\n",
              o.fib.c_str(), lt.fib.routes.size(), describe_fw_rules(set).c_str(), st.nodes, st.depth,
              tree.memory_bytes() / 1048576.0, st.build_seconds);

  const size_t max_batch = *std::max_element(batches.begin(), batches.end());
  const size_t n = o.n;
  const std::vector<acl::Header> hdr = fwrouter::mixed_headers(set, lt.fib, std::max(n, max_batch), 7);
  const size_t ln = std::min(o.linear_n, n);

  // The references: linear search + DIR-24-8 (timed, on the first ln headers), and the rule
  // indices of linear search alone for the firewall-only rows.
  std::vector<uint32_t> lin(ln), lin_rule(ln);
  const uint32_t nr = static_cast<uint32_t>(set.rules.size());
  for (size_t i = 0; i < ln; ++i) lin_rule[i] = acl::classify_linear(set.rules.data(), nr, hdr[i]);
  std::vector<bench::Row> rows;
  nlohmann::json checks = nlohmann::json::object();
  rows.push_back({"cpu_linear_lpm", "linear first match + DIR-24-8, one header at a time, first " + std::to_string(ln) + " headers",
                  double(ln), bench::time_reps(o.reps, [&] { for (size_t i = 0; i < ln; ++i) lin[i] = fwrouter::decide_linear(t, hdr[i]); })});

  // HyperSplit + DIR-24-8, scalar: the reference for all n headers (and itself checked against
  // linear search on the first ln).
  std::vector<uint32_t> hs(n), got(std::max(n, max_batch));
  std::vector<uint32_t> dst(n);
  for (size_t i = 0; i < n; ++i) dst[i] = hdr[i].dst;
  // Results of `count` headers against linear search's on the first ln (when given) and against
  // `want_all` on all of them (when given).
  auto check = [&](const std::string& name, const uint32_t* out, size_t count, const uint32_t* linear,
                   const uint32_t* want_all) {
    size_t diff = linear ? count_diff(out, linear, std::min(ln, count)) : 0;
    if (want_all) diff += count_diff(out, want_all, count);
    checks[name] = diff;
    if (diff) std::fprintf(stderr, "bench fw-router: %s: %zu results differ from the reference\n", name.c_str(), diff);
  };
  rows.push_back({"cpu_hypersplit_lpm", "HyperSplit + DIR-24-8 (fw_router_decide), one header at a time", double(n),
                  bench::time_reps(o.reps, [&] { for (size_t i = 0; i < n; ++i) hs[i] = t.decide(hdr[i]); })});
  check("cpu_hypersplit_lpm", hs.data(), n, lin.data(), nullptr);
  rows.push_back({"cpu_hypersplit_lpm_batched", "groups walked level by level, then prefetching DIR-24-8, chunks of 64",
                  double(n), bench::time_reps(o.reps, [&] { t.decide_batch(hdr.data(), got.data(), n); })});
  check("cpu_hypersplit_lpm_batched", got.data(), n, lin.data(), hs.data());

  // Each function alone, for reference: the combined rate against the parts'.
  rows.push_back({"cpu_firewall_only", "HyperSplit alone, one header at a time", double(n),
                  bench::time_reps(o.reps, [&] { for (size_t i = 0; i < n; ++i) got[i] = tree.classify(hdr[i]); })});
  check("cpu_firewall_only", got.data(), n, lin_rule.data(), nullptr);
  rows.push_back({"cpu_firewall_only_batched", "HyperSplit alone, groups of 32 level by level", double(n),
                  bench::time_reps(o.reps, [&] { tree.classify_batch(hdr.data(), got.data(), n); })});
  check("cpu_firewall_only_batched", got.data(), n, lin_rule.data(), nullptr);
  std::vector<uint32_t> lpm_ref(n);
  rows.push_back({"cpu_lpm_only", "DIR-24-8 alone, every header's destination, one at a time", double(n),
                  bench::time_reps(o.reps, [&] { ipv4::lookup_scalar(*lt.table, dst.data(), lpm_ref.data(), n); })});
  rows.push_back({"cpu_lpm_only_batched", "DIR-24-8 alone, the batched lookup (AVX-512 or the prefetch pipeline)", double(n),
                  bench::time_reps(o.reps, [&] { ipv4::lookup_batched(*lt.table, dst.data(), got.data(), n); })});
  check("cpu_lpm_only_batched", got.data(), n, nullptr, lpm_ref.data());
  bench::print_table("fw-router decisions on one core (" + set.path + ", " + std::to_string(set.rules.size()) +
                         " rules; " + std::to_string(lt.fib.routes.size()) + " routes)",
                     "decisions", rows, "cpu_linear_lpm");
  const nlohmann::json mix = decision_mix(hs);
  std::printf("decisions: %zu denied, %zu accepted without a route, %zu routed\n", mix["denied"].get<size_t>(),
              mix["no_route"].get<size_t>(), mix["routed"].get<size_t>());

  // The GPU: fused vs split per batch size.
  nlohmann::json gpu_json = nlohmann::json::array();
  nlohmann::json gpu_skipped = nullptr;
  std::string why;
  if (o.device != "cpu" && gpu::available(&why)) {
    const auto g = fwrouter::FwRouterGpu::create(t);
    const auto plans = fwrouter::FwRouterGpuPlans::create(*g);
    // The CPU's decisions for every header a batch holds (batches may be larger than --n).
    std::vector<uint32_t> want(hs);
    if (max_batch > n) {
      want.resize(max_batch);
      t.decide_batch(hdr.data() + n, want.data() + n, max_batch - n);
    }
    std::vector<uint32_t> split_out(max_batch);
    std::printf("\nfw-router on the GPU (%s): fused (one thread per packet, both functions) vs split (a classify "
                "kernel, then an LPM kernel)\n", gpu::device_info().name.c_str());
    std::printf("%10s %10s %10s %10s %10s %8s %10s %10s %11s %11s %8s %10s %8s\n", "batch", "fused us", "split us",
                "class. us", "lpm us", "split/f", "fused Mdps", "split Mdps", "h2h fus us", "h2h spl us", "split/f",
                "root us", "root/f");
    for (size_t b : batches) {
      const fwrouter::GpuPlanTimes pt = plans->time_plans(hdr.data(), b, o.gpu_reps, got.data(), split_out.data());
      check("gpu_fused_b" + std::to_string(b), got.data(), b, lin.data(), want.data());
      check("gpu_split_b" + std::to_string(b), split_out.data(), b, lin.data(), want.data());
      const double f = median_us(pt.fused), s = median_us(pt.split);
      const double fh = median_us(pt.fused_h2h), sh = median_us(pt.split_h2h);
      const double fr = median_us(pt.fused_root);
      std::printf("%10zu %10.1f %10.1f %10.1f %10.1f %7.2fx %10.1f %10.1f %11.1f %11.1f %7.2fx %10.1f %7.2fx\n", b, f,
                  s, median_us(pt.classify_only), median_us(pt.lpm_only), s / f, b / f, b / s, fh, sh, sh / fh, fr,
                  fr / f);
      gpu_json.push_back({{"batch", b},
                          {"device_resident_ms", {{"fused", pt.fused}, {"split", pt.split}, {"fused_root", pt.fused_root},
                                                  {"classify_only", pt.classify_only}, {"lpm_only", pt.lpm_only}}},
                          {"host_to_host_ms", {{"fused", pt.fused_h2h}, {"split", pt.split_h2h}}},
                          {"median_us", {{"fused", f}, {"split", s}, {"classify_only", median_us(pt.classify_only)},
                                         {"lpm_only", median_us(pt.lpm_only)}, {"fused_h2h", fh}, {"split_h2h", sh}}},
                          {"split_over_fused", s / f},
                          {"fused_root_over_fused", fr / f},
                          {"split_over_fused_h2h", sh / fh},
                          {"fused_decisions_per_s", b / (f * 1e-6)},
                          {"split_decisions_per_s", b / (s * 1e-6)}});
    }
    std::printf("(median of %d repetitions, CUDA events; Mdps = million decisions per second; h2h = pinned headers "
                "copied in and results out; root = the fused kernel reading the tables through the device root, as "
                "the app's runners do)\n", o.gpu_reps);
  } else {
    if (o.device == "gpu") throw UsageError("--device gpu: no GPU: " + why);
    gpu_skipped = o.device == "cpu" ? std::string("--device cpu") : why;
    std::printf("\nGPU: skipped: %s\n", gpu_skipped.get<std::string>().c_str());
  }

  bool ok = true;
  for (auto& [k, v] : checks.items()) ok = ok && v.get<size_t>() == 0;
  std::printf("results: %s\n", ok ? "every path agrees with linear search + DIR-24-8" : "MISMATCH (see above)");
  if (!o.json.empty()) {
    nlohmann::json report = {
        {"bench", "fw-router"},
        {"machine", bench::machine_json()},
        {"config", {{"fib", o.fib}, {"routes", lt.fib.routes.size()}, {"rules", set.path}, {"rule_count", set.rules.size()},
                    {"firewall", describe_fw_rules(set)}, {"headers", n},
                    {"linear_headers", ln}, {"reps", o.reps}, {"gpu_reps", o.gpu_reps}, {"core", o.core}}},
        {"hypersplit", {{"nodes", st.nodes}, {"leaves", st.leaves}, {"depth", st.depth}, {"trees", st.trees},
                        {"bytes", tree.memory_bytes()}, {"build_seconds", st.build_seconds}}},
        {"decision_mix", mix},
        {"results", bench::rows_json(rows)},
        {"gpu", gpu_json},
        {"gpu_skipped", gpu_skipped},
        {"mismatches_vs_reference", checks}};
    bench::write_json(o.json, report);
    std::printf("wrote %s\n", o.json.c_str());
  }
  return ok ? 0 : 4;
}

}  // namespace

void register_bench_fw_router(CLI::App& bench) {
  auto o = std::make_shared<BenchFwRouterOptions>();
  CLI::App* c = bench.add_subcommand("fw-router", "firewall + IPv4 router: one core (linear, HyperSplit, batched) and "
                                                   "the GPU, fused vs one kernel per function");
  c->add_option("--fib", o->fib, "the routes: PREFIX/LEN [NEXTHOP] lines or an MRT dump, .gz ok")
      ->required()->check(CLI::ExistingFile);
  auto* r = c->add_option("--rules", o->rules, "firewall rules (ClassBench or Tandem's syntax), .gz ok")->check(CLI::ExistingFile);
  auto* rr = c->add_option("--acl-random", o->acl_random, "or this many random rules")
                 ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 22));
  r->excludes(rr);
  rr->excludes(r);
  c->add_option("--acl-default", o->acl_default, "the policy when no rule matches (default: the file's, else accept)")
      ->check(CLI::IsMember({"accept", "drop"}));
  c->add_option("--acl-drop-share", o->acl_drop_share, "give this share of the rules the drop action (default: 0.2 for "
                                                        "ClassBench sets, which have no actions; other sets as written)")
      ->check(FiniteRange(0.0, 1.0));
  c->add_option("--n", o->n, "headers per CPU repetition")->capture_default_str()->check(CLI::Range(size_t{1}, size_t{1} << 27));
  c->add_option("--linear-n", o->linear_n, "headers for linear search (it is slow)")->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1} << 27));
  c->add_option("--reps", o->reps, "CPU repetitions (the median is reported)")->capture_default_str()->check(CLI::Range(1, 1000));
  c->add_option("--gpu-batches", o->gpu_batches, "GPU batch sizes, comma-separated")->capture_default_str();
  c->add_option("--gpu-reps", o->gpu_reps, "GPU repetitions per batch size")->capture_default_str()->check(CLI::Range(1, 10000));
  c->add_option("--core", o->core, "pin the benchmark thread to this CPU")->capture_default_str();
  c->add_option("--device", o->device, "cpu, gpu or auto (the GPU table when a GPU is present)")
      ->capture_default_str()->check(CLI::IsMember({"cpu", "gpu", "auto"}));
  c->add_option("--json", o->json, "write the report here");
  c->callback([o] {
    if (o->rules.empty() && o->acl_random == 0) throw UsageError("bench fw-router: give --rules FILE or --acl-random N");
    const int rc = run_bench(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
