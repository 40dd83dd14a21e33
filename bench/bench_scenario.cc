// `tandem scenario KIND`: the scheduler's experiments over time (Koromilas et al., Fig. 7): an
// offered load that steps or bursts, or a steady one while something else takes CPU cores or the
// GPU, run paced once per row: each device alone, static splits, the adaptive controllers (the model
// controller, and Koromilas et al.'s over a profile of the static rows' splits measured first) and
// NBA's balancer, on the same dispatchers and devices. The table gives each row's delivered rate per
// segment and what it carried (delivered up to offered) against the best static row of that
// segment, and the JSON each row's timeline (offered and delivered rate, shares, batch sizes,
// backlog, power per tick) for tools/plots/plot_schedule.py.
//
// flip changes the traffic instead (an app flag's two values, e.g. DPI payloads free of patterns,
// then match-heavy, then free again), where the best device may change with it.
//
// Rates are fractions of a scale: --scale MPPS, or auto: the best device alone on the same traffic,
// measured just before, unpaced and then offered that rate (the lesser of the two: paced, a GPU's
// batches leave smaller), so a step of 1.2 asks for more than any device alone; flip scales each
// traffic by its own.
#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bench/bench_report.h"
#include "bench/scenario_hog.h"
#include "cli/app_setup.h"
#include "cli/commands.h"
#include "cli/schedule_probe.h"
#include "cli/schedule_profile.h"
#include "cli/table_setup.h"
#include "core/machine_info.h"
#include "core/usage_error.h"
#include "gpu/gpu_runtime.h"
#include "io/traffic_gen.h"
#include "sched/hetero.h"

