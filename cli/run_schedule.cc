#include "cli/run_schedule.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <thread>

#include "cli/commands.h"
#include "gpu/gpu_runtime.h"
#include "sched/controller.h"
#include "sched/energy.h"

namespace tandem::cli {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  for (;;) {
    const size_t e = s.find(sep, pos);
    out.push_back(s.substr(pos, e == std::string::npos ? std::string::npos : e - pos));
    if (e == std::string::npos) return out;
    pos = e + 1;
  }
}

double number(const std::string& what, const std::string& s, double lo, double hi) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != s.size() || !std::isfinite(v) || v < lo || v > hi) {
    char range[96];
    std::snprintf(range, sizeof range, "%g to %g", lo, hi);
    throw UsageError(what + ": '" + s + "' is not a number from " + range);
  }
  return v;
}

int whole(const std::string& what, const std::string& s, int lo, int hi) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos || std::stoi(s) < lo ||
      std::stoi(s) > hi) {
    throw UsageError(what + ": '" + s + "' is not a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
  }
  return std::stoi(s);
}

const char* kind_name(sched::DeviceKind k) {
  return k == sched::DeviceKind::kGpu ? "gpu" : k == sched::DeviceKind::kSim ? "sim" : "cpu";
}

// The modelled CPU power needs the cores at work: the dispatchers always, and each group's busy
// fraction of its threads. Set by the scheduler thread each tick, read by the sampler.
std::atomic<double> g_active_cores{0};

}  // namespace

void add_schedule_flags(CLI::App* run, ScheduleFlags& f) {
  run->add_option("--schedule", f.schedule,
                  "run on several devices at once (--device lists them, e.g. cpu,gpu), splitting traffic by "
                  "flow-hash shard: throughput, latency or energy (adaptive), nba (NBA's hill-climbing balancer), "
                  "or static:S1,S2,... (fixed shares per device)");
  run->add_option("--controller", f.controller,
                  "--schedule throughput|latency|energy: model (each device's measured capacity, solved for the "
                  "split, smoothed)")
      ->capture_default_str()->check(CLI::IsMember({"model"}));
  run->add_option("--rate-schedule", f.rate_schedule,
                  "offered load changing over time, MS:MPPS,... from 0 ms (e.g. 0:5,2000:40,4000:5); replaces --rate-mpps");
  run->add_option("--tick-ms", f.tick_ms, "--schedule: the scheduler's period")
      ->capture_default_str()->check(CLI::Range(1.0, 1000.0));
  run->add_option("--cpu-batch", f.cpu_batch, "--schedule: frames per batch of a CPU group (at most)")
      ->capture_default_str()->check(CLI::Range(1u, 4096u));
  run->add_option("--cpu-idle-watts", f.cpu_idle_watts,
                  "--schedule, where no RAPL or perf energy counter is readable: the CPU power model's idle watts")
      ->capture_default_str()->check(CLI::Range(0.0, 10000.0));
  run->add_option("--cpu-core-watts", f.cpu_core_watts, "--schedule: the CPU power model's watts per busy core")
      ->capture_default_str()->check(CLI::Range(0.0, 1000.0));
}

