#include "sched/rate_schedule.h"

#include <cmath>
#include <stdexcept>

namespace tandem {

std::vector<RateSegment> parse_rate_schedule(const std::string& s) {
  std::vector<RateSegment> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t comma = s.find(',', pos);
    const std::string part = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const size_t colon = part.find(':');
    if (colon == std::string::npos) throw std::invalid_argument("rate schedule part '" + part + "': expected MS:MPPS");
    RateSegment seg;
    try {
      size_t used = 0;
      seg.start_ms = std::stod(part.substr(0, colon), &used);
      if (used != colon) throw std::invalid_argument("");
      const std::string rate = part.substr(colon + 1);
      seg.pps = std::stod(rate, &used) * 1e6;
      if (used != rate.size()) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw std::invalid_argument("rate schedule part '" + part + "': expected MS:MPPS with two numbers");
    }
    // A rate is 0 (nothing arrives) or at least one packet per second: a tiny positive rate would
    // put the next arrival past any clock.
    if (!std::isfinite(seg.start_ms) || !std::isfinite(seg.pps) || seg.pps < 0 || seg.start_ms < 0 ||
        seg.start_ms > 1e9 || seg.pps > 1e12 || (seg.pps > 0 && seg.pps < 1)) {
      throw std::invalid_argument("rate schedule part '" + part + "': time (0..1e9 ms) or rate (0, or 1e-6..1e6 Mpps) out of range");
    }
    if (out.empty() && seg.start_ms != 0) throw std::invalid_argument("rate schedule: the first part must start at 0 ms");
    if (!out.empty() && seg.start_ms <= out.back().start_ms) {
      throw std::invalid_argument("rate schedule part '" + part + "': times must increase");
    }
    out.push_back(seg);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (out.empty()) throw std::invalid_argument("rate schedule: empty");
  return out;
}

}  // namespace tandem
