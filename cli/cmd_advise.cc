// `tandem advise --app A [--traffic SPEC | --pcap F] [--policy throughput|latency|energy]`: where
// should this app run on this machine? A short calibration runs the app over the same dispatchers
// (receive threads) on each device alone and on a split of the devices in proportion to what each
// carried alone (Koromilas et al.'s choices: CPU, GPU, or both), then picks by the policy:
//   throughput: the most packets per second, unpaced;
//   latency:    the lowest p99 among the candidates that sustain the offered load;
//   energy:     the least energy per Mbit among the candidates that sustain the offered load.
// A candidate within --lambda of the best that uses fewer devices (or, as simple, less energy per
// Mbit) is preferred, as Koromilas et al. switch only for a gain of lambda.
// The offered load is --rate-mpps, or half of the best candidate's unpaced rate. The pick comes with
// its predicted throughput, latency and energy per Mbit, and why: each CPU group's cost per packet,
// each GPU's PCIe traffic against the bandwidth measured here, and the dispatchers' busy share.
// --check runs the pick again, longer, and compares; --verify-pick measures every candidate as
// `tandem bench schedule` does and says whether the pick is the measured best.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_report.h"
#include "cli/app_setup.h"
#include "cli/commands.h"
#include "cli/schedule_probe.h"
#include "cli/table_setup.h"
#include "core/machine_info.h"
#include "gpu/gpu_runtime.h"
#include "io/pcap_io.h"
#include "io/traffic_gen.h"

