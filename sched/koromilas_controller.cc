#include "sched/controller.h"

#include <algorithm>
#include <cmath>
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
  static size_t devices_used(const ProfileEntry& e) {
    return size_t(std::count_if(e.share.begin(), e.share.end(), [](double x) { return x > 0; }));
  }
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
  int since_reprobe_ = 0;
  std::vector<int> good_ticks_;   // per device: ticks in a row it carried its share, unsaturated
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
  if (best < 0) return fastest;
  // Energy: an entry using more devices must save lambda over the best with fewer. Power at a low
  // load differs between entries by less than the meters' noise, and a device left idle is the
  // one saving no estimate can hide.
  if (o_.policy == Policy::kEnergy) {
    // The best of each device count, from the fewest up; a larger count replaces the pick only
    // when it is lambda better than it.
    std::vector<int> of_count(obs.dev.size() + 1, -1);
    for (int i = 0; i < int(table_.size()); ++i) {
      const ProfileEntry& e = table_[i];
      if (!usable(e, obs) || rate(e) < need) continue;
      int& b = of_count[std::min(devices_used(e), obs.dev.size())];
      if (b < 0 || prefer(e, table_[b], merit(e, obs), merit(table_[b], obs))) b = i;
    }
    int pick = -1;
    for (const int b : of_count) {
      if (b >= 0 && (pick < 0 || merit(table_[b], obs) > o_.lambda * merit(table_[pick], obs))) pick = b;
    }
    best = pick;
  }
  return best;
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
    else if (o_.policy == Policy::kEnergy && devices_used(table_[best]) < devices_used(table_[cur_]) && gain * o_.lambda >= 1)
      change = describe(best) + fmt(" uses fewer devices and is within lambda (%.2fx) of ", gain) + describe(cur_);
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
      // Unsaturated, what it carried bounds its capacity from below only: a device whose speed
      // comes and goes (time-sliced with another process) is not taken at its best moments.
      dev_cap_[d] = o.saturated ? o.pps : std::isfinite(dev_cap_[d]) ? std::max(dev_cap_[d], o.pps) : kInf;
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
    good_ticks_.assign(n, 0);
    in_force_.assign(n, 0);
    search_ = Search{};
    cur_ = -1;
    refresh_health();
  }
  if (cur_ >= 0 && !usable(table_[cur_], obs)) {
    search_.active = false;
    return step1(obs, "");
  }
  ++since_reprobe_;
  if (cur_ >= 0 && !search_.active) {
    const ProfileEntry& e = table_[cur_];
    // Short of the load: frames wait (a paced load; unpaced, the backlog is not known) and the
    // entry cannot sustain what arrives.
    const bool short_of_load = obs.backlog > 0 && rate(e) < obs.offered_pps * (1 + o_.margin) &&
                               since_reprobe_ >= o_.reprobe_ticks;
    bool changed = false;
    for (size_t d = 0; d < n && d < e.share.size(); ++d) {
      if (!std::isfinite(dev_cap_[d])) {
        good_ticks_[d] = 0;
        continue;
      }
      if (e.share[d] <= 0) {
        dev_cap_[d] = short_of_load ? kInf : std::max(dev_cap_[d], 1e3) * (1 + o_.regain);
        changed = changed || short_of_load || o_.regain > 0;
        continue;
      }
      // Recovered: for recover_ticks in a row it carried what its share of the load asks of the
      // entry as profiled, with no frame waiting for it. (One such tick is not enough: a GPU
      // time-sliced with another process keeps up now and then.)
      const DeviceObs& o = obs.dev[d];
      const double asked = std::min(obs.offered_pps, e.mpps_max * 1e6 * profiled_health_[cur_]) * e.share[d];
      good_ticks_[d] = (!o.saturated && o.pps >= (1 - o_.delta) * asked) ? good_ticks_[d] + 1 : 0;
      if (good_ticks_[d] >= o_.recover_ticks) {
        dev_cap_[d] = kInf;
        good_ticks_[d] = 0;
        changed = true;
      }
    }
    if (short_of_load) since_reprobe_ = 0;
    if (changed) refresh_health();
  }
  if (search_.active) return search_step(obs);
  if (cur_ >= 0) {
    Decision d = check(obs);
    if (d.change) return d;
  }
  return step1(obs, "");
}

}  // namespace

std::unique_ptr<Controller> make_koromilas_controller(std::vector<ProfileEntry> table, KoromilasOptions o) {
  return std::make_unique<KoromilasController>(std::move(table), o);
}

}  // namespace tandem::sched
