#include "sched/controller.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <functional>
#include <limits>

namespace tandem::sched {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

double mpps(double pps) { return pps / 1e6; }

// Devices that may carry traffic.
std::vector<bool> alive_mask(const Observation& obs) {
  std::vector<bool> m(obs.dev.size());
  for (size_t d = 0; d < m.size(); ++d) m[d] = !obs.dev[d].failed;
  return m;
}

bool any_alive(const Observation& obs) {
  return std::any_of(obs.dev.begin(), obs.dev.end(), [](const DeviceObs& d) { return !d.failed; });
}

// `w` scaled to shares over the devices in `mask`; equal over them when no weight is positive.
std::vector<double> normalized(std::vector<double> w, const std::vector<bool>& mask) {
  double sum = 0;
  size_t count = 0;
  for (size_t d = 0; d < w.size(); ++d) {
    if (!mask[d] || !(w[d] > 0) || !std::isfinite(w[d])) w[d] = 0;
    sum += w[d];
    count += mask[d];
  }
  for (size_t d = 0; d < w.size(); ++d) w[d] = sum > 0 ? w[d] / sum : (mask[d] ? 1.0 / double(count) : 0.0);
  return w;
}

// The rate to plan for: what arrives, plus draining within 10 ticks what waits at the NICs.
double demand_pps(const Observation& obs) {
  return obs.offered_pps + (obs.tick_s > 0 ? obs.backlog / (10 * obs.tick_s) : 0.0);
}

// "cpu0 0.30, gpu0 0.70"
std::string split_text(const Observation& obs, const std::vector<double>& share) {
  std::string s;
  for (size_t d = 0; d < share.size(); ++d) s += fmt("%s%s %.2f", d ? ", " : "", obs.dev[d].id.c_str(), share[d]);
  return s;
}

std::string failed_text(const Observation& obs, const std::vector<double>& share) {
  std::string s;
  for (size_t d = 0; d < share.size(); ++d)
    if (obs.dev[d].failed && share[d] > 0) s += (s.empty() ? "" : ", ") + obs.dev[d].id;
  return s;
}

// ------------------------------------------------------------------------------------------------
class StaticController final : public Controller {
 public:
  StaticController(std::vector<double> share, std::vector<uint32_t> batch)
      : share_(std::move(share)), batch_(std::move(batch)) {}
  std::string name() const override { return "static"; }

  Decision decide(const Observation& obs) override {
    const size_t n = obs.dev.size();
    std::vector<double> want(n, 0);
    for (size_t d = 0; d < n && d < share_.size(); ++d) want[d] = share_[d];
    const std::vector<bool> alive = alive_mask(obs);
    Decision out;
    if (!any_alive(obs)) return out;  // no split is possible; the scheduler keeps what it has
    out.share = normalized(want, alive);
    out.batch.assign(n, 0);
    if (!started_) {
      for (size_t d = 0; d < n && d < batch_.size(); ++d) out.batch[d] = batch_[d];
      out.change = true;
      out.reason = "static split: " + split_text(obs, out.share);
    } else if (alive != alive_) {
      out.change = true;
      out.reason = "failed devices changed, static split over the rest: " + split_text(obs, out.share);
    }
    started_ = true;
    alive_ = alive;
    return out;
  }

 private:
  std::vector<double> share_;
  std::vector<uint32_t> batch_;
  bool started_ = false;
  std::vector<bool> alive_;
};

// ------------------------------------------------------------------------------------------------
// NBA's LoadBalanceThruput: its `direction` is our momentum, its cpu_ratio our w. NBA compares the
// instantaneous TX rate at each update and slows its updates while w is low (num_pass); here the
// rate is the mean over the ticks since the last update and the period is fixed.
class NbaController final : public Controller {
 public:
  explicit NbaController(NbaOptions o) : o_(o), w_(std::clamp(o.initial_permille, 0, 1000)) {}
  std::string name() const override { return "nba"; }

  Decision decide(const Observation& obs) override {
    Decision out;
    if (!any_alive(obs)) return out;  // no split is possible; the scheduler keeps what it has
    if (started_) {                   // the first observation shows the scheduler's split, not ours
      window_sum_ += obs.achieved_pps;
      ++window_ticks_;
    }
    if (window_ticks_ >= std::max(1, o_.update_ticks)) {
      const double now = window_sum_ / window_ticks_;
      const bool rose = now > last_;
      if (rose) {  // keep going, faster
        momentum_ =
            momentum_ < 0 ? std::max(momentum_ - 1, -o_.max_momentum) : std::min(momentum_ + 1, o_.max_momentum);
      } else if (momentum_ < 0) {  // slow down; from -1 turn around
        if (++momentum_ == 0) momentum_ = 1;
      } else {
        if (--momentum_ == 0) momentum_ = -1;
      }
      w_ += momentum_ * o_.permille_step;
      if (w_ < 0) w_ = 0, momentum_ = 1;
      if (w_ > 1000) w_ = 1000, momentum_ = -1;
      out.reason = fmt("nba: throughput %s (%.2f -> %.2f Mpps), momentum %+d: cpu share %d permille",
                       rose ? "rose" : "did not rise", mpps(last_), mpps(now), momentum_, w_);
      last_ = now;
      window_sum_ = 0;
      window_ticks_ = 0;
    }
    out.share = split(obs);
    out.batch.assign(obs.dev.size(), 0);
    if (!started_ || out.share != emitted_) {
      out.change = true;
      if (out.reason.empty()) out.reason = fmt("nba: cpu share %d permille over ", w_) + split_text(obs, out.share);
    }
    started_ = true;
    emitted_ = out.share;
    return out;
  }

