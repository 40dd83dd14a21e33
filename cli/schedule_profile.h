// The profiling phase of Koromilas et al. (section 4.1): every configuration of a grid (a split of
// the traffic over the devices, and each used device's batch size) run over the same dispatchers
// and devices, measuring what it sustains unpaced, its latency paced at a fraction of that, and its
// power at full load and near idle. The entries go into the scheduler's profile table (sched/profile_table.h),
// from which the Koromilas controller picks online.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "apps/forward_app.h"
#include "cli/schedule_probe.h"
#include "io/packet_store.h"
#include "sched/observation.h"

namespace tandem::cli {

struct ProfileGrid {
  std::vector<std::vector<double>> splits;  // per configuration, a share per device; empty: default_splits()
  // Batch sizes tried for each used GPU and CPU group; empty: the setup's own (gpu_batch, cpu_batch).
  std::vector<uint32_t> gpu_batches, cpu_batches;
  double seconds = 0.5;       // least duration of each unpaced measurement
  int reps = 3;               // unpaced measurements per entry: the median run counts (a noisy machine misleads one)
  double latency_load = 0.5;  // latency: paced at this fraction of the entry's unpaced rate; 0: not measured
  bool energy = true;         // watts at full load and, paced at idle_load, near idle (the sampler's sources)
  double idle_load = 0.05;
};

// Each device alone, then for two devices 1:3, 1:1 and 3:1, for more an equal split.
std::vector<std::vector<double>> default_splits(size_t devices);

// "1:0,0:1,1:1": configurations separated by ',', a share per device separated by ':'. Throws
// UsageError for a malformed list, a split of the wrong size, or one of all zeros.
std::vector<std::vector<double>> parse_splits(const std::string& text, size_t devices);

// The setup's batch sizes, a quarter of each and the full one ({b/4, b}, at least 32).
void default_batches(const ProbeSetup& p, ProfileGrid& g);

// Runs the grid. `said` gets one line per entry as it is measured (may be empty). Energy figures are
// 0 without a meter; `sources` (if not null) gets the meters' sources.
std::vector<sched::ProfileEntry> profile_grid(const ForwardApp& app, const PacketStore& s, const ProbeSetup& p,
                                              ProfileGrid g, const std::function<void(const std::string&)>& said,
                                              std::string* sources);

}  // namespace tandem::cli
