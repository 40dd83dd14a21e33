#include "cli/run_schedule.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "cli/commands.h"
#include "cli/schedule_probe.h"
#include "cli/schedule_profile.h"
#include "core/machine_info.h"
#include "gpu/gpu_runtime.h"
#include "sched/controller.h"
#include "sched/energy.h"

namespace tandem::cli {

std::vector<std::string> split_list(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  for (;;) {
    const size_t e = s.find(sep, pos);
    out.push_back(s.substr(pos, e == std::string::npos ? std::string::npos : e - pos));
    if (e == std::string::npos) return out;
    pos = e + 1;
  }
}

double parse_number(const std::string& what, const std::string& s, double lo, double hi) {
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

namespace {

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
                  "split, smoothed) or koromilas (Koromilas et al.: a grid of splits and batch sizes profiled first, "
                  "kept in --schedule-table, then the policy's best configuration that sustains the offered load, "
                  "re-profiled online)")
      ->capture_default_str()->check(CLI::IsMember({"model", "koromilas"}));
  run->add_option("--rate-schedule", f.rate_schedule,
                  "offered load changing over time, MS:MPPS,... from 0 ms (e.g. 0:5,2000:40,4000:5); replaces --rate-mpps");
  run->add_option("--schedule-table", f.table_file,
                  "--schedule: keep each device's measured capacity in this JSON file (tandem-schedule-table/1); a "
                  "later run of the same app, table, traffic, machine, build and devices starts from the split it gives");
  run->add_option("--tick-ms", f.tick_ms, "--schedule: the scheduler's period")
      ->capture_default_str()->check(CLI::Range(1.0, 1000.0));
  run->add_option("--cpu-batch", f.cpu_batch, "--schedule: frames per batch of a CPU group (at most)")
      ->capture_default_str()->check(CLI::Range(1u, 4096u));
  run->add_option("--lane-queue", f.lane_queue,
                  "--schedule: frames each receive thread may hold for a device whose ring is full, so that the "
                  "other devices' frames go on past them (0: the first such frame stops the thread, as a NIC queue's head)")
      ->capture_default_str()->check(CLI::Range(0u, 1u << 20));
  run->add_option("--profile-splits", f.profile_splits,
                  "--controller koromilas: the splits to profile, e.g. 1:0,0:1,1:1 (default: each device alone, and "
                  "1:3, 1:1, 3:1 of two devices or an equal split of more)");
  run->add_option("--profile-seconds", f.profile_seconds, "--controller koromilas: least duration of each profiled run")
      ->capture_default_str()->check(CLI::Range(0.01, 60.0));
  run->add_option("--cpu-idle-watts", f.cpu_idle_watts,
                  "--schedule, where no RAPL or perf energy counter is readable: the CPU power model's idle watts")
      ->capture_default_str()->check(CLI::Range(0.0, 10000.0));
  run->add_option("--cpu-core-watts", f.cpu_core_watts, "--schedule: the CPU power model's watts per busy core")
      ->capture_default_str()->check(CLI::Range(0.0, 1000.0));
}

ScheduledRun::ScheduledRun(const ScheduleFlags& f, const std::string& device_list, const ForwardApp& app,
                           int dispatchers, const std::vector<int>& cores, double rate_mpps)
    : f_(f), device_list_(device_list), cores_(cores) {
  cfg_.dispatchers = dispatchers;
  cfg_.tick_ms = f.tick_ms;
  cfg_.cpu_batch = f.cpu_batch;
  cfg_.lane_queue = f.lane_queue;
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
  std::vector<std::string> tokens = split_list(device_list, ',');
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
    } else if (t == "gpu" || t.rfind("gpu", 0) == 0) {
      if (!gpu_ok) throw UsageError("--device " + device_list + ": no usable GPU (" + why_no_gpu + ")");
      // "gpu": every GPU of --gpus (GPU 0 without it); "gpuN": CUDA device N.
      std::vector<int> which;
      if (t == "gpu") {
        which = f.gpus.empty() ? std::vector<int>{0} : f.gpus;
      } else {
        which = {whole("--device " + t, t.substr(3), 0, 63)};
      }
      for (const int g : which) {
        if (g >= gpu::device_count()) {
          throw UsageError("--device " + t + ": GPU " + std::to_string(g) + " does not exist (this host has " +
                           std::to_string(gpu::device_count()) + ")");
        }
        for (const DeviceSpec& x : cfg_.devices) {
          if (x.kind == sched::DeviceKind::kGpu && x.gpu == g) {
            throw UsageError("--device " + device_list + ": GPU " + std::to_string(g) + " named twice");
          }
        }
        DeviceSpec gd;
        gd.kind = sched::DeviceKind::kGpu;
        gd.gpu = g;
        gd.id = "gpu" + std::to_string(g);
        cfg_.devices.push_back(gd);
        ++gpus;
      }
      continue;
    } else if (t.rfind("sim:", 0) == 0) {
      // sim:A_US/NS_PER_BYTE[/THREADS]: a device whose batches take A us + NS_PER_BYTE per byte.
      const std::vector<std::string> p = split_list(t.substr(4), '/');
      if (p.size() < 2 || p.size() > 3) throw UsageError("--device " + t + ": expected sim:A_US/NS_PER_BYTE[/THREADS]");
      d.kind = sched::DeviceKind::kSim;
      d.id = "sim" + std::to_string(sims++);
      d.cost.a_ns = parse_number("--device " + t, p[0], 0, 1e6) * 1000;  // at most 1 s per batch
      d.cost.ns_per_byte = parse_number("--device " + t, p[1], 0, 1000);
      d.threads = p.size() == 3 ? whole("--device " + t, p[2], 1, 1024) : 1;
    } else {
      throw UsageError("--device " + device_list + ": '" + t +
                       "' is not a device (auto, cpu, cpu:THREADS, gpu, gpuN, sim:A_US/NS_PER_BYTE[/THREADS])");
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
  if (!f.profile_splits.empty()) (void)parse_splits(f.profile_splits, nd);  // refused before anything runs
  const std::string& s = f.schedule;
  if (s == "throughput" || s == "latency" || s == "energy") {
    if (f.controller == "koromilas") {
      controller_desc_ = "Koromilas controller, policy " + s;
      if (f.profile.empty()) {
        needs_profile_ = true;  // prepare_profile() makes it
      } else {
        controller_ = sched::make_koromilas_controller(f.profile, {.policy = sched::parse_policy(s)});
        controller_desc_ += ", over " + std::to_string(f.profile.size()) + " profiled configurations";
      }
    } else {
      sched::ModelOptions mo;
      mo.policy = sched::parse_policy(s);
      controller_ = sched::make_model_controller(mo);
      controller_desc_ = "model controller, policy " + s;
    }
  } else if (s == "nba") {
    controller_ = sched::make_nba_controller();
    controller_desc_ = "NBA's hill-climbing balancer (baseline)";
  } else if (s.rfind("static:", 0) == 0) {
    const std::vector<std::string> p = split_list(s.substr(7), ',');
    if (p.size() != nd) {
      throw UsageError("--schedule " + s + ": one share per device (" + std::to_string(nd) + " devices)");
    }
    std::vector<double> share;
    double sum = 0;
    for (const std::string& x : p) {
      share.push_back(parse_number("--schedule " + s, x, 0, 1e9));
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
      s += " (" + gpu::device_info(x.gpu).name + ", resident kernel, batches of up to " + std::to_string(cfg_.gpu_ring.batch) + ")";
    } else {
      s += " (" + std::to_string(x.threads) + " thread" + (x.threads > 1 ? "s" : "") +
           (x.kind == sched::DeviceKind::kSim ? ", simulated" : "") + ", batches of up to " + std::to_string(cfg_.cpu_batch) + ")";
    }
  }
  return s + "; " + std::to_string(cfg_.dispatchers) + " receive thread" + (cfg_.dispatchers > 1 ? "s" : "") +
         " (dispatchers)";
}

void ScheduledRun::use_table(const std::string& app, const std::string& app_table, const std::string& traffic) {
  if (f_.table_file.empty()) return;
  key_.app = app;
  key_.app_table = app_table;
  key_.traffic = traffic;
  const MachineInfo m = machine_info();
  key_.cpu_model = m.cpu_model;
  key_.logical_cpus = m.logical_cpus;
  key_.tandem_version = std::string("built ") + __DATE__ + " " + __TIME__ + " by " + m.compiler;
  for (const DeviceSpec& d : cfg_.devices) {
    key_.devices.push_back(d.id + (d.kind == sched::DeviceKind::kGpu ? "" : ":" + std::to_string(d.threads)));
    if (d.kind == sched::DeviceKind::kGpu) key_.gpu_name = gpu::device_info(d.gpu).name;
  }
  if (!std::filesystem::exists(f_.table_file)) {
    std::printf("schedule table %s: none yet; written after the run\n", f_.table_file.c_str());
    return;
  }
  sched::ProfileTable t;
  try {
    t = sched::ProfileTable::load(f_.table_file);
  } catch (const std::exception& e) {
    throw UsageError(std::string("--schedule-table: ") + e.what() + " (remove the file to start afresh)");
  }
  std::string why;
  if (!t.matches(key_, &why)) {
    std::printf("schedule table %s: not used (%s); rewritten after the run\n", f_.table_file.c_str(), why.c_str());
    return;
  }
  // Each device alone: its entry's throughput, as far as it stays healthy.
  std::vector<double> cap(cfg_.devices.size(), 0);
  for (const sched::ProfileEntry& e : t.entries) {
    for (size_t d = 0; d < e.share.size() && d < cap.size(); ++d) {
      if (e.share[d] == 1) cap[d] = std::max(cap[d], e.mpps_max * e.health);
    }
  }
  const bool all = std::all_of(cap.begin(), cap.end(), [](double c) { return c > 0; });
  prior_ = std::make_unique<sched::ProfileTable>(std::move(t));
  if (all && f_.schedule.rfind("static:", 0) != 0) {
    cfg_.initial_share = cap;
    std::string s;
    for (size_t d = 0; d < cap.size(); ++d) {
      char b[64];
      std::snprintf(b, sizeof b, "%s%s %.2f Mpps", d ? ", " : "", cfg_.devices[d].id.c_str(), cap[d]);
      s += b;
    }
    std::printf("schedule table %s reused: starting from shares in proportion to %s\n", f_.table_file.c_str(), s.c_str());
  } else {
    std::printf("schedule table %s: matches, but %s; rewritten after the run\n", f_.table_file.c_str(),
                all ? "static shares were asked for" : "not every device's capacity is in it");
  }
}

// Blends a measured point into the table (halfway to it), or adds it.
static void learn(sched::ProfileTable& t, const sched::ProfileEntry& e) {
  try {
    t.update(e, 0.5);
  } catch (const std::exception& x) {
    throw UsageError(std::string("--schedule-table: not written: ") + x.what());
  }
}

void ScheduledRun::save_table(const HeteroResult& r, double seconds) const {
  if (f_.table_file.empty() || key_.devices.empty()) return;
  // A table this run started from learns from it (each figure moves halfway to the new one);
  // otherwise the run's figures make a new table.
  sched::ProfileTable t = prior_ ? *prior_ : sched::ProfileTable{};
  t.key = key_;
  // The profiled grid, one entry per device alone and one for the latest run's split: the table
  // grows no further.
  std::erase_if(t.entries, [](const sched::ProfileEntry& e) {
    return !e.profiled && std::count_if(e.share.begin(), e.share.end(), [](double x) { return x > 0; }) != 1;
  });
  t.energy_source = energy_sources();
  const size_t nd = r.devices.size();
  std::string said;
  for (size_t d = 0; d < nd; ++d) {
    const DeviceReport& x = r.devices[d];
    const uint32_t batch = x.kind == sched::DeviceKind::kGpu ? cfg_.gpu_ring.batch : cfg_.cpu_batch;
    char b[96];
    if (x.capacity_pps <= 0) {
      std::snprintf(b, sizeof b, "%s%s not measured (never saturated)", d ? ", " : "", x.id.c_str());
      said += b;
      continue;
    }
    sched::ProfileEntry e;
    e.share.assign(nd, 0.0);
    e.share[d] = 1;
    e.batch.assign(nd, 0u);
    e.batch[d] = batch;
    e.mpps_max = x.capacity_pps / 1e6;
    learn(t, e);
    std::snprintf(b, sizeof b, "%s%s %.2f Mpps", d ? ", " : "", x.id.c_str(), e.mpps_max);
    said += b;
  }
  // The run itself: its split (the packets each device carried) and what it delivered.
  uint64_t all = 0;
  for (const DeviceReport& x : r.devices) all += x.packets;
  if (all > 0 && seconds > 0) {
    sched::ProfileEntry e;
    for (const DeviceReport& x : r.devices) {
      e.share.push_back(double(x.packets) / double(all));
      e.batch.push_back(x.packets ? (x.kind == sched::DeviceKind::kGpu ? cfg_.gpu_ring.batch : cfg_.cpu_batch) : 0);
    }
    e.mpps_max = r.run.counters.rx_packets / seconds / 1e6;
    e.p50_us = r.run.latency.percentile(0.5) / 1e3;
    e.p99_us = r.run.latency.percentile(0.99) / 1e3;
    e.latency_at_mpps = e.mpps_max;
    e.watts_max = energy_ ? energy_watts() : 0;
    learn(t, e);
  }
  try {
    t.save(f_.table_file);
  } catch (const std::exception& e) {
    throw UsageError(std::string("--schedule-table: not written: ") + e.what());
  }
  std::printf("schedule table %s written: this run measured %s%s\n", f_.table_file.c_str(), said.c_str(),
              prior_ ? "; the table's figures moved halfway to these" : "");
}

void ScheduledRun::prepare_profile(const ForwardApp& app, const PacketStore& s) {
  if (!needs_profile_) return;
  std::vector<sched::ProfileEntry> entries;
  if (prior_) {
    for (const sched::ProfileEntry& e : prior_->entries) {
      if (e.profiled) entries.push_back(e);
    }
  }
  if (!entries.empty()) {
    std::printf("schedule table %s: %zu profiled configurations reused\n", f_.table_file.c_str(), entries.size());
  } else {
    ProbeSetup p;
    p.device = device_list_;
    p.dispatchers = cfg_.dispatchers;
    p.cores = cores_;
    p.gpus = f_.gpus;
    p.gpu_batch = cfg_.gpu_ring.batch;
    p.ring_slots = cfg_.gpu_ring.slots_per_producer;
    p.layout = gpu::frame_layout_name(cfg_.gpu_ring.layout);
    p.cpu_batch = cfg_.cpu_batch;
    p.lane_queue = cfg_.lane_queue;
    ProfileGrid g;
    if (!f_.profile_splits.empty()) g.splits = parse_splits(f_.profile_splits, cfg_.devices.size());
    default_batches(p, g);
    g.seconds = f_.profile_seconds;
    std::printf("profiling (Koromilas et al. 4.1): each split and batch size unpaced %d times for at least %.2f s (the "
                "median counts), then paced at half its rate for latency and at 5%% for the power near idle\n", g.reps, g.seconds);
    std::string sources;
    entries = profile_grid(app, s, p, g, [](const std::string& line) { std::printf("%s\n", line.c_str()); }, &sources);
    if (!f_.table_file.empty() && !key_.devices.empty()) {
      sched::ProfileTable t;
      t.key = key_;
      t.energy_source = sources;
      t.entries = entries;
      try {
        t.save(f_.table_file);
      } catch (const std::exception& e) {
        throw UsageError(std::string("--schedule-table: not written: ") + e.what());
      }
      prior_ = std::make_unique<sched::ProfileTable>(std::move(t));
      std::printf("schedule table %s written: %zu profiled configurations\n", f_.table_file.c_str(), entries.size());
    }
  }
  controller_ = sched::make_koromilas_controller(entries, {.policy = sched::parse_policy(f_.schedule)});
  controller_desc_ += ", over " + std::to_string(entries.size()) + " profiled configurations";
  cfg_.controller = controller_.get();
  needs_profile_ = false;
}

void ScheduledRun::start_energy() {
  std::vector<std::unique_ptr<sched::EnergyMeter>> meters;
  gpu_meter_.assign(cfg_.devices.size(), -1);
  for (size_t d = 0; d < cfg_.devices.size(); ++d) {
    if (cfg_.devices[d].kind != sched::DeviceKind::kGpu) continue;
    std::string why;
    auto m = sched::open_nvml_meter(gpu::device_info(cfg_.devices[d].gpu).pci_bus_id, &why);
    if (m) {
      gpu_meter_[d] = static_cast<int>(meters.size());
      meters.push_back(std::move(m));
    } else {
      energy_tried_ += cfg_.devices[d].id + ": " + why + "; ";
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
        const int m = d < gpu_meter_.size() ? gpu_meter_[d] : -1;
        if (m >= 0 && size_t(m) < p.watts.size()) x.watts = p.watts[m];
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
    std::printf(", ring high-water %u of %u slots, lane queue high-water %llu frames%s\n", d.ring_hwm, d.ring_slots,
                static_cast<unsigned long long>(d.queue_hwm), d.failed ? ", FAILED" : "");
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
                    {"ring_slots", d.ring_slots}, {"full_waits", d.full_waits}, {"queue_hwm", d.queue_hwm},
                    {"failed", d.failed}});
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
                      {"dispatchers", cfg_.dispatchers}, {"lane_queue", cfg_.lane_queue}, {"reordered", r.reordered}, {"lost", r.lost},
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
      a.queue_hwm = std::max(a.queue_hwm, b.queue_hwm);
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