 private:
  // w over the live CPU-kind devices, 1 - w over the live others; all to one side when the other has none.
  std::vector<double> split(const Observation& obs) const {
    size_t cpus = 0, others = 0;
    for (const auto& d : obs.dev)
      if (!d.failed) (d.kind == DeviceKind::kCpu ? cpus : others)++;
    const double w = cpus == 0 ? 0.0 : others == 0 ? 1.0 : w_ / 1000.0;
    std::vector<double> share(obs.dev.size(), 0);
    for (size_t d = 0; d < share.size(); ++d) {
      if (obs.dev[d].failed) continue;
      share[d] = obs.dev[d].kind == DeviceKind::kCpu ? w / double(cpus) : (1 - w) / double(others);
    }
    return share;
  }

  NbaOptions o_;
  int w_;
  int momentum_ = 1;  // NBA starts by moving toward the CPU
  double last_ = 0;   // as in NBA, the first update always counts as a rise
  double window_sum_ = 0;
  int window_ticks_ = 0;
  bool started_ = false;
  std::vector<double> emitted_;
};

// ------------------------------------------------------------------------------------------------
// A device's power against its utilisation while it carries traffic (an exponentially weighted
// least-squares line, its slope shrunk toward flat while the utilisation has barely varied, since
// one operating point says nothing of the slope), and its power while parked.
struct PowerFit {
  double n = 0, su = 0, sw = 0, suu = 0, suw = 0;
  double parked_w = -1;  // -1: never seen parked

  bool known() const { return n > 0; }
  void add_active(double u, double w) {
    constexpr double kKeep = 0.99;  // remembers about the last 100 ticks
    n = n * kKeep + 1, su = su * kKeep + u, sw = sw * kKeep + w;
    suu = suu * kKeep + u * u, suw = suw * kKeep + u * w;
  }
  void add_parked(double w) { parked_w = parked_w < 0 ? w : parked_w + 0.2 * (w - parked_w); }
  double at(double u) const {
    const double mu = su / n, mw = sw / n;
    const double var = std::max(0.0, suu / n - mu * mu), cov = suw / n - mu * mw;
    const double slope = std::max(0.0, cov / (var + 0.005));  // ridge 0.005: a utilisation spread of 0.07
    return std::max(0.0, mw + slope * (u - mu));
  }
};

class ModelController final : public Controller {
 public:
  explicit ModelController(ModelOptions o) : o_(o) {}
  std::string name() const override { return std::string("model-") + policy_name(o_.policy); }
  Decision decide(const Observation& obs) override;

 private:
  struct Device {
    double mu = 0;          // capacity estimate, packets per second
    bool measured = false;  // mu rests on the device's own busy or saturation samples, not on the prior
    double floor = 0;       // unmeasured: the most it carried, raised by probes
    PowerFit power;
  };
  struct Plan {
    std::vector<double> share;
    double cost = kInf;  // lower is better: 1 / capacity, watts, or the worst wait in seconds
    std::string why;
  };

  void reset(const Observation& obs);
  void estimate(const Observation& obs);
  // The policy's split over `allowed`; with exact_set, over all of them (the set is not the question).
  Plan solve(const Observation& obs, const std::vector<bool>& allowed, bool exact_set) const;
  std::vector<double> by_capacity(const std::vector<bool>& set) const;
  double capacity(const std::vector<bool>& set) const;
  double watts(const Observation& obs, const std::vector<double>& share) const;
  double wait(const Observation& obs, size_t d, double s) const;
  double worst_wait(const Observation& obs, const std::vector<double>& share) const;
  std::string capacities(const Observation& obs, const std::vector<bool>& set) const;

