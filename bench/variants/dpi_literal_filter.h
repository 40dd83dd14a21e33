// A benchmark variant of DPI's stage 1 (`bench dpi`'s stage1_literal row): a literal prefilter
// and confirmation, after Hyperscan's FDR, giving the same answer as AhoCorasick::patterns_in (the
// sorted, unique ids of the patterns occurring in a payload) from a scan that reads three 64 KiB
// tables per payload byte instead of a transition table far larger than the caches. It is not a
// product engine: Hyperscan, which the dpi app and `tandem match` offer, is faster on both kinds
// of traffic (docs/RESULTS.md).
//
// Filter. Patterns are put in eight buckets: bucket 0 holds those of 1-2 bytes, buckets 1-2 those
// of 3 (by their third byte, the one byte of them the second table sees), bucket 3 those of 4-5,
// buckets 4-7 the longer ones (by their first four bytes, so that equal prefixes share one).
// Three tables of 65,536 bucket masks are indexed by the payload's byte pairs at a position i,
// i + 2 and i + 4: table k has bucket b's bit for a pair where some pattern of b has that pair at
// its bytes 2k, 2k + 1 (every case of them for a nocase pattern; for a pattern with only the
// first of those bytes, every pair starting with it; for one with neither, every pair). A
// position is a candidate for the buckets whose bit all three masks keep.
// Confirmation. Buckets 0-2's candidates first test their 1, 2 and 3 bytes, case folded, in exact
// bitmaps of the short patterns. A candidate then looks its case-folded bytes up in a hash table
// of the patterns' first four bytes (of their 1-3 for the short ones) and compares each pattern
// listed there whole: case folded where it is nocase, byte for byte where it is not.
//
// On match-free traffic a position passes the filter rarely (three pair tests must pass for one
// bucket), so the scan costs four loads a byte, three of them from tables beyond the L1 cache.
// On traffic dense with matches every match is confirmed; the automaton's cost does not depend
// on matches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "apps/dpi/ids_rules.h"

namespace tandem::dpi {

class LiteralFilter {
 public:
  // Pattern k (0-based) is reported as id k + 1, as AhoCorasick does. Throws std::length_error
  // for an empty pattern or one over 65535 bytes (the rule loader admits neither).
  static LiteralFilter build(const std::vector<Pattern>& patterns);

  // The sorted, unique ids of the patterns that occur in p[0..n): `out` is cleared first.
  void patterns_in(const uint8_t* p, size_t n, std::vector<uint32_t>* out) const;

  size_t memory_bytes() const;
  size_t patterns() const { return pats_.size(); }

 private:
  LiteralFilter();
  struct Pat {
    uint32_t bytes;  // offset of the pattern's bytes in raw_ and lowered_
    uint16_t len;
    bool nocase;
  };
  // A hash table slot: a key's patterns are ids_[begin, end). key 0 marks an empty slot (keys are
  // never 0: see key_of).
  struct Slot {
    uint64_t key = 0;
    uint32_t begin = 0, end = 0;
  };
  static constexpr int kPrevBits = 5;
  static constexpr uint32_t kShortBuckets = 0x07;  // buckets 0-2: patterns of 1-3 bytes

  // The shift-or table's entry for byte c after byte prev: c, then five bits of prev.
  uint32_t entry(uint8_t prev, uint8_t c) const { return uint32_t{c} << kPrevBits | prev_slot_[prev]; }
  const Slot* find(uint64_t key) const;
  // `seen`: a bit per pattern, set for those in *out.
  void candidate(const uint8_t* p, size_t e, uint32_t m, uint64_t* seen, std::vector<uint32_t>* out) const;
  void confirm(const Slot* s, const uint8_t* p, size_t e, uint64_t* seen, std::vector<uint32_t>* out) const;

  uint8_t prev_slot_[256];
  // 8,192 entries of 64 bits: bit 8 * t + b clear where bucket b has a pattern whose byte t
  // before its last is this entry's byte, after a byte with this entry's five bits.
  std::vector<uint64_t> reach_;
  // Bit x of short_[len - 1] is set where the lowercased bytes x (little-endian) are a pattern of
  // len bytes: 2^8, 2^16 and 2^24 bits.
  std::vector<uint64_t> short_[3];
  std::vector<Slot> slots_;  // open addressing, a power of two
  uint64_t slot_mask_ = 0;
  std::vector<uint32_t> ids_;  // pattern indices grouped by key
  std::vector<Pat> pats_;
  std::vector<uint8_t> raw_, lowered_;
};

}  // namespace tandem::dpi
