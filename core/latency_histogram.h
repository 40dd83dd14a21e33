// Per-packet latency histogram with logarithmic buckets (HdrHistogram's layout, simplified):
// each power of two is split into 16 linear sub-buckets, so a recorded value is reported within
// 1/16 (6.25%) of itself, from 1 ns to 2^64 ns, in a fixed 8 KiB array. Recording is a few
// integer operations and never allocates; one histogram per worker, merged on demand.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace tandem {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 4;
  static constexpr int kSub = 1 << kSubBits;
  static constexpr int kBuckets = (64 - kSubBits + 1) * kSub;

  void record(uint64_t ns) {
    ++counts_[index_of(ns)];
    ++count_;
    if (ns > max_) max_ = ns;
    if (ns < min_) min_ = ns;
  }
  // `n` values equal to ns (a batch whose packets share one receive and one transmit time).
  void record(uint64_t ns, uint64_t n) {
    if (n == 0) return;
    counts_[index_of(ns)] += n;
    count_ += n;
    if (ns > max_) max_ = ns;
    if (ns < min_) min_ = ns;
  }
  void merge(const LatencyHistogram& o) {
    for (int i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
    count_ += o.count_;
    if (o.max_ > max_) max_ = o.max_;
    if (o.min_ < min_) min_ = o.min_;
  }
  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  uint64_t min() const { return count_ ? min_ : 0; }

  // The smallest bucket upper bound below which at least a fraction q (0..1) of the values lie,
  // clamped to the exact maximum (so percentile(1.0) == max()). 0 when empty.
  uint64_t percentile(double q) const {
    if (count_ == 0) return 0;
    const double want = q * static_cast<double>(count_);
    uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen > 0 && static_cast<double>(seen) >= want) {
        const uint64_t hi = upper_bound_of(i);
        return hi < max_ ? hi : max_;
      }
    }
    return max_;
  }

  // Bucket arithmetic, public for tests.
  static int index_of(uint64_t v) {
    if (v < kSub) return static_cast<int>(v);
    const int msb = 63 - std::countl_zero(v);  // >= kSubBits
    const int shift = msb - kSubBits;
    return (shift + 1) * kSub + static_cast<int>((v >> shift) & (kSub - 1));
  }
  static uint64_t upper_bound_of(int index) {
    if (index < kSub) return static_cast<uint64_t>(index);
    const int shift = index / kSub - 1;
    const uint64_t sub = static_cast<uint64_t>(index % kSub);
    const uint64_t lo = (uint64_t{kSub} + sub) << shift;
    return lo + ((uint64_t{1} << shift) - 1);
  }

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0;
  uint64_t max_ = 0;
  uint64_t min_ = ~uint64_t{0};
};

}  // namespace tandem
