// `tandem bench schedule`: an app over several devices at once (sched/hetero.h), side by side in
// one run: each device alone, static splits, the adaptive controllers and NBA's balancer, all with
// the same dispatchers (receive threads) and device groups, so that rows differ only in how the
// traffic is split. Each row is first run once verified (the scalar path's counters, no decision
// differing, nothing reordered or lost), then timed: medians of repetitions of at least
// --min-seconds, as a stopwatch shows them (an adaptive controller's settling included).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_report.h"
#include "cli/app_setup.h"
#include "cli/commands.h"
#include "cli/run_resident.h"
#include "cli/run_schedule.h"
#include "cli/schedule_probe.h"
#include "cli/schedule_profile.h"
#include "cli/table_setup.h"
#include "core/machine_info.h"
#include "gpu/gpu_runtime.h"
#include "io/traffic_gen.h"
#include "sched/hetero.h"
#include "sched/workers.h"

namespace tandem::cli {

namespace {

struct ScheduleBenchOptions {
  AppOptions table;
  std::string gen = "count=2000000,dst=fib,flows=100000,size=64,seed=3";
  std::string sizes;
  std::string device = "auto";
  std::string policies;  // ';'-separated --schedule values (default: each device alone, splits, adaptive, nba)
  int workers = 4;
  std::string cores;
  uint32_t batch = 1024;
  uint32_t ring_slots = 16;
  std::string frame_layout = "cells";
  uint32_t cpu_batch = 256;
  uint32_t lane_queue = 8192;
  int reps = 3;
  double min_seconds = 0.5;
  std::string rate_schedule;  // steps mode: each row runs this offered load once, paced
  double settle_ms = 100;     // steps mode: each segment's first part, left out of its figure
  std::string json;
};

struct Row {
  std::string size, policy;
  double mean_bytes = 0;
  std::vector<double> mpps;
  std::vector<double> share;  // per device, last repetition
  double p99_us = 0, watts = 0, j_per_mbit = 0;
  size_t switches = 0;
  double settle_max_ms = 0;
  uint64_t reordered = 0, lost = 0, backlog_hwm = 0;
  std::vector<double> seg_offered, seg_achieved;  // steps mode: per segment, Mpps
  std::string error;
};

// Each device alone, even and lopsided splits of two devices, then the controllers.
std::vector<std::string> default_policies(size_t devices) {
  std::vector<std::string> p;
  for (size_t d = 0; d < devices; ++d) p.push_back(only_device(d, devices));
  if (devices == 2) {
    for (const char* s : {"static:1,3", "static:1,1", "static:3,1"}) p.push_back(s);
  }
  for (const char* s : {"throughput", "koromilas", "nba"}) p.push_back(s);
  return p;
}

bool same_counters(const Counters& a, const Counters& b) {
  return a.rx_packets == b.rx_packets && a.tx_per_port == b.tx_per_port && a.drops == b.drops &&
         a.tx_flooded == b.tx_flooded;
}

ProbeSetup setup_of(const ScheduleBenchOptions& o, const std::vector<int>& cores) {
  ProbeSetup p;
  p.device = o.device;
  p.dispatchers = o.workers;
  p.cores = cores;
  p.gpu_batch = o.batch;
  p.ring_slots = o.ring_slots;
  p.layout = o.frame_layout;
  p.cpu_batch = o.cpu_batch;
  p.lane_queue = o.lane_queue;
  return p;
}

// Steps mode: the row runs the rate schedule once, paced; each segment's figure is the mean
// delivered rate over its ticks after the first settle_ms (the time a switch is allowed).
void measure_steps(Row& row, const ScheduleBenchOptions& o, ForwardApp& app, const PacketStore& s,
                   const ProbeSetup& setup) {
  std::vector<RateSegment> rate;
  try {
    rate = parse_rate_schedule(o.rate_schedule);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--rate-schedule: ") + e.what());
  }
  const SegmentsRun sr = probe_segments(app, s, setup, row.policy, rate, o.settle_ms, {}, true);
  const HeteroResult& r = sr.probe.r;
  row.watts = sr.probe.watts;
  row.reordered = r.reordered;
  row.lost = r.lost;
  row.backlog_hwm = r.rx_backlog_hwm;
  row.switches = r.switches.size();
  for (const SwitchRecord& x : r.switches) row.settle_max_ms = std::max(row.settle_max_ms, x.settle_ms);
  row.p99_us = r.run.latency.percentile(0.99) / 1e3;
  row.mpps.push_back(r.run.counters.rx_packets / r.run.seconds / 1e6);
  row.j_per_mbit = sr.probe.j_per_mbit();
  row.seg_offered = sr.offered;
  row.seg_achieved = sr.achieved;
  row.share = sr.probe.shares();
  if (!r.run.counters.balanced()) row.error = "accounting";
  if (r.reordered || r.lost) row.error = "reordered or lost packets";
}

void measure(Row& row, const ScheduleBenchOptions& o, ForwardApp& app, const PacketStore& s, const Counters& want,
             const ProbeSetup& setup) {
  const auto once = [&](uint64_t packets, bool verify, double* watts) {
    ProbeRun pr = probe_once(app, s, setup, row.policy, packets, verify, watts != nullptr);
    if (watts) *watts = pr.watts;
    return pr.r;
  };
  try {
    if (!o.rate_schedule.empty()) {
      measure_steps(row, o, app, s, setup);
      return;
    }
    const HeteroResult check = once(0, true, nullptr);
    if (!same_counters(check.run.counters, want) || check.run.verify_mismatches || check.run.verify_checked == 0) {
      row.error = "differs from the scalar path";
    }
    if (check.reordered || check.lost) row.error = "reordered or lost packets";
    const uint64_t packets = packets_for(app, s, setup, row.policy, o.min_seconds);
    for (int k = 0; k < o.reps; ++k) {
      double watts = 0;
      const HeteroResult r = once(packets, false, &watts);
      if (!r.run.counters.balanced() || r.run.counters.rx_packets != packets) row.error = "accounting";
      row.reordered += r.reordered;
      row.lost += r.lost;
      row.mpps.push_back(r.run.counters.rx_packets / r.run.seconds / 1e6);
      row.p99_us = r.run.latency.percentile(0.99) / 1e3;
      row.switches = r.switches.size();
      // Energy per Mbit at the row's power over the run's own time.
      row.watts = watts;
      row.j_per_mbit = r.run.wire_bytes ? watts * r.run.seconds / (r.run.wire_bytes * 8 / 1e6) : 0;
      row.share.clear();
      uint64_t all = 0;
      for (const DeviceReport& d : r.devices) all += d.packets;
      for (const DeviceReport& d : r.devices) row.share.push_back(all ? double(d.packets) / all : 0);
    }
    if (row.reordered || row.lost) row.error = "reordered or lost packets";
  } catch (const std::exception& e) {
    row.error = e.what();
  }
}

int run_bench(const ScheduleBenchOptions& o) {
  LoadedApp a = load_app(o.table);
  ForwardApp& app = *a.app;
  app.build_reference();
  std::vector<int> cores;
  if (!o.cores.empty()) cores = parse_cpu_list(o.cores);
  // The devices as a run would make them, for the row names and the default rows.
  std::string note;
  const std::vector<std::string> ids = probe_device_ids(app, setup_of(o, cores), &note);
  std::vector<std::string> policies = o.policies.empty() ? default_policies(ids.size()) : split_semicolons(o.policies);
  std::vector<std::string> sizes = bench::split_list(o.sizes);
  const GenSpec base = parse_gen_flag("--gen", o.gen);
  if (sizes.empty()) sizes.push_back(base.size_mode == GenSpec::Size::kImix ? "imix" : std::to_string(base.frame_size));
  std::vector<Row> rows;
  for (const std::string& size : sizes) {
    PacketStore s;
    try {
      std::string spec;
      for (const std::string& kv : bench::split_list(o.gen)) {
        if (kv.rfind("size=", 0) != 0) spec += kv + ",";
      }
      s = a.generate(parse_gen_flag("--sizes", spec + "size=" + size));
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--gen/--sizes: ") + e.what());
    }
    if (s.size() == 0) throw UsageError("--gen: no packets");
    WorkersConfig wc;
    wc.path = LookupPath::kScalar;
    wc.ports = app.ports();
    const Counters want = run_workers(app, s, wc).counters;
    ProbeSetup setup = setup_of(o, cores);
    // The Koromilas rows pick among a profile of this traffic: the grid, measured first.
    if (std::any_of(policies.begin(), policies.end(), [](const std::string& p) { return p.rfind("koromilas", 0) == 0; })) {
      ProfileGrid g;
      g.seconds = o.min_seconds;
      g.reps = o.reps;
      setup.profile = profile_grid(app, s, setup, g, [&](const std::string& line) { std::printf("%s: %s\n", size.c_str(), line.c_str()); }, nullptr);
    }
    for (const std::string& p : policies) {
      Row row;
      row.size = size;
      row.policy = p;
      row.mean_bytes = double(s.total_caplen()) / s.size();
      measure(row, o, app, s, want, setup);
      rows.push_back(std::move(row));
    }
  }

  const MachineInfo m = machine_info();
  std::string devs;
  for (const std::string& id : ids) devs += (devs.empty() ? "" : ",") + id;
  std::printf("bench schedule: app %s, %s (sizes: %s); devices %s, %d dispatchers, GPU rings %s x %u; %s%s\n", app.name(),
              o.gen.c_str(), o.sizes.empty() ? "the spec's" : o.sizes.c_str(), devs.c_str(), o.workers,
              o.frame_layout.c_str(), o.ring_slots, m.cpu_model.c_str(),
              gpu::available() ? (", " + gpu::device_info().name).c_str() : ", no GPU");
  if (!note.empty()) std::printf("%s\n", note.c_str());
  std::printf("medians of %d repetitions of at least %.2f s; ratio: to the best single device of the same size\n\n",
              o.reps, o.min_seconds);
  std::printf("%-6s %-22s %10s %8s %7s %9s %8s %10s %8s  %-24s %s\n", "size", "schedule", "Mpps", "Gbps", "ratio", "p99 us",
              "W", "J/Mbit", "switches", "shares", "checked");
  nlohmann::json jrows = nlohmann::json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    double best_single = 0;
    for (const Row& x : rows) {
      if (x.size != r.size || x.mpps.empty() || !x.error.empty()) continue;
      const long used = std::count_if(x.share.begin(), x.share.end(), [](double v) { return v > 0; });
      if (x.policy.rfind("static:", 0) == 0 && used == 1) best_single = std::max(best_single, bench::median(x.mpps));
    }
    const double mpps = r.mpps.empty() ? 0 : bench::median(r.mpps);
    const double gbps = mpps * (r.mean_bytes + 24) * 8 / 1e3;
    std::string shares;
    for (size_t d = 0; d < r.share.size(); ++d) {
      char b[32];
      std::snprintf(b, sizeof b, "%s%s %.0f%%", d ? ", " : "", d < ids.size() ? ids[d].c_str() : "?", 100 * r.share[d]);
      shares += b;
    }
    std::printf("%-6s %-22s %10.2f %8.1f %7.2f %9.1f %8.1f %10.5f %8zu  %-24s %s\n", r.size.c_str(), r.policy.c_str(), mpps,
                gbps, best_single > 0 ? mpps / best_single : 0.0, r.p99_us, r.watts, r.j_per_mbit, r.switches,
                shares.c_str(), r.error.empty() ? "same as scalar, 0 reordered, 0 lost" : r.error.c_str());
    jrows.push_back({{"size", r.size}, {"mean_bytes", r.mean_bytes}, {"schedule", r.policy}, {"mpps", mpps},
                     {"mpps_reps", r.mpps}, {"gbps_wire", gbps}, {"ratio_to_best_single", best_single > 0 ? mpps / best_single : 0.0},
                     {"p99_us", r.p99_us}, {"watts", r.watts}, {"j_per_mbit", r.j_per_mbit}, {"switches", r.switches},
                     {"share", r.share}, {"reordered", r.reordered}, {"lost", r.lost}, {"error", r.error},
                     {"settle_max_ms", r.settle_max_ms}, {"rx_backlog_hwm", r.backlog_hwm},
                     {"segments_offered_mpps", r.seg_offered}, {"segments_achieved_mpps", r.seg_achieved}});
  }
  if (!o.rate_schedule.empty()) {
    std::printf("\nsteps (%s; each segment after its first %.0f ms): delivered Mpps, and the ratio to the best "
                "static row of the same size in that segment\n", o.rate_schedule.c_str(), o.settle_ms);
    for (const Row& r : rows) {
      std::printf("%-6s %-22s", r.size.c_str(), r.policy.c_str());
      for (size_t k = 0; k < r.seg_achieved.size(); ++k) {
        double best = 0;
        for (const Row& x : rows) {
          if (x.size == r.size && x.policy.rfind("static:", 0) == 0 && k < x.seg_achieved.size() && x.error.empty()) {
            best = std::max(best, x.seg_achieved[k]);
          }
        }
        std::printf("  %.1f/%.1f (%.2f)", r.seg_achieved[k], r.seg_offered[k], best > 0 ? r.seg_achieved[k] / best : 0.0);
      }
      std::printf("  switches %zu, settle max %.2f ms, rx backlog high-water %llu\n", r.switches, r.settle_max_ms,
                  static_cast<unsigned long long>(r.backlog_hwm));
    }
  }
  if (!o.json.empty()) {
    bench::write_json(o.json, {{"command", "bench schedule"}, {"rate_schedule", o.rate_schedule}, {"app", app.name()}, {"gen", o.gen}, {"devices", ids},
                               {"dispatchers", o.workers}, {"frame_layout", o.frame_layout}, {"ring_slots", o.ring_slots}, {"lane_queue", o.lane_queue}, {"machine", bench::machine_json()}, {"reps", o.reps},
                               {"min_seconds", o.min_seconds}, {"rows", jrows}});
  }
  for (const Row& r : rows) {
    if (!r.error.empty()) return 1;
  }
  return 0;
}

}  // namespace