  ModelOptions o_;
  std::vector<Device> dev_;
  std::vector<double> cur_;        // the split in force
  std::vector<double> last_move_;  // its last change, to tell a reversal
  int since_change_ = 0;
  double last_backlog_ = 0;
  int backlog_growth_ = 0;  // ticks running that the backlog grew
};

void ModelController::reset(const Observation& obs) {
  const size_t n = obs.dev.size();
  dev_.assign(n, Device{});
  std::vector<double> held(n);
  for (size_t d = 0; d < n; ++d) held[d] = obs.dev[d].share;
  cur_ = normalized(held, alive_mask(obs));
  last_move_.assign(n, 0);
  since_change_ = o_.min_dwell_ticks;
  last_backlog_ = obs.backlog;
  backlog_growth_ = 0;
}

void ModelController::estimate(const Observation& obs) {
  const size_t n = obs.dev.size();
  int alive = 0, saturated = 0;
  double carried = 0;
  std::vector<bool> sampled(n, false);
  for (size_t d = 0; d < n; ++d) {  // devices whose busy time or saturation tells their capacity
    const DeviceObs& o = obs.dev[d];
    Device& e = dev_[d];
    if (o.failed) continue;
    ++alive, carried += o.pps, saturated += o.saturated;
    const double sample = o.busy > 0.05 ? o.pps / std::min(o.busy, 1.0) : o.saturated ? o.pps : -1;
    if (!(sample > 0)) continue;
    // A saturated device below its estimate is short of capacity now: follow it faster than noise.
    const double w = !e.measured ? 1.0 : (o.saturated && sample < e.mu) ? std::max(o_.ewma, 0.5) : o_.ewma;
    e.mu += w * (sample - e.mu);
    e.measured = sampled[d] = true;
  }
  double measured_sum = 0;
  int measured = 0;
  for (size_t d = 0; d < n; ++d)
    if (!obs.dev[d].failed && dev_[d].measured) measured_sum += dev_[d].mu, ++measured;
  // A device without evidence of its own is assumed as fast as the measured ones (none: an equal split).
  const double prior =
      measured ? measured_sum / measured : std::max({obs.offered_pps, carried, 1.0}) / std::max(alive, 1);
  double top = 0;
  for (size_t d = 0; d < n; ++d) {
    const DeviceObs& o = obs.dev[d];
    Device& e = dev_[d];
    if (o.failed) continue;
    if (!sampled[d]) {
      // No sample (a GPU below saturation, an idle device): what it carried is a lower bound. While
      // others are saturated or the backlog grows and it carries about its estimate, raise the
      // estimate: an overestimate corrects itself (the device saturates and is measured), an
      // underestimate never would.
      const bool probe = (saturated > 0 || backlog_growth_ >= 2) && o.busy < 0 && o.share > 0;
      if (!e.measured) {
        e.floor = std::max(e.floor, o.pps);
        if (probe && o.pps >= 0.9 * std::max(prior, e.floor)) e.floor = 1.25 * std::max(prior, e.floor);
        e.mu = std::max(prior, e.floor);
      } else {
        if (probe && o.pps >= 0.9 * e.mu) e.mu *= 1.05;
        e.mu = std::max(e.mu, o.pps);
      }
    }
    top = std::max(top, e.mu);
  }
  for (size_t d = 0; d < n; ++d) {
    const DeviceObs& o = obs.dev[d];
    Device& e = dev_[d];
    if (o.failed) continue;
    // At least 1% of the largest: a device that looked dead keeps a sliver of traffic, so its recovery shows.
    e.mu = std::max({e.mu, 0.01 * top, 1.0});
    if (o.watts > 0 && o.share <= 0 && o.pps <= 0) e.power.add_parked(o.watts);
    if (o.watts > 0 && o.share > 0) e.power.add_active(std::min(1.0, o.pps / e.mu), o.watts);
  }
}

std::vector<double> ModelController::by_capacity(const std::vector<bool>& set) const {
  std::vector<double> w(set.size());
  for (size_t d = 0; d < set.size(); ++d) w[d] = set[d] ? dev_[d].mu : 0;
  return normalized(w, set);
}

double ModelController::capacity(const std::vector<bool>& set) const {
  double c = 0;
  for (size_t d = 0; d < set.size(); ++d) c += set[d] ? dev_[d].mu : 0;
  return c;
}

// Predicted power of all live devices with `share`. Unknown power: a parked device is assumed to
// save all of it (learned once parked); an active one costs the largest known full-load power, a
// GPU twice that (it idles higher), so that measured devices are preferred.
double ModelController::watts(const Observation& obs, const std::vector<double>& share) const {
  double ref = 0, sum = 0;
  for (const Device& e : dev_) ref = std::max(ref, e.power.known() ? e.power.at(1) : 0.0);
  if (ref <= 0) ref = 1;
  for (size_t d = 0; d < share.size(); ++d) {
    const PowerFit& p = dev_[d].power;
    if (obs.dev[d].failed) continue;
    if (share[d] <= 0) {
      sum += std::max(p.parked_w, 0.0);
    } else {
      const double u = std::min(1.0, share[d] * demand_pps(obs) / dev_[d].mu);
      sum += p.known() ? p.at(u) : ref * (obs.dev[d].kind == DeviceKind::kCpu ? 1.0 : 2.0);
    }
  }
  return sum;
}

// Device d's M/D/1-style wait with share s: a batch's service time over (1 - utilisation).
double ModelController::wait(const Observation& obs, size_t d, double s) const {
  if (s <= 0) return 0;
  const double rho = s * demand_pps(obs) / dev_[d].mu;
  return rho >= 1 ? kInf : std::max<uint32_t>(obs.dev[d].batch, 1) / dev_[d].mu / (1 - rho);
}

double ModelController::worst_wait(const Observation& obs, const std::vector<double>& share) const {
  double worst = 0;
  for (size_t d = 0; d < share.size(); ++d) worst = std::max(worst, wait(obs, d, share[d]));
  return worst;
}

std::string ModelController::capacities(const Observation& obs, const std::vector<bool>& set) const {
  std::string s;
  for (size_t d = 0; d < set.size(); ++d)
    if (set[d]) s += fmt("%s%s %.2f", s.empty() ? "" : ", ", obs.dev[d].id.c_str(), mpps(dev_[d].mu));
  return "{" + s + "} Mpps";
}

ModelController::Plan ModelController::solve(const Observation& obs, const std::vector<bool>& allowed,
                                             bool exact_set) const {
  const size_t n = allowed.size();
  const double x = demand_pps(obs);
  Plan p;
  p.share = by_capacity(allowed);
  const double cap = capacity(allowed);
  if (o_.policy == Policy::kThroughput) {
    p.cost = cap > 0 ? 1 / cap : kInf;
    p.why = fmt("throughput: demand %.2f Mpps, shares follow capacity ", mpps(x)) + capacities(obs, allowed);
  } else if (o_.policy == Policy::kEnergy) {
    std::vector<bool> set = allowed;
    if (!exact_set) {  // the cheapest devices (full-load watts per capacity) that carry x at rho_max
      std::vector<size_t> order;
      for (size_t d = 0; d < n; ++d)
        if (allowed[d]) order.push_back(d);
      auto cost = [&](size_t d) { return dev_[d].power.known() ? dev_[d].power.at(1) / dev_[d].mu : kInf; };
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (cost(a) != cost(b)) return cost(a) < cost(b);
        const bool ca = obs.dev[a].kind == DeviceKind::kCpu, cb = obs.dev[b].kind == DeviceKind::kCpu;
        return ca != cb ? ca : dev_[a].mu > dev_[b].mu;  // unknown power: a GPU idles higher than a CPU
      });
      std::fill(set.begin(), set.end(), false);
      double c = 0;
      for (size_t d : order) {
        if (c > 0 && x <= o_.rho_max * c) break;
        set[d] = true;
        c += dev_[d].mu;
      }
    }
    p.share = by_capacity(set);
    p.cost = watts(obs, p.share);
    const double c = capacity(set);
    p.why = fmt("energy: demand %.2f Mpps on ", mpps(x)) + capacities(obs, set) +
            fmt(" at rho %.2f, predicted %.1f W", c > 0 ? x / c : 0.0, p.cost);
  } else {
    std::vector<size_t> idx;
    for (size_t d = 0; d < n; ++d)
      if (allowed[d]) idx.push_back(d);
    p.cost = worst_wait(obs, p.share);
    std::vector<double> s(n, 0);
    auto consider = [&] {
      const double w = worst_wait(obs, s);
      if (w < p.cost) p.cost = w, p.share = s;
    };
    const int lowest = exact_set ? 1 : 0;  // with exact_set every device keeps at least 1%
    if (idx.size() <= 3) {                 // every split in 1% steps
      std::function<void(size_t, int)> grid = [&](size_t i, int left) {
        if (i + 1 == idx.size()) {
          if (left >= lowest) s[idx[i]] = left / 100.0, consider();
          return;
        }
        for (int k = lowest; k <= left; ++k) s[idx[i]] = k / 100.0, grid(i + 1, left - k);
      };
      if (!idx.empty()) grid(0, 100);
    } else {  // from the capacity split, move 1% from the worst device to the one it hurts least
      s = p.share;
      for (int it = 0; it < 1000 && std::isfinite(p.cost); ++it) {
        size_t worst = idx[0];
        for (size_t d : idx)
          if (wait(obs, d, s[d]) > wait(obs, worst, s[worst])) worst = d;
        const double step = std::min(0.01, s[worst] - (exact_set ? 0.01 : 0.0));
        if (step <= 0) break;
        std::vector<double> best_s;
        double best_w = p.cost;
        for (size_t d : idx) {
          if (d == worst) continue;
          std::vector<double> t = s;
          t[worst] -= step, t[d] += step;
          const double w = worst_wait(obs, t);
          if (w < best_w) best_w = w, best_s = t;
        }
        if (best_s.empty()) break;
        s = best_s, p.cost = best_w, p.share = best_s;
      }
    }
    if (!std::isfinite(p.cost)) {
      p.share = by_capacity(allowed);
      p.why = fmt("latency: demand %.2f Mpps overloads every split, shares follow capacity ", mpps(x)) +
              capacities(obs, allowed);
    } else {
      p.why = fmt("latency: demand %.2f Mpps, predicted worst wait %.1f us with ", mpps(x), p.cost * 1e6) +
              split_text(obs, p.share);
    }
  }
  return p;
}

