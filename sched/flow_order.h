// Proof that the scheduler neither reorders nor loses packets: each receive queue stamps every
// packet it takes with the next sequence number of its flow, keeps the stamp beside the frame, and
// checks the stamps in the order the packets leave (the order a transmit queue sends them). A
// packet leaving with a number below its flow's highest so far is reordered (RFC 4737's sense);
// at the end, packets stamped and never left are lost. An app's drop is a decision, not a loss:
// any verdict counts as leaving.
#pragma once

#include <cstdint>
#include <vector>

namespace tandem {

class FlowOrderChecker {
 public:
  explicit FlowOrderChecker(uint32_t flows = 0) : next_(flows, 0), high_(flows, 0) {}
  uint32_t stamp(uint32_t flow) {
    ++stamped_;
    return next_[flow]++;
  }
  // Numbers wrap at 2^32 (a flow of more than 4 G packets): compared as serial numbers (RFC 1982).
  void left(uint32_t flow, uint32_t seq) {
    ++left_;
    if (static_cast<int32_t>(seq - high_[flow]) < 0) {
      ++reordered_;
    } else {
      high_[flow] = seq + 1;
    }
  }
  uint64_t stamped() const { return stamped_; }
  uint64_t reordered() const { return reordered_; }
  uint64_t lost() const { return stamped_ - left_; }

 private:
  std::vector<uint32_t> next_, high_;
  uint64_t stamped_ = 0, left_ = 0, reordered_ = 0;
};

}  // namespace tandem
