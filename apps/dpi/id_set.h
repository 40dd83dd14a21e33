// The set of pattern ids one payload has reported so far, for the CPU walks (aho_corasick.cc).
//
// A bitmap over the ids plus a summary bitmap over its words: membership is one bit test, an
// insert is two ORs (idempotent, so a caller need not test first), and draining visits only the
// words that hold ids, emitting them in ascending order and leaving the set empty for the next
// payload. It replaced per-id stamps plus a sort of each payload's list (and, in the batched walk,
// a unique pass: payloads walked side by side overwrote each other's stamps), which on
// match-heavy traffic cost a quarter of the batched walk's time.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tandem::dpi {

class IdSet {
 public:
  // Makes room for ids up to max_id. The set must be empty (as drain leaves it); growing clears it.
  void reserve(size_t max_id) {
    if (words_.size() < max_id / 64 + 1) {
      words_.assign(max_id / 64 + 1, 0);
      summary_.assign(words_.size() / 64 + 1, 0);
    }
  }
  bool contains(uint32_t id) const { return (words_[id >> 6] >> (id & 63)) & 1; }
  void insert(uint32_t id) {
    words_[id >> 6] |= uint64_t{1} << (id & 63);
    summary_[id >> 12] |= uint64_t{1} << ((id >> 6) & 63);
  }
  // Appends the ids to out in ascending order and empties the set.
  void drain(std::vector<uint32_t>* out) {
    for (size_t s = 0; s < summary_.size(); ++s) {
      for (uint64_t sm = summary_[s]; sm != 0; sm &= sm - 1) {
        const size_t w = s * 64 + static_cast<size_t>(std::countr_zero(sm));
        for (uint64_t bits = words_[w]; bits != 0; bits &= bits - 1) {
          out->push_back(static_cast<uint32_t>(w * 64 + static_cast<size_t>(std::countr_zero(bits))));
        }
        words_[w] = 0;
      }
      summary_[s] = 0;
    }
  }
  // Empties the set whatever it holds (after an exception left it part-drained).
  void clear() {
    std::fill(words_.begin(), words_.end(), 0);
    std::fill(summary_.begin(), summary_.end(), 0);
  }

 private:
  std::vector<uint64_t> words_;
  std::vector<uint64_t> summary_;
};

}  // namespace tandem::dpi
