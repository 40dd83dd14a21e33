// The ESP receiver's anti-replay window (RFC 4303 section 3.4.3), with extended sequence numbers
// (RFC 4303 appendix A2). One window per inbound SA; its owner (the worker that owns the SA's
// shard) checks and updates it, so it needs no locking.
//
// Usage per packet, in this order (section 3.4.3: the window moves only for packets whose
// integrity check passed, so that forged packets cannot shift it):
//   const uint64_t seq = w.infer(low32);   // the full 64-bit number (ESN; without ESN: low32)
//   if (w.check(seq) != ReplayWindow::Check::kOk) drop (kReplayed / kTooOld)
//   ... verify the ICV (with ESN: over the high 32 bits of seq too) ...
//   w.update(seq);
//
// The bitmap is a ring of 64-bit blocks (RFC 6479): moving the window clears the blocks passed
// over instead of shifting every bit, so a window of thousands of packets costs the same per
// packet as one of 64. The ring holds one block more than the window needs, so that the block of
// the newest number can be cleared while the oldest number in the window is still remembered.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tandem::ipsec {

class ReplayWindow {
 public:
  // RFC 4303 asks for at least 32 and recommends 64; larger windows suit high rates with
  // reordering across queues.
  static constexpr uint32_t kMinSize = 32;
  static constexpr uint32_t kMaxSize = 1u << 20;

  enum class Check {
    kOk,        // new: may be accepted once its ICV is verified
    kReplayed,  // inside the window and already received
    kTooOld,    // left of the window, or 0 (sequence numbers start at 1)
  };

  // A window of `size` packets; `esn`: 64-bit sequence numbers of which the packet carries the low
  // half. Throws std::invalid_argument for a size outside [kMinSize, kMaxSize].
  explicit ReplayWindow(uint32_t size = 64, bool esn = false) : size_(size), esn_(esn) {
    if (size < kMinSize || size > kMaxSize) {
      throw std::invalid_argument("replay window of " + std::to_string(size) + " packets: the size must be " +
                                  std::to_string(kMinSize) + " to " + std::to_string(kMaxSize));
    }
    size_t blocks = 1;
    while (blocks < (size + 63) / 64 + 1) blocks <<= 1;
    bits_.assign(blocks, 0);
    mask_ = blocks - 1;
  }

  uint32_t size() const { return size_; }
  bool esn() const { return esn_; }
  // The highest sequence number accepted so far (0: none yet).
  uint64_t top() const { return top_; }

  // The full sequence number of a packet carrying `low` (RFC 4303 A2.1): without ESN, `low`
  // itself; with ESN, the high half that puts it nearest the window, or 0 (too old) for a number
  // from before the SA's first one.
  uint64_t infer(uint32_t low) const {
    if (!esn_) return low;
    const uint32_t th = static_cast<uint32_t>(top_ >> 32);
    const uint32_t tl = static_cast<uint32_t>(top_);
    const uint32_t bottom = tl - (size_ - 1);  // mod 2^32
    uint32_t high;
    if (tl >= size_ - 1) {  // the window lies within one 2^32 subspace
      high = low >= bottom ? th : th + 1;
    } else {  // the window spans two subspaces
      high = low >= bottom ? th - 1 : th;
    }
    // Before the first 2^32 packets there is no earlier subspace (th - 1 would wrap): such a
    // number was never sent; 0 makes check() call it too old.
    if (th == 0 && tl < size_ - 1 && low >= bottom) return 0;
    return (uint64_t{high} << 32) | low;
  }

  // Forgets every number and takes `top` as the newest received (0: none yet), as when an SA's
  // state is restored.
  void restart_at(uint64_t top) {
    std::fill(bits_.begin(), bits_.end(), 0);
    top_ = top;
    if (top) bits_[(top >> 6) & mask_] |= uint64_t{1} << (top & 63);
  }

  Check check(uint64_t seq) const {
    if (seq == 0) return Check::kTooOld;
    if (seq > top_) return Check::kOk;
    if (top_ - seq >= size_) return Check::kTooOld;
    return (bits_[(seq >> 6) & mask_] >> (seq & 63)) & 1 ? Check::kReplayed : Check::kOk;
  }

  // Marks `seq` received, moving the window when it is the newest; `seq` must have passed check()
  // and the ICV verification.
  void update(uint64_t seq) {
    if (seq > top_) {
      const uint64_t passed = (seq >> 6) - (top_ >> 6);  // blocks the right edge moves over
      const uint64_t n = std::min<uint64_t>(passed, bits_.size());
      for (uint64_t i = 1; i <= n; ++i) bits_[((top_ >> 6) + i) & mask_] = 0;
      top_ = seq;
    }
    bits_[(seq >> 6) & mask_] |= uint64_t{1} << (seq & 63);
  }

 private:
  uint32_t size_;
  bool esn_;
  uint64_t top_ = 0;
  std::vector<uint64_t> bits_;
  uint64_t mask_ = 0;
};

}  // namespace tandem::ipsec
