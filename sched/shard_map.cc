#include "sched/shard_map.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace tandem::sched {
namespace {

std::vector<double> normalised(const std::vector<double>& share) {
  if (share.empty() || share.size() > 256)
    throw std::invalid_argument("shard map: need 1 to 256 devices, got " + std::to_string(share.size()));
  double sum = 0;
  for (double s : share) {
    if (!std::isfinite(s) || s < 0) throw std::invalid_argument("shard map: a share is negative or not finite");
    sum += s;
  }
  if (!(sum > 0)) throw std::invalid_argument("shard map: no device has a positive share");
  std::vector<double> out(share);
  for (double& s : out) s /= sum;
  return out;
}

// One step from device `from` (e above its target) toward device `to` (f below), within `room`
// weight; fills fwd (shards to move to `to`) and back (shards to move back), false if no step helps.
//  - The heaviest shard that takes neither past its target: the plain, cheapest step.
//  - Else a coarse shard x moves and, if that overshoots, lighter shards of `to` come back (heaviest
//    fitting first) to refill `from`: a device whose share is too small for its heavy shard trades
//    it for small ones. The x that leaves the pair's total gap smallest wins, if it is smaller than
//    e + f; so every step strictly lowers sum(|gap|) over all devices, and no assignment repeats.
bool plan_move(const std::vector<uint8_t>& cur, const std::vector<uint8_t>& out, const std::vector<double>& w,
               size_t from, size_t to, double e, double f, double room, double eps, std::vector<size_t>& fwd,
               std::vector<size_t>& back) {
  fwd.clear();
  back.clear();
  const size_t n = out.size();
  // What moving shard s to device d adds to the net moved weight (a shard going home subtracts).
  auto cost = [&](size_t s, size_t d) { return (out[s] == cur[s] ? w[s] : 0) - (d == cur[s] ? w[s] : 0); };
  size_t fit = n;
  std::vector<size_t> coarse, refill;
  for (size_t s = 0; s < n; ++s) {
    if (w[s] <= 0) continue;
    if (out[s] == to) refill.push_back(s);
    if (out[s] != from || cost(s, to) > room + eps) continue;
    if (w[s] > std::min(e, f) + eps) coarse.push_back(s);
    else if (fit == n || w[s] > w[fit]) fit = s;
  }
  if (fit != n) {
    fwd.push_back(fit);
    return true;
  }
  auto heavier = [&](size_t a, size_t b) { return w[a] > w[b]; };
  std::stable_sort(coarse.begin(), coarse.end(), heavier);
  std::stable_sort(refill.begin(), refill.end(), heavier);
  double best = e + f - eps;
  std::vector<size_t> tried_back;
  for (size_t k = 0; k < coarse.size(); ++k) {
    const size_t x = coarse[k];
    if (k > 0 && w[x] == w[coarse[k - 1]]) continue;  // same weight, same gaps: the first will do
    double gd = e - w[x], gr = w[x] - f, used = cost(x, to);
    tried_back.clear();
    for (size_t y : refill) {
      if (!(gd < -eps && gr > eps)) break;
      if (w[y] > std::min(-gd, gr) + eps || used + cost(y, from) > room + eps) continue;
      tried_back.push_back(y);
      gd += w[y], gr -= w[y], used += cost(y, from);
    }
    if (std::fabs(gd) + std::fabs(gr) < best) {
      best = std::fabs(gd) + std::fabs(gr);
      fwd.assign(1, x);
      back = tried_back;
    }
  }
  return !fwd.empty();
}

}  // namespace