Decision ModelController::decide(const Observation& obs) {
  const size_t n = obs.dev.size();
  if (dev_.size() != n || cur_.size() != n) reset(obs);
  backlog_growth_ = obs.backlog > last_backlog_ ? backlog_growth_ + 1 : 0;
  last_backlog_ = obs.backlog;
  estimate(obs);
  ++since_change_;

  Decision out;
  out.batch.assign(n, 0);
  out.share = cur_;
  const std::vector<bool> alive = alive_mask(obs);
  if (!any_alive(obs)) return out;  // nothing can carry traffic; the scheduler keeps what it has
  int saturated = 0, unsaturated = 0;
  for (size_t d = 0; d < n; ++d)
    if (alive[d]) (obs.dev[d].saturated ? saturated : unsaturated)++;
  // Traffic is being lost or queued now: correct at once, not gently.
  const bool overloaded = backlog_growth_ >= 2 || (saturated > 0 && unsaturated > 0);

  Plan plan = solve(obs, alive, false);
  std::vector<bool> cur_set(n), plan_set(n);
  for (size_t d = 0; d < n; ++d) cur_set[d] = alive[d] && cur_[d] > 0, plan_set[d] = plan.share[d] > 0;
  if (std::any_of(cur_set.begin(), cur_set.end(), [](bool a) { return a; }) && cur_set != plan_set) {
    // Lambda hysteresis on the device set: joining or leaving must pay, unless the set in force is too small.
    // A smaller set must also carry the demand with lambda to spare, or load noise around its
    // capacity would park and wake a device over and over.
    const double demand = demand_pps(obs), plan_cap = capacity(plan_set);
    const bool carries = demand <= o_.rho_max * capacity(cur_set);
    const bool tight = plan_cap < capacity(cur_set) && demand * o_.lambda > o_.rho_max * plan_cap;
    Plan keep = solve(obs, cur_set, true);
    const double gain = plan.cost > 0 ? keep.cost / plan.cost : kInf;
    if (carries && (tight || !(gain > o_.lambda))) {
      keep.why += tight ? fmt(" (device set kept: the smaller one would run at rho %.2f)", demand / plan_cap)
                        : fmt(" (device set kept: changing it would gain %.2fx <= lambda)", gain);
      plan = std::move(keep);
    } else {
      plan.why += carries ? fmt(" (device set changed: %.2fx better)", gain)
                          : " (device set changed: the current one cannot carry the demand)";
    }
  }

  for (size_t d = 0; d < n; ++d) plan_set[d] = plan.share[d] > 0;
  std::vector<double> next = plan.share;
  double dist = 0, dot = 0;
  for (size_t d = 0; d < n; ++d)
    dist = std::max(dist, std::fabs(next[d] - cur_[d])), dot += (next[d] - cur_[d]) * last_move_[d];
  std::string why = plan.why;
  const std::string failed = failed_text(obs, cur_);
  if (!failed.empty()) {
    why = failed + " failed: share 0; " + why;  // no dwell, no limit: it must get nothing now
  } else {
    if (dist < o_.deadband && cur_set == plan_set) return out;  // a device joining or leaving is never noise
    if (dot < 0 && since_change_ < o_.min_dwell_ticks && !overloaded) return out;  // too soon to reverse
    if (overloaded) {
      why += "; overloaded: moving at once";
    } else if (dist > o_.max_move) {
      for (size_t d = 0; d < n; ++d) next[d] = cur_[d] + o_.max_move / dist * (next[d] - cur_[d]);
      why += fmt("; moving %.2f of %.2f this tick", o_.max_move, dist);
    }
  }
  for (double& s : next) s = s < 1e-12 ? 0 : s;  // rounding residue of the moves above is no share
  next = normalized(next, alive);
  for (size_t d = 0; d < n; ++d) last_move_[d] = next[d] - cur_[d];
  cur_ = next;
  since_change_ = 0;
  out.change = true;
  out.share = cur_;
  out.reason = why;
  return out;
}

