// The controllers on a simulated plant, ticks of 10 ms, no threads: a CPU group and a GPU with
// queues, a NIC backlog in front of them, an offered load in steps (2 -> 10 -> 40 -> 10 -> 2 Mpps,
// in arbitrary units) with bursts, and the GPU losing 60% of its capacity in the middle of the
// 40 Mpps step. Each is compared, window by window, with the best static split for that window
// (every split in 1% steps, run on the same plant with the same arrivals, entering each window with
// empty queues so that none is credited with draining what it left behind in the one before).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>

#include "sched/controller.h"

namespace tandem::sched {
namespace {

constexpr double kTick = 0.01;
constexpr double kQueueMax = 65536;      // frames a device's queue holds; full, the dispatcher waits on it
constexpr double kBacklogMax = 1 << 20;  // frames the NIC queues hold; beyond, they are dropped

struct DeviceSpec {
  std::string id;
  DeviceKind kind;
  double peak_pps;  // capacity = peak x batch / (batch + knee): batching amortises a per-batch cost
  double knee;
  uint32_t batch;                     // the initial batch target
  double batch_latency_ns;            // a batch's fixed latency (launch, PCIe)
  double parked_w, active_w, full_w;  // no share; a share but no load; full load (linear between)
};

const std::vector<DeviceSpec> kDevices = {
    {"cpu0", DeviceKind::kCpu, 14e6, 0, 64, 2'000, 10, 40, 80},
    {"gpu0", DeviceKind::kGpu, 30e6 * (1024 + 64) / 1024.0, 64, 1024, 50'000, 25, 100, 250},  // 30 Mpps at 1024
};

class Plant {
 public:
  Plant(std::vector<DeviceSpec> spec, uint64_t seed, double noise)
      : spec_(std::move(spec)),
        rng_(seed),
        noise_(noise),
        share_(spec_.size(), 1.0 / spec_.size()),
        batch_(spec_.size()),
        scale_(spec_.size(), 1.0),
        queue_(spec_.size(), 0) {
    for (size_t d = 0; d < spec_.size(); ++d) batch_[d] = spec_[d].batch;
  }
  void set_share(std::vector<double> s) { share_ = std::move(s); }
  void set_batch(size_t d, uint32_t b) { batch_[d] = b; }
  void scale_capacity(size_t d, double f) { scale_[d] = f; }
  void empty_queues() {
    std::fill(queue_.begin(), queue_.end(), 0);
    backlog_ = 0;
  }
  void apply(const Decision& dec) {
    if (!dec.change) return;
    share_ = dec.share;
    for (size_t d = 0; d < dec.batch.size(); ++d)
      if (dec.batch[d] > 0) batch_[d] = dec.batch[d];
  }
  double capacity(size_t d) const { return scale_[d] * spec_[d].peak_pps * batch_[d] / (batch_[d] + spec_[d].knee); }
  double max_queue() const { return *std::max_element(queue_.begin(), queue_.end()); }
  double dropped() const { return dropped_; }

  Observation step(double offered_pps) {
    Observation obs;
    obs.t_s = ++ticks_ * kTick;
    obs.tick_s = kTick;
    obs.mean_frame_bytes = 64;
    const double arrived = offered_pps * kTick * std::uniform_real_distribution<double>(1 - noise_, 1 + noise_)(rng_);
    backlog_ += arrived;
    // The dispatcher hands frames out in share proportions until the NIC queue is empty or some
    // device's queue is full: then it waits, and the other devices starve too.
    double dispatched = backlog_;
    for (size_t d = 0; d < spec_.size(); ++d)
      if (share_[d] > 0) dispatched = std::min(dispatched, (kQueueMax - queue_[d] + capacity(d) * kTick) / share_[d]);
    backlog_ -= dispatched;
    if (backlog_ > kBacklogMax) dropped_ += backlog_ - kBacklogMax, backlog_ = kBacklogMax;
    obs.offered_pps = arrived / kTick;
    obs.backlog = backlog_;
    for (size_t d = 0; d < spec_.size(); ++d) {
      const DeviceSpec& s = spec_[d];
      const double cap = capacity(d), before = queue_[d];
      queue_[d] += share_[d] * dispatched;
      const double done = std::min(queue_[d], cap * kTick);
      queue_[d] -= done;
      const double u = done / (cap * kTick);
      DeviceObs o;
      o.id = s.id;
      o.kind = s.kind;
      o.share = share_[d];
      o.batch = batch_[d];
      o.pps = done / kTick;
      o.bps = o.pps * obs.mean_frame_bytes;
      o.busy = s.kind == DeviceKind::kGpu ? -1 : u;
      o.saturated = queue_[d] > before + 1 || queue_[d] >= 0.99 * kQueueMax;
      o.watts = share_[d] <= 0 && done <= 0 ? s.parked_w : s.active_w + (s.full_w - s.active_w) * u;
      o.p50_ns = s.batch_latency_ns + (batch_[d] + queue_[d]) / cap * 1e9;
      o.p99_ns = 1.5 * o.p50_ns;
      obs.achieved_pps += o.pps;
      energy_j_ += o.watts * kTick;
      obs.dev.push_back(o);
    }
    return obs;
  }
  double energy_j() const { return energy_j_; }

 private:
  std::vector<DeviceSpec> spec_;
  std::mt19937_64 rng_;
  double noise_;
  std::vector<double> share_;
  std::vector<uint32_t> batch_;
  std::vector<double> scale_;
  std::vector<double> queue_;
  double backlog_ = 0, dropped_ = 0, energy_j_ = 0;
  int ticks_ = 0;
};

// ---- the scenario -------------------------------------------------------------------------------
constexpr int kTicks = 1000;
constexpr int kDropTick = 500;  // the GPU keeps 40% of its capacity from here on
struct Window {
  int begin, end;
  const char* what;
};
const Window kWindows[] = {{0, 200, "2 Mpps"},    {200, 400, "10 Mpps + burst"},
                           {400, 500, "40 Mpps"}, {500, 600, "40 Mpps, gpu at 40%"},
                           {600, 800, "10 Mpps"}, {800, 1000, "2 Mpps + burst"}};
constexpr int kReactTicks = 10;  // a window is judged after this many ticks

double offered_at(int t) {
  if (t >= 300 && t < 305) return 20e6;  // bursts
  if (t >= 880 && t < 883) return 10e6;
  return t < 200 ? 2e6 : t < 400 ? 10e6 : t < 600 ? 40e6 : t < 800 ? 10e6 : 2e6;
}

struct Trace {
  std::vector<double> achieved, offered, backlog, max_queue, dropped, watts;
  std::vector<std::vector<double>> share;
  std::string failure;  // the first invalid decision
  double mean(const std::vector<double>& v, int b, int e) const {
    return std::accumulate(v.begin() + b, v.begin() + e, 0.0) / (e - b);
  }
  double rate(const Window& w) const { return mean(achieved, w.begin + kReactTicks, w.end); }
};

// `c` decides each tick (starting from an equal split); without one, `fixed` stays, and in the
// scenario the plant enters each window empty (what a static split does in a step, not what it
// left from the one before).
// SCHED_SIM_VERBOSE=1 prints every change and its reason.
Trace run(Controller* c, std::vector<double> fixed, int ticks = kTicks, double (*offered)(int) = offered_at,
          bool drop = true) {
  Plant plant(kDevices, 42, 0.03);
  if (!fixed.empty()) plant.set_share(fixed);
  const bool verbose = c && std::getenv("SCHED_SIM_VERBOSE");
  Trace tr;
  for (int t = 0; t < ticks; ++t) {
    if (drop && t == kDropTick) plant.scale_capacity(1, 0.4);
    if (!c && offered == offered_at &&
        std::any_of(std::begin(kWindows), std::end(kWindows), [&](const Window& w) { return w.begin == t; }))
      plant.empty_queues();
    const double energy_before = plant.energy_j();
    const Observation obs = plant.step(offered(t));
    tr.achieved.push_back(obs.achieved_pps);
    tr.offered.push_back(obs.offered_pps);
    tr.backlog.push_back(obs.backlog);
    tr.max_queue.push_back(plant.max_queue());
    tr.dropped.push_back(plant.dropped());
    tr.watts.push_back((plant.energy_j() - energy_before) / kTick);
    std::vector<double> held;
    for (const DeviceObs& d : obs.dev) held.push_back(d.share);
    tr.share.push_back(held);
    if (!c) continue;
    const Decision d = c->decide(obs);
    const std::string bad = validate_decision(obs, d);
    if (!bad.empty() && tr.failure.empty()) tr.failure = "tick " + std::to_string(t) + ": " + bad;
    if (verbose && d.change) std::printf("%4d %-20s %s\n", t, c->name().c_str(), d.reason.c_str());
    plant.apply(d);
  }
  return tr;
}

// Per window, the static split with the most throughput there: its rate and its trace.
struct BestStatic {
  std::vector<double> rate;
  std::vector<int> cpu_percent;
  std::vector<Trace> trace;
};
const BestStatic& best_static() {
  static const BestStatic best = [] {
    BestStatic b;
    b.rate.assign(std::size(kWindows), 0);
    b.cpu_percent.assign(std::size(kWindows), 0);
    b.trace.resize(std::size(kWindows));
    for (int i = 0; i <= 100; ++i) {
      Trace tr = run(nullptr, {i / 100.0, 1 - i / 100.0});
      for (size_t w = 0; w < b.rate.size(); ++w)
        if (tr.rate(kWindows[w]) > b.rate[w]) b.rate[w] = tr.rate(kWindows[w]), b.cpu_percent[w] = i, b.trace[w] = tr;
    }
    return b;
  }();
  return best;
}

// Prints each window's throughput against the best static one; returns the ratios.
std::vector<double> report(const std::string& name, const Trace& tr) {
  std::vector<double> ratio;
  for (size_t w = 0; w < std::size(kWindows); ++w) {
    const BestStatic& best = best_static();
    ratio.push_back(tr.rate(kWindows[w]) / best.rate[w]);
    std::printf("%-20s %-20s %6.2f Mpps, best static (cpu %3d%%) %6.2f: %5.1f%%\n", name.c_str(), kWindows[w].what,
                tr.rate(kWindows[w]) / 1e6, best.cpu_percent[w], best.rate[w] / 1e6, 100 * ratio.back());
  }
  return ratio;
}

void expect_tracks_best_static(const std::string& name, const Trace& tr) {
  EXPECT_EQ(tr.failure, "");
  const std::vector<double> ratio = report(name, tr);
  for (size_t w = 0; w < ratio.size(); ++w) {
    EXPECT_GE(ratio[w], 0.95) << name << " in " << kWindows[w].what;
    // Reacts: within kReactTicks of the window's start it carries 95% of what the best static split does.
    const int b = kWindows[w].begin;
    const std::vector<double>& best = best_static().trace[w].achieved;
    bool reached = false;
    for (int k = 0; k <= kReactTicks && !reached; ++k) reached = tr.achieved[b + k] >= 0.95 * best[b + k];
    EXPECT_TRUE(reached) << name << " slow to react in " << kWindows[w].what;
  }
}

// Below capacity (every window but the 40 Mpps ones) the queues stay short and nothing is lost.
void expect_bounded_queues(const std::string& name, const Trace& tr) {
  for (int w : {0, 1, 4, 5}) {
    const Window& win = kWindows[w];
    for (int t = win.begin + kReactTicks; t < win.end; ++t) {
      EXPECT_LT(tr.backlog[t], 0.01 * tr.offered[t] * kTick) << name << " at tick " << t;
      EXPECT_LT(tr.max_queue[t], kQueueMax / 2) << name << " at tick " << t;
    }
    EXPECT_EQ(tr.dropped[win.end - 1], tr.dropped[win.begin + kReactTicks]) << name << " in " << win.what;
  }
}

TEST(SchedSim, ModelThroughputTracksBestStaticSplit) {
  auto c = make_model_controller({.policy = Policy::kThroughput});
  const Trace tr = run(c.get(), {});
  expect_tracks_best_static(c->name(), tr);
  expect_bounded_queues(c->name(), tr);
}

TEST(SchedSim, ModelEnergyCarriesTheLoad) {
  auto c = make_model_controller({.policy = Policy::kEnergy});
  const Trace tr = run(c.get(), {});
  EXPECT_EQ(tr.failure, "");
  report(c->name(), tr);
  for (int t = 420; t < 500; ++t) EXPECT_GT(tr.share[t][1], 0) << "40 Mpps needs the GPU, tick " << t;
  for (int t = 100; t < 200; ++t) EXPECT_EQ(tr.share[t][1], 0) << "2 Mpps fits the CPU, tick " << t;
}

// Energy at a steady 2 Mpps from tick 50 on against the best single device; it must carry the load.
void expect_energy_at_low_load(Controller& c) {
  auto low = [](int) { return 2e6; };
  const int ticks = 300, from = 50;
  auto joules = [&](const Trace& tr) { return std::accumulate(tr.watts.begin() + from, tr.watts.end(), 0.0) * kTick; };
  const Trace tr = run(&c, {}, ticks, low, false);
  const Trace cpu = run(nullptr, {1, 0}, ticks, low, false), gpu = run(nullptr, {0, 1}, ticks, low, false);
  std::printf("%s at 2 Mpps: %.1f J, cpu only %.1f J, gpu only %.1f J\n", c.name().c_str(), joules(tr), joules(cpu),
              joules(gpu));
  EXPECT_EQ(tr.failure, "");
  EXPECT_LE(joules(tr), std::min(joules(cpu), joules(gpu)) * (1 + 1e-9));
  EXPECT_GE(tr.mean(tr.achieved, from, ticks), 0.99 * tr.mean(tr.offered, from, ticks));
}

TEST(SchedSim, ModelEnergyAtLowLoadCostsNoMoreThanTheBestSingleDevice) {
  expect_energy_at_low_load(*make_model_controller({.policy = Policy::kEnergy}));
}

// The profile table (section 4.1): every split in 5% steps with the GPU at batch 256 or 1024, run
// unpaced (throughput, full power), idle, and paced at half its throughput (latency).
std::vector<ProfileEntry> profile_plant() {
  std::vector<ProfileEntry> table;
  for (int i = 0; i <= 20; ++i) {
    for (uint32_t gpu_batch : {256u, 1024u}) {
      if (i == 20 && gpu_batch == 256) continue;  // no GPU share: one entry
      ProfileEntry e;
      e.share = {i / 20.0, 1 - i / 20.0};
      e.batch = {i > 0 ? 64u : 0u, i < 20 ? gpu_batch : 0u};
      struct Measured {
        double pps = 0, watts = 0, p99_ns = 0;
      };
      auto measure = [&](double offered) {  // the last 20 of 30 ticks, without noise
        Plant p(kDevices, 1, 0);
        p.set_share(e.share);
        p.set_batch(1, gpu_batch);
        Measured m;
        for (int t = 0; t < 30; ++t) {
          const double before = p.energy_j();
          const Observation obs = p.step(offered);
          if (t < 10) continue;
          m.pps += obs.achieved_pps / 20, m.watts += (p.energy_j() - before) / kTick / 20;
          for (const DeviceObs& d : obs.dev) m.p99_ns = std::max(m.p99_ns, d.share > 0 ? d.p99_ns : 0.0);
        }
        return m;
      };
      const Measured full = measure(1e9), idle = measure(0);
      e.mpps_max = full.pps / 1e6;
      e.watts_max = full.watts;
      e.watts_idle = idle.watts;
      e.latency_at_mpps = e.mpps_max / 2;
      e.p99_us = measure(e.latency_at_mpps * 1e6).p99_ns / 1e3;
      e.p50_us = e.p99_us / 1.5;
      table.push_back(e);
    }
  }
  return table;
}

TEST(SchedSim, KoromilasWithAProfiledTableTracksBestStaticSplit) {
  auto c = make_koromilas_controller(profile_plant(), {.policy = Policy::kThroughput});
  const Trace tr = run(c.get(), {});
  expect_tracks_best_static(c->name(), tr);
  expect_bounded_queues(c->name(), tr);
}

TEST(SchedSim, KoromilasEnergyAtLowLoadCostsNoMoreThanTheBestSingleDevice) {
  expect_energy_at_low_load(*make_koromilas_controller(profile_plant(), {.policy = Policy::kEnergy}));
}

TEST(SchedSim, NbaIsReported) {
  auto c = make_nba_controller();
  const Trace tr = run(c.get(), {});
  EXPECT_EQ(tr.failure, "");
  report(c->name(), tr);
}

}  // namespace
}  // namespace tandem::sched
