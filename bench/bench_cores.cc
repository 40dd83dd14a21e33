// `tandem bench cores`: full-pipeline throughput of an app (ipv4, ipv6, l2, ndn, echo) against the
// number of worker cores (G-Opt Fig. 10, PacketShader Fig. 11): for each lookup path (CPU scalar,
// CPU batched, GPU through the offload engine), N workers pinned to N cores, each with its own RSS
// receive queue, packet pool and counters (sched/workers.h), in-memory packets (64 bytes by
// default; NDN Interests are as long as their names need), unpaced. The GPU path uses one more
// core, its master. Reports the median Mpps over repetitions per point, checks that every packet
// is accounted for, the batched/scalar ratio per worker count, and how many CPU cores match the
// GPU path's best rate. The packet count grows until a run lasts 1.2x --min-seconds (up to eight
// tries), so that repetitions last at least that long; each one's seconds are reported. CPU paths: one more run per point with its stages timed (core/stage_times.h), reported as
// nanoseconds of a worker per packet, the framework's stages apart from the app's; its rate is
// shown too, so the timers' own cost is seen. Before the CPU paths, the cores alone
// (bench/core_probe.h) on the same CPUs for each worker count: each path's per-core rate at N
// workers, as a share of one worker's, is printed beside the cores' own, the limit that no
// framework change moves. A run ends with its slowest worker: the workers' own rates (each one's
// packets over its own time) are reported beside it, so that a straggler shows.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_report.h"
#include "bench/core_probe.h"
#include "cli/app_setup.h"
#include "cli/commands.h"
#include "cli/stage_report.h"
#include "cli/table_setup.h"
#include "core/machine_info.h"
#include "gpu/gpu_runtime.h"
#include "io/traffic_gen.h"
#include "sched/workers.h"

