// `tandem bench lookup --app ipv4|ipv6|l2|ndn|echo`: lookups per second of an app's lookup paths
// on the keys of its own generated traffic, without the packet path: the scalar lookup (one key
// at a time, the baseline), the batched latency-hiding lookup (what the batched pipeline and the
// GPU engine's CPU fallback run), and the GPU kernel through an offload runner (items copied
// through its pinned slots, several batches in flight). Every path's results must equal the
// scalar path's. `tandem bench ipv4` has more IPv4 variants (group prefetching, G-Opt, AVX-512,
// Poptrie); `tandem bench cores` measures the whole pipeline.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_report.h"
#include "cli/app_setup.h"
#include "cli/commands.h"
#include "cli/table_setup.h"
#include "core/machine_info.h"
#include "gpu/gpu_runtime.h"
#include "gpu/offload.h"

namespace tandem::cli {

namespace {

struct BenchLookupOptions {
  AppOptions table;
  std::string gen = "count=2000000,dst=fib,flows=0,size=64,seed=5";
  int reps = 5;
  int core = -1;
  size_t gpu_batch = size_t{1} << 16;
  std::string device = "auto";
  std::string json;
};

int run_bench(const BenchLookupOptions& o) {
  if (o.core >= 0 && !pin_this_thread(o.core)) throw UsageError("--core " + std::to_string(o.core) + ": cannot pin to that CPU");
  const std::string no_gpu = no_gpu_path(o.table);  // flags that leave the app without a GPU path
  if (o.device == "gpu" && !no_gpu.empty()) throw UsageError("--device gpu: " + no_gpu);
  LoadedApp a = load_app(o.table);
  ForwardApp& app = *a.app;
  PacketStore store;
  try {
    store = a.generate(parse_gen_flag("--gen", o.gen));
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--gen: ") + e.what());
  }
  // The keys: every frame's item, as classify() extracts it.
  const size_t ib = app.item_bytes();
  std::vector<uint8_t> items(store.size() * ib);
  size_t n = 0;
  for (size_t i = 0; i < store.size(); ++i) {
    if (app.item_of_frame(store.frame(i), store.caplen[i], items.data() + n * ib)) ++n;
  }
  if (n == 0) throw UsageError("--gen: the app drops every generated packet before its lookup");
  items.resize(n * ib);
  std::printf("bench lookup: app %s; %s; %zu keys (%zu-byte items) from %s; %d repetitions\n", app.name(),
              a.table_desc.c_str(), n, ib, o.gen.c_str(), o.reps);

  const size_t rb = app.result_bytes();  // results of the app's size, compared as bytes
  std::vector<uint8_t> expect(n * rb), got(n * rb);
  std::vector<bench::Row> rows;
  nlohmann::json checks = nlohmann::json::object();
  auto add_row = [&](const std::string& name, const std::string& note, std::vector<double> secs) {
    size_t diff = 0;
    for (size_t i = 0; i < n; ++i) diff += std::memcmp(got.data() + i * rb, expect.data() + i * rb, rb) != 0;
    checks[name] = diff;
    if (diff) std::fprintf(stderr, "bench lookup: %s: %zu results differ from the scalar path\n", name.c_str(), diff);
    rows.push_back({name, note, static_cast<double>(n), std::move(secs)});
  };
  std::vector<double> scalar = bench::time_reps(o.reps, [&] { app.lookup_items_scalar(items.data(), expect.data(), n); });
  got = expect;
  add_row("cpu_scalar", "one key at a time, 1 thread", std::move(scalar));
  add_row("cpu_batched", "the app's batched lookup over the whole array, 1 thread",
          bench::time_reps(o.reps, [&] { app.lookup_items(items.data(), got.data(), n); }));
  // In bursts of 32 keys, as the pipeline's batched path sees them under bench cores.
  add_row("cpu_batched_b32", "the batched lookup in calls of 32 keys, 1 thread", bench::time_reps(o.reps, [&] {
            for (size_t i = 0; i < n; i += 32) app.lookup_items(items.data() + i * ib, got.data() + i * rb, std::min<size_t>(32, n - i));
          }));
  std::string why;
  if (o.device != "cpu" && no_gpu.empty() && gpu::available(&why)) {
    gpu::OffloadOptions oo;
    oo.mode = gpu::GpuMode::kAsync;
    oo.capacity = o.gpu_batch;
    oo.slots = 4;
    auto runner = app.make_gpu_runner(oo);
    std::fill(got.begin(), got.end(), 0);
    add_row("gpu_async", "GPU kernel, items through pinned slots, batches of " + std::to_string(o.gpu_batch) + ", 4 in flight",
            bench::time_reps(o.reps, [&] { gpu::run_all(*runner, items.data(), got.data(), n); }));
  } else {
    if (o.device == "gpu") throw UsageError("--device gpu: no GPU: " + why);
    if (!no_gpu.empty()) why = no_gpu;
    rows.push_back({"gpu_async", "skipped: " + (o.device == "cpu" ? std::string("--device cpu") : why), static_cast<double>(n), {}});
  }
  bench::print_table(std::string(app.name()) + " lookups (" + a.table_desc + ")", "lookups", rows, "cpu_scalar");
  bool ok = true;
  for (auto& [k, v] : checks.items()) ok = ok && v.get<size_t>() == 0;
  std::printf("results: %s\n", ok ? "every path agrees with the scalar path" : "MISMATCH (see above)");
  if (!o.json.empty()) {
    nlohmann::json report = {{"bench", "lookup"},
                             {"app", app.name()},
                             {"table", a.table_desc},
                             {"machine", bench::machine_json()},
                             {"config", {{"gen", o.gen}, {"keys", n}, {"item_bytes", ib}, {"reps", o.reps}, {"core", o.core}}},
                             {"results", bench::rows_json(rows)},
                             {"mismatches_vs_scalar", checks}};
    bench::write_json(o.json, report);
    std::printf("wrote %s\n", o.json.c_str());
  }
  return ok ? 0 : 4;
}

}  // namespace

void register_bench_lookup(CLI::App& bench) {
  auto o = std::make_shared<BenchLookupOptions>();
  CLI::App* c = bench.add_subcommand("lookup", "an app's lookups/s on its traffic's keys: scalar, batched, GPU");
  add_app_options(c, o->table);
  c->add_option("--gen", o->gen, "the traffic whose keys are looked up (tandem gen spec)")->capture_default_str();
  c->add_option("--reps", o->reps, "repetitions (the median is reported)")->capture_default_str()->check(CLI::Range(1, 1000));
  c->add_option("--core", o->core, "pin the benchmark thread to this CPU")->capture_default_str();
  c->add_option("--gpu-batch", o->gpu_batch, "keys per GPU batch")->capture_default_str()->check(CLI::Range(size_t{1}, size_t{1} << 24));
  c->add_option("--device", o->device, "cpu, gpu or auto (the GPU row when a GPU is present)")
      ->capture_default_str()->check(CLI::IsMember({"cpu", "gpu", "auto"}));
  c->add_option("--json", o->json, "write the report here");
  c->callback([o] {
    const int rc = run_bench(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
