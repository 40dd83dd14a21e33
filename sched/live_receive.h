// What a receive loop on live ports needs wherever it runs (the workers, the resident path's
// receive threads): a packet count shared by the queues, and the wait on an empty queue.
// Internal to sched/.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "core/clock.h"
#include "core/rcu.h"
#include "io/packet_source.h"

namespace tandem::sched_detail {

// How many more packets a receive loop may take. A replay queue has its own share (a count). Live
// queues share one count: a loop claims up to a burst of it before receiving and gives back what
// it did not receive, so that the run receives exactly the count, whichever queues it comes on;
// the run ends when all of it has been received.
struct SharedCount {
  std::atomic<uint64_t> unclaimed{0};
  std::atomic<uint64_t> received{0};
  uint64_t total = 0;
  explicit SharedCount(uint64_t packets = 0) : unclaimed(packets ? packets : UINT64_MAX), total(packets ? packets : UINT64_MAX) {}
};

class RxBudget {
 public:
  explicit RxBudget(uint64_t own) : left_(own) {}
  explicit RxBudget(SharedCount* shared) : shared_(shared) {}
  uint32_t claim(uint32_t want) {
    if (!shared_) return static_cast<uint32_t>(std::min<uint64_t>(want, left_));
    uint64_t cur = shared_->unclaimed.load(std::memory_order_relaxed);
    while (cur) {
      const uint64_t take = std::min<uint64_t>(cur, want);
      if (shared_->unclaimed.compare_exchange_weak(cur, cur - take, std::memory_order_relaxed)) {
        return static_cast<uint32_t>(take);
      }
    }
    return 0;
  }
  void received(uint32_t claimed, uint32_t got) {
    if (!shared_) {
      left_ -= got;
      return;
    }
    if (got < claimed) shared_->unclaimed.fetch_add(claimed - got, std::memory_order_relaxed);
    if (got) shared_->received.fetch_add(got, std::memory_order_relaxed);
  }
  bool done() const {
    return shared_ ? shared_->received.load(std::memory_order_relaxed) >= shared_->total : left_ == 0;
  }

 private:
  uint64_t left_ = 0;
  SharedCount* shared_ = nullptr;
};

// A live queue with nothing in it: spin a little (packets come in bursts), then sleep in the
// kernel until some arrive or a millisecond has passed (a stop request is seen within one).
// A loop blocked in the kernel is offline to RCU (it holds no table pointer), so that table
// updates do not wait for its packets.
class IdleWait {
 public:
  IdleWait(Rcu* rcu, int reader) : rcu_(rcu), reader_(reader) {}
  void empty(PacketSource& src) {
    if (++empty_polls_ < 64) {
      cpu_relax();
      return;
    }
    if (rcu_) rcu_->offline(reader_);
    src.wait_for_packets(1);
    if (rcu_) rcu_->online(reader_);
  }
  void got() { empty_polls_ = 0; }

 private:
  uint32_t empty_polls_ = 0;
  Rcu* rcu_;
  int reader_;
};

}  // namespace tandem::sched_detail
