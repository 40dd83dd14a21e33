// The fingerprint table of the packet hashing app: which chunk digests (their 64-bit fingerprints,
// hashing_core.h) have been seen, in bounded memory, shared by the worker threads.
//
// Layout: a power of two of sets, each kWays = 8 slots of 8 bytes (one cache line), plus one
// 4-byte state word per set; 8.5 bytes per slot in all, in one hugepage-backed region. A
// fingerprint lives in the set its low bits name.
//
// Replacement: FIFO within a set (CLOCK without reference bits). A set fills its slots in order;
// once full, each new fingerprint replaces the oldest, the one under the set's hand, and the hand
// moves on. So a fingerprint stays until kWays newer ones have landed in its set, and a hit does
// not refresh it: a hit would then be a write to a shared line on the read path, and which of two
// racing workers refreshed first would change what is evicted later.
//
// Threads: contains() takes no lock (atomic loads of the set's slots). insert() looks first without
// a lock, then takes the set's lock (a bit of its state word) and looks again before it writes:
// two workers inserting the same fingerprint at once get one "inserted" and one "present", and a
// fingerprint is never in its set twice. A reader racing an insert sees the slot before or after
// the write, both true answers at some point during the call.
#pragma once

#include <cstddef>
#include <cstdint>

#include "apps/hashing/hashing_core.h"
#include "apps/hashing/striped_counter.h"
#include "core/huge_memory.h"

namespace tandem::hashing {

class FingerprintTable {
 public:
  static constexpr uint32_t kWays = FingerprintView::kWays;

  enum class Insert : uint8_t {
    kPresent,       // it was there already
    kInserted,      // into a free slot
    kEvicted,       // in place of the set's oldest fingerprint
  };

  // Room for at least `capacity` fingerprints (rounded up to a power of two, at least one set).
  // Throws std::invalid_argument above 2^32 slots, std::runtime_error if the memory is not there.
  explicit FingerprintTable(uint64_t capacity);

  uint64_t slot_count() const { return (set_mask_ + 1) * kWays; }
  uint64_t set_count() const { return set_mask_ + 1; }
  size_t memory_bytes() const { return mem_.size(); }

  // Whether `fp` (fingerprint(), never 0) is in the table. Safe beside insert().
  bool contains(uint64_t fp) const;
  // Adds `fp` unless it is there. Safe beside contains() and other inserts.
  Insert insert(uint64_t fp);

  // Fingerprints added, and those of them that replaced an older one (so size = the difference).
  uint64_t inserted() const { return inserted_.total(); }
  uint64_t evicted() const { return evicted_.total(); }

  // The slots as the frame core and the GPU read them: valid while no thread inserts.
  FingerprintView view() const { return {slots_, set_mask_}; }

 private:
  HugeRegion mem_;
  uint64_t* slots_ = nullptr;
  uint32_t* state_ = nullptr;  // per set: lock bit, slots in use, the hand
  uint64_t set_mask_ = 0;
  StripedCounter inserted_, evicted_;
};

}  // namespace tandem::hashing
