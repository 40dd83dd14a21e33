#include "sched/observation.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace tandem::sched {

const char* policy_name(Policy p) {
  switch (p) {
    case Policy::kThroughput:
      return "throughput";
    case Policy::kLatency:
      return "latency";
    case Policy::kEnergy:
      return "energy";
  }
  return "unknown";
}

Policy parse_policy(const std::string& s) {
  if (s == "throughput") return Policy::kThroughput;
  if (s == "latency") return Policy::kLatency;
  if (s == "energy") return Policy::kEnergy;
  throw std::invalid_argument("unknown policy '" + s + "' (expected throughput, latency or energy)");
}

double joules_per_mbit(const ProfileEntry& e, double mpps, double mean_frame_bytes) {
  if (!(mpps > 0) || !(mean_frame_bytes > 0)) return std::numeric_limits<double>::infinity();
  // A degraded entry (health < 1) reaches full load, and full power, at a lower rate.
  const double full_mpps = e.mpps_max * (e.health > 0 ? e.health : 1.0);
  if (!(full_mpps > 0)) return std::numeric_limits<double>::infinity();
  const double carried = std::min(mpps, full_mpps);  // beyond full load the rest is lost, not carried
  const double watts = e.watts_idle + (e.watts_max - e.watts_idle) * (carried / full_mpps);
  const double mbit_per_s = carried * mean_frame_bytes * 8;  // 1e6 frames/s x 8 bits per byte / 1e6
  return watts / mbit_per_s;
}

}  // namespace tandem::sched