// ------------------------------------------------------------------------------------------------
class KoromilasController final : public Controller {
 public:
  KoromilasController(std::vector<ProfileEntry> table, KoromilasOptions o) : table_(std::move(table)), o_(o) {
    for (const ProfileEntry& e : table_) profiled_health_.push_back(e.health > 0 ? e.health : 1.0);
  }
  std::string name() const override { return std::string("koromilas-") + policy_name(o_.policy); }
  Decision decide(const Observation& obs) override;

 private:
  struct Search {  // step 3's batch search over the devices found off their expected rate
    bool active = false;
    std::vector<int> dir;              // per device: +1 growing, -1 shrinking, 0 not searched (or done)
    std::vector<double> target;        // the rate the table promised it
    std::vector<uint32_t> best_batch;  // where it ran fastest while saturated
    std::vector<double> best_pps;
    double log_step = 1;
    int steps = 0;
  };

  bool usable(const ProfileEntry& e, const Observation& obs) const {
    if (e.share.size() != obs.dev.size() || !(e.mpps_max > 0)) return false;
    for (size_t d = 0; d < e.share.size(); ++d)
      if (e.share[d] > 0 && obs.dev[d].failed) return false;
    return true;
  }
  double rate(const ProfileEntry& e) const { return e.mpps_max * 1e6 * e.health; }  // pps it sustains now
  double merit(const ProfileEntry& e, const Observation& obs) const;                // higher is better for the policy
  uint32_t batch_of(const Observation& obs, size_t d) const {
    return obs.dev[d].batch > 0 ? obs.dev[d].batch : in_force_[d] > 0 ? in_force_[d] : o_.min_batch;
  }
  uint32_t clamp_batch(double b) const {
    return uint32_t(std::clamp(std::lround(b), long(o_.min_batch), long(std::max(o_.min_batch, o_.max_batch))));
  }
  std::string describe(int i) const {
    const ProfileEntry& e = table_[i];
    return fmt("#%d (%.2f Mpps x health %.2f, p99 %.0f us)", i, e.mpps_max, e.health, e.p99_us);
  }
  // How far an entry's batches are from those running now (octaves): among equals, the least change.
  double batch_distance(const ProfileEntry& e, const Observation& obs) const {
    double dist = 0;
    for (size_t d = 0; d < e.batch.size() && d < obs.dev.size(); ++d)
      if (e.share[d] > 0 && e.batch[d] > 0) dist += std::fabs(std::log2(double(e.batch[d]) / batch_of(obs, d)));
    return dist;
  }
  int select(const Observation& obs) const;
  void refresh_health();
  Decision check(const Observation& obs);
  Decision search_step(const Observation& obs);
  Decision step1(const Observation& obs, std::string why);
  Decision emit(const Observation& obs, std::vector<uint32_t> batch, std::string why);

