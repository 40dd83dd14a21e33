// What the adaptive scheduler (sched/hetero.h) sees of its devices each tick, and what a controller
// decides from it. Controllers are pure functions of these values (sched/controller.h), so every
// policy is tested without threads, on a simulated plant, and runs unchanged on the real one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tandem::sched {

// What the scheduler optimises once the offered load is carried.
enum class Policy { kThroughput, kLatency, kEnergy };
const char* policy_name(Policy p);
Policy parse_policy(const std::string& s);  // "throughput" | "latency" | "energy"; std::invalid_argument otherwise

enum class DeviceKind { kCpu, kGpu, kSim };

// One device's last tick.
struct DeviceObs {
  std::string id;          // "cpu0", "gpu0", "sim0"
  DeviceKind kind = DeviceKind::kCpu;
  double share = 0;        // of the shards' weight it held during the tick (0..1)
  double pps = 0;          // packets it finished per second during the tick
  double bps = 0;          // their bytes per second
  double p50_ns = 0, p99_ns = 0;  // publish -> done of its batches during the tick (0: none finished)
  double busy = 0;         // CPU and sim groups: fraction of their threads' time spent processing (0..1); GPU: -1 (unknown)
  double watts = 0;        // its power during the tick, as the energy source gives it (0: unknown)
  uint32_t batch = 0;      // its batch target (frames)
  bool saturated = false;  // its ring was full with frames waiting for it for part of the tick
  bool failed = false;     // it failed: it must get no share
};

struct Observation {
  double t_s = 0;             // since the run started
  double tick_s = 0;          // length of the tick just ended
  double offered_pps = 0;     // packets that arrived during the tick, per second (what the NICs offer)
  double achieved_pps = 0;    // packets finished during the tick, per second
  double mean_frame_bytes = 0;
  double backlog = 0;         // packets arrived but not yet taken by the dispatchers (the NIC queues)
  std::vector<DeviceObs> dev;
};

// A controller's answer. With change false the scheduler keeps what it has; otherwise `share` (one
// per device, summing to 1, 0 for a device that must get nothing) and `batch` (one per device, 0 to
// keep) are the new targets. `reason` is one line for the run's timeline ("offered 12.1 Mpps >
// 0.9 x cpu0's capacity: gpu0 added").
struct Decision {
  bool change = false;
  std::vector<double> share;
  std::vector<uint32_t> batch;
  std::string reason;
};

// One profiled configuration (Koromilas et al. section 4.1): a device set, its batch sizes and its
// split, and what it was measured to do. The scheduler's profile table (sched/profile_table.h) is a
// list of these; the Koromilas controller picks among them.
struct ProfileEntry {
  std::vector<double> share;     // per device of the run (the table's `devices`), summing to 1
  std::vector<uint32_t> batch;   // per device; 0 where its share is 0
  double mpps_max = 0;           // unpaced throughput
  double p50_us = 0, p99_us = 0; // latency paced at `latency_at_mpps`
  double latency_at_mpps = 0;
  double watts_max = 0;          // power at mpps_max (all devices of the run, parked ones at idle)
  double watts_idle = 0;         // power with no traffic
  double health = 1;             // measured / profiled throughput, learned online (1: as profiled)
  bool profiled = false;         // measured by the profiling grid (cli/schedule_profile.h), not taken from a run
};

// Energy per Mbit of an entry carrying `mpps` of `mean_frame_bytes` frames: its power interpolated
// linearly between idle and full load (the usual server power model), over the bits carried.
double joules_per_mbit(const ProfileEntry& e, double mpps, double mean_frame_bytes);

// A device's cost of one batch: a + b x bytes + c x frames nanoseconds, `parallel` batches at
// once (a GPU's blocks, a CPU group's threads). The model controller solves it for the split.
struct DeviceModel {
  double a_ns = 0, b_ns_per_byte = 0, c_ns_per_frame = 0;
  double parallel = 1;
  uint32_t samples = 0;
  double batch_ns(double frames, double bytes) const { return a_ns + b_ns_per_byte * bytes + c_ns_per_frame * frames; }
  // Packets per second it sustains with batches of `batch` frames of `mean_bytes` bytes.
  double capacity_pps(double mean_bytes, uint32_t batch) const {
    const double t = batch_ns(batch, double(batch) * mean_bytes);
    return t > 0 ? parallel * batch * 1e9 / t : 0;
  }
};

}  // namespace tandem::sched
