// When each packet of a receive queue arrives (the workers' and the resident path's receive
// side): unpaced, when the thread receives it; paced, on a schedule of a fixed rate.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/clock.h"

namespace tandem {

// When each packet of a worker's queue arrives. Unpaced: when the worker receives it. Paced: on
// the schedule of `rate` packets per second, packet k arriving at start + (k + 1) / rate; like a
// NIC's receive burst, a poll returns what has arrived so far, up to the burst size.
// Unpaced arrivals are stamped by the stamp clock (core/clock.h), read twice a burst; paced ones
// lie on the schedule's steady clock. A verdict's time is read from now(), on the same clock.
class ArrivalClock {
 public:
  ArrivalClock(double rate_pps, uint64_t start_ns)
      : paced_(rate_pps > 0), ns_per_packet_(paced_ ? 1e9 / rate_pps : 0), start_ns_(start_ns) {}
  bool paced() const { return paced_; }
  uint64_t now() const { return paced_ ? now_ns() : stamp_ns(); }
  // How many packets, up to `burst`, have arrived and not been taken yet.
  uint32_t available(uint32_t burst) const {
    if (!paced_) return burst;
    const uint64_t t = now_ns();
    if (t < start_ns_) return 0;
    const auto arrived = static_cast<uint64_t>((t - start_ns_) / ns_per_packet_);
    return arrived > sent_ ? static_cast<uint32_t>(std::min<uint64_t>(arrived - sent_, burst)) : 0;
  }
  // When the oldest packet not yet taken arrived (or arrives).
  uint64_t next_arrival() const { return arrival(sent_); }
  // Books `n` packets just received; returns the first one's arrival time and sets the spacing.
  uint64_t take(uint32_t n, uint64_t* spacing_ns) {
    if (!paced_) {
      *spacing_ns = 0;
      sent_ += n;
      return stamp_ns();
    }
    const uint64_t first = arrival(sent_);
    sent_ += n;
    *spacing_ns = static_cast<uint64_t>(ns_per_packet_);
    return first;
  }

 private:
  uint64_t arrival(uint64_t k) const { return start_ns_ + static_cast<uint64_t>((k + 1) * ns_per_packet_); }
  bool paced_;
  double ns_per_packet_;
  uint64_t start_ns_;
  uint64_t sent_ = 0;
};

}  // namespace tandem
