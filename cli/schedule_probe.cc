#include "cli/schedule_probe.h"

#include <algorithm>
#include <atomic>

#include "cli/run_resident.h"
#include "cli/run_schedule.h"
#include "core/packet_pool.h"
#include "core/usage_error.h"

namespace tandem::cli {

std::vector<double> ProbeRun::shares() const {
  std::vector<double> v;
  uint64_t all = 0;
  for (const DeviceReport& d : r.devices) all += d.packets;
  for (const DeviceReport& d : r.devices) v.push_back(all ? double(d.packets) / all : 0);
  return v;
}

namespace {

// A --schedule value, or "koromilas[:POLICY]": the Koromilas controller over p.profile (throughput
// unless a policy is named).
ScheduleFlags flags_for(const ProbeSetup& p, const std::string& policy) {
  ScheduleFlags f;
  f.schedule = policy;
  if (policy == "koromilas" || policy.rfind("koromilas:", 0) == 0) {
    if (p.profile.empty()) throw UsageError(policy + ": no profiled configurations to pick among");
    f.schedule = policy == "koromilas" ? "throughput" : policy.substr(10);
    f.controller = "koromilas";
    f.profile = p.profile;
  }
  f.cpu_batch = p.cpu_batch;
  f.lane_queue = p.lane_queue;
  f.gpus = p.gpus;
  return f;
}

}  // namespace

gpu::ResidentOptions probe_gpu_ring(const ProbeSetup& p) {
  ResidentFlags rf;
  rf.ring_slots = p.ring_slots;
  rf.layout = p.layout;
  return resident_options(rf, "persistent", p.gpu_batch, 0, 0, PacketPool::kDefaultCellSize);
}

ProbeRun probe_once(const ForwardApp& app, const PacketStore& s, const ProbeSetup& p, const std::string& policy,
                    uint64_t packets, bool verify, bool energy) {
  ScheduledRun sr(flags_for(p, policy), p.device, app, p.dispatchers, p.cores, p.rate_mpps);
  HeteroConfig& hc = sr.config();
  hc.gpu_ring = probe_gpu_ring(p);
  hc.ports = app.ports();
  hc.packets = packets;
  hc.verify = verify;
  ProbeRun out;
  out.dispatchers = p.dispatchers;
  for (const DeviceSpec& d : hc.devices) out.threads.push_back(d.kind == sched::DeviceKind::kGpu ? 0 : d.threads);
  if (energy) sr.start_energy();
  out.r = run_hetero(app, s, hc);
  if (energy) {
    sr.stop_energy();
    out.watts = sr.energy_watts();
    out.energy_sources = sr.energy_sources();
  }
  return out;
}

uint64_t packets_for(const ForwardApp& app, const PacketStore& s, const ProbeSetup& p, const std::string& policy,
                     double seconds) {
  // One pass first; four more when it was short, so that a slow candidate warms up in one pass.
  ProbeRun warm = probe_once(app, s, p, policy, s.size(), false, false);
  if (warm.r.run.seconds < seconds / 4) warm = probe_once(app, s, p, policy, s.size() * 4, false, false);
  const double rate = warm.r.run.seconds > 0 ? warm.r.run.counters.rx_packets / warm.r.run.seconds : 0;
  return static_cast<uint64_t>(std::max<double>(double(s.size()), rate * seconds * 1.2));
}

SegmentsRun probe_segments(const ForwardApp& app, const PacketStore& s, const ProbeSetup& p, const std::string& policy,
                           const std::vector<RateSegment>& rate, double settle_ms,
                           const std::function<void(double)>& on_tick, bool energy, double grace_ms) {
  if (rate.empty() || rate.back().pps > 0) throw UsageError("a rate schedule must end with a rate of 0 (e.g. ...,5000:0)");
  ScheduledRun sr(flags_for(p, policy), p.device, app, p.dispatchers, p.cores, 0);
  HeteroConfig& hc = sr.config();
  hc.gpu_ring = probe_gpu_ring(p);
  hc.ports = app.ports();
  hc.rate = rate;
  hc.repeat = 0;  // the schedule ends the run
  hc.input_phases = p.input_phases;
  hc.segment_phase = p.segment_phase;
  if (energy) sr.start_energy();  // it sets hc.observe, which the wrapper below keeps
  std::atomic<int> stop{0};
  if (grace_ms >= 0) hc.stop = &stop;
  const double stop_at_s = (rate.back().start_ms + grace_ms) / 1e3;
  if (on_tick || grace_ms >= 0) {
    auto inner = hc.observe;
    hc.observe = [inner, on_tick, &stop, stop_at_s, grace_ms](sched::Observation& o) {
      if (on_tick) on_tick(o.t_s);
      if (grace_ms >= 0 && o.t_s > stop_at_s) stop.store(1, std::memory_order_relaxed);
      if (inner) inner(o);
    };
  }
  SegmentsRun out;
  out.probe.dispatchers = p.dispatchers;
  for (const DeviceSpec& d : hc.devices) out.probe.threads.push_back(d.kind == sched::DeviceKind::kGpu ? 0 : d.threads);
  out.probe.r = run_hetero(app, s, hc);
  if (energy) {
    sr.stop_energy();
    out.probe.watts = sr.energy_watts();
    out.probe.energy_sources = sr.energy_sources();
  }
  for (size_t k = 0; k + 1 < rate.size(); ++k) {
    // A segment shorter than twice the settling time keeps its second half.
    const double len_ms = rate[k + 1].start_ms - rate[k].start_ms;
    const double from = (rate[k].start_ms + std::min(settle_ms, len_ms / 2)) / 1e3, to = rate[k + 1].start_ms / 1e3;
    double sum = 0;
    int n = 0;
    for (const TimelinePoint& t : out.probe.r.timeline) {
      if (t.t_s > from && t.t_s <= to) {
        sum += t.achieved_mpps;
        ++n;
      }
    }
    out.offered.push_back(rate[k].pps / 1e6);
    out.achieved.push_back(n ? sum / n : 0);
  }
  return out;
}

std::vector<std::string> probe_device_ids(const ForwardApp& app, const ProbeSetup& p, std::string* note) {
  ScheduledRun probe(flags_for(p, "throughput"), p.device, app, p.dispatchers, p.cores, 0);
  std::vector<std::string> ids;
  for (const DeviceSpec& d : probe.config().devices) ids.push_back(d.id);
  if (note) *note = probe.note();
  return ids;
}

std::vector<std::string> split_semicolons(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t e = s.find(';', pos);
    std::string x = s.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
    if (!x.empty()) out.push_back(x);
    if (e == std::string::npos) break;
    pos = e + 1;
  }
  return out;
}

std::string only_device(size_t d, size_t n) {
  std::string s = "static:";
  for (size_t k = 0; k < n; ++k) s += std::string(k ? "," : "") + (k == d ? "1" : "0");
  return s;
}

}  // namespace tandem::cli
