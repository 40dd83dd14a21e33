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
// packet as one of 64. The steps are apps/ipsec/replay_core.h's, which the GPU runs too.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/ipsec/replay_core.h"

namespace tandem::ipsec {

class ReplayWindow {
 public:
  // RFC 4303 asks for at least 32 and recommends 64; larger windows suit high rates with
  // reordering across queues.
  static constexpr uint32_t kMinSize = 32;
  static constexpr uint32_t kMaxSize = 1u << 20;

  using Check = ReplayCheck;

  // A window of `size` packets; `esn`: 64-bit sequence numbers of which the packet carries the low
  // half. Throws std::invalid_argument for a size outside [kMinSize, kMaxSize].
  explicit ReplayWindow(uint32_t size = 64, bool esn = false) : size_(size), esn_(esn) {
    if (size < kMinSize || size > kMaxSize) {
      throw std::invalid_argument("replay window of " + std::to_string(size) + " packets: the size must be " +
                                  std::to_string(kMinSize) + " to " + std::to_string(kMaxSize));
    }
    bits_.assign(replay_blocks(size), 0);
  }

  uint32_t size() const { return size_; }
  bool esn() const { return esn_; }
  // The highest sequence number accepted so far (0: none yet).
  uint64_t top() const { return top_; }
  // The ring of blocks (replay_blocks(size()) of them), as replay_core.h lays it out.
  const std::vector<uint64_t>& blocks() const { return bits_; }

  uint64_t infer(uint32_t low) const { return replay_infer(top_, size_, esn_, low); }

  // Forgets every number and takes `top` as the newest received (0: none yet), as when an SA's
  // state is restored.
  void restart_at(uint64_t top) {
    std::fill(bits_.begin(), bits_.end(), 0);
    top_ = top;
    if (top) bits_[(top >> 6) & (bits_.size() - 1)] |= uint64_t{1} << (top & 63);
  }
  // Takes a whole state: the newest number and the ring of blocks (as blocks() gives it), as
  // another copy of the window (the GPU's) left it.
  void restore(uint64_t top, const uint64_t* blocks) {
    top_ = top;
    std::copy(blocks, blocks + bits_.size(), bits_.begin());
  }

  Check check(uint64_t seq) const {
    return replay_check(top_, size_, Ring{const_cast<uint64_t*>(bits_.data()), bits_.size()}, seq);
  }

  // Marks `seq` received, moving the window when it is the newest; `seq` must have passed check()
  // and the ICV verification.
  void update(uint64_t seq) {
    Ring r{bits_.data(), bits_.size()};
    replay_update(&top_, r, seq);
  }

 private:
  // The blocks as replay_core.h's steps take them (plain memory: those steps are host and device code).
  struct Ring {
    uint64_t* bits;
    uint64_t n;  // a power of two
    TANDEM_HD uint64_t get(uint64_t b) const { return bits[b & (n - 1)]; }
    TANDEM_HD void set(uint64_t b, uint64_t v) { bits[b & (n - 1)] = v; }
    TANDEM_HD uint64_t count() const { return n; }
  };
  uint32_t size_;
  bool esn_;
  uint64_t top_ = 0;
  std::vector<uint64_t> bits_;
};

}  // namespace tandem::ipsec