namespace tandem::cli {

namespace {

struct BenchCoresOptions {
  AppOptions table;
  std::string gen = "count=4000000,dst=uniform,flows=1000000,size=64,seed=7";
  std::string workers;  // default 1..(logical CPUs)
  std::string paths = "scalar,batched,gpu";
  std::string gpu_mode = "persistent";
  uint32_t burst = 32;
  uint32_t batch = 8192;
  int slots = 4;
  uint64_t packets = 20'000'000;
  int reps = 3;
  double min_seconds = 0.5;
  bool stages = true;
  bool core_probe = true;
  std::string json;
};

struct Point {
  int workers = 0;
  std::vector<double> mpps;  // per repetition
  std::vector<double> seconds;
  uint64_t packets = 0;      // per repetition
  bool balanced = true;
  StageTimes stages;         // the timed run (CPU paths with --stages)
  double staged_mpps = 0;
  // Per repetition: each worker's packets over its own time, summed (what the workers did
  // before the slowest one ended the run), and when the first worker was done, as a share of
  // the run.
  std::vector<double> own_mpps, first_done;
  double median() const { return bench::median(mpps); }
  double own_median() const { return own_mpps.empty() ? 0 : bench::median(own_mpps); }
};

// The probe of `threads` threads, or null.
const bench::CoreProbe* probe_of(const std::vector<bench::CoreProbe>& probes, int threads) {
  for (const auto& p : probes) {
    if (p.threads == threads) return &p;
  }
  return nullptr;
}

// The workers' own rates summed, and the first worker's end as a share of the run.
std::pair<double, double> own_rates(const WorkersResult& r) {
  double sum = 0, first = r.seconds;
  for (size_t w = 0; w < r.worker_packets.size(); ++w) {
    if (r.worker_seconds[w] > 0) sum += r.worker_packets[w] / r.worker_seconds[w] / 1e6;
    first = std::min(first, r.worker_seconds[w]);
  }
  return {sum, r.seconds > 0 ? first / r.seconds : 0};
}

void print_stages(const Point& p) {
  const std::string line = stages_line(p.stages);
  if (line.empty()) return;
  std::printf("         stages, ns of a worker per packet: %s (timed run: %.2f Mpps)\n", line.c_str(), p.staged_mpps);
}

int run_bench(const BenchCoresOptions& o) {
  LoadedApp a = load_app(o.table);
  ForwardApp& app = *a.app;
  const GenSpec spec = parse_gen_flag("--gen", o.gen);
  PacketStore store;
  try {
    store = a.generate(spec);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--gen: ") + e.what());
  }
  const int ncpu = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int> counts;
  if (o.workers.empty()) {
    for (int w = 1; w <= ncpu; ++w) counts.push_back(w);
  } else {
    for (int c : parse_cpu_list(o.workers)) counts.push_back(c);  // "1-16" or "1,2,4"
  }
  const bool gpu_ok = gpu::available();
  const std::string no_gpu = no_gpu_path(o.table);  // flags that leave the app without a GPU path
  std::printf("throughput vs cores: app %s, %s; %s (%.0f bytes per frame on average); %llu packets per point, "
              "bursts of %u, %d repetitions, %d CPUs\n",
              app.name(), a.table_desc.c_str(), format_gen_spec(spec).c_str(),
              store.size() ? double(store.total_caplen()) / store.size() : 0.0, static_cast<unsigned long long>(o.packets), o.burst,
              o.reps, ncpu);

  // The cores alone, for the CPU paths' worker counts (workers w on CPUs 0..w-1).
  std::vector<bench::CoreProbe> probes;
  nlohmann::json probe_json = nlohmann::json::array();
  const auto cpu_paths = bench::split_list(o.paths);
  if (o.core_probe && std::any_of(cpu_paths.begin(), cpu_paths.end(), [](const std::string& p) { return p != "gpu"; })) {
    std::vector<int> cpus;
    for (int c = 0; c < ncpu; ++c) cpus.push_back(c);
    for (int w : counts) {
      if (w >= 1 && w <= ncpu) probes.push_back(bench::probe_cores(cpus, w, std::max(0.5, o.min_seconds)));
    }
    // Shares against one thread's rates where one thread was measured, else the first count's.
    const bench::CoreProbe* base = probe_of(probes, 1);
    const char* of = base ? "one thread's" : "the first count's per-thread rate";
    if (!base && !probes.empty()) base = &probes.front();  // (no probe at all: the loop below is empty)
    for (const bench::CoreProbe& cp : probes) {
      const int w = cp.threads;
      std::printf("cores    %3d thread(s): chain %.3f G/s a thread (%.0f%% of %s; slowest %.3f), ports %.3f G/s "
                  "(%.0f%%; slowest %.3f), stream %.2f GB/s (%.0f%%; slowest %.2f; %.1f GB/s in all)\n", w, cp.chain_gops,
                  100 * cp.chain_gops / base->chain_gops, of, cp.chain_min_gops, cp.ports_gops,
                  100 * cp.ports_gops / base->ports_gops, cp.ports_min_gops, cp.stream_gbps,
                  100 * cp.stream_gbps / base->stream_gbps, cp.stream_min_gbps, cp.stream_gbps * w);
      probe_json.push_back({{"threads", w}, {"chain_gops", cp.chain_gops}, {"chain_min_gops", cp.chain_min_gops},
                            {"ports_gops", cp.ports_gops}, {"ports_min_gops", cp.ports_min_gops},
                            {"stream_gbps", cp.stream_gbps}, {"stream_min_gbps", cp.stream_min_gbps}});
    }
    std::fflush(stdout);
  }

  nlohmann::json paths_json = nlohmann::json::object();
  std::vector<std::pair<std::string, std::vector<Point>>> results;
  int failures = 0;
  for (const std::string& path : bench::split_list(o.paths)) {
    const bool gpu_path = path == "gpu";
    if (gpu_path && !gpu_ok) {
      std::printf("%-8s skipped: no GPU\n", path.c_str());
      paths_json[path] = "skipped: no GPU";
      continue;
    }
    if (gpu_path && !no_gpu.empty()) {
      std::printf("%-8s skipped: %s\n", path.c_str(), no_gpu.c_str());
      paths_json[path] = "skipped: " + no_gpu;
      continue;
    }
    std::vector<Point> points;
    for (int w : counts) {
      if (w < 1 || (gpu_path && w + 1 > ncpu) || w > ncpu) continue;  // the GPU master needs a core of its own
      Point p;
      p.workers = w;
      p.packets = o.packets;
      auto run_once = [&](uint64_t packets, bool timed) {
        WorkersConfig wc;
        wc.workers = w;
        wc.burst = o.burst;
        wc.packets = packets;
        wc.ports = app.ports();
        for (int c = 0; c < w; ++c) wc.cores.push_back(c);
        GpuEngine engine;
        if (gpu_path) {
          gpu::OffloadOptions oo;
          oo.mode = gpu::parse_gpu_mode(o.gpu_mode);
          oo.capacity = o.batch;
          oo.slots = o.slots;
          wc.max_bursts_in_flight = bursts_in_flight(o.batch, o.burst, w);
          gpu::EngineConfig ec;
          ec.master_core = w;
          ec.max_batch = o.batch;
          ec.max_wait_ns = 50'000;
          ec.flush_when_idle = true;
          engine = attach_gpu_engine(wc, app, app.make_gpu_runner(oo), ec, true);
        } else {
          wc.path = path == "scalar" ? LookupPath::kScalar : LookupPath::kBatched;
          wc.stage_times = timed ? StageTiming::kAll : StageTiming::kOff;
        }
        const WorkersResult res = run_workers(app, store, wc);
        p.balanced = p.balanced && res.counters.balanced() && res.counters.rx_packets == res.expected;
        return res;
      };
      // Runs shorter than --min-seconds (with a margin for the machine's spread) set a larger
      // count for the repetitions and are not among them.
      p.packets = bench::items_for_window(p.packets, o.min_seconds,
                                          [&](uint64_t n) { return run_once(n, false).seconds; });
      for (int r = 0; r < o.reps; ++r) {
        const WorkersResult res = run_once(p.packets, false);
        p.mpps.push_back(res.counters.rx_packets / res.seconds / 1e6);
        p.seconds.push_back(res.seconds);
        if (!gpu_path) {
          const auto [own, first] = own_rates(res);
          p.own_mpps.push_back(own);
          p.first_done.push_back(first);
        }
      }
      if (!gpu_path && o.stages) {
        const WorkersResult res = run_once(p.packets, true);
        p.stages = res.stages;
        p.staged_mpps = res.counters.rx_packets / res.seconds / 1e6;
      }
      if (!p.balanced) ++failures;
      std::printf("%-8s %3d worker(s)%s: %8.2f Mpps (median of %d, %llu packets, %.2f-%.2f s each)%s\n", path.c_str(), w,
                  gpu_path ? " + master" : "", p.median(), o.reps, static_cast<unsigned long long>(p.packets),
                  *std::min_element(p.seconds.begin(), p.seconds.end()), *std::max_element(p.seconds.begin(), p.seconds.end()),
                  p.balanced ? "" : "  ACCOUNTING MISMATCH");
      if (!p.own_mpps.empty() && w > 1) {
        std::printf("         the workers' own rates summed: %.2f Mpps; the first worker done at %.0f%% of the run\n",
                    p.own_median(), 100 * bench::median(p.first_done));
      }
      print_stages(p);
      std::fflush(stdout);
      points.push_back(std::move(p));
    }
    nlohmann::json pj = nlohmann::json::array();
    for (const auto& p : points) {
      pj.push_back({{"workers", p.workers}, {"cores", p.workers + (gpu_path ? 1 : 0)}, {"mpps_median", p.median()},
                    {"mpps", p.mpps}, {"seconds", p.seconds}, {"packets", p.packets}, {"balanced", p.balanced},
                    {"own_mpps", p.own_mpps}, {"first_done_share", p.first_done},
                    {"stages_ns_per_packet", stages_json(p.stages)},
                    {"stages_timed_mpps", p.staged_mpps > 0 ? nlohmann::json(p.staged_mpps) : nlohmann::json(nullptr)}});
    }
    paths_json[path] = pj;
    results.emplace_back(path, std::move(points));
  }

  // The table: one row per worker count, one column per path.
  std::printf("\n%-8s", "workers");
  for (const auto& [path, pts] : results) std::printf(" %12s", (path + " Mpps").c_str());
  std::printf("\n");
  for (int w : counts) {
    std::printf("%-8d", w);
    for (const auto& [path, pts] : results) {
      auto it = std::find_if(pts.begin(), pts.end(), [&](const Point& p) { return p.workers == w; });
      if (it == pts.end()) {
        std::printf(" %12s", "-");
      } else {
        std::printf(" %12.2f", it->median());
      }
    }
    std::printf("\n");
  }
  // Per-core rate at w workers as a share of one worker's, each path beside the cores alone.
  nlohmann::json scaling = nlohmann::json::object();
  if (const bench::CoreProbe* one_probe = probe_of(probes, 1)) {
    std::printf("per-core rate, %% of one worker's:");
    for (const auto& [path, pts] : results) std::printf(" %s", path.c_str());
    std::printf(" | cores alone: chain ports stream\n");
    for (const bench::CoreProbe& cp : probes) {
      if (cp.threads == 1) continue;
      const int w = cp.threads;
      std::printf("  %3d workers:", w);
      for (const auto& [path, pts] : results) {
        auto one = std::find_if(pts.begin(), pts.end(), [](const Point& p) { return p.workers == 1; });
        auto it = std::find_if(pts.begin(), pts.end(), [&](const Point& p) { return p.workers == w; });
        if (one == pts.end() || it == pts.end() || one->median() <= 0) {
          std::printf(" -");
          continue;
        }
        const double share = it->median() / (w * one->median());
        scaling[path][std::to_string(w)] = share;
        if (it->own_median() > 0 && one->own_median() > 0) {
          const double own = it->own_median() / (w * one->own_median());
          std::printf(" %.0f%% (own %.0f%%)", 100 * share, 100 * own);
          scaling[path + "_own"][std::to_string(w)] = own;
        } else {
          std::printf(" %.0f%%", 100 * share);
        }
      }
      const bench::CoreProbe& one = *one_probe;
      const double chain = cp.chain_gops / one.chain_gops, ports = cp.ports_gops / one.ports_gops,
                   stream = cp.stream_gbps / one.stream_gbps;
      std::printf(" | %.0f%% %.0f%% %.0f%%\n", 100 * chain, 100 * ports, 100 * stream);
      scaling["cores_chain"][std::to_string(w)] = chain;
      scaling["cores_ports"][std::to_string(w)] = ports;
      scaling["cores_stream"][std::to_string(w)] = stream;
    }
  }
  // The batched path's gain over the scalar one, per worker count.
  nlohmann::json gain = nlohmann::json::object();
  {
    const std::vector<Point>* sc = nullptr;
    const std::vector<Point>* ba = nullptr;
    for (const auto& [path, pts] : results) {
      if (path == "scalar") sc = &pts;
      if (path == "batched") ba = &pts;
    }
    if (sc && ba) {
      std::printf("batched / scalar:");
      for (const Point& b : *ba) {
        auto it = std::find_if(sc->begin(), sc->end(), [&](const Point& p) { return p.workers == b.workers; });
        if (it == sc->end() || it->median() <= 0) continue;
        std::printf(" %d: %.2fx", b.workers, b.median() / it->median());
        gain[std::to_string(b.workers)] = b.median() / it->median();
      }
      std::printf("\n");
    }
  }
  // Cores the CPU needs to match the GPU path's best rate (workers + master).
  nlohmann::json match = nlohmann::json::object();
  for (const auto& [path, pts] : results) {
    if (path != "gpu" || pts.empty()) continue;
    const auto best = *std::max_element(pts.begin(), pts.end(),
                                        [](const Point& a, const Point& b) { return a.median() < b.median(); });
    std::printf("GPU best: %.2f Mpps with %d workers + 1 master core\n", best.median(), best.workers);
    for (const auto& [cpath, cpts] : results) {
      if (cpath == "gpu") continue;
      auto it = std::find_if(cpts.begin(), cpts.end(), [&](const Point& p) { return p.median() >= best.median(); });
      if (it != cpts.end()) {
        std::printf("  CPU %s matches it with %d cores\n", cpath.c_str(), it->workers);
        match[cpath] = it->workers;
      } else {
        std::printf("  CPU %s does not match it on up to %d cores\n", cpath.c_str(), cpts.empty() ? 0 : cpts.back().workers);
        match[cpath] = nullptr;
      }
    }
    match["gpu_best_mpps"] = best.median();
    match["gpu_best_cores"] = best.workers + 1;
  }
  if (failures) std::printf("ACCOUNTING MISMATCH in %d point(s)\n", failures);

  if (!o.json.empty()) {
    nlohmann::json report = {
        {"bench", "cores"},
        {"machine", bench::machine_json()},
        {"app", app.name()},
        {"table", a.table_desc},
        {"mean_frame_bytes", store.size() ? double(store.total_caplen()) / store.size() : 0.0},
        {"config", {{"gen", format_gen_spec(spec)}, {"packets", o.packets}, {"burst", o.burst},
                    {"batch", o.batch}, {"slots", o.slots}, {"gpu_mode", o.gpu_mode}, {"reps", o.reps},
                    {"min_seconds", o.min_seconds}, {"stage_clock", "time-stamp counter (TSC), rate measured against the steady clock over each run"},
                    {"pinning", "worker w on CPU w, the GPU master on CPU <workers>"}}},
        {"paths", paths_json},
        {"core_probe", probe_json},
        {"per_core_share_of_one_worker", scaling},
        {"cpu_cores_to_match_gpu", match},
        {"batched_over_scalar", gain},
        {"all_balanced", failures == 0}};
    bench::write_json(o.json, report);
    std::printf("wrote %s\n", o.json.c_str());
  }
  return failures ? 3 : 0;
}

}  // namespace

void register_bench_cores(CLI::App& bench) {
  auto o = std::make_shared<BenchCoresOptions>();
  CLI::App* c = bench.add_subcommand("cores", "an app's throughput vs worker cores, CPU scalar / batched / GPU (G-Opt Fig. 10)");
  add_app_options(c, o->table);
  c->add_option("--gen", o->gen, "the traffic (tandem gen spec)")->capture_default_str();
  c->add_option("--workers", o->workers, "worker counts, e.g. 1-16 or 1,2,4,8 (default: 1 to the number of CPUs)");
  c->add_option("--paths", o->paths, "comma-separated: scalar, batched, gpu")->capture_default_str();
  c->add_option("--gpu-mode", o->gpu_mode, "GPU offload mode for the gpu path")->capture_default_str();
  c->add_option("--burst", o->burst, "frames per receive burst")->capture_default_str()->check(CLI::Range(1u, 256u));
  c->add_option("--batch", o->batch, "GPU batch size")->capture_default_str()->check(CLI::Range(1u, 1u << 24));
  c->add_option("--slots", o->slots, "GPU batches in flight")->capture_default_str()->check(CLI::Range(1, 8));
  c->add_option("--packets", o->packets, "packets per repetition (at least)")->capture_default_str()->check(CLI::Range(uint64_t{1000}, uint64_t{1} << 40));
  c->add_option("--reps", o->reps, "repetitions per point (the median is reported)")->capture_default_str()->check(CLI::Range(1, 100));
  c->add_option("--min-seconds", o->min_seconds, "each repetition runs at least this long (more packets than --packets "
                "where needed)")->capture_default_str()->check(CLI::Range(0.0, 600.0));
  c->add_flag("--stages,!--no-stages", o->stages, "CPU paths: one more run per point with its stages timed (ns per "
              "packet: receive, parse, lookup, apply, counters, latency, transmit, loop)")->capture_default_str();
  c->add_flag("--core-probe,!--no-core-probe", o->core_probe, "CPU paths: first the cores alone on the same CPUs per "
              "worker count (one dependent chain, eight independent ones, each thread streaming its own 64 MiB; each loop "
              "--min-seconds, at least 0.5 s, a count), the scaling limits the paths are read against")->capture_default_str();
  c->add_option("--json", o->json, "write the report here");
  c->callback([o] {
    for (const auto& p : bench::split_list(o->paths)) {
      if (p != "scalar" && p != "batched" && p != "gpu") throw UsageError("--paths: unknown path '" + p + "' (scalar, batched, gpu)");
    }
    try {
      gpu::parse_gpu_mode(o->gpu_mode);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--gpu-mode: ") + e.what());
    }
    if (!o->workers.empty()) {
      try {
        parse_cpu_list(o->workers);
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--workers: ") + e.what());
      }
    }
    if (o->burst > o->batch) throw UsageError("--burst must not exceed --batch");
    const int rc = run_bench(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
