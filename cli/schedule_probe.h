// One run of an app over a set of devices with one split or controller (sched/hetero.h), as
// `tandem bench schedule` and `tandem advise` measure their candidates: the same dispatchers,
// device groups and GPU rings for every candidate, so that they differ only in the split.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "apps/forward_app.h"
#include "io/packet_store.h"
#include "sched/hetero.h"
#include "sched/rate_schedule.h"

namespace tandem::cli {

struct ProbeSetup {
  std::string device = "auto";  // as `tandem run --device` with --schedule
  int dispatchers = 4;
  std::vector<int> cores;       // dispatchers first, then the CPU groups' threads
  std::vector<int> gpus;        // what the device "gpu" stands for (empty: GPU 0)
  uint32_t gpu_batch = 1024;
  uint32_t ring_slots = 16;
  std::string layout = "cells";  // the GPU rings' frame layout (--frame-layout)
  uint32_t cpu_batch = 256;
  uint32_t lane_queue = 8192;   // HeteroConfig::lane_queue
  // The profiled configurations the policy "koromilas" (the Koromilas controller, throughput) picks among.
  std::vector<sched::ProfileEntry> profile;
  double rate_mpps = 0;         // offered load, paced; 0: as fast as possible
  // probe_segments: the input's phases and the phase each segment plays (HeteroConfig's).
  std::vector<size_t> input_phases;
  std::vector<uint32_t> segment_phase;
};

// The GPU rings' options of a probe.
gpu::ResidentOptions probe_gpu_ring(const ProbeSetup& p);

struct ProbeRun {
  HeteroResult r;
  double watts = 0;             // mean power over the run (0 unless asked)
  std::string energy_sources;
  std::vector<int> threads;     // per device: CPU and sim groups' threads (GPUs: 0)
  int dispatchers = 1;
  double mpps() const { return r.run.seconds > 0 ? r.run.counters.rx_packets / r.run.seconds / 1e6 : 0; }
  double j_per_mbit() const {
    return r.run.wire_bytes ? watts * r.run.seconds / (r.run.wire_bytes * 8 / 1e6) : 0;
  }
  std::vector<double> shares() const;  // per device, of the packets it carried
};

// Runs `policy` (a --schedule value: "static:S1,S2,...", "throughput", "nba", ...) over `packets`
// packets (0: one pass over the input), verified against the app's reference when `verify`
// (build_reference() must have run), with the energy sampler when `energy`.
ProbeRun probe_once(const ForwardApp& app, const PacketStore& s, const ProbeSetup& p, const std::string& policy,
                    uint64_t packets, bool verify, bool energy);

// Packets that keep `policy` busy for at least `seconds` (at least one pass): from a warm-up of one
// pass, and of four more when that one was short.
uint64_t packets_for(const ForwardApp& app, const PacketStore& s, const ProbeSetup& p, const std::string& policy,
                     double seconds);

// The devices' ids ("cpu0", "gpu0", ...) and the note a run would print ("no GPU (...): ...").
std::vector<std::string> probe_device_ids(const ForwardApp& app, const ProbeSetup& p, std::string* note);

// A paced run of `policy` over a rate schedule that ends with a rate of 0 (which ends the run), the
// input looped as the schedule needs. `on_tick(t_s)` (may be empty) is called on the scheduler
// thread each tick with the time since the run started (a scenario's events). With grace_ms >= 0
// the dispatchers stop taking packets that long after the schedule's end (what arrived and was not
// taken by then is left, as a NIC's full queue drops it; the rest finish). Per segment but the
// last: the offered rate and the mean delivered rate over its ticks after its first settle_ms (or
// its first half, when shorter), Mpps.
struct SegmentsRun {
  ProbeRun probe;
  std::vector<double> offered, achieved;
};
SegmentsRun probe_segments(const ForwardApp& app, const PacketStore& s, const ProbeSetup& p, const std::string& policy,
                           const std::vector<RateSegment>& rate, double settle_ms,
                           const std::function<void(double)>& on_tick, bool energy, double grace_ms = -1);

// The non-empty parts of a ';'-separated list (the --policies rows).
std::vector<std::string> split_semicolons(const std::string& s);

// "static:" with a one for device d of n and zeros elsewhere.
std::string only_device(size_t d, size_t n);

}  // namespace tandem::cli