ScheduledRun::ScheduledRun(const ScheduleFlags& f, const std::string& device_list, const ForwardApp& app,
                           int dispatchers, const std::vector<int>& cores, double rate_mpps)
    : f_(f) {
  cfg_.dispatchers = dispatchers;
  cfg_.tick_ms = f.tick_ms;
  cfg_.cpu_batch = f.cpu_batch;
  if (!f.rate_schedule.empty()) {
    try {
      cfg_.rate = parse_rate_schedule(f.rate_schedule);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--rate-schedule: ") + e.what());
    }
  } else if (rate_mpps > 0) {
    cfg_.rate = {{0, rate_mpps * 1e6}};
  }
  // Threads for CPU groups: every hardware thread but the dispatchers' and one for the scheduler,
  // the sampler and the GPU's housekeeping (none of which spin).
  const int hw = std::max(1u, std::thread::hardware_concurrency());
  const int spare = std::max(1, hw - dispatchers - 1);
  std::string why_no_gpu;
  const bool gpu_ok = gpu::available(&why_no_gpu);
  std::vector<std::string> tokens = split(device_list, ',');
  if (device_list == "auto") {
    if (gpu_ok) {
      tokens = {"cpu", "gpu"};
    } else {
      tokens = {"cpu", "cpu"};
      note_ = "no GPU (" + why_no_gpu + "): scheduling among 2 CPU worker groups";
    }
  }
  int unsized = 0, sized = 0;
  for (const std::string& t : tokens) {
    if (t == "cpu") ++unsized;
    if (t.rfind("cpu:", 0) == 0) sized += whole("--device " + t, t.substr(4), 1, 1024);
  }
  const int per_unsized = unsized ? std::max(1, (spare - sized) / unsized) : 0;
  size_t next_core = std::min<size_t>(cores.size(), size_t(dispatchers));
  int cpus = 0, gpus = 0, sims = 0;
  for (const std::string& t : tokens) {
    DeviceSpec d;
    if (t == "cpu" || t.rfind("cpu:", 0) == 0) {
      d.kind = sched::DeviceKind::kCpu;
      d.id = "cpu" + std::to_string(cpus++);
      d.threads = t == "cpu" ? per_unsized : whole("--device " + t, t.substr(4), 1, 1024);
    } else if (t == "gpu" || t == "gpu0") {
      if (!gpu_ok) throw UsageError("--device " + device_list + ": no usable GPU (" + why_no_gpu + ")");
      if (gpus++) throw UsageError("--device " + device_list + ": one GPU device per run on this host");
      d.kind = sched::DeviceKind::kGpu;
      d.id = "gpu0";
    } else if (t.rfind("gpu", 0) == 0) {
      throw UsageError("--device " + t + ": only gpu0 is scheduled so far (several GPUs are not supported yet)");
    } else if (t.rfind("sim:", 0) == 0) {
      // sim:A_US/NS_PER_BYTE[/THREADS]: a device whose batches take A us + NS_PER_BYTE per byte.
      const std::vector<std::string> p = split(t.substr(4), '/');
      if (p.size() < 2 || p.size() > 3) throw UsageError("--device " + t + ": expected sim:A_US/NS_PER_BYTE[/THREADS]");
      d.kind = sched::DeviceKind::kSim;
      d.id = "sim" + std::to_string(sims++);
      d.cost.a_ns = number("--device " + t, p[0], 0, 1e6) * 1000;  // at most 1 s per batch
      d.cost.ns_per_byte = number("--device " + t, p[1], 0, 1000);
      d.threads = p.size() == 3 ? whole("--device " + t, p[2], 1, 1024) : 1;
    } else {
      throw UsageError("--device " + device_list + ": '" + t +
                       "' is not a device (auto, cpu, cpu:THREADS, gpu, sim:A_US/NS_PER_BYTE[/THREADS])");
    }
    if (d.kind != sched::DeviceKind::kGpu) {
      for (int k = 0; k < d.threads && next_core < cores.size(); ++k) d.cores.push_back(cores[next_core++]);
    }
    cfg_.devices.push_back(d);
  }
  if (cfg_.devices.empty()) throw UsageError("--device: no devices");
  if (cfg_.devices.size() > 16) throw UsageError("--device " + device_list + ": at most 16 devices");
  int threads = 0;
  for (const DeviceSpec& d : cfg_.devices) threads += d.threads;
  if (threads > 4 * hw) {
    throw UsageError("--device " + device_list + ": " + std::to_string(threads) + " threads in CPU groups on " +
                     std::to_string(hw) + " hardware threads (at most 4 per hardware thread)");
  }
  if (!cores.empty()) cfg_.dispatcher_cores.assign(cores.begin(), cores.begin() + std::min<size_t>(cores.size(), dispatchers));

  const size_t nd = cfg_.devices.size();
  const std::string& s = f.schedule;
  if (s == "throughput" || s == "latency" || s == "energy") {
    sched::ModelOptions mo;
    mo.policy = sched::parse_policy(s);
    controller_ = sched::make_model_controller(mo);
    controller_desc_ = "model controller, policy " + s;
  } else if (s == "nba") {
    controller_ = sched::make_nba_controller();
    controller_desc_ = "NBA's hill-climbing balancer (baseline)";
  } else if (s.rfind("static:", 0) == 0) {
    const std::vector<std::string> p = split(s.substr(7), ',');
    if (p.size() != nd) {
      throw UsageError("--schedule " + s + ": one share per device (" + std::to_string(nd) + " devices)");
    }
    std::vector<double> share;
    double sum = 0;
    for (const std::string& x : p) {
      share.push_back(number("--schedule " + s, x, 0, 1e9));
      sum += share.back();
    }
    if (sum <= 0) throw UsageError("--schedule " + s + ": the shares must not all be 0");
    cfg_.initial_share = share;
    controller_desc_ = "static shares";
  } else {
    throw UsageError("--schedule " + s + ": expected throughput, latency, energy, nba or static:S1,S2,...");
  }
  cfg_.controller = controller_.get();
  (void)app;
}