namespace tandem::cli {

namespace {

struct AdviseOptions {
  AppOptions table;
  std::string traffic = "count=1000000,flows=100000,size=64,seed=3";
  std::string pcap;
  std::string policy = "throughput";
  std::string device = "auto";
  int workers = 4;
  std::string cores;
  std::string gpus;
  double rate_mpps = 0;
  double seconds = 0.3;
  int calibration_runs = 3;
  double lambda = 0.05;
  double verify_tolerance = 0.05;
  bool check = false;
  bool verify_pick = false;
  int reps = 3;
  double min_seconds = 0.5;
  std::string json;
};

// What a candidate did in one run.
struct Figures {
  double mpps = 0, p50_us = 0, p99_us = 0, watts = 0, j_per_mbit = 0;
  std::vector<double> share;
  bool sustained = true;  // paced: delivered at least 97% of the offered load
};

struct Candidate {
  std::string name, policy;
  Figures unpaced, loaded;   // loaded: at the offered load (latency and energy policies)
  ProbeRun alone_run;        // the unpaced run, for the reasons
  std::vector<double> verify_mpps;
  std::string error;
};

Figures figures_of(const ProbeRun& pr, double offered_mpps) {
  Figures f;
  f.mpps = pr.mpps();
  f.p50_us = pr.r.run.latency.percentile(0.5) / 1e3;
  f.p99_us = pr.r.run.latency.percentile(0.99) / 1e3;
  f.watts = pr.watts;
  f.j_per_mbit = pr.j_per_mbit();
  f.share = pr.shares();
  if (offered_mpps > 0) {
    // Sustained: delivered 97% of the load, or (a short run, whose start and drain weigh on its
    // rate) its receive queues never held more than 2% of the packets: a candidate that cannot
    // keep up lets them grow without bound.
    const double packets = double(pr.r.run.counters.rx_packets);
    f.sustained = f.mpps >= 0.97 * offered_mpps || double(pr.r.rx_backlog_hwm) * pr.dispatchers <= 0.02 * packets + 64;
  }
  return f;
}

// The figure a policy compares (higher is better).
double score(const std::string& policy, const Figures& f) {
  if (policy == "throughput") return f.mpps;
  if (!f.sustained) return -1e300;
  return policy == "latency" ? -f.p99_us : -f.j_per_mbit;
}

// Whether `c` is within a factor lambda of `best` in the figure the policy compares.
bool within(const std::string& policy, const Figures& c, const Figures& best, double lambda) {
  if (policy == "throughput") return c.mpps >= (1 - lambda) * best.mpps;
  if (!c.sustained) return false;
  return policy == "latency" ? c.p99_us <= (1 + lambda) * best.p99_us : c.j_per_mbit <= (1 + lambda) * best.j_per_mbit;
}

// Devices a "static:S1,S2,..." candidate gives a share.
size_t used_devices(const std::string& policy) {
  size_t n = 0;
  size_t pos = policy.find(':');
  while (pos != std::string::npos) {
    const size_t next = policy.find(',', pos + 1);
    n += std::stod(policy.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1)) > 0;
    pos = next;
  }
  return n;
}

std::string fmt(const char* f, double a) {
  char b[64];
  std::snprintf(b, sizeof b, f, a);
  return b;
}

// Why the devices carried what they did, from each device's run alone.
std::vector<std::string> reasons(const std::vector<Candidate>& cands, const std::vector<std::string>& ids,
                                 const PacketStore& s, int dispatchers, double pcie_gbs) {
  std::vector<std::string> out;
  const double bytes = s.size() ? double(s.total_caplen()) / s.size() : 0;
  for (size_t d = 0; d < ids.size() && d < cands.size(); ++d) {
    const ProbeRun& pr = cands[d].alone_run;
    if (pr.r.devices.size() <= d) continue;
    const DeviceReport& dev = pr.r.devices[d];
    const double secs = pr.r.run.seconds;
    const double pps = secs > 0 ? dev.packets / secs : 0;
    std::string why = ids[d] + " alone: " + fmt("%.2f Mpps", pps / 1e6);
    if (dev.kind == sched::DeviceKind::kGpu) {
      // The kernel reads in place (over PCIe) what the app needs of each frame: all of it for
      // payload apps, the headers for forwarding. Reading in place reaches about half of what
      // copies do (docs/RESULTS.md, the ceilings), hence the 40% mark.
      const double gbs = pps * bytes / 1e9;
      why += fmt(", frames of %.1f GB/s through its ring", gbs);
      if (pcie_gbs > 0) {
        why += fmt(" (host-to-GPU copies reach %.1f GB/s here; ", pcie_gbs) +
               (gbs > 0.4 * pcie_gbs ? "a payload app is then near what reading in place carries: PCIe)"
                                     : "well under what PCIe carries)");
      }
    } else if (dev.packets > 0) {
      const int threads = d < pr.threads.size() ? std::max(1, pr.threads[d]) : 1;
      const double busy = secs > 0 ? dev.busy_seconds / (secs * threads) : 0;
      why += fmt(dev.kind == sched::DeviceKind::kSim ? ", %.0f ns of (simulated) device time per packet" : ", %.0f ns of CPU per packet",
                 dev.busy_seconds * 1e9 / dev.packets) + fmt(" on %.0f thread", threads) +
             (threads > 1 ? "s" : "") + fmt(" (busy %.0f%%)", 100 * busy);
      if (busy > 0.85) why += ": its per-packet CPU cost bounds it";
    }
    const double disp = secs > 0 ? (pr.r.rx_seconds + pr.r.finish_seconds) / (secs * dispatchers) : 0;
    why += fmt("; the %.0f dispatchers", dispatchers) + fmt(" busy %.0f%%", 100 * std::min(1.0, disp));
    if (disp > 0.85) why += ": the receive side bounds it";
    out.push_back(why);
  }
  return out;
}

int run_advise(const AdviseOptions& o) {
  if (o.policy != "throughput" && o.policy != "latency" && o.policy != "energy") {
    throw UsageError("--policy " + o.policy + ": expected throughput, latency or energy");
  }
  LoadedApp a = load_app(o.table);
  ForwardApp& app = *a.app;
  PacketStore s;
  std::string traffic;
  if (!o.pcap.empty()) {
    s = load_pcap(o.pcap, 4'000'000);
    traffic = o.pcap;
  } else {
    try {
      s = a.generate(parse_gen_flag("--traffic", o.traffic));
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--traffic: ") + e.what());
    }
    traffic = o.traffic;
  }
  if (s.size() == 0) throw UsageError(traffic + ": no packets");
  ProbeSetup p;
  p.device = o.device;
  p.dispatchers = o.workers;
  if (!o.cores.empty()) p.cores = parse_cpu_list(o.cores);
  if (!o.gpus.empty()) p.gpus = parse_cpu_list(o.gpus);
  std::string note;
  const std::vector<std::string> ids = probe_device_ids(app, p, &note);
  const size_t nd = ids.size();

  // Each device alone, unpaced: what it carries, and its share of a split.
  std::vector<Candidate> cands;
  for (size_t d = 0; d < nd; ++d) cands.push_back({ids[d] + " alone", only_device(d, nd)});
  // A candidate's calibration: the run with the median score (the policy's figure) of
  // --calibration-runs; a run that lost, reordered or fell back from a failed device fails it.
  const auto median_run = [&](const ProbeSetup& setup, const std::string& policy, uint64_t packets, const std::string& pol) {
    std::vector<ProbeRun> runs;
    for (int k = 0; k < o.calibration_runs; ++k) {
      ProbeRun r = probe_once(app, s, setup, policy, packets, false, true);
      if (r.r.reordered || r.r.lost) throw std::runtime_error("reordered or lost packets");
      if (r.r.run.counters.rx_packets != packets || !r.r.run.counters.balanced()) throw std::runtime_error("accounting");
      for (const DeviceReport& d : r.r.devices) {
        if (d.failed) throw std::runtime_error(d.id + " failed: " + d.error);
      }
      runs.push_back(std::move(r));
    }
    const double load = setup.rate_mpps;
    std::sort(runs.begin(), runs.end(), [&](const ProbeRun& x, const ProbeRun& y) {
      return score(pol, figures_of(x, load)) < score(pol, figures_of(y, load));
    });
    return std::move(runs[runs.size() / 2]);
  };
  const auto unpaced = [&](Candidate& c) {
    try {
      c.alone_run = median_run(p, c.policy, packets_for(app, s, p, c.policy, o.seconds), "throughput");
      c.unpaced = figures_of(c.alone_run, 0);
    } catch (const std::exception& e) {
      c.error = e.what();
    }
  };
  for (Candidate& c : cands) unpaced(c);
  if (nd > 1) {
    std::string split = "static:";
    double total = 0;
    for (const Candidate& c : cands) total += c.error.empty() ? c.unpaced.mpps : 0;
    size_t used = 0;
    for (size_t d = 0; d < nd; ++d) {
      const double m = cands[d].error.empty() ? cands[d].unpaced.mpps : 0;
      const double share = total > 0 && m >= 0.05 * total ? m : 0;  // a device under 5% of the total is left out
      used += share > 0;
      split += (d ? "," : "") + fmt("%.3f", share);
    }
    if (used > 1) {
      cands.push_back({"split by capacity", split});
      unpaced(cands.back());
    }
  }
  // The offered load for the latency and energy policies, and each candidate at it.
  double load = o.rate_mpps;
  if (o.policy != "throughput") {
    if (load <= 0) {
      for (const Candidate& c : cands) load = std::max(load, c.error.empty() ? c.unpaced.mpps / 2 : 0);
    }
    ProbeSetup paced = p;
    paced.rate_mpps = load;
    for (Candidate& c : cands) {
      if (!c.error.empty()) continue;
      try {
        // As many packets as the load offers in --seconds, but no more than 1.5 times what the
        // candidate carried unpaced in that time: an unsustainable load ends the run as soon.
        const double mpps = std::min(load, 1.5 * c.unpaced.mpps);
        const auto packets = static_cast<uint64_t>(std::max(1000.0, mpps * 1e6 * std::max(o.seconds, 0.1)));
        c.loaded = figures_of(median_run(paced, c.policy, packets, o.policy), load);
      } catch (const std::exception& e) {
        c.error = e.what();
      }
    }
  }
  const auto fig = [&](const Candidate& c) -> const Figures& { return o.policy == "throughput" ? c.unpaced : c.loaded; };
  int top = -1;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (!cands[i].error.empty()) continue;
    if (top < 0 || score(o.policy, fig(cands[i])) > score(o.policy, fig(cands[top]))) top = static_cast<int>(i);
  }
  // Koromilas et al.'s lambda: a configuration must be better by that factor to be chosen over a
  // simpler one (fewer devices: no shards to move, nothing idle-polling on a device that carries
  // little). Among candidates as simple as each other and within lambda of the best, the one with
  // less energy per Mbit: their rates are a tie at the calibration's resolution.
  int pick = top;
  std::string pick_reason;
  if (top >= 0) {
    for (size_t i = 0; i < cands.size(); ++i) {
      if (!cands[i].error.empty() || int(i) == pick || !within(o.policy, fig(cands[i]), fig(cands[top]), o.lambda)) continue;
      const size_t ui = used_devices(cands[i].policy), up = used_devices(cands[pick].policy);
      // Fewer devices win; between candidates as simple as each other the policy's own figure
      // does (the throughput policy keeps the faster one), and for latency, energy breaks a tie
      // when it differs by more than lambda too (less is noise).
      const bool simpler = ui < up;
      const bool same = ui == up;
      const bool better = score(o.policy, fig(cands[i])) > score(o.policy, fig(cands[pick]));
      const bool greener = o.policy == "latency" && fig(cands[i]).j_per_mbit < (1 - o.lambda) * fig(cands[pick]).j_per_mbit;
      if (simpler || (same && (better || greener))) pick = static_cast<int>(i);
    }
    if (pick != top) {
      pick_reason = "within " + fmt("%.0f%%", 100 * o.lambda) + " of " + cands[top].name + " (the best calibrated), and " +
                    (used_devices(cands[pick].policy) < used_devices(cands[top].policy) ? "simpler" : "less energy per Mbit");
    }
  }
  double pcie = 0;
  for (const Candidate& c : cands) {
    for (const DeviceReport& d : c.alone_run.r.devices) {
      if (d.kind == sched::DeviceKind::kGpu && pcie == 0) {
        gpu::set_device(p.gpus.empty() ? 0 : p.gpus[0]);  // the first GPU device's card
        pcie = gpu::measure_pcie_bandwidth(size_t{64} << 20, 3).h2d_gbs;
      }
    }
  }
  const std::vector<std::string> why = reasons(cands, ids, s, o.workers, pcie);

