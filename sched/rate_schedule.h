// An offered load that changes over time (the scheduler's scenarios: steps, bursts): a piecewise
// constant rate, and the arrival clock of one receive queue under it. Same interface as
// ArrivalClock (sched/arrival_clock.h), so a dispatcher takes either.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/clock.h"

namespace tandem {

struct RateSegment {
  double start_ms = 0;  // from the start of the run
  double pps = 0;       // 0: nothing arrives during the segment
};

// "0:5,2000:40,4000:5": from 0 ms 5 Mpps, from 2,000 ms 40 Mpps, ... Times strictly increasing from
// 0, rates >= 0 and finite. Throws std::invalid_argument naming the bad part.
std::vector<RateSegment> parse_rate_schedule(const std::string& s);

// Packet k of the queue arrives when the cumulative count of the schedule (scaled by the queue's
// share) passes k + 1, as ArrivalClock's packet k arrives at start + (k + 1) / rate.
class ScheduledArrivalClock {
 public:
  // An empty schedule is unpaced: packets arrive when they are received.
  ScheduledArrivalClock(const std::vector<RateSegment>& schedule, double share, uint64_t start_ns) : start_ns_(start_ns) {
    double k = 0;
    for (size_t i = 0; i < schedule.size(); ++i) {
      Seg s;
      s.t_ns = schedule[i].start_ms * 1e6;
      s.rate_per_ns = schedule[i].pps * share / 1e9;
      s.k = k;
      if (i + 1 < schedule.size()) k += (schedule[i + 1].start_ms * 1e6 - s.t_ns) * s.rate_per_ns;
      segs_.push_back(s);
    }
  }
  bool paced() const { return !segs_.empty(); }
  // Packets that arrived by now and were not taken yet, up to `burst`.
  uint32_t available(uint32_t burst) const {
    if (!paced()) return burst;
    const double arrived = arrived_by(now_ns());
    const double left = arrived - double(sent_);
    return left >= 1 ? static_cast<uint32_t>(std::min<double>(left, burst)) : 0;
  }
  // Packets arrived by time t (ns since the clock's epoch, not the run's start), whole or not.
  double arrived_by(uint64_t t) const {
    if (!paced() || t < start_ns_) return 0;
    const double x = double(t - start_ns_);
    size_t i = segs_.size() - 1;
    while (i > 0 && segs_[i].t_ns > x) --i;
    return segs_[i].k + (x - segs_[i].t_ns) * segs_[i].rate_per_ns;
  }
  uint64_t taken() const { return sent_; }
  // The schedule ends with a rate of 0 and every packet it offered has been taken: nothing more
  // will ever arrive.
  bool exhausted(uint64_t now) const {
    if (!paced() || segs_.back().rate_per_ns > 0) return false;
    if (now < start_ns_ || double(now - start_ns_) < segs_.back().t_ns) return false;
    return segs_.back().k - double(sent_) < 1;
  }
  // The arrival of the next packet not taken and the spacing of the n - 1 after it (paced only):
  // a burst is timed with two lookups, not one per packet.
  uint64_t peek(uint32_t n, uint64_t* spacing_ns) const {
    const uint64_t first = arrival(sent_);
    const uint64_t last = n > 1 ? arrival(sent_ + n - 1) : first;
    *spacing_ns = n > 1 && last != UINT64_MAX ? (last - first) / (n - 1) : 0;
    return first;
  }
  void advance(uint64_t n) { sent_ += n; }
  // The segment in which packet k arrives (the last one once nothing more arrives); 0 unpaced.
  size_t segment_of(uint64_t k) const {
    const double want = double(k) + 1;
    for (size_t i = 0; i < segs_.size(); ++i) {
      const double end = i + 1 < segs_.size() ? segs_[i + 1].k : 1e300;
      if (segs_[i].rate_per_ns > 0 && want <= end) return i;
    }
    return segs_.empty() ? 0 : segs_.size() - 1;
  }
  // Books n packets; returns the first one's arrival and the spacing of the rest (0 unpaced).
  uint64_t take(uint32_t n, uint64_t* spacing_ns) {
    if (!paced()) {
      *spacing_ns = 0;
      sent_ += n;
      return now_ns();
    }
    const uint64_t first = arrival(sent_);
    const uint64_t last = n > 1 ? arrival(sent_ + n - 1) : first;
    *spacing_ns = n > 1 ? (last - first) / (n - 1) : 0;
    sent_ += n;
    return first;
  }

 private:
  struct Seg {
    double t_ns, rate_per_ns, k;
  };
  // The first segment with a rate whose cumulative count reaches k + 1 holds packet k's arrival.
  uint64_t arrival(uint64_t k) const {
    const double want = double(k) + 1;
    for (size_t i = 0; i < segs_.size(); ++i) {
      const double end = i + 1 < segs_.size() ? segs_[i + 1].k : 1e300;
      if (segs_[i].rate_per_ns > 0 && want <= end) {
        return start_ns_ + static_cast<uint64_t>(segs_[i].t_ns + (want - segs_[i].k) / segs_[i].rate_per_ns);
      }
    }
    return UINT64_MAX;  // nothing arrives any more
  }
  std::vector<Seg> segs_;
  uint64_t start_ns_;
  uint64_t sent_ = 0;
};

}  // namespace tandem