ScheduledRun::~ScheduledRun() = default;

std::string ScheduledRun::describe() const {
  std::string s = "scheduled (" + controller_desc_ + "): ";
  for (size_t d = 0; d < cfg_.devices.size(); ++d) {
    const DeviceSpec& x = cfg_.devices[d];
    s += (d ? ", " : "") + x.id;
    if (x.kind == sched::DeviceKind::kGpu) {
      s += " (" + gpu::device_info().name + ", resident kernel, batches of up to " + std::to_string(cfg_.gpu_ring.batch) + ")";
    } else {
      s += " (" + std::to_string(x.threads) + " thread" + (x.threads > 1 ? "s" : "") +
           (x.kind == sched::DeviceKind::kSim ? ", simulated" : "") + ", batches of up to " + std::to_string(cfg_.cpu_batch) + ")";
    }
  }
  return s + "; " + std::to_string(cfg_.dispatchers) + " receive thread" + (cfg_.dispatchers > 1 ? "s" : "") +
         " (dispatchers)";
}

void ScheduledRun::start_energy() {
  std::vector<std::unique_ptr<sched::EnergyMeter>> meters;
  for (const DeviceSpec& d : cfg_.devices) {
    if (d.kind != sched::DeviceKind::kGpu) continue;
    std::string why;
    auto m = sched::open_nvml_meter(gpu::device_info().pci_bus_id, &why);
    if (m) {
      gpu_meter_ = static_cast<int>(meters.size());
      meters.push_back(std::move(m));
    } else {
      energy_tried_ += "GPU: " + why + "; ";
    }
  }
  sched::CpuPowerModel model{f_.cpu_idle_watts, f_.cpu_core_watts};
  std::string tried;
  meters.push_back(sched::open_cpu_meter(model, [] { return g_active_cores.load(); }, &tried));
  if (!tried.empty()) energy_tried_ += "CPU: " + tried;
  g_active_cores.store(cfg_.dispatchers);
  const int dispatchers = cfg_.dispatchers;
  std::vector<DeviceSpec> devs = cfg_.devices;
  cfg_.observe = [this, dispatchers, devs](sched::Observation& o) {
    double active = dispatchers;
    const sched::EnergySampler::Point p = energy_->latest();
    for (size_t d = 0; d < o.dev.size(); ++d) {
      sched::DeviceObs& x = o.dev[d];
      if (x.kind == sched::DeviceKind::kGpu) {
        if (gpu_meter_ >= 0 && size_t(gpu_meter_) < p.watts.size()) x.watts = p.watts[gpu_meter_];
      } else if (x.busy >= 0) {
        active += x.busy * devs[d].threads;
        x.watts = f_.cpu_core_watts * x.busy * devs[d].threads;
      }
    }
    g_active_cores.store(active);
  };
  for (size_t i = 0; i < meters.size(); ++i) energy_sources_.push_back(meters[i]->source());
  energy_ = std::make_unique<sched::EnergySampler>(std::move(meters));
  energy_->start();
}

