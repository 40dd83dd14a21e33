// A counter that worker threads bump concurrently: one cache line per stripe and a stripe per
// thread (assigned round-robin as threads first count), so that counting every packet does not
// bounce one line between the workers' cores. Reading sums the stripes: a snapshot that is exact
// once the counting threads have stopped.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/compiler.h"

namespace tandem::hashing {

class StripedCounter {
 public:
  static constexpr unsigned kStripes = 32;

  void add(uint64_t n) { stripes_[stripe()].v.fetch_add(n, std::memory_order_relaxed); }
  uint64_t total() const {
    uint64_t t = 0;
    for (const Stripe& s : stripes_) t += s.v.load(std::memory_order_relaxed);
    return t;
  }

 private:
  struct alignas(kCacheLine) Stripe {
    std::atomic<uint64_t> v{0};
  };
  static unsigned stripe() {
    static std::atomic<unsigned> next{0};
    thread_local const unsigned mine = next.fetch_add(1, std::memory_order_relaxed) % kStripes;
    return mine;
  }
  Stripe stripes_[kStripes];
};

}  // namespace tandem::hashing
