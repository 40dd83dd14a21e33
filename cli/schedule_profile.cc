#include "cli/schedule_profile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cli/run_schedule.h"
#include "core/usage_error.h"

namespace tandem::cli {

namespace {

bool is_gpu(const std::string& id) { return id.rfind("gpu", 0) == 0; }

std::string split_policy(const std::vector<double>& share) {
  std::string s = "static:";
  for (size_t d = 0; d < share.size(); ++d) {
    char b[32];
    std::snprintf(b, sizeof b, "%s%.6g", d ? "," : "", share[d]);
    s += b;
  }
  return s;
}

std::string batch_text(const std::vector<uint32_t>& batch) {
  std::string s;
  for (size_t d = 0; d < batch.size(); ++d) s += (d ? ":" : "") + std::to_string(batch[d]);
  return s;
}

std::string split_text(const std::vector<double>& share) {
  std::string s;
  for (size_t d = 0; d < share.size(); ++d) {
    char b[32];
    std::snprintf(b, sizeof b, "%s%.3g", d ? ":" : "", share[d]);
    s += b;
  }
  return s;
}

}  // namespace

std::vector<std::vector<double>> default_splits(size_t n) {
  std::vector<std::vector<double>> out;
  for (size_t d = 0; d < n; ++d) {
    std::vector<double> s(n, 0.0);
    s[d] = 1;
    out.push_back(s);
  }
  if (n == 2) {
    out.push_back({0.25, 0.75});
    out.push_back({0.5, 0.5});
    out.push_back({0.75, 0.25});
  } else if (n > 2) {
    out.push_back(std::vector<double>(n, 1.0 / double(n)));
  }
  return out;
}

std::vector<std::vector<double>> parse_splits(const std::string& text, size_t n) {
  std::vector<std::vector<double>> out;
  for (const std::string& part : split_list(text, ',')) {
    const std::vector<std::string> xs = split_list(part, ':');
    if (xs.size() != n) {
      throw UsageError("--profile-splits: '" + part + "' has " + std::to_string(xs.size()) + " shares for " +
                       std::to_string(n) + " devices");
    }
    std::vector<double> s;
    double sum = 0;
    for (const std::string& x : xs) {
      const double v = parse_number("--profile-splits " + part, x, 0, 1e9);
      s.push_back(v);
      sum += v;
    }
    if (sum <= 0) throw UsageError("--profile-splits: '" + part + "' gives every device 0");
    for (double& v : s) v /= sum;
    out.push_back(std::move(s));
  }
  if (out.empty()) throw UsageError("--profile-splits: no split given");
  return out;
}

void default_batches(const ProbeSetup& p, ProfileGrid& g) {
  auto pair = [](uint32_t b) {
    const uint32_t q = std::max<uint32_t>(32, b / 4);
    return q < b ? std::vector<uint32_t>{q, b} : std::vector<uint32_t>{b};
  };
  g.gpu_batches = pair(p.gpu_batch);
  g.cpu_batches = pair(p.cpu_batch);
}

std::vector<sched::ProfileEntry> profile_grid(const ForwardApp& app, const PacketStore& s, const ProbeSetup& p,
                                              ProfileGrid g, const std::function<void(const std::string&)>& said,
                                              std::string* sources) {
  const std::vector<std::string> ids = probe_device_ids(app, p, nullptr);
  const size_t n = ids.size();
  if (g.splits.empty()) g.splits = default_splits(n);
  if (g.gpu_batches.empty()) g.gpu_batches = {p.gpu_batch};
  if (g.cpu_batches.empty()) g.cpu_batches = {p.cpu_batch};
  std::vector<sched::ProfileEntry> out;
  for (const std::vector<double>& split : g.splits) {
    if (split.size() != n) throw UsageError("profile: a split of " + std::to_string(split.size()) + " shares for " + std::to_string(n) + " devices");
    bool gpu_used = false, cpu_used = false;
    for (size_t d = 0; d < n; ++d) {
      if (split[d] > 0) (is_gpu(ids[d]) ? gpu_used : cpu_used) = true;
    }
    // Each used kind of device tries its batch sizes; an unused kind keeps one (it is not measured).
    for (const uint32_t gb : gpu_used ? g.gpu_batches : std::vector<uint32_t>{p.gpu_batch}) {
      for (const uint32_t cb : cpu_used ? g.cpu_batches : std::vector<uint32_t>{p.cpu_batch}) {
        ProbeSetup q = p;
        q.gpu_batch = gb;
        q.cpu_batch = cb;
        q.rate_mpps = 0;
        const std::string policy = split_policy(split);
        sched::ProfileEntry e;
        e.share = split;
        e.profiled = true;
        for (size_t d = 0; d < n; ++d) e.batch.push_back(split[d] > 0 ? (is_gpu(ids[d]) ? gb : cb) : 0u);
        const uint64_t packets = packets_for(app, s, q, policy, g.seconds);
        std::vector<ProbeRun> runs;
        for (int k = 0; k < std::max(1, g.reps); ++k) runs.push_back(probe_once(app, s, q, policy, packets, false, g.energy));
        std::sort(runs.begin(), runs.end(), [](const ProbeRun& a, const ProbeRun& b) { return a.mpps() < b.mpps(); });
        const ProbeRun& full = runs[runs.size() / 2];
        if (sources && g.energy) *sources = full.energy_sources;
        e.mpps_max = full.mpps();
        e.watts_max = full.watts;
        e.p50_us = full.r.run.latency.percentile(0.5) / 1e3;
        e.p99_us = full.r.run.latency.percentile(0.99) / 1e3;
        e.latency_at_mpps = e.mpps_max;
        e.watts_idle = e.watts_max;
        // Paced at a fraction of what it sustains: the latency of a queue that keeps up.
        const auto paced = [&](double load, bool energy) {
          q.rate_mpps = e.mpps_max * load;
          return probe_once(app, s, q, policy, static_cast<uint64_t>(std::max(1000.0, q.rate_mpps * 1e6 * g.seconds)),
                            false, energy);
        };
        if (g.latency_load > 0 && g.latency_load < 1 && e.mpps_max > 0) {
          const ProbeRun mid = paced(g.latency_load, false);
          e.p50_us = mid.r.run.latency.percentile(0.5) / 1e3;
          e.p99_us = mid.r.run.latency.percentile(0.99) / 1e3;
          e.latency_at_mpps = e.mpps_max * g.latency_load;
        }
        // The power near idle, extended to no load on the linear server power model: the energy
        // policy's choice at a low load rests on it, so it is measured there rather than
        // extrapolated from higher loads (which would double the meters' noise).
        if (g.energy && g.idle_load > 0 && g.idle_load < 1 && e.mpps_max > 0) {
          const ProbeRun low = paced(g.idle_load, true);
          const double f = g.idle_load;
          e.watts_idle = std::clamp(low.watts - (e.watts_max - low.watts) * f / (1 - f), 0.0, low.watts);
        }
        if (said) {
          char b[256];
          std::snprintf(b, sizeof b, "profile %-14s batches %-12s %8.2f Mpps, p50 %.0f us, p99 %.0f us at %.2f Mpps, %.0f W (idle %.0f W)",
                        split_text(split).c_str(), batch_text(e.batch).c_str(),
                        e.mpps_max, e.p50_us, e.p99_us, e.latency_at_mpps, e.watts_max, e.watts_idle);
          said(b);
        }
        out.push_back(std::move(e));
      }
    }
  }
  return out;
}

}  // namespace tandem::cli