namespace tandem::cli {

namespace {

std::string fmt(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

struct ScenarioOptions {
  std::string kind;
  AppOptions table;
  std::string gen = "count=1000000,dst=fib,flows=100000,size=64,seed=3";
  std::string device = "auto";
  std::string policies;
  int workers = 4;
  std::string cores;
  uint32_t batch = 1024;
  uint32_t ring_slots = 16;
  std::string frame_layout = "cells";
  uint32_t cpu_batch = 256;
  uint32_t lane_queue = 8192;
  std::string scale = "auto";
  double step_ms = 1000;
  double settle_ms = 100;
  double grace_ms = 500;
  std::string segments;  // custom: "MS:FRACTION,..." (fractions of the scale)
  std::string hog_cores;
  std::string flip;  // flip: FLAG=A/B
  std::string json;
};

// What a scenario does over time: the offered load (fractions of the scale) and, for the hog
// kinds, when the hog runs.
struct Plan {
  std::vector<RateSegment> rate;  // pps are fractions here, scaled later (by the phase's scale)
  std::vector<uint32_t> phase;    // per segment, the traffic it plays (flip: 0 = A, 1 = B)
  double hog_from_ms = -1, hog_to_ms = -1;
  std::string what;
};

Plan plan_of(const ScenarioOptions& o) {
  const double t = o.step_ms;
  Plan p;
  auto steps = [&](const std::vector<double>& f) {
    for (size_t k = 0; k < f.size(); ++k) p.rate.push_back({k * t, f[k]});
    p.rate.push_back({f.size() * t, 0});
  };
  if (o.kind == "steps") {
    steps({0.2, 0.5, 0.9, 1.2, 0.5, 0.2});
    p.what = "offered load in steps of " + fmt(t, 0) + " ms: 0.2, 0.5, 0.9, 1.2, 0.5, 0.2 x scale";
  } else if (o.kind == "bursts") {
    // A base load with four bursts of a tenth of a step each, above what any device alone carries.
    double at = 0;
    p.rate.push_back({at, 0.3});
    at += t;
    for (int b = 0; b < 4; ++b) {
      p.rate.push_back({at, 1.2});
      at += t / 10;
      p.rate.push_back({at, 0.3});
      at += t / 2;
    }
    p.rate.push_back({at, 0});
    p.what = "0.3 x scale with four bursts to 1.2 x scale of " + fmt(t / 10, 0) + " ms each";
  } else if (o.kind == "cpu-hog" || o.kind == "gpu-hog") {
    steps({0.6, 0.6, 0.6});
    p.hog_from_ms = t;
    p.hog_to_ms = 2 * t;
    p.what = std::string("0.6 x scale for ") + fmt(3 * t, 0) + " ms; from " + fmt(t, 0) + " to " +
             fmt(2 * t, 0) + " ms " +
             (o.kind == "cpu-hog" ? "threads spinning on the CPU group's cores " + o.hog_cores
                                  : std::string("another process keeps the GPU busy"));
  } else if (o.kind == "flip") {
    // Half of each traffic's scale: a load its best device carries with room, so that what a
    // segment delivers is its own traffic, not a backlog of the one before.
    steps({0.5, 0.5, 0.5});
    p.phase = {0, 1, 0, 0};
    p.what = "traffic " + o.flip + ": A, then B, then A, " + fmt(t, 0) + " ms each, at 0.5 x each traffic's scale";
  } else if (o.kind == "custom") {
    try {
      p.rate = parse_rate_schedule(o.segments);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--segments: ") + e.what());
    }
    if (p.rate.back().pps > 0) throw UsageError("--segments: end with a rate of 0 (e.g. ...,5000:0)");
    for (RateSegment& r : p.rate) r.pps /= 1e6;  // parsed as Mpps: here fractions of the scale
    p.what = "custom: " + o.segments + " (fractions of the scale)";
  } else {
    throw UsageError("scenario: KIND is steps, bursts, cpu-hog, gpu-hog, flip or custom, not '" + o.kind + "'");
  }
  if (p.phase.empty()) p.phase.assign(p.rate.size(), 0);
  return p;
}

struct Row {
  std::string policy;
  std::vector<double> achieved, offered;
  double watts = 0, p99_us = 0, settle_max_ms = 0;
  size_t switches = 0;
  uint64_t reordered = 0, lost = 0, backlog_hwm = 0, received = 0, offered_packets = 0;
  std::vector<double> share;
  nlohmann::json timeline = nlohmann::json::array();
  std::string error;
};

// What a row carried of segment k's load: its delivered rate, at most the offered one. A row that
// fell behind delivers its backlog in the segments after, which is not carrying their load.
double carried(const Row& r, size_t k) { return std::min(r.achieved[k], r.offered[k]); }

nlohmann::json timeline_json(const HeteroResult& r) {
  nlohmann::json tl = nlohmann::json::array();
  for (const TimelinePoint& p : r.timeline) {
    tl.push_back({{"t_s", p.t_s}, {"offered_mpps", p.offered_mpps}, {"achieved_mpps", p.achieved_mpps},
                  {"backlog", p.backlog}, {"share", p.share}, {"mpps", p.mpps}, {"watts", p.watts}, {"batch", p.batch}});
  }
  return tl;
}

int run_scenario(const ScenarioOptions& o) {
  const Plan plan = plan_of(o);
  // flip: the app loaded twice, with the flag's two values, for the two traffics (the first one
  // runs both: the flag must change only the generated traffic).
  std::string flip_flag, flip_a, flip_b;
  if (o.kind == "flip") {
    const size_t eq = o.flip.find('='), slash = o.flip.find('/');
    if (eq == std::string::npos || slash == std::string::npos || slash < eq || eq == 0) {
      throw UsageError("--flip: FLAG=A/B, e.g. match-heavy=0/0.3 (the app flag, its value in the first and in the second traffic)");
    }
    flip_flag = o.flip.substr(0, eq);
    flip_a = o.flip.substr(eq + 1, slash - eq - 1);
    flip_b = o.flip.substr(slash + 1);
  }
  AppOptions table_a = o.table;
  if (!flip_flag.empty()) table_a.args.set(flip_flag, flip_a);
  LoadedApp a = load_app(table_a);
  ForwardApp& app = *a.app;
  ProbeSetup setup;
  setup.device = o.device;
  setup.dispatchers = o.workers;
  if (!o.cores.empty()) setup.cores = parse_cpu_list(o.cores);
  setup.gpu_batch = o.batch;
  setup.ring_slots = o.ring_slots;
  setup.layout = o.frame_layout;
  setup.cpu_batch = o.cpu_batch;
  setup.lane_queue = o.lane_queue;
  std::string note;
  const std::vector<std::string> ids = probe_device_ids(app, setup, &note);
  const bool has_gpu = std::any_of(ids.begin(), ids.end(), [](const std::string& id) { return id.rfind("gpu", 0) == 0; });
  if (o.kind == "gpu-hog" && !has_gpu) throw UsageError("scenario gpu-hog: the devices have no GPU (" + note + ")");
  std::vector<int> hog_cores;
  if (o.kind == "cpu-hog") {
    if (o.hog_cores.empty()) throw UsageError("scenario cpu-hog: name the cores to take with --hog-cores (e.g. 8-11)");
    hog_cores = parse_cpu_list(o.hog_cores);
  }
  std::vector<PacketStore> traffic;  // per phase
  try {
    const GenSpec spec = parse_gen_flag("--gen", o.gen);
    traffic.push_back(a.generate(spec));
    if (!flip_flag.empty()) {
      AppOptions table_b = o.table;
      table_b.args.set(flip_flag, flip_b);
      traffic.push_back(load_app(table_b).generate(spec));
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--gen: ") + e.what());
  }
  if (traffic[0].size() == 0) throw UsageError("--gen: no packets");
  PacketStore s;
  for (const PacketStore& t : traffic) {
    setup.input_phases.push_back(s.size());
    for (size_t i = 0; i < t.size(); ++i) s.add(t.frame(i), t.caplen[i], t.wire_len[i], t.ts_ns[i]);
  }
  if (traffic.size() > 1) {
    setup.segment_phase = plan.phase;
  } else {
    setup.input_phases.clear();
  }

  std::vector<std::string> policies;
  if (o.policies.empty()) {
    for (size_t d = 0; d < ids.size(); ++d) policies.push_back(only_device(d, ids.size()));
    if (ids.size() == 2) {
      for (const char* x : {"static:1,3", "static:1,1", "static:3,1"}) policies.push_back(x);
    }
    policies.push_back("throughput");
    policies.push_back("koromilas");
    policies.push_back("nba");
  } else {
    policies = split_semicolons(o.policies);
  }
  // The Koromilas controller's profile: the splits of the static rows, each device's batch as the
  // rows have it, unpaced, on the first traffic (a table is made for one traffic).
  if (std::find(policies.begin(), policies.end(), "koromilas") != policies.end()) {
    ProbeSetup plain = setup;
    plain.input_phases.clear();
    plain.segment_phase.clear();
    ProfileGrid g;
    g.seconds = 0.5;
    g.latency_load = 0;
    g.energy = false;
    setup.profile = profile_grid(app, traffic[0], plain, g, [](const std::string& line) { std::printf("%s\n", line.c_str()); }, nullptr);
  }

  // The scale: the best device alone, unpaced, on each traffic.
  std::vector<double> scale(traffic.size(), 0);
  std::string scale_how;
  if (o.scale == "auto") {
    for (size_t t = 0; t < traffic.size(); ++t) {
      std::string best;
      ProbeSetup plain = setup;
      plain.input_phases.clear();
      plain.segment_phase.clear();
      for (size_t d = 0; d < ids.size(); ++d) {
        const std::string pol = only_device(d, ids.size());
        const uint64_t n = packets_for(app, traffic[t], plain, pol, 0.3);
        const double unpaced = probe_once(app, traffic[t], plain, pol, n, false, false).mpps();
        // Paced, a device may carry less than unpaced (a GPU's batches leave smaller): offered its
        // unpaced rate for 400 ms, what it delivers after the first 100.
        const std::vector<RateSegment> offer = {{0, unpaced * 1e6}, {400, 0}};
        const SegmentsRun paced = probe_segments(app, traffic[t], plain, pol, offer, 100, {}, false, 100);
        const double mpps = paced.achieved.empty() ? unpaced : std::min(unpaced, paced.achieved[0]);
        if (mpps > scale[t]) {
          scale[t] = mpps;
          best = ids[d] + " alone, " + fmt(mpps, 2) + " Mpps paced (" + fmt(unpaced, 2) + " unpaced)";
        }
      }
      scale_how += std::string(scale_how.empty() ? "auto: " : "; ") + (traffic.size() > 1 ? (t ? "B: " : "A: ") : "") + best;
    }
  } else {
    char* end = nullptr;
    const double v = std::strtod(o.scale.c_str(), &end);
    if (!end || *end || !std::isfinite(v) || v <= 0) throw UsageError("--scale: a rate in Mpps > 0, or auto");
    scale.assign(traffic.size(), v);
    scale_how = fmt(v, 2) + " Mpps, given";
  }
  std::vector<RateSegment> rate = plan.rate;
  for (size_t k = 0; k < rate.size(); ++k) rate[k].pps *= scale[plan.phase[k] < scale.size() ? plan.phase[k] : 0] * 1e6;

  std::vector<Row> rows;
  for (const std::string& pol : policies) {
    Row row;
    row.policy = pol;
    bench::CpuHog cpu_hog;
    bench::GpuHog gpu_hog;
    std::atomic<int> hog_state{0};  // 0 before, 1 running, 2 stopped
    std::mutex hog_mu;
    std::string hog_error;
    auto on_tick = [&](double t_s) {
      if (plan.hog_from_ms < 0) return;
      const double t_ms = t_s * 1e3;
      std::lock_guard<std::mutex> lock(hog_mu);
      try {
        if (hog_state.load() == 0 && t_ms >= plan.hog_from_ms) {
          if (o.kind == "cpu-hog") cpu_hog.start(hog_cores);
          if (o.kind == "gpu-hog") gpu_hog.start((plan.hog_to_ms - plan.hog_from_ms) / 1e3 + 5);
          hog_state = 1;
        } else if (hog_state.load() == 1 && t_ms >= plan.hog_to_ms) {
          cpu_hog.stop();
          gpu_hog.signal_stop();  // reaped after the run: waiting here would hold the ticks up
          hog_state = 2;
        }
      } catch (const std::exception& e) {
        hog_error = e.what();
        hog_state = 2;
      }
    };
    try {
      const SegmentsRun sr = probe_segments(app, s, setup, pol, rate, o.settle_ms, on_tick, true, o.grace_ms);
      cpu_hog.stop();
      if (const std::string why = gpu_hog.reap(); !why.empty() && hog_error.empty()) hog_error = why;
      if (cpu_hog.unpinned() && hog_error.empty()) {
        hog_error = std::to_string(cpu_hog.unpinned()) + " of --hog-cores could not be pinned to";
      }
      if (plan.hog_from_ms >= 0 && hog_state.load() == 0 && hog_error.empty()) hog_error = "the run ended before the hog started";
      const HeteroResult& r = sr.probe.r;
      row.achieved = sr.achieved;
      row.offered = sr.offered;
      row.watts = sr.probe.watts;
      row.p99_us = r.run.latency.percentile(0.99) / 1e3;
      row.switches = r.switches.size();
      for (const SwitchRecord& x : r.switches) row.settle_max_ms = std::max(row.settle_max_ms, x.settle_ms);
      row.reordered = r.reordered;
      row.lost = r.lost;
      row.backlog_hwm = r.rx_backlog_hwm;
      row.received = r.run.counters.rx_packets;
      double offered = 0;
      for (size_t k = 0; k + 1 < rate.size(); ++k) offered += rate[k].pps * (rate[k + 1].start_ms - rate[k].start_ms) / 1e3;
      row.offered_packets = static_cast<uint64_t>(offered);
      row.share = sr.probe.shares();
      row.timeline = timeline_json(r);
      if (!r.run.counters.balanced()) row.error = "accounting";
      if (r.reordered || r.lost) row.error = "reordered or lost packets";
      if (!hog_error.empty()) row.error = "hog: " + hog_error;
    } catch (const std::exception& e) {
      row.error = e.what();
    }
    rows.push_back(std::move(row));
  }

  const MachineInfo m = machine_info();
  std::string devs;
  for (const std::string& id : ids) devs += (devs.empty() ? "" : ",") + id;
  std::printf("scenario %s: app %s, %s; devices %s, %d dispatchers; %s%s\n", o.kind.c_str(), app.name(), o.gen.c_str(),
              devs.c_str(), o.workers, m.cpu_model.c_str(), gpu::available() ? (", " + gpu::device_info().name).c_str() : ", no GPU");
  if (!note.empty()) std::printf("%s\n", note.c_str());
  std::printf("%s; scale %s\n", plan.what.c_str(), scale_how.c_str());
  std::printf("per segment (after its first %.0f ms): delivered / offered Mpps (ratio of what it carried, delivered up "
              "to offered, to the best static row's)\n\n", o.settle_ms);
  nlohmann::json jrows = nlohmann::json::array();
  for (const Row& r : rows) {
    std::printf("%-22s", r.policy.c_str());
    std::vector<double> ratio;
    for (size_t k = 0; k < r.achieved.size(); ++k) {
      double best = 0;
      for (const Row& x : rows) {
        if (x.policy.rfind("static:", 0) == 0 && k < x.achieved.size() && x.error.empty()) best = std::max(best, carried(x, k));
      }
      ratio.push_back(best > 0 ? carried(r, k) / best : 0);
      std::printf(" %7.2f/%-6.2f (%.2f)", r.achieved[k], r.offered[k], ratio.back());
    }
    std::printf("  switches %zu, settle max %.1f ms, %.0f W, p99 %.0f us, not taken %.1f%%, %s\n", r.switches,
                r.settle_max_ms, r.watts, r.p99_us, r.offered_packets ? 100.0 * (1 - double(r.received) / r.offered_packets) : 0.0,
                r.error.empty() ? "0 reordered, 0 lost" : r.error.c_str());
    jrows.push_back({{"schedule", r.policy}, {"segments_offered_mpps", r.offered}, {"segments_achieved_mpps", r.achieved},
                     {"ratio_to_best_static", ratio}, {"switches", r.switches}, {"settle_max_ms", r.settle_max_ms},
                     {"watts", r.watts}, {"p99_us", r.p99_us}, {"reordered", r.reordered}, {"lost", r.lost},
                     {"received", r.received}, {"offered", r.offered_packets}, {"rx_backlog_hwm", r.backlog_hwm}, {"share", r.share},
                     {"error", r.error}, {"timeline", r.timeline}});
  }
  if (!o.json.empty()) {
    nlohmann::json seg = nlohmann::json::array();
    for (const RateSegment& r : rate) seg.push_back({{"start_ms", r.start_ms}, {"mpps", r.pps / 1e6}});
    bench::write_json(o.json, {{"command", "scenario"}, {"kind", o.kind}, {"what", plan.what}, {"app", app.name()},
                               {"gen", o.gen}, {"devices", ids}, {"dispatchers", o.workers}, {"lane_queue", o.lane_queue}, {"scale_mpps", scale}, {"segment_traffic", plan.phase},
                               {"scale", scale_how}, {"segments", seg}, {"hog_from_ms", plan.hog_from_ms},
                               {"hog_to_ms", plan.hog_to_ms}, {"settle_ms", o.settle_ms},
                               {"machine", bench::machine_json()}, {"rows", jrows}});
  }
  for (const Row& r : rows) {
    if (!r.error.empty()) return 1;
  }
  return 0;
}

}  // namespace

void register_scenario(CLI::App& app) {
  auto o = std::make_shared<ScenarioOptions>();
  CLI::App* c = app.add_subcommand("scenario", "the scheduler over time: load steps, bursts, or CPU cores or the GPU taken "
                                                "away; each device alone, static splits and the controllers, per segment");
  c->add_option("kind", o->kind, "steps, bursts, cpu-hog, gpu-hog, flip or custom")
      ->required()
      ->check(CLI::IsMember({"steps", "bursts", "cpu-hog", "gpu-hog", "flip", "custom"}));
  add_app_options(c, o->table);
  c->add_option("--gen", o->gen, "the traffic (tandem gen spec), looped as the load needs")->capture_default_str();
  c->add_option("--device", o->device, "the devices, as tandem run --device with --schedule (e.g. cpu:8,gpu)")
      ->capture_default_str();
  c->add_option("--policies", o->policies,
                "rows: --schedule values, or koromilas, separated by ';' (default: each device alone, splits 1:3, "
                "1:1, 3:1 of two devices, throughput, koromilas, nba)");
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
  c->add_option("--scale", o->scale, "the unit of the offered load, Mpps, or auto (the best device alone, measured first, paced)")
      ->capture_default_str();
  c->add_option("--step-ms", o->step_ms, "the length of a step (bursts: of the base load before the first)")
      ->capture_default_str()->check(FiniteRange(20.0, 60000.0));
  c->add_option("--settle-ms", o->settle_ms, "each segment's first part, left out of its figure")
      ->capture_default_str()->check(FiniteRange(0.0, 60000.0));
  c->add_option("--grace-ms", o->grace_ms, "after the load's end, the time left to take what arrived; the rest is not taken")
      ->capture_default_str()->check(FiniteRange(0.0, 600000.0));
  c->add_option("--segments", o->segments, "custom: the offered load, MS:FRACTION,... of the scale, ending with 0");
  c->add_option("--hog-cores", o->hog_cores, "cpu-hog: the cores the hog takes (a spinning thread pinned on each)");
  c->add_option("--flip", o->flip, "flip: FLAG=A/B, the app flag that makes the second traffic (e.g. match-heavy=0/0.3)");
  c->add_option("--json", o->json, "write the report, with each row's timeline, here");
  c->callback([o] {
    const int rc = run_scenario(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

void register_hog_gpu(CLI::App& app) {
  auto seconds = std::make_shared<double>(10);
  CLI::App* c = app.add_subcommand("hog-gpu", "(scenarios) keep the GPU busy for a while");
  c->group("");  // hidden: `tandem scenario gpu-hog` starts it
  c->add_option("--seconds", *seconds, "how long")->check(FiniteRange(0.0, 3600.0));
  c->callback([seconds] { bench::run_gpu_hog(*seconds, 2.0); });
}

}  // namespace tandem::cli
