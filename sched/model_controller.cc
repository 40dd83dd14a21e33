#include "sched/controller.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "sched/controller_impl.h"

namespace tandem::sched {
namespace {

using detail::alive_mask;
using detail::any_alive;
using detail::fmt;
using detail::kInf;
using detail::mpps;
using detail::normalized;
using detail::split_text;

// The rate to plan for: what arrives, plus draining within 10 ticks what waits at the NICs.
double demand_pps(const Observation& obs) {
  return obs.offered_pps + (obs.tick_s > 0 ? obs.backlog / (10 * obs.tick_s) : 0.0);
}

std::string failed_text(const Observation& obs, const std::vector<double>& share) {
  std::string s;
  for (size_t d = 0; d < share.size(); ++d)
    if (obs.dev[d].failed && share[d] > 0) s += (s.empty() ? "" : ", ") + obs.dev[d].id;
  return s;
}

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
    // A group that reports its busy time has a capacity of what it carried over that time; a
    // nearly idle one (busy below 1%) at least 100 times what it carried.
    // A saturated one is credited a little less than it carried, so that its share backs off until
    // its queue is no longer full.
    double sample = o.busy >= 0 && o.pps > 0 ? o.pps / std::clamp(o.busy, 0.01, 1.0) : o.saturated ? o.pps : -1;
    if (o.saturated && sample > 0) sample = 0.97 * std::min(sample, o.pps);
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
      // underestimate never would. While another device is saturated, what this one carries says
      // nothing of its capacity (a full queue stops the dispatcher for every device, as a NIC
      // queue's head blocks it), so the estimate rises whatever it carried, up to 64 times that.
      const bool others = saturated > (o.saturated ? 1 : 0);
      const bool probe = (others || backlog_growth_ >= 2) && o.busy < 0 && o.share > 0;
      const double cap = 64 * std::max(o.pps, 1.0);
      if (!e.measured) {
        e.floor = std::max(e.floor, o.pps);
        if (probe && (others || o.pps >= 0.9 * std::max(prior, e.floor))) {
          e.floor = std::min(cap, 1.25 * std::max(prior, e.floor));
        }
        e.mu = std::max(prior, e.floor);
      } else {
        if (probe && (others || o.pps >= 0.9 * e.mu)) e.mu = std::max(e.mu, std::min(cap, e.mu * 1.25));
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
    // A device joining or leaving is never noise; nor is a saturated device whose share would
    // shrink: a full queue stops the dispatcher for every device, so the last point of share above
    // a device's capacity costs the most.
    bool relieves = false;
    for (size_t d = 0; d < n; ++d) relieves = relieves || (alive[d] && obs.dev[d].saturated && next[d] < cur_[d]);
    if (dist < o_.deadband && cur_set == plan_set && !(overloaded && relieves)) return out;
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

}  // namespace

std::unique_ptr<Controller> make_model_controller(ModelOptions o) { return std::make_unique<ModelController>(o); }

}  // namespace tandem::sched
