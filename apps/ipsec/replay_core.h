// The anti-replay window's per-packet steps (RFC 4303 3.4.3, with RFC 6479's ring of 64-bit
// blocks and RFC 4303 A2's inference of the high half), written once as `__host__ __device__`
// code over any store of blocks: the host's ReplayWindow (apps/ipsec/replay_window.h) and the GPU's
// windows in device memory (apps/ipsec/esp_resident.cu) run the same steps.
//
// A Blocks store has
//   uint64_t get(uint64_t block) const;  the 64 bits of sequence numbers block*64 .. block*64+63
//   void set(uint64_t block, uint64_t bits);
//   uint64_t count() const;              blocks in the ring (a power of two)
// and maps a block number onto its ring itself (block & (count - 1)).
#pragma once

#include <cstdint>

#include "core/compiler.h"

namespace tandem::ipsec {

enum class ReplayCheck : uint8_t {
  kOk,        // new: may be accepted once its ICV is verified
  kReplayed,  // inside the window and already received
  kTooOld,    // left of the window, or 0 (sequence numbers start at 1)
};

// Ring blocks for a window of `size` packets: one block more than the window spans, so that the
// block of the newest number can be cleared while the oldest number in the window is remembered.
TANDEM_HD_INLINE uint64_t replay_blocks(uint32_t size) {
  uint64_t blocks = 1;
  while (blocks < (size + 63) / 64 + 1) blocks <<= 1;
  return blocks;
}

// The full sequence number of a packet carrying `low` (RFC 4303 A2.1) for a window whose newest
// number is `top`: without ESN, `low` itself; with ESN, the high half that puts it nearest the
// window, or 0 (too old) for a number from before the SA's first one.
TANDEM_HD_INLINE uint64_t replay_infer(uint64_t top, uint32_t size, bool esn, uint32_t low) {
  if (!esn) return low;
  const uint32_t th = static_cast<uint32_t>(top >> 32);
  const uint32_t tl = static_cast<uint32_t>(top);
  const uint32_t bottom = tl - (size - 1);  // mod 2^32
  uint32_t high;
  if (tl >= size - 1) {  // the window lies within one 2^32 subspace
    high = low >= bottom ? th : th + 1;
  } else {  // the window spans two subspaces
    high = low >= bottom ? th - 1 : th;
  }
  // Before the first 2^32 packets there is no earlier subspace (th - 1 would wrap): such a number
  // was never sent; 0 makes the check call it too old.
  if (th == 0 && tl < size - 1 && low >= bottom) return 0;
  return (uint64_t{high} << 32) | low;
}

template <class Blocks>
TANDEM_HD_INLINE ReplayCheck replay_check(uint64_t top, uint32_t size, const Blocks& b, uint64_t seq) {
  if (seq == 0) return ReplayCheck::kTooOld;
  if (seq > top) return ReplayCheck::kOk;
  if (top - seq >= size) return ReplayCheck::kTooOld;
  return (b.get(seq >> 6) >> (seq & 63)) & 1 ? ReplayCheck::kReplayed : ReplayCheck::kOk;
}

// Marks `seq` received, moving the window (*top) when it is the newest; `seq` must have passed
// replay_check and the ICV verification.
template <class Blocks>
TANDEM_HD_INLINE void replay_update(uint64_t* top, Blocks& b, uint64_t seq) {
  if (seq > *top) {
    const uint64_t passed = (seq >> 6) - (*top >> 6);  // blocks the right edge moves over
    const uint64_t n = passed < b.count() ? passed : b.count();
    for (uint64_t i = 1; i <= n; ++i) b.set((*top >> 6) + i, 0);
    *top = seq;
  }
  b.set(seq >> 6, b.get(seq >> 6) | uint64_t{1} << (seq & 63));
}

}  // namespace tandem::ipsec
