// `tandem bench gpu-offload`: the minimum time to involve the GPU (G-Opt Fig. 2/3), per offload
// mode, for batches of N = 1 ... 1M 4-byte items. Each round trip is timed on the host from the
// moment the batch is in host memory to the moment all results are back: submit + wait.
// With --fib, the same for the IPv4 lookup (addresses in, next hops out), checked against the CPU.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "apps/ipv4/ipv4_cpu.h"
#include "apps/ipv4/ipv4_gpu.h"
#include "bench/bench_report.h"
#include "cli/commands.h"
#include "cli/table_setup.h"
#include "core/flow_hash.h"
#include "gpu/offload.h"

namespace tandem::cli {

namespace {

struct GpuOffloadOptions {
  std::string modes = "async,graph,mapped,persistent";
  std::string sizes = "1,4,16,64,256,1024,4096,16384,65536,262144,1048576";
  int reps = 300;
  int persistent_blocks = 0;
  std::string fib;
  std::string json;
};

using bench::split_list;

struct Point {
  size_t n;
  std::vector<double> us;  // one round trip each
  size_t wrong = 0;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

// Times `reps` round trips of n items through `r` (after a warm-up), checking every result with
// `expect(i, in_i)`.
template <typename Expect>
Point measure(gpu::OffloadRunner& r, size_t n, int reps, uint64_t seed, Expect expect) {
  Point p{n, {}, 0};
  auto* in = static_cast<uint32_t*>(r.in(0));
  auto* out = static_cast<uint32_t*>(r.out(0));
  const int runs = n >= 262144 ? std::min(reps, 30) : reps;
  uint64_t s = seed;
  for (int k = -3; k < runs; ++k) {
    for (size_t i = 0; i < n; ++i) {  // fresh inputs every time: stale results cannot pass
      s += 0x9e3779b97f4a7c15ULL;
      in[i] = static_cast<uint32_t>(mix64(s));
    }
    const auto t0 = std::chrono::steady_clock::now();
    r.run(n);
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    for (size_t i = 0; i < n; ++i) p.wrong += out[i] != expect(in[i]);
    if (k >= 0) p.us.push_back(us);
  }
  return p;
}

void print_points(const std::string& title, const std::vector<std::string>& modes,
                  const std::vector<std::vector<Point>>& pts) {
  std::printf("\n%s: round trip in microseconds, median (min)\n%10s", title.c_str(), "N");
  for (const auto& m : modes) std::printf(" %20s", m.c_str());
  std::printf("\n");
  for (size_t j = 0; j < pts[0].size(); ++j) {
    std::printf("%10zu", pts[0][j].n);
    for (size_t m = 0; m < modes.size(); ++m) {
      const Point& p = pts[m][j];
      char cell[64];
      std::snprintf(cell, sizeof cell, "%.1f (%.1f)%s", bench::median(p.us), percentile(p.us, 0),
                    p.wrong ? " WRONG" : "");
      std::printf(" %20s", cell);
    }
    std::printf("\n");
  }
  std::printf("%10s", "items/s");
  for (size_t m = 0; m < modes.size(); ++m) {
    const Point& p = pts[m].back();
    std::printf(" %19.2fG", p.n / bench::median(p.us) / 1e3);
  }
  std::printf("  (at N = %zu)\n", pts[0].back().n);
}

nlohmann::json points_json(const std::vector<std::string>& modes, const std::vector<std::vector<Point>>& pts) {
  nlohmann::json j = nlohmann::json::object();
  for (size_t m = 0; m < modes.size(); ++m) {
    nlohmann::json a = nlohmann::json::array();
    for (const Point& p : pts[m]) {
      a.push_back({{"n", p.n}, {"median_us", bench::median(p.us)}, {"min_us", percentile(p.us, 0)},
                   {"p99_us", percentile(p.us, 0.99)}, {"reps", p.us.size()}, {"wrong_results", p.wrong}});
    }
    j[modes[m]] = a;
  }
  return j;
}

int run_bench(const GpuOffloadOptions& o) {
  std::string why;
  if (!gpu::available(&why)) throw UsageError("bench gpu-offload needs a GPU: " + why);
  const auto modes = split_list(o.modes);
  std::vector<size_t> sizes;
  for (const auto& s : split_list(o.sizes)) sizes.push_back(std::stoull(s));
  if (sizes.empty() || modes.empty()) throw UsageError("--modes and --sizes must not be empty");
  const size_t cap = *std::max_element(sizes.begin(), sizes.end());
  size_t wrong = 0;

  std::vector<std::vector<Point>> echo(modes.size());
  for (size_t m = 0; m < modes.size(); ++m) {
    gpu::OffloadOptions opts{gpu::parse_gpu_mode(modes[m]), cap, 1, o.persistent_blocks};
    auto r = gpu::make_echo_runner(opts);
    for (size_t n : sizes) {
      echo[m].push_back(measure(*r, n, o.reps, n, [](uint32_t x) { return x; }));
      wrong += echo[m].back().wrong;
    }
  }
  print_points("echo (4-byte items, no work: the cost of involving the GPU)", modes, echo);

  nlohmann::json report = {{"bench", "gpu-offload"}, {"machine", bench::machine_json()},
                           {"config", {{"modes", modes}, {"sizes", sizes}, {"reps", o.reps},
                                       {"persistent_blocks", o.persistent_blocks}, {"timer", "host steady_clock, submit+wait"}}},
                           {"echo", points_json(modes, echo)}};
  if (!o.fib.empty()) {
    const LoadedTable t = load_table(o.fib, true);
    auto gtable = ipv4::Ipv4GpuTable::create(*t.table);
    std::vector<std::vector<Point>> lpm(modes.size());
    for (size_t m = 0; m < modes.size(); ++m) {
      gpu::OffloadOptions opts{gpu::parse_gpu_mode(modes[m]), cap, 1, o.persistent_blocks};
      auto r = gtable->make_runner(opts);
      for (size_t n : sizes) {
        lpm[m].push_back(measure(*r, n, o.reps, n, [&](uint32_t ip) { return t.table->lookup(ip); }));
        wrong += lpm[m].back().wrong;
      }
    }
    print_points("IPv4 lookup (" + std::to_string(t.fib.routes.size()) + " routes, uniform addresses)", modes, lpm);
    report["ipv4"] = points_json(modes, lpm);
    report["config"]["fib"] = o.fib;
  }
  std::printf("results: %s\n", wrong ? "SOME RESULTS WRONG" : "every result checked: all correct");
  if (!o.json.empty()) {
    bench::write_json(o.json, report);
    std::printf("wrote %s\n", o.json.c_str());
  }
  return wrong ? 4 : 0;
}

}  // namespace

void register_bench_gpu_offload(CLI::App& bench) {
  auto o = std::make_shared<GpuOffloadOptions>();
  CLI::App* c = bench.add_subcommand("gpu-offload", "round-trip time of a batch through the GPU per offload mode (G-Opt Fig. 2/3)");
  c->add_option("--modes", o->modes, "comma-separated: async, graph, mapped, persistent")->capture_default_str();
  c->add_option("--sizes", o->sizes, "comma-separated batch sizes (items)")->capture_default_str();
  c->add_option("--reps", o->reps, "round trips per size (the median is reported)")->capture_default_str()->check(CLI::Range(1, 100000));
  c->add_option("--persistent-blocks", o->persistent_blocks, "blocks of the persistent kernel (0: one per SM)")->capture_default_str();
  c->add_option("--fib", o->fib, "also time the IPv4 lookup on this table")->check(CLI::ExistingFile);
  c->add_option("--json", o->json, "write the report here");
  c->callback([o] {
    for (const auto& m : split_list(o->modes)) {
      try {
        gpu::parse_gpu_mode(m);
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--modes: ") + e.what());
      }
    }
    const int rc = run_bench(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
