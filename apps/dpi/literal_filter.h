// DPI's own CPU stage 1 (Stage1::kLiteral, `--dpi-engine literal`): a literal prefilter and
// confirmation after Hyperscan's FDR, giving the same answer as AhoCorasick::patterns_in (the
// sorted, unique ids of the patterns occurring in a payload) from one read of a 512 KiB table
// per payload byte instead of a walk through a transition table far larger than the caches.
//
// Filter (shift-or). Patterns are put in eight buckets: buckets 0-2 hold those of 1, 2 and 3
// bytes, bucket 3 those of 4-5, buckets 4-7 the longer ones (by their last four bytes, so that
// equal suffixes share one). The table has an entry of 64 bits per payload byte and the byte
// before it (one 16-bit load gives the index); in it, bit 8t + b is clear where some pattern of
// bucket b has that byte, after that byte before, t bytes before its last, t < 8 (every case of
// them for a nocase pattern; for a pattern's first byte, after any byte; for t past a short
// pattern's start, everywhere). The scan ORs each byte's entry, shifted to line its offsets up
// with the ends they concern, into the ends of an eight-byte block: a bucket bit still clear at an
// end is a candidate, a pattern of that bucket whose last eight bytes (or all of them) each may be
// where they are. The byte-to-byte work is one load and one 128-bit byte shift (Hyperscan's FDR
// does the same with SIMD on several bytes at once).
// Confirmation. Buckets 0-2's candidates first test their last 1, 2 or 3 bytes, case folded, in
// exact bitmaps of the short patterns. A candidate then looks its last four case-folded bytes up
// in a hash table of the patterns' last four bytes (all of them for the short ones) and compares
// each pattern listed there whole: case folded where it is nocase, byte for byte where it is not.
//
// On match-free traffic an end is rarely a candidate (for a long pattern's bucket eight offsets
// must agree; the short patterns' buckets, fewer, are checked exactly by their bitmaps),
// so a byte costs one table read and a few shifts. On traffic dense with matches every match is
// confirmed, a hash lookup and a compare each; the automaton's cost does not depend on matches.
// So patterns_in_hybrid below hands the payloads dense with candidates to the automaton's batched
// walk: on the H200 machine that beats Hyperscan on both kinds of traffic (docs/RESULTS.md, "DPI
// stage 1 of our own against Hyperscan").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "apps/dpi/aho_corasick.h"
#include "apps/dpi/ids_rules.h"

namespace tandem::dpi {

class LiteralFilter {
 public:
  // Pattern k (0-based) is reported as id k + 1, as AhoCorasick does. Throws std::length_error
  // for an empty pattern or one over 65535 bytes (the rule loader admits neither).
  static LiteralFilter build(const std::vector<Pattern>& patterns);

  // The sorted, unique ids of the patterns that occur in p[0..n): `out` is cleared first.
  void patterns_in(const uint8_t* p, size_t n, std::vector<uint32_t>* out) const;
  // The same, unless the payload is dense with candidates (more than one, plus one per 64 bytes
  // scanned): then false, and `out` empty, early in the payload (the caller searches it another
  // way).
  bool patterns_in_if_sparse(const uint8_t* p, size_t n, std::vector<uint32_t>* out) const;

  size_t memory_bytes() const;
  size_t patterns() const { return pats_.size(); }

 private:
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
  static constexpr uint32_t kShortBuckets = 0x07;  // buckets 0-2: patterns of 1-3 bytes
  // patterns_in_if_sparse's bound: kDenseSlack candidates plus one per 2^kDenseShift bytes.
  // Match-free ET traffic meets about one per 130 bytes, payloads with patterns over a fifth of
  // their bytes about one per 45 (bench dpi's traffic). Looser bounds measured slower on the
  // latter, tighter ones on the former.
  static constexpr size_t kDenseSlack = 1;
  static constexpr int kDenseShift = 6;

  bool scan(const uint8_t* p, size_t n, bool bounded, std::vector<uint32_t>* out) const;

  // The shift-or table's entry for byte c after byte prev.
  static uint32_t entry(uint8_t prev, uint8_t c) { return uint32_t{c} << 8 | prev; }
  const Slot* find(uint64_t key) const;
  // `seen`: a bit per pattern, set for those in *out.
  void candidate(const uint8_t* p, size_t e, uint32_t m, uint64_t* seen, std::vector<uint32_t>* out) const;
  void confirm(const Slot* s, const uint8_t* p, size_t e, uint64_t* seen, std::vector<uint32_t>* out) const;

  // 65,536 entries of 64 bits, by the byte and the one before it: bit 8 * t + b clear where
  // bucket b has a pattern whose byte t before its last is this entry's byte, after this entry's
  // byte before (any byte for the pattern's first).
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

// Stage 1 of n payloads (Stage1::kLiteral's batched path; bench dpi's stage1_literal_hybrid): the
// filter on each (patterns_in_if_sparse); the payloads dense with candidates go, per batch of
// `batch`, to the automaton's batched walk (AhoCorasick::patterns_in_batch, groups of `group`),
// whose cost does not grow with matches. out[i] as AhoCorasick::patterns_in gives it. Throws
// std::invalid_argument where batch or group is 0.
void patterns_in_hybrid(const LiteralFilter& filter, const AhoCorasick& ac, const uint8_t* const* p, const uint32_t* len,
                        size_t n, std::vector<uint32_t>* out, size_t batch, size_t group);

}  // namespace tandem::dpi