void register_bench_schedule(CLI::App& bench) {
  auto o = std::make_shared<ScheduleBenchOptions>();
  CLI::App* c = bench.add_subcommand("schedule", "an app over CPU groups and GPUs at once: each device alone, static splits, "
                                                 "the adaptive scheduler and NBA's balancer");
  add_app_options(c, o->table);
  c->add_option("--gen", o->gen, "the traffic (tandem gen spec)")->capture_default_str();
  c->add_option("--sizes", o->sizes, "frame sizes, each a run of every row (e.g. 64,1518,imix; default: --gen's)");
  c->add_option("--device", o->device, "the devices, as tandem run --device with --schedule (e.g. cpu,gpu or cpu:6,gpu)")
      ->capture_default_str();
  c->add_option("--policies", o->policies,
                "rows: --schedule values, or koromilas[:POLICY] (the Koromilas controller over a profile of the "
                "splits measured first), separated by ';' (default: each device alone, splits 1:3, 1:1, 3:1 of two "
                "devices, throughput, koromilas, nba)");
  c->add_option("--workers", o->workers, "receive threads (dispatchers)")->capture_default_str()->check(CLI::Range(1, 32));
  c->add_option("--cores", o->cores, "pin the dispatchers, then the CPU groups' threads, to these CPUs in order");
  c->add_option("--batch", o->batch, "GPU: frames per batch (at most)")->capture_default_str()->check(CLI::Range(32u, 2048u));
  c->add_option("--ring-slots", o->ring_slots, "GPU: batches in flight per dispatcher")->capture_default_str()->check(CLI::Range(2u, 1024u));
  c->add_option("--frame-layout", o->frame_layout, "GPU: frames in fixed cells, or packed one after another")
      ->capture_default_str()
      ->check(CLI::IsMember({"cells", "packed"}));
  c->add_option("--cpu-batch", o->cpu_batch, "CPU groups: frames per batch (at most)")->capture_default_str()->check(CLI::Range(1u, 4096u));
  c->add_option("--lane-queue", o->lane_queue, "frames a dispatcher may hold per device whose ring is full (0: none)")
      ->capture_default_str()->check(CLI::Range(0u, 1u << 20));
  c->add_option("--reps", o->reps, "repetitions (median reported)")->capture_default_str()->check(CLI::Range(1, 100));
  c->add_option("--min-seconds", o->min_seconds, "least duration of a repetition")->capture_default_str()->check(FiniteRange(0.0, 600.0));
  c->add_option("--rate-schedule", o->rate_schedule,
                "steps mode: each row runs this offered load once, paced (MS:MPPS,..., ending with a rate of 0), "
                "and is reported per segment");
  c->add_option("--settle-ms", o->settle_ms, "steps mode: each segment's first part, left out of its figure")
      ->capture_default_str()->check(FiniteRange(0.0, 1e6));
  c->add_option("--json", o->json, "write the report here");
  c->callback([o] {
    const int rc = run_bench(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