std::vector<uint8_t> assign_shards(const std::vector<uint8_t>& cur, const std::vector<double>& weight,
                                   const std::vector<double>& share, double tolerance, double max_moved) {
  if (cur.size() != weight.size())
    throw std::invalid_argument("assign_shards: " + std::to_string(cur.size()) + " shards but " +
                                std::to_string(weight.size()) + " weights");
  const std::vector<double> sh = normalised(share);
  const size_t n = cur.size(), nd = sh.size();
  std::vector<double> w(weight);
  double total = 0;
  for (double x : w) {
    if (!std::isfinite(x) || x < 0) throw std::invalid_argument("assign_shards: a weight is negative or not finite");
    total += x;
  }
  if (!(total > 0)) {  // no traffic seen yet: every shard counts the same
    std::fill(w.begin(), w.end(), 1.0);
    total = double(n);
  }
  if (n == 0) return {};
  const double limit = (std::isfinite(tolerance) ? std::clamp(tolerance, 0.0, 1.0) : 0.0) * total;
  const double budget = (std::isfinite(max_moved) ? std::clamp(max_moved, 0.0, 1.0) : 1.0) * total;
  const double eps = 1e-12 * total;  // rounding slack in the comparisons below

  std::vector<uint8_t> out(cur);
  std::vector<double> gap(nd, 0.0);  // weight held minus target weight
  std::vector<size_t> count(nd, 0);
  for (size_t d = 0; d < nd; ++d) gap[d] = -sh[d] * total;
  std::vector<size_t> evicted;
  for (size_t s = 0; s < n; ++s) {
    if (out[s] < nd && sh[out[s]] > 0) {
      gap[out[s]] += w[s];
      ++count[out[s]];
    } else {
      evicted.push_back(s);
    }
  }
  double moved = 0;

  // 1. Empty the devices with no share (failed, removed), heaviest shards first, each to the device
  //    furthest below its target (largest-first greedy: it keeps the result close to the shares).
  std::stable_sort(evicted.begin(), evicted.end(), [&](size_t a, size_t b) { return w[a] > w[b]; });
  for (size_t s : evicted) {
    const bool weightless = w[s] == 0;  // (all-zero weights were made uniform above)
    size_t to = nd;
    double best = -std::numeric_limits<double>::infinity();
    for (size_t d = 0; d < nd; ++d) {
      if (sh[d] <= 0) continue;
      // Weightless shards go by shard count, so they do not all pile onto one device.
      const double room = weightless ? sh[d] * double(n) - double(count[d]) : -gap[d];
      if (room > best) best = room, to = d;
    }
    out[s] = uint8_t(to);
    gap[to] += w[s];
    ++count[to];
    moved += w[s];
  }

  // 2. Move weight from the devices above their share to those below until all are within the
  //    tolerance (plan_move() says how). Every step strictly lowers sum(|gap|), so no assignment
  //    repeats; the guard only protects against rounding surprises.
  std::vector<size_t> order(nd);
  std::iota(order.begin(), order.end(), size_t(0));
  std::vector<size_t> fwd, back;
  for (size_t guard = 0; guard < 4 * n + 16; ++guard) {
    bool violated = false;
    for (size_t d = 0; d < nd; ++d) violated |= std::fabs(gap[d]) > limit + eps;
    if (!violated) break;
    const double room = budget - moved;
    if (room <= eps) break;
    // Donors by gap, largest first; receivers smallest first. The extreme pair is tried first and
    // nearly always has a move; others only when its shards are too coarse.
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return gap[a] > gap[b]; });
    size_t from = nd, to = nd;
    for (size_t i = 0; i < nd && to == nd; ++i) {
      const double e = gap[order[i]];
      if (e <= eps) break;
      for (size_t j = nd; j-- > 0 && to == nd;) {
        const double f = -gap[order[j]];
        if (f <= eps) break;
        if (e <= limit + eps && f <= limit + eps) continue;  // neither side needs it
        if (plan_move(cur, out, w, order[i], order[j], e, f, room, eps, fwd, back)) from = order[i], to = order[j];
      }
    }
    if (to == nd) break;  // as close as the shards' granularity (or the budget) allows
    // `moved` is net: a shard that comes back to where it was no longer counts.
    auto move = [&](size_t s, size_t d) {
      moved += (out[s] == cur[s] ? w[s] : 0) - (d == cur[s] ? w[s] : 0);
      gap[out[s]] -= w[s];
      gap[d] += w[s];
      out[s] = uint8_t(d);
    };
    for (size_t x : fwd) move(x, to);
    for (size_t y : back) move(y, from);
  }
  return out;
}

std::vector<uint8_t> initial_shards(const std::vector<double>& share) {
  const std::vector<double> sh = normalised(share);
  const size_t nd = sh.size();
  // Largest remainder: floors first, then one more shard each to the largest fractional parts.
  std::vector<uint32_t> cnt(nd);
  std::vector<double> frac(nd);
  uint32_t given = 0;
  for (size_t d = 0; d < nd; ++d) {
    const double q = sh[d] * kShards;
    cnt[d] = uint32_t(std::floor(q));
    frac[d] = sh[d] > 0 ? q - cnt[d] : -1;
    given += cnt[d];
  }
  std::vector<size_t> by_frac(nd);
  std::iota(by_frac.begin(), by_frac.end(), size_t(0));
  std::stable_sort(by_frac.begin(), by_frac.end(), [&](size_t a, size_t b) { return frac[a] > frac[b]; });
  for (size_t i = 0; given < kShards; i = (i + 1) % nd)
    if (sh[by_frac[i]] > 0) ++cnt[by_frac[i]], ++given;
  std::vector<uint8_t> out;
  out.reserve(kShards);
  for (size_t d = 0; d < nd; ++d) out.insert(out.end(), cnt[d], uint8_t(d));
  return out;
}

}  // namespace tandem::sched
