// Helpers the scheduler controllers share (sched/controller.cc, sched/model_controller.cc,
// sched/koromilas_controller.cc); internal to them, not part of sched/controller.h's API.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "sched/observation.h"

namespace tandem::sched::detail {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// printf into a string (at most 511 characters), for decision reasons.
std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));

inline double mpps(double pps) { return pps / 1e6; }

// Devices that may carry traffic.
std::vector<bool> alive_mask(const Observation& obs);

bool any_alive(const Observation& obs);

// `w` scaled to shares over the devices in `mask`; equal over them when no weight is positive.
std::vector<double> normalized(std::vector<double> w, const std::vector<bool>& mask);

// "cpu0 0.30, gpu0 0.70"
std::string split_text(const Observation& obs, const std::vector<double>& share);

}  // namespace tandem::sched::detail
