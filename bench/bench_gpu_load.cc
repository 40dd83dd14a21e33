// `tandem bench gpu-load`: per-packet latency against offered load (G-Opt Fig. 11), for the CPU
// path and each GPU offload mode at several MAX_WAIT values, through the real router data path
// (sched/workers.h: workers, RSS queues, the offload engine). Each configuration's peak is
// measured first (unpaced); then packets are offered on a schedule at fractions of that peak, and
// latency runs from each packet's scheduled arrival to its verdict.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "apps/ipv4/ipv4_gpu.h"
#include "apps/ipv4/ipv4_app.h"
#include "sched/workers.h"
#include "bench/bench_report.h"
#include "cli/commands.h"
#include "cli/table_setup.h"
#include "core/machine_info.h"
#include "gpu/offload_engine.h"
#include "io/traffic_gen.h"

namespace tandem::cli {

namespace {

struct GpuLoadOptions {
  std::string fib;
  std::string configs = "cpu,async,graph,mapped,persistent,async+idle,graph+idle,persistent+idle";
  std::string max_wait_us = "10,50";
  std::string fractions = "0.1,0.25,0.5,0.75,0.9";
  std::string gen = "count=2000000,dst=fib,flows=100000,zipf=1.1,size=64,seed=7";
  int workers = 2;
  uint32_t burst = 32;
  uint32_t batch = 8192;
  int slots = 4;
  double point_ms = 400;
  double peak_ms = 300;
  double floor_us = 4.5;  // the raw persistent round trip on an H200 machine
  std::string cores;
  double rx_hold_us = 4;
  std::string engine = "staged";
  std::string json;
};

struct PointResult {
  double fraction = 0;  // of the configuration's peak; 0 for the peak run itself
  double offered_mpps = 0;
  WorkersResult r;
  gpu::EngineStats engine;  // this point's share
};

nlohmann::json point_json(const PointResult& p) {
  const auto& l = p.r.latency;
  nlohmann::json j = {{"fraction", p.fraction}, {"offered_mpps", p.offered_mpps},
                      {"achieved_mpps", p.r.counters.rx_packets / p.r.seconds / 1e6},
                      {"packets", p.r.counters.rx_packets}, {"balanced", p.r.counters.balanced() && p.r.counters.rx_packets == p.r.expected},
                      {"latency_us", {{"min", l.min() / 1e3}, {"p50", l.percentile(0.5) / 1e3}, {"p99", l.percentile(0.99) / 1e3},
                                      {"p999", l.percentile(0.999) / 1e3}, {"max", l.max() / 1e3}}}};
  if (p.engine.batches) {
    j["engine"] = {{"batches", p.engine.batches}, {"avg_batch", double(p.engine.items) / p.engine.batches},
                   {"gpu_batches", p.engine.gpu_batches}, {"backpressure", p.engine.backpressure}};
  }
  return j;
}

gpu::EngineStats delta(const gpu::EngineStats& a, const gpu::EngineStats& b) {
  gpu::EngineStats d = a;
  d.requests -= b.requests;
  d.items -= b.items;
  d.batches -= b.batches;
  d.gpu_batches -= b.gpu_batches;
  d.cpu_batches -= b.cpu_batches;
  d.backpressure -= b.backpressure;
  return d;
}

int run_bench(const GpuLoadOptions& o) {
  const LoadedTable t = load_table(o.fib, true);
  const GenSpec spec = parse_gen_flag("--gen", o.gen);
  const PacketStore store = generate(spec, prefixes_of(t.fib));
  std::vector<double> fractions;
  for (const auto& f : bench::split_list(o.fractions)) fractions.push_back(std::stod(f));
  std::vector<double> waits;
  for (const auto& w : bench::split_list(o.max_wait_us)) waits.push_back(std::stod(w));
  const bool gpu_ok = gpu::available();
  ipv4::Ipv4App app(*t.table, t.fib);

  WorkersConfig base;
  base.workers = o.workers;
  base.burst = o.burst;
  base.ports = size_t{t.fib.max_next_hop} + 1;
  std::vector<int> cores;
  if (!o.cores.empty()) {
    cores = parse_cpu_list(o.cores);
    base.cores.assign(cores.begin(), cores.begin() + std::min<size_t>(cores.size(), o.workers));
  }

  std::printf("latency vs offered load: %s, %d worker(s), bursts of up to %u, GPU batches up to %u, %d slot(s), %s engine\n",
              format_gen_spec(spec).c_str(), o.workers, o.burst, o.batch, o.slots, o.engine.c_str());
  std::printf("%-22s %8s %9s %9s %9s %9s %9s %9s %9s %8s\n", "config", "load", "offered", "achieved",
              "min us", "p50 us", "p99 us", "p99.9 us", "max us", "batch");
  nlohmann::json configs = nlohmann::json::array();
  int failures = 0;
  for (const std::string& config : bench::split_list(o.configs)) {
    const bool cpu = config == "cpu";
    // "MODE+idle": the engine also sends a batch whenever none is in flight.
    const bool idle = config.size() > 5 && config.compare(config.size() - 5, 5, "+idle") == 0;
    const std::string name = idle ? config.substr(0, config.size() - 5) : config;
    if (!cpu && !gpu_ok) {
      std::printf("%-22s skipped: no GPU\n", name.c_str());
      continue;
    }
    for (double wait_us : cpu ? std::vector<double>{0} : waits) {
      WorkersConfig wc = base;
      GpuEngine engine;
      std::string label = name;
      if (cpu) {
        wc.path = LookupPath::kBatched;
        label = "cpu batched";
      } else {
        gpu::OffloadOptions oo;
        oo.mode = gpu::parse_gpu_mode(name);
        oo.capacity = o.batch;
        oo.slots = o.slots;
        auto runner = app.make_gpu_runner(oo);
        wc.max_bursts_in_flight = bursts_in_flight(o.batch, o.burst, o.workers);
        gpu::EngineConfig ec;
        if (cores.size() > size_t(o.workers)) ec.master_core = cores[o.workers];
        ec.max_batch = o.batch;
        ec.max_wait_ns = static_cast<uint64_t>(wait_us * 1000);
        ec.flush_when_idle = idle;
        wc.rx_hold_ns = static_cast<uint64_t>(o.rx_hold_us * 1000);
        engine = attach_gpu_engine(wc, app, std::move(runner), ec, o.engine == "staged");
        char buf[64];
        std::snprintf(buf, sizeof buf, "%s%s wait %gus", name.c_str(), idle ? "+idle" : "", wait_us);
        label = buf;
      }
      auto run_point = [&](double fraction, double rate_pps, double ms) {
        PointResult p;
        p.fraction = fraction;
        p.offered_mpps = rate_pps / 1e6;
        WorkersConfig pc = wc;
        pc.rate_pps = rate_pps;
        // Unpaced: enough packets for about `ms` at a rough 20 Mpps; paced: rate x duration.
        pc.packets = static_cast<uint64_t>(std::max(1e5, (rate_pps > 0 ? rate_pps : 20e6) * ms / 1e3));
        const gpu::EngineStats before = engine.stats();
        p.r = run_workers(app, store, pc);
        p.engine = delta(engine.stats(), before);
        const auto& l = p.r.latency;
        const double achieved = p.r.counters.rx_packets / p.r.seconds / 1e6;
        char load[16];
        std::snprintf(load, sizeof load, fraction > 0 ? "%.2f" : "peak", fraction);
        std::printf("%-22s %8s %9.2f %9.2f %9.1f %9.1f %9.1f %9.1f %9.1f %8.0f\n", label.c_str(), load,
                    p.offered_mpps, achieved, l.min() / 1e3, l.percentile(0.5) / 1e3, l.percentile(0.99) / 1e3,
                    l.percentile(0.999) / 1e3, l.max() / 1e3,
                    p.engine.batches ? double(p.engine.items) / p.engine.batches : 0.0);
        std::fflush(stdout);
        if (!(p.r.counters.balanced() && p.r.counters.rx_packets == p.r.expected)) {
          std::printf("  ACCOUNTING MISMATCH: received %llu of %llu\n", static_cast<unsigned long long>(p.r.counters.rx_packets),
                      static_cast<unsigned long long>(p.r.expected));
          ++failures;
        }
        return p;
      };
      const PointResult peak = run_point(0, 0, o.peak_ms);
      const double peak_pps = peak.r.counters.rx_packets / peak.r.seconds;
      nlohmann::json pts = nlohmann::json::array();
      pts.push_back(point_json(peak));
      double p99_half = -1;
      for (double f : fractions) {
        const PointResult p = run_point(f, f * peak_pps, o.point_ms);
        if (std::abs(f - 0.5) < 1e-9) p99_half = p.r.latency.percentile(0.99) / 1e3;
        pts.push_back(point_json(p));
      }
      nlohmann::json cj = {{"config", label}, {"path", cpu ? "cpu" : "gpu"}, {"mode", cpu ? "" : name},
                           {"flush_when_idle", idle},
                           {"max_wait_us", wait_us}, {"peak_mpps", peak_pps / 1e6}, {"points", pts}};
      if (!cpu && p99_half >= 0) {
        const double limit = 3 * o.floor_us + wait_us;
        std::printf("  %s: p99 at half of peak %.1f us; target < 3 x %.1f us + MAX_WAIT = %.1f us: %s\n", label.c_str(),
                    p99_half, o.floor_us, limit, p99_half < limit ? "met" : "NOT met");
        cj["p99_half_load_us"] = p99_half;
        cj["p99_half_load_limit_us"] = limit;
      }
      configs.push_back(cj);
    }
  }
  if (!o.json.empty()) {
    nlohmann::json report = {{"bench", "gpu-load"}, {"machine", bench::machine_json()},
                             {"config", {{"fib", o.fib}, {"gen", format_gen_spec(spec)}, {"workers", o.workers},
                                         {"burst", o.burst}, {"batch", o.batch}, {"slots", o.slots},
                                         {"point_ms", o.point_ms}, {"floor_us", o.floor_us}, {"cores", o.cores},
                                         {"rx_hold_us", o.rx_hold_us}, {"engine", o.engine},
                                         {"latency", "per packet, scheduled arrival to verdict"}}},
                             {"configs", configs}};
    bench::write_json(o.json, report);
    std::printf("wrote %s\n", o.json.c_str());
  }
  return failures ? 3 : 0;
}

}  // namespace

void register_bench_gpu_load(CLI::App& bench) {
  auto o = std::make_shared<GpuLoadOptions>();
  CLI::App* c = bench.add_subcommand("gpu-load", "per-packet latency vs offered load, CPU and each GPU mode (G-Opt Fig. 11)");
  c->add_option("--fib", o->fib, "forwarding table")->required()->check(CLI::ExistingFile);
  c->add_option("--configs", o->configs, "comma-separated: cpu, async, graph, mapped, persistent; MODE+idle also sends a batch whenever none is in flight")->capture_default_str();
  c->add_option("--max-wait-us", o->max_wait_us, "comma-separated MAX_WAIT values for the GPU configs")->capture_default_str();
  c->add_option("--fractions", o->fractions, "comma-separated offered loads, as fractions of each config's peak")->capture_default_str();
  c->add_option("--gen", o->gen, "the traffic (tandem gen spec)")->capture_default_str();
  c->add_option("--workers", o->workers, "worker threads")->capture_default_str()->check(CLI::Range(1, 256));
  c->add_option("--burst", o->burst, "frames per receive burst")->capture_default_str()->check(CLI::Range(1u, 256u));
  c->add_option("--batch", o->batch, "GPU batch size (addresses)")->capture_default_str()->check(CLI::Range(1u, 1u << 24));
  c->add_option("--slots", o->slots, "GPU batches in flight")->capture_default_str()->check(CLI::Range(1, 8));
  c->add_option("--point-ms", o->point_ms, "duration of each offered-load point")->capture_default_str()->check(FiniteRange(1.0, 1e5));
  c->add_option("--peak-ms", o->peak_ms, "rough duration of each peak run")->capture_default_str()->check(FiniteRange(1.0, 1e5));
  c->add_option("--floor-us", o->floor_us, "the raw persistent round trip the p99 target is built on")->capture_default_str()->check(FiniteRange(0.01, 1e6));
  c->add_option("--engine", o->engine, "GPU: staged or gather (see tandem run --help)")
      ->capture_default_str()->check(CLI::IsMember({"staged", "gather"}));
  c->add_option("--rx-hold-us", o->rx_hold_us, "GPU: a worker holds a partial burst this long")
      ->capture_default_str()->check(FiniteRange(0.0, 1e6));
  c->add_option("--cores", o->cores, "pin the workers to these CPUs (e.g. 2-5), the GPU master to the next one");
  c->add_option("--json", o->json, "write the report here");
  c->callback([o] {
    if (!o->cores.empty()) {
      try {
        parse_cpu_list(o->cores);
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--cores: ") + e.what());
      }
    }
    for (auto m : bench::split_list(o->configs)) {
      if (m == "cpu") continue;
      if (m.size() > 5 && m.compare(m.size() - 5, 5, "+idle") == 0) m.resize(m.size() - 5);
      try {
        gpu::parse_gpu_mode(m);
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--configs: ") + e.what());
      }
    }
    for (const auto& f : bench::split_list(o->fractions)) {
      double v = 0;
      try {
        v = std::stod(f);
      } catch (const std::exception&) {
        v = -1;
      }
      if (!(v > 0 && v <= 1)) throw UsageError("--fractions: '" + f + "' is not in (0, 1]");
    }
    if (o->burst > o->batch) throw UsageError("--burst must not exceed --batch");
    for (const auto& w : bench::split_list(o->max_wait_us)) {
      double v = -1;
      try {
        v = std::stod(w);
      } catch (const std::exception&) {
      }
      if (!(v >= 0)) throw UsageError("--max-wait-us: '" + w + "' is not a duration in microseconds");
    }
    const int rc = run_bench(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