  std::vector<ProfileEntry> table_;
  std::vector<double> profiled_health_;
  KoromilasOptions o_;
  int cur_ = -1;
  std::vector<uint32_t> in_force_;  // batches last sent
  std::vector<double> dev_cap_;     // per device: its rate while saturated below profile; +inf: no such evidence
  int off_ticks_ = 0;
  Search search_;
  std::vector<double> fallback_;  // the equal split sent while no entry is usable
};

double KoromilasController::merit(const ProfileEntry& e, const Observation& obs) const {
  switch (o_.policy) {
    case Policy::kThroughput:
      return rate(e);
    case Policy::kLatency:
      return e.p99_us > 0 ? 1 / e.p99_us : 0;
    case Policy::kEnergy: {
      const double bytes = obs.mean_frame_bytes > 0 ? obs.mean_frame_bytes : 64;
      const double j = obs.offered_pps > 0 ? joules_per_mbit(e, mpps(obs.offered_pps), bytes) : e.watts_idle;
      return j > 0 && std::isfinite(j) ? 1 / j : 0;
    }
  }
  return 0;
}

int KoromilasController::select(const Observation& obs) const {
  const double need = obs.offered_pps * (1 + o_.margin);
  auto same = [](double x, double y) { return std::fabs(x - y) <= 1e-6 * std::max(std::fabs(x), std::fabs(y)); };
  // Is `e` preferable to `b`: by `pe` vs `pb`, then (equal within measurement precision) faster, then the least change.
  auto prefer = [&](const ProfileEntry& e, const ProfileEntry& b, double pe, double pb) {
    if (!same(pe, pb)) return pe > pb;
    if (!same(rate(e), rate(b))) return rate(e) > rate(b);
    return batch_distance(e, obs) < batch_distance(b, obs);
  };
  int best = -1, fastest = -1;
  for (int i = 0; i < int(table_.size()); ++i) {
    const ProfileEntry& e = table_[i];
    if (!usable(e, obs)) continue;
    if (fastest < 0 || prefer(e, table_[fastest], rate(e), rate(table_[fastest]))) fastest = i;
    if (rate(e) >= need && (best < 0 || prefer(e, table_[best], merit(e, obs), merit(table_[best], obs)))) best = i;
  }
  return best >= 0 ? best : fastest;
}

// An entry sustains at most what each device's measured capacity allows at its share; without
// measurements, what it was profiled to. This carries what one entry taught to all that use the device.
void KoromilasController::refresh_health() {
  for (size_t i = 0; i < table_.size(); ++i) {
    ProfileEntry& e = table_[i];
    double h = profiled_health_[i];
    for (size_t d = 0; d < e.share.size() && d < dev_cap_.size(); ++d)
      if (e.share[d] > 0 && std::isfinite(dev_cap_[d])) h = std::min(h, dev_cap_[d] / (e.mpps_max * 1e6 * e.share[d]));
    e.health = std::max(h, 0.01);
  }
}