void ScheduledRun::stop_energy() {
  if (energy_) energy_->stop();
}

void ScheduledRun::print(const HeteroResult& r, double seconds) const {
  uint64_t all = 0;
  for (const DeviceReport& d : r.devices) all += d.packets;
  for (const DeviceReport& d : r.devices) {
    std::printf("device %s: %.1f%% of packets (%.2f Mpps), batches of %.0f on average", d.id.c_str(),
                all ? 100.0 * d.packets / all : 0.0, seconds > 0 ? d.packets / seconds / 1e6 : 0.0, d.mean_batch);
    if (d.kind != sched::DeviceKind::kGpu && seconds > 0) {
      const int threads = cfg_.devices.size() ? [&] {
        for (const DeviceSpec& s : cfg_.devices) if (s.id == d.id) return s.threads;
        return 1;
      }() : 1;
      std::printf(", busy %.0f%%", 100.0 * d.busy_seconds / (seconds * threads));
    }
    std::printf(", ring high-water %u of %u slots%s\n", d.ring_hwm, d.ring_slots, d.failed ? ", FAILED" : "");
    if (d.failed) std::printf("device %s error: %s\n", d.id.c_str(), d.error.c_str());
  }
  std::vector<double> settle;
  for (const SwitchRecord& s : r.switches) {
    if (s.settle_ms >= 0) settle.push_back(s.settle_ms);
  }
  std::sort(settle.begin(), settle.end());
  std::printf("switches: %zu", r.switches.size());
  if (!settle.empty()) {
    std::printf(" (settled in median %.2f ms, max %.2f ms, from decision to every moved shard on its new device)",
                settle[settle.size() / 2], settle.back());
  }
  std::printf("\n");
  std::printf("reordered: %llu\n", static_cast<unsigned long long>(r.reordered));
  std::printf("lost: %llu (of %llu packets given a per-flow sequence number); rx queue high-water %llu packets\n",
              static_cast<unsigned long long>(r.lost), static_cast<unsigned long long>(r.stamped),
              static_cast<unsigned long long>(r.rx_backlog_hwm));
  if (energy_) {
    // The meters run from before the first packet to after the last: their own span gives the power.
    const double joules = energy_joules(), span = energy_->latest().t_s;
    const double mbit = r.run.wire_bytes * 8 / 1e6;
    std::printf("energy: %.1f J over %.2f s (the run and its setup), %.1f W, %.4f J/Mbit on the wire; sources: %s\n",
                joules, span, span > 0 ? joules / span : 0.0, mbit > 0 ? joules / mbit : 0.0, energy_sources().c_str());
  }
}

double ScheduledRun::energy_joules() const {
  double joules = 0;
  for (size_t i = 0; energy_ && i < energy_sources_.size(); ++i) joules += energy_->joules(i);
  return joules;
}

double ScheduledRun::energy_watts() const {
  const double span = energy_ ? energy_->latest().t_s : 0;
  return span > 0 ? energy_joules() / span : 0;
}

std::string ScheduledRun::energy_sources() const {
  std::string src;
  for (size_t i = 0; i < energy_sources_.size(); ++i) src += (i ? "; " : "") + energy_sources_[i];
  if (!energy_tried_.empty()) src += " (not used: " + energy_tried_ + ")";
  return src;
}

