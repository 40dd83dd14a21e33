#include "apps/hashing/fingerprint_table.h"

#include <atomic>
#include <stdexcept>

#include "core/clock.h"

namespace tandem::hashing {

namespace {

// A set's state word: the lock, the slots in use (filled in order) and, once all are, the hand
// (the slot holding the oldest fingerprint).
constexpr uint32_t kLocked = 1u << 31;
constexpr uint32_t kFillMask = 0xF;
constexpr uint32_t kHandShift = 4;
constexpr uint32_t kHandMask = 0x7;
static_assert(FingerprintTable::kWays == 8, "the state word holds a 3-bit hand and a fill count up to 8");

uint64_t load(const uint64_t& slot) { return std::atomic_ref<const uint64_t>(slot).load(std::memory_order_acquire); }

bool in_set(const uint64_t* set, uint64_t fp) {
  bool hit = false;
  for (uint32_t w = 0; w < FingerprintTable::kWays; ++w) hit |= load(set[w]) == fp;
  return hit;
}

}  // namespace

FingerprintTable::FingerprintTable(uint64_t capacity) {
  if (capacity > (uint64_t{1} << 32)) throw std::invalid_argument("fingerprint table: at most 2^32 slots");
  uint64_t sets = 1;
  while (sets * kWays < capacity) sets <<= 1;
  set_mask_ = sets - 1;
  mem_ = HugeRegion(sets * (kWays * sizeof(uint64_t) + sizeof(uint32_t)));
  slots_ = static_cast<uint64_t*>(mem_.data());  // 2 MiB-aligned: every set on its own line
  state_ = reinterpret_cast<uint32_t*>(slots_ + sets * kWays);
}

bool FingerprintTable::contains(uint64_t fp) const { return in_set(view().set_of(fp), fp); }

FingerprintTable::Insert FingerprintTable::insert(uint64_t fp) {
  uint64_t* set = slots_ + (fp & set_mask_) * kWays;
  if (in_set(set, fp)) return Insert::kPresent;
  std::atomic_ref<uint32_t> state(state_[fp & set_mask_]);
  uint32_t s = state.load(std::memory_order_relaxed);
  for (;;) {
    if (s & kLocked) {
      cpu_relax();
      s = state.load(std::memory_order_relaxed);
    } else if (state.compare_exchange_weak(s, s | kLocked, std::memory_order_acquire, std::memory_order_relaxed)) {
      break;
    }
  }
  // Another worker may have inserted it between the first look and the lock.
  if (in_set(set, fp)) {
    state.store(s, std::memory_order_release);
    return Insert::kPresent;
  }
  const uint32_t fill = s & kFillMask;
  const uint32_t hand = (s >> kHandShift) & kHandMask;
  const bool evict = fill == kWays;
  const uint32_t slot = evict ? hand : fill;
  std::atomic_ref<uint64_t>(set[slot]).store(fp, std::memory_order_release);
  const uint32_t next = evict ? (fill | ((hand + 1) & kHandMask) << kHandShift) : fill + 1;
  state.store(next, std::memory_order_release);
  inserted_.add(1);
  if (evict) evicted_.add(1);
  return evict ? Insert::kEvicted : Insert::kInserted;
}

}  // namespace tandem::hashing
