// The sets of pattern ids that the payloads walked together have reported so far, for the CPU
// walks (aho_corasick.cc): set j belongs to the group's payload j.
//
// Each set is a bitmap over the ids plus a summary bitmap over its words, all sets in one array:
// membership is one bit test at a computed offset (no pointer to follow per report), an insert is
// two ORs (idempotent, so a caller need not test first), and draining visits only the words that
// hold ids, emitting them in ascending order and leaving the set empty for the next payload. It
// replaced per-id stamps plus a sort of each payload's list (and, in the batched walk, a unique
// pass: payloads walked side by side overwrote each other's stamps), which on match-heavy traffic
// cost a quarter of the batched walk's time.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tandem::dpi {

class IdSets {
 public:
  // Makes room for `sets` sets of ids up to max_id. The sets must be empty (as drain leaves them);
  // growing clears them.
  void reserve(size_t sets, size_t max_id) {
    const size_t w = max_id / 64 + 1;
    if (sets > sets_ || w > words_per_set_) {
      sets_ = std::max(sets, sets_);
      words_per_set_ = std::max(w, words_per_set_);
      summary_per_set_ = words_per_set_ / 64 + 1;
      words_.assign(sets_ * words_per_set_, 0);
      summary_.assign(sets_ * summary_per_set_, 0);
    }
  }
  bool contains(size_t set, uint32_t id) const {
    return (words_[set * words_per_set_ + (id >> 6)] >> (id & 63)) & 1;
  }
  void insert(size_t set, uint32_t id) {
    words_[set * words_per_set_ + (id >> 6)] |= uint64_t{1} << (id & 63);
    summary_[set * summary_per_set_ + (id >> 12)] |= uint64_t{1} << ((id >> 6) & 63);
  }
  // Appends set `set`'s ids to out in ascending order and empties the set.
  void drain(size_t set, std::vector<uint32_t>* out) {
    uint64_t* words = words_.data() + set * words_per_set_;
    uint64_t* summary = summary_.data() + set * summary_per_set_;
    for (size_t s = 0; s < summary_per_set_; ++s) {
      for (uint64_t sm = summary[s]; sm != 0; sm &= sm - 1) {
        const size_t w = s * 64 + static_cast<size_t>(std::countr_zero(sm));
        for (uint64_t bits = words[w]; bits != 0; bits &= bits - 1) {
          out->push_back(static_cast<uint32_t>(w * 64 + static_cast<size_t>(std::countr_zero(bits))));
        }
        words[w] = 0;
      }
      summary[s] = 0;
    }
  }
  // Empties every set whatever it holds (after an exception left one part-drained).
  void clear() {
    std::fill(words_.begin(), words_.end(), 0);
    std::fill(summary_.begin(), summary_.end(), 0);
  }

 private:
  size_t sets_ = 0, words_per_set_ = 0, summary_per_set_ = 0;
  std::vector<uint64_t> words_;
  std::vector<uint64_t> summary_;
};

}  // namespace tandem::dpi