nlohmann::json ScheduledRun::json(const HeteroResult& r, double seconds) const {
  nlohmann::json devs = nlohmann::json::array();
  uint64_t all = 0;
  for (const DeviceReport& d : r.devices) all += d.packets;
  for (const DeviceReport& d : r.devices) {
    devs.push_back({{"id", d.id}, {"kind", kind_name(d.kind)}, {"describe", d.describe},
                    {"share", all ? double(d.packets) / all : 0.0}, {"packets", d.packets}, {"bytes", d.bytes},
                    {"mpps", seconds > 0 ? d.packets / seconds / 1e6 : 0.0}, {"batches", d.batches},
                    {"batch_avg", d.mean_batch}, {"busy_seconds", d.busy_seconds}, {"ring_hwm", d.ring_hwm},
                    {"ring_slots", d.ring_slots}, {"full_waits", d.full_waits}, {"failed", d.failed}});
  }
  nlohmann::json sw = nlohmann::json::array();
  for (const SwitchRecord& s : r.switches) {
    sw.push_back({{"t_ms", s.t_ms}, {"settle_ms", s.settle_ms}, {"moved", s.moved}, {"reason", s.reason}, {"share", s.share}});
  }
  nlohmann::json tl = nlohmann::json::array();
  for (const TimelinePoint& p : r.timeline) {
    tl.push_back({{"t_s", p.t_s}, {"offered_mpps", p.offered_mpps}, {"achieved_mpps", p.achieved_mpps},
                  {"backlog", p.backlog}, {"share", p.share}, {"mpps", p.mpps}, {"batch", p.batch}, {"watts", p.watts}});
  }
  nlohmann::json j = {{"policy", f_.schedule}, {"controller", controller_desc_}, {"devices", devs},
                      {"dispatchers", cfg_.dispatchers}, {"reordered", r.reordered}, {"lost", r.lost},
                      {"stamped", r.stamped}, {"rx_backlog_hwm", r.rx_backlog_hwm}, {"switches", sw}, {"timeline", tl}};
  if (energy_) {
    double joules = 0;
    nlohmann::json src = nlohmann::json::array();
    for (size_t i = 0; i < energy_sources_.size(); ++i) {
      joules += energy_->joules(i);
      src.push_back({{"source", energy_sources_[i]}, {"joules", energy_->joules(i)}});
    }
    const double span = energy_->latest().t_s;
    j["energy"] = {{"joules", joules}, {"seconds", span}, {"watts", span > 0 ? joules / span : 0.0},
                   {"j_per_mbit", r.run.wire_bytes ? joules / (r.run.wire_bytes * 8 / 1e6) : 0.0}, {"meters", src},
                   {"not_used", energy_tried_}};
  }
  return j;
}

void add_hetero(HeteroResult& into, const HeteroResult& r) {
  into.run.add(r.run);
  if (into.devices.empty()) {
    into.devices = r.devices;
  } else {
    for (size_t d = 0; d < into.devices.size() && d < r.devices.size(); ++d) {
      DeviceReport& a = into.devices[d];
      const DeviceReport& b = r.devices[d];
      a.packets += b.packets;
      a.bytes += b.bytes;
      a.batches += b.batches;
      a.busy_seconds += b.busy_seconds;
      a.full_waits += b.full_waits;
      a.ring_hwm = std::max(a.ring_hwm, b.ring_hwm);
      a.mean_batch = a.batches ? double(a.packets) / a.batches : 0;
      a.failed = a.failed || b.failed;
      if (a.error.empty()) a.error = b.error;
    }
  }
  into.stamped += r.stamped;
  into.reordered += r.reordered;
  into.lost += r.lost;
  into.rx_backlog_hwm = std::max(into.rx_backlog_hwm, r.rx_backlog_hwm);
  into.switches.insert(into.switches.end(), r.switches.begin(), r.switches.end());
  into.timeline.insert(into.timeline.end(), r.timeline.begin(), r.timeline.end());
  into.rx_seconds += r.rx_seconds;
  into.finish_seconds += r.finish_seconds;
}

}  // namespace tandem::cli