  const MachineInfo m = machine_info();
  std::printf("advise: app %s on %s; devices", app.name(), traffic.c_str());
  for (const std::string& id : ids) std::printf(" %s", id.c_str());
  std::printf(", %d dispatchers; %s%s\n", o.workers, m.cpu_model.c_str(),
              gpu::available() ? (", " + gpu::device_info().name).c_str() : ", no GPU");
  if (!note.empty()) std::printf("%s\n", note.c_str());
  std::printf("policy %s", o.policy.c_str());
  if (o.policy != "throughput") std::printf(" at an offered load of %.2f Mpps%s", load, o.rate_mpps > 0 ? "" : " (half the best unpaced rate)");
  std::printf("; calibration per candidate: a warm-up of 1 to 5 passes, then the median of %d runs of at least %.2f s\n\n",
              o.calibration_runs, o.seconds);
  std::printf("%-20s %10s %9s %9s %8s %10s  %s\n", "candidate", "Mpps", "p50 us", "p99 us", "W", "J/Mbit", "shares");
  for (const Candidate& c : cands) {
    if (!c.error.empty()) {
      std::printf("%-20s %s\n", c.name.c_str(), c.error.c_str());
      continue;
    }
    const Figures& f = fig(c);
    std::string shares;
    for (size_t d = 0; d < f.share.size() && d < nd; ++d) shares += (d ? ", " : "") + ids[d] + fmt(" %.0f%%", 100 * f.share[d]);
    std::printf("%-20s %10.2f %9.1f %9.1f %8.1f %10.5f  %s%s\n", c.name.c_str(), f.mpps, f.p50_us, f.p99_us, f.watts,
                f.j_per_mbit, shares.c_str(), f.sustained ? "" : "  (did not sustain the load)");
  }
  if (pick < 0) {
    std::printf("\nno candidate ran: nothing to advise\n");
    return 1;
  }
  if (o.policy != "throughput" && !fig(cands[pick]).sustained) {
    std::printf("\nno candidate sustains %.2f Mpps: nothing to advise for the %s policy (a lower --rate-mpps, or "
                "--policy throughput)\n", load, o.policy.c_str());
    return 1;
  }
  const Candidate& best = cands[pick];
  const Figures& bf = fig(best);
  double second = 0;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (int(i) != pick && cands[i].error.empty()) second = std::max(second, fig(cands[i]).mpps);
  }
  std::printf("\npick: %s (%s)\n", best.name.c_str(),
              !pick_reason.empty() ? pick_reason.c_str()
              : o.policy == "throughput" ? fmt("the most packets per second; %.2fx the next best", second > 0 ? bf.mpps / second : 0).c_str()
              : o.policy == "latency" ? "the lowest p99 among the candidates that sustain the load"
                                      : "the least energy per Mbit among the candidates that sustain the load");
  std::printf("predicted: %.2f Mpps, p50 %.1f us, p99 %.1f us, %.5f J/Mbit (%.1f W; energy: %s)\n", bf.mpps, bf.p50_us,
              bf.p99_us, bf.j_per_mbit, bf.watts, best.alone_run.energy_sources.c_str());
  for (const std::string& w : why) std::printf("why: %s\n", w.c_str());

  nlohmann::json jcheck = nullptr;
  if (o.check) {
    ProbeSetup cp = p;
    if (o.policy != "throughput") cp.rate_mpps = load;
    std::vector<double> mpps, p99, jm;
    const uint64_t packets = o.policy == "throughput" ? packets_for(app, s, cp, best.policy, o.min_seconds)
                                                      : static_cast<uint64_t>(std::max(double(s.size()), load * 1e6 * o.min_seconds));
    for (int k = 0; k < o.reps; ++k) {
      const ProbeRun r = probe_once(app, s, cp, best.policy, packets, false, true);
      const Figures f = figures_of(r, cp.rate_mpps);
      mpps.push_back(f.mpps);
      p99.push_back(f.p99_us);
      jm.push_back(f.j_per_mbit);
    }
    const double mm = bench::median(mpps), mp = bench::median(p99), mj = bench::median(jm);
    std::printf("check: the pick run %d x at least %.2f s: %.2f Mpps (prediction %+.1f%%), p99 %.1f us (%+.1f%%), "
                "%.5f J/Mbit (%+.1f%%)\n", o.reps, o.min_seconds, mm, mm > 0 ? 100 * (bf.mpps / mm - 1) : 0.0, mp,
                mp > 0 ? 100 * (bf.p99_us / mp - 1) : 0.0, mj, mj > 0 ? 100 * (bf.j_per_mbit / mj - 1) : 0.0);
    jcheck = {{"mpps", mm}, {"p99_us", mp}, {"j_per_mbit", mj}, {"mpps_reps", mpps}};
  }
  nlohmann::json jverify = nullptr;
  if (o.verify_pick) {
    // Every candidate as bench schedule measures it; the pick is right when its figure is within
    // --verify-tolerance of the best measured (repetitions of one candidate spread about as much).
    ProbeSetup vp = p;
    if (o.policy != "throughput") vp.rate_mpps = load;
    std::vector<Figures> med(cands.size());
    for (size_t i = 0; i < cands.size(); ++i) {
      if (!cands[i].error.empty()) continue;
      std::vector<Figures> runs;
      try {
        const uint64_t packets =
            o.policy == "throughput"
                ? packets_for(app, s, vp, cands[i].policy, o.min_seconds)
                : static_cast<uint64_t>(std::max(1000.0, std::min(load, 1.5 * cands[i].unpaced.mpps) * 1e6 * o.min_seconds));
        for (int k = 0; k < o.reps; ++k) runs.push_back(figures_of(probe_once(app, s, vp, cands[i].policy, packets, false, true), vp.rate_mpps));
      } catch (const std::exception& e) {
        cands[i].error = std::string("--verify-pick: ") + e.what();
        continue;
      }
      std::vector<double> mp, p99, jm;
      int sustained = 0;
      for (const Figures& f : runs) {
        mp.push_back(f.mpps);
        p99.push_back(f.p99_us);
        jm.push_back(f.j_per_mbit);
        sustained += f.sustained;
      }
      med[i].mpps = bench::median(mp);
      med[i].p99_us = bench::median(p99);
      med[i].j_per_mbit = bench::median(jm);
      med[i].sustained = 2 * sustained > o.reps;
      cands[i].verify_mpps = mp;
    }
    // When no candidate sustained the load this time (a busy machine), they are judged on the
    // policy's figure alone.
    bool any_sustained = false;
    for (size_t i = 0; i < cands.size(); ++i) any_sustained = any_sustained || (cands[i].error.empty() && med[i].sustained);
    if (!any_sustained) {
      for (Figures& f : med) f.sustained = true;
    }
    int measured_best = -1;
    for (size_t i = 0; i < cands.size(); ++i) {
      if (!cands[i].error.empty()) continue;
      if (measured_best < 0 || score(o.policy, med[i]) > score(o.policy, med[measured_best])) measured_best = static_cast<int>(i);
    }
    if (measured_best < 0 || !cands[pick].error.empty()) {
      std::printf("verify-pick: the candidates could not be measured again\n");
      return 1;
    }
    const bool right = measured_best == pick || within(o.policy, med[pick], med[measured_best], o.verify_tolerance);
    std::printf("verify-pick: measured (%d x at least %.2f s each):", o.reps, o.min_seconds);
    for (size_t i = 0; i < cands.size(); ++i) {
      if (cands[i].error.empty()) {
        const auto [lo, hi] = std::minmax_element(cands[i].verify_mpps.begin(), cands[i].verify_mpps.end());
        std::printf(" %s %.2f Mpps (repetitions %.2f-%.2f), p99 %.1f us, %.5f J/Mbit%s;", cands[i].name.c_str(), med[i].mpps,
                    *lo, *hi, med[i].p99_us, med[i].j_per_mbit, med[i].sustained ? "" : " (not sustained)");
      }
    }
    std::printf(" the pick is the measured best: %s (best: %s)\n", right ? "yes" : "no", cands[measured_best].name.c_str());
    nlohmann::json jm = nlohmann::json::array();
    for (size_t i = 0; i < cands.size(); ++i) {
      jm.push_back({{"name", cands[i].name}, {"mpps", med[i].mpps}, {"p99_us", med[i].p99_us},
                    {"j_per_mbit", med[i].j_per_mbit}, {"sustained", med[i].sustained}, {"error", cands[i].error}});
    }
    // The prediction against the pick's own measurement.
    const double err = med[pick].mpps > 0 ? fig(cands[pick]).mpps / med[pick].mpps - 1 : 0;
    std::printf("prediction: the pick's calibrated %.2f Mpps against its measured %.2f (%+.1f%%)\n", fig(cands[pick]).mpps,
                med[pick].mpps, 100 * err);
    jverify = {{"measured_best", cands[measured_best].name}, {"pick_is_measured_best", right},
               {"tolerance", o.verify_tolerance}, {"measured", jm}, {"prediction_error", err}};
  }

  if (!o.json.empty()) {
    nlohmann::json jc = nlohmann::json::array();
    for (const Candidate& c : cands) {
      const Figures& f = fig(c);
      jc.push_back({{"name", c.name}, {"schedule", c.policy}, {"mpps", f.mpps}, {"p50_us", f.p50_us}, {"p99_us", f.p99_us},
                    {"watts", f.watts}, {"j_per_mbit", f.j_per_mbit}, {"share", f.share}, {"sustained", f.sustained},
                    {"unpaced_mpps", c.unpaced.mpps}, {"verify_mpps", c.verify_mpps}, {"error", c.error}});
    }
    bench::write_json(o.json, {{"command", "advise"}, {"app", app.name()}, {"traffic", traffic}, {"policy", o.policy},
                               {"offered_mpps", o.policy == "throughput" ? 0.0 : load}, {"devices", ids},
                               {"dispatchers", o.workers}, {"machine", bench::machine_json()}, {"candidates", jc},
                               {"pick", best.name}, {"pick_schedule", best.policy}, {"pick_reason", pick_reason},
                               {"best_calibrated", top >= 0 ? cands[top].name : ""}, {"lambda", o.lambda},
                               {"calibration_runs", o.calibration_runs}, {"why", why}, {"check", jcheck},
                               {"verify_pick", jverify}});
  }
  return 0;
}

}  // namespace

