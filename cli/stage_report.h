// The CPU workers' stage times (core/stage_times.h) as a report: nanoseconds of a worker per
// packet in each stage, with the framework's and the app's sums, for `tandem run --stage-times`
// and `tandem bench cores`.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/stage_times.h"

namespace tandem::cli {

// {"receive": ns, ..., "framework": ns, "app": ns, "total": ns, "frames_per_burst": n,
// "empty_receives": n}; empty when nothing was timed.
nlohmann::json stages_json(const StageTimes& st);

// "receive 6.90 parse 21.60 ... | framework 18.60, app 23.10, total 41.70; 32.0 frames a burst,
// 0 empty receives": the stages that took time; empty when nothing was timed.
std::string stages_line(const StageTimes& st);

}  // namespace tandem::cli
