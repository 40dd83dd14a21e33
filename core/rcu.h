// Quiescent-state-based RCU (as liburcu's QSBR flavour and DPDK's rte_rcu_qsbr): readers (the
// workers) hold table pointers only inside a burst and report a quiescent state between bursts,
// which costs them one store; a writer that has unpublished a table waits for a grace period (every
// online reader has reported a quiescent state since) before it changes or frees that table.
//
// A reader that may block for long (waiting for packets) goes offline first and online after, so
// that writers do not wait for it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include "core/clock.h"
#include "core/compiler.h"

namespace tandem {

class Rcu {
 public:
  explicit Rcu(int readers) : readers_(readers), slot_(std::make_unique<Slot[]>(readers)) {}

  int readers() const { return readers_; }

  // Reader r holds no pointer it loaded before this call.
  // The fence keeps the reader's later loads of published pointers after the store (a seq_cst
  // store alone does not order a later acquire load in the C++ model), as liburcu's QSBR does.
  void quiescent(int r) {
    slot_[r].seen.store(epoch_.load(std::memory_order_seq_cst), std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  void online(int r) { quiescent(r); }
  void offline(int r) { slot_[r].seen.store(kOffline, std::memory_order_seq_cst); }

  // Writer: returns once every reader that was online has passed a quiescent state since the call
  // began. Pointers unpublished before the call are then unreachable.
  void synchronize() const {
    const uint64_t target = epoch_.fetch_add(1, std::memory_order_seq_cst) + 1;
    for (int r = 0; r < readers_; ++r) {
      for (uint32_t spins = 0;; ++spins) {
        const uint64_t s = slot_[r].seen.load(std::memory_order_seq_cst);
        if (s == kOffline || s >= target) break;
        if (spins < 1000) {
          cpu_relax();
        } else {
          std::this_thread::yield();
        }
      }
    }
  }

 private:
  static constexpr uint64_t kOffline = UINT64_MAX;
  struct alignas(kCacheLine) Slot {
    std::atomic<uint64_t> seen{kOffline};
  };
  int readers_;
  std::unique_ptr<Slot[]> slot_;
  mutable std::atomic<uint64_t> epoch_{0};
};

}  // namespace tandem