void register_advise(CLI::App& app) {
  auto o = std::make_shared<AdviseOptions>();
  CLI::App* c = app.add_subcommand("advise", "where to run an app on this machine: a short calibration of each device and "
                                             "a split, then a pick for the policy with its predicted figures and why");
  add_app_options(c, o->table);
  auto* traffic = c->add_option("--traffic", o->traffic, "the traffic (tandem gen spec; dst=fib: keys from the app's table)")
                      ->capture_default_str();
  auto* pcap = c->add_option("--pcap", o->pcap, "a capture as the traffic (its first 4,000,000 packets)");
  pcap->excludes(traffic);
  c->add_option("--policy", o->policy, "throughput, latency or energy")->capture_default_str()
      ->check(CLI::IsMember({"throughput", "latency", "energy"}));
  c->add_option("--device", o->device, "the devices to choose among, as tandem run --device with --schedule (e.g. cpu:7,gpu)")
      ->capture_default_str();
  c->add_option("--workers", o->workers, "receive threads (dispatchers), the same for every candidate")
      ->capture_default_str()->check(CLI::Range(1, 32));
  c->add_option("--cores", o->cores, "pin the dispatchers, then the CPU groups' threads, to these CPUs in order");
  c->add_option("--gpus", o->gpus, "what the device gpu stands for (e.g. 0,1)");
  c->add_option("--rate-mpps", o->rate_mpps, "latency and energy: the offered load (default: half the best unpaced rate)")
      ->check(FiniteRange(0.0, 1e5));
  c->add_option("--seconds", o->seconds, "calibration: least duration of each candidate's run")->capture_default_str()
      ->check(FiniteRange(0.01, 60.0));
  c->add_option("--calibration-runs", o->calibration_runs, "calibration: runs per candidate, odd (the median run counts)")
      ->capture_default_str()->check(CLI::IsMember({1, 3, 5, 7, 9}));
  c->add_option("--lambda", o->lambda,
                "a split or another device must be better by this factor to be picked over a simpler candidate")
      ->capture_default_str()->check(FiniteRange(0.0, 1.0));
  c->add_option("--verify-tolerance", o->verify_tolerance,
                "--verify-pick: a pick whose measured figure is within this factor of the best measured counts as right")
      ->capture_default_str()->check(FiniteRange(0.0, 0.5));
  c->add_flag("--check", o->check, "run the pick again (--reps x --min-seconds) and compare with the prediction");
  c->add_flag("--verify-pick", o->verify_pick, "measure every candidate (--reps x --min-seconds) and say whether the pick is the best");
  c->add_option("--reps", o->reps, "--check and --verify-pick: repetitions (median)")->capture_default_str()->check(CLI::Range(1, 100));
  c->add_option("--min-seconds", o->min_seconds, "--check and --verify-pick: least duration of a repetition")
      ->capture_default_str()->check(FiniteRange(0.01, 600.0));
  c->add_option("--json", o->json, "write the report here");
  c->callback([o] {
    const int rc = run_advise(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
