#include "cli/stage_report.h"

#include <cstdio>

namespace tandem::cli {

nlohmann::json stages_json(const StageTimes& st) {
  nlohmann::json j = nlohmann::json::object();
  if (!st.packets || st.tick_ns <= 0) return j;
  double framework = 0, app = 0;
  for (int i = 0; i < kStageCount; ++i) {
    const Stage s = static_cast<Stage>(i);
    const double ns = st.ticks[i] * st.tick_ns / st.packets;
    j[stage_name(s)] = ns;
    const bool app_stage = s == Stage::kParse || s == Stage::kLookup || s == Stage::kApply || s == Stage::kApp;
    (app_stage ? app : framework) += ns;
  }
  j["framework"] = framework;
  j["app"] = app;
  j["total"] = framework + app;
  j["frames_per_burst"] = st.bursts ? double(st.packets) / st.bursts : 0.0;
  j["empty_receives"] = st.empty_receives;
  return j;
}

std::string stages_line(const StageTimes& st) {
  const nlohmann::json j = stages_json(st);
  if (j.empty()) return "";
  std::string s;
  char buf[64];
  for (int i = 0; i < kStageCount; ++i) {
    const char* n = stage_name(static_cast<Stage>(i));
    if (j[n].get<double>() <= 0) continue;
    std::snprintf(buf, sizeof buf, "%s%s %.2f", s.empty() ? "" : " ", n, j[n].get<double>());
    s += buf;
  }
  std::snprintf(buf, sizeof buf, " | framework %.2f, app %.2f, total %.2f", j["framework"].get<double>(),
                j["app"].get<double>(), j["total"].get<double>());
  s += buf;
  std::snprintf(buf, sizeof buf, "; %.1f frames a burst, %llu empty receives", j["frames_per_burst"].get<double>(),
                static_cast<unsigned long long>(st.empty_receives));
  return s + buf;
}

}  // namespace tandem::cli
