#include "sched/controller.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "sched/controller_impl.h"

namespace tandem::sched {
namespace detail {

std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

std::vector<bool> alive_mask(const Observation& obs) {
  std::vector<bool> m(obs.dev.size());
  for (size_t d = 0; d < m.size(); ++d) m[d] = !obs.dev[d].failed;
  return m;
}

bool any_alive(const Observation& obs) {
  return std::any_of(obs.dev.begin(), obs.dev.end(), [](const DeviceObs& d) { return !d.failed; });
}

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

std::string split_text(const Observation& obs, const std::vector<double>& share) {
  std::string s;
  for (size_t d = 0; d < share.size(); ++d) s += fmt("%s%s %.2f", d ? ", " : "", obs.dev[d].id.c_str(), share[d]);
  return s;
}

}  // namespace detail

namespace {

using detail::alive_mask;
using detail::any_alive;
using detail::fmt;
using detail::mpps;
using detail::normalized;
using detail::split_text;

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

}  // namespace

std::unique_ptr<Controller> make_static_controller(std::vector<double> share, std::vector<uint32_t> batch) {
  return std::make_unique<StaticController>(std::move(share), std::move(batch));
}

std::unique_ptr<Controller> make_nba_controller(NbaOptions o) { return std::make_unique<NbaController>(o); }

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