Decision KoromilasController::emit(const Observation& obs, std::vector<uint32_t> batch, std::string why) {
  const ProfileEntry& e = table_[cur_];
  Decision out;
  out.change = true;
  out.share = normalized(e.share, alive_mask(obs));
  out.batch.assign(obs.dev.size(), 0);
  for (size_t d = 0; d < out.batch.size() && d < batch.size(); ++d)
    if (out.share[d] > 0 && batch[d] > 0) out.batch[d] = in_force_[d] = clamp_batch(batch[d]);
  out.reason = std::move(why);
  return out;
}

// Step 1: the policy's best entry; switch only if the current one cannot sustain or is beaten by lambda.
Decision KoromilasController::step1(const Observation& obs, std::string why) {
  const int best = select(obs);
  if (best < 0) {  // every entry needs a failed device: spread over the live ones rather than stop
    cur_ = -1;
    Decision out;
    out.share = normalized(std::vector<double>(obs.dev.size(), 1.0), alive_mask(obs));
    out.batch.assign(obs.dev.size(), 0);
    out.change = out.share != fallback_;
    out.reason = why + "no usable profile entry: equal split over the live devices";
    fallback_ = out.share;
    return out;
  }
  fallback_.clear();
  const double need = obs.offered_pps * (1 + o_.margin);
  std::string change;
  if (cur_ < 0) {
    change = "start with " + describe(best);
  } else if (!usable(table_[cur_], obs)) {
    change = describe(cur_) + " uses a failed device: " + describe(best);
  } else if (best != cur_) {
    const double gain = merit(table_[best], obs) / merit(table_[cur_], obs);
    if (rate(table_[cur_]) < need)
      change =
          fmt("offered %.2f Mpps x %.2f > %.2f that ", mpps(obs.offered_pps), 1 + o_.margin, mpps(rate(table_[cur_]))) +
          describe(cur_) + " sustains: " + describe(best);
    else if (gain > o_.lambda)
      change = describe(best) + fmt(" is %.2fx better than ", gain) + describe(cur_);
  }
  if (!change.empty()) {
    cur_ = best;
    off_ticks_ = 0;
    return emit(obs, table_[cur_].batch, why + policy_name(o_.policy) + ": " + change);
  }
  const ProfileEntry& e = table_[cur_];
  for (size_t d = 0; d < e.batch.size() && d < in_force_.size(); ++d)
    if (e.share[d] > 0 && e.batch[d] > 0 && clamp_batch(e.batch[d]) != in_force_[d])
      return emit(obs, e.batch, why + "batches of " + describe(cur_));
  Decision out;
  out.share = normalized(e.share, alive_mask(obs));
  out.reason = why;
  return out;
}

// Step 3 outside a search: is any device of the current entry off its expected rate?
Decision KoromilasController::check(const Observation& obs) {
  ProfileEntry& e = table_[cur_];
  const size_t n = obs.dev.size();
  std::vector<int> off(n, 0);
  std::string what;
  for (size_t d = 0; d < n; ++d) {
    if (!(e.share[d] > 0)) continue;
    const DeviceObs& o = obs.dev[d];
    const double expected = std::min(obs.offered_pps, rate(e)) * e.share[d];
    // Slower: saturated below what it should carry. Faster: above a capacity measured earlier (recovered).
    if (o.saturated && o.pps < (1 - o_.delta) * expected)
      off[d] = +1;
    else if (std::isfinite(dev_cap_[d]) && o.pps > (1 + o_.delta) * dev_cap_[d])
      off[d] = -1;
    if (off[d])
      what += fmt("%s%s %.2f Mpps vs %.2f expected", what.empty() ? "" : ", ", o.id.c_str(), mpps(o.pps),
                  mpps(off[d] > 0 ? expected : dev_cap_[d]));
  }
  if (what.empty() || ++off_ticks_ < o_.confirm_ticks) {
    if (what.empty()) off_ticks_ = 0;
    return {};
  }
  off_ticks_ = 0;
  const double old_health = e.health;
  search_ = Search{};
  search_.active = true;
  search_.dir = off;
  search_.target.assign(n, 0);
  search_.best_batch.assign(n, 0);
  search_.best_pps.assign(n, 0);
  bool up = false;
  for (size_t d = 0; d < n; ++d) {
    if (!off[d]) continue;
    dev_cap_[d] = off[d] > 0 ? obs.dev[d].pps : kInf;
    search_.target[d] = std::min(obs.offered_pps, e.mpps_max * 1e6 * profiled_health_[cur_]) * e.share[d];
    search_.best_batch[d] = batch_of(obs, d);
    search_.best_pps[d] = obs.dev[d].saturated ? obs.dev[d].pps : 0;
    up |= off[d] > 0;
  }
  refresh_health();
  search_.log_step = std::log2(std::max(up ? o_.alpha : o_.beta, 1.0));
  std::vector<uint32_t> next = in_force_;
  std::string moves;
  for (size_t d = 0; d < n; ++d) {
    if (!off[d]) continue;
    const uint32_t b = batch_of(obs, d);
    next[d] = clamp_batch(b * std::exp2(off[d] * search_.log_step));
    moves += fmt(" %s %u -> %u", obs.dev[d].id.c_str(), b, next[d]);
  }
  ++search_.steps;
  return emit(
      obs, next,
      what +
          fmt(" for %d ticks: #%d health %.2f -> %.2f; batch search:", o_.confirm_ticks, cur_, old_health, e.health) +
          moves);
}

Decision KoromilasController::search_step(const Observation& obs) {
  const size_t n = obs.dev.size();
  std::vector<uint32_t> next = in_force_;
  std::string moves, finished;
  bool searching = false;
  for (size_t d = 0; d < n; ++d) {
    int& dir = search_.dir[d];
    if (!dir) continue;
    const DeviceObs& o = obs.dev[d];
    const uint32_t b = batch_of(obs, d);
    if (o.saturated && o.pps > search_.best_pps[d]) search_.best_pps[d] = o.pps, search_.best_batch[d] = b;
    const double target = search_.target[d];
    const int want = (o.saturated && o.pps < (1 - o_.delta) * target) ? +1 : o.pps > (1 + o_.delta) * target ? -1 : 0;
    if (want == 0) {  // as promised: keep this batch
      dev_cap_[d] = o.saturated ? o.pps : kInf;
      next[d] = b;
      dir = 0;
      finished += fmt(" %s %u (as profiled)", o.id.c_str(), b);
      continue;
    }
    if (want != dir) search_.log_step /= 2, dir = want;  // overshot: finer steps back
    const uint32_t nb = clamp_batch(b * std::exp2(want * search_.log_step));
    if (search_.log_step < 0.125 || nb == b) {  // converged or at a bound: the best batch seen
      if (search_.best_pps[d] > 0)
        dev_cap_[d] = search_.best_pps[d], next[d] = search_.best_batch[d];
      else
        next[d] = b;
      dir = 0;
      finished += fmt(" %s %u (%.2f Mpps)", o.id.c_str(), next[d], mpps(search_.best_pps[d]));
      continue;
    }
    next[d] = nb;
    searching = true;
    moves += fmt(" %s %u -> %u", o.id.c_str(), b, nb);
  }
  if (searching) {
    ++search_.steps;
    return emit(obs, next,
                fmt("batch search step %d:", search_.steps) + moves + (finished.empty() ? "" : ";" + finished));
  }
  // Done: the entry keeps the batches found, its health follows, and step 1 decides again.
  search_.active = false;
  ProfileEntry& e = table_[cur_];
  e.batch.resize(n, 0);
  for (size_t d = 0; d < n; ++d)
    if (e.share[d] > 0) e.batch[d] = next[d];
  refresh_health();
  return step1(obs, fmt("batch search done after %d step%s:", search_.steps, search_.steps == 1 ? "" : "s") + finished +
                        fmt(", #%d health %.2f; ", cur_, e.health));
}

Decision KoromilasController::decide(const Observation& obs) {
  const size_t n = obs.dev.size();
  if (!any_alive(obs)) return {};  // no split is possible; the scheduler keeps what it has
  if (dev_cap_.size() != n) {
    dev_cap_.assign(n, kInf);
    in_force_.assign(n, 0);
    search_ = Search{};
    cur_ = -1;
    refresh_health();
  }
  if (cur_ >= 0 && !usable(table_[cur_], obs)) {
    search_.active = false;
    return step1(obs, "");
  }
  if (search_.active) return search_step(obs);
  if (cur_ >= 0) {
    Decision d = check(obs);
    if (d.change) return d;
  }
  return step1(obs, "");
}

}  // namespace

std::unique_ptr<Controller> make_static_controller(std::vector<double> share, std::vector<uint32_t> batch) {
  return std::make_unique<StaticController>(std::move(share), std::move(batch));
}

std::unique_ptr<Controller> make_nba_controller(NbaOptions o) { return std::make_unique<NbaController>(o); }

std::unique_ptr<Controller> make_model_controller(ModelOptions o) { return std::make_unique<ModelController>(o); }

std::unique_ptr<Controller> make_koromilas_controller(std::vector<ProfileEntry> table, KoromilasOptions o) {
  return std::make_unique<KoromilasController>(std::move(table), o);
}

std::string validate_decision(const Observation& obs, const Decision& d) {
  if (!d.change) return "";
  const size_t n = obs.dev.size();
  if (d.share.size() != n) return fmt("%zu shares for %zu devices", d.share.size(), n);
  if (d.batch.size() != n) return fmt("%zu batches for %zu devices", d.batch.size(), n);
  if (d.reason.empty()) return "no reason given";
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(d.share[i]) || d.share[i] < 0) return fmt("share %g for %s", d.share[i], obs.dev[i].id.c_str());
    if (obs.dev[i].failed && d.share[i] != 0) return "failed " + obs.dev[i].id + " has a share";
    sum += d.share[i];
  }
  if (std::fabs(sum - 1) > 1e-9) return fmt("shares sum to %.12f", sum);
  return "";
}

}  // namespace tandem::sched
