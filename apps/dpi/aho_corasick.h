// Multi-pattern search (DPI stage 1): an Aho-Corasick automaton over all patterns, as a full DFA
// (every state has a next state for every input class: one table read per payload byte, the
// structure Snort's ac_full, the G-Opt paper and the GPU DPI work use).
//
// Case: the automaton runs on ASCII-lowercased input with lowercased patterns; a match of a
// case-sensitive pattern is then confirmed against the payload's own bytes. Alphabet: bytes that
// occur in no pattern share one input class, so a row has (distinct pattern bytes + 1) entries,
// not 256. Reports: each state lists every pattern ending at it, its own and (flattened at build
// time) those its dictionary-suffix chain leads to. The walk itself is ac_core.h,
// shared with the GPU kernel (dpi_gpu.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "apps/dpi/ac_core.h"
#include "apps/dpi/ids_rules.h"
#include "core/huge_memory.h"

namespace tandem::dpi {

class AhoCorasick {
 public:
  AhoCorasick() = default;
  AhoCorasick(AhoCorasick&& o) noexcept { *this = std::move(o); }
  AhoCorasick& operator=(AhoCorasick&& o) noexcept;
  AhoCorasick(const AhoCorasick&) = delete;
  AhoCorasick& operator=(const AhoCorasick&) = delete;
  // Pattern k (0-based) is reported as id k + 1. Throws std::length_error when the table would
  // not fit 31-bit row offsets (over 2^31 entries), and for an empty pattern or one over 65535
  // bytes (the rule loader admits neither).
  static AhoCorasick build(const std::vector<Pattern>& patterns);

  // The sorted, unique ids of the patterns that occur in p[0..n): `out` is cleared first.
  void patterns_in(const uint8_t* p, size_t n, std::vector<uint32_t>* out) const;

  // patterns_in for n payloads with the G-Opt paper's DPI optimizations: payloads are taken in
  // batches of `batch`, sorted by length, and walked `group` at a time in lockstep (byte k of every
  // payload in the group, then byte k + 1; loop interchange), so the table reads of different
  // payloads are independent and their cache misses overlap instead of following each other.
  // out[0 .. n) are payload i's ids (sorted, unique), each vector cleared first: a caller that
  // keeps its vectors from call to call allocates nothing after the first.
  void patterns_in_batch(const uint8_t* const* p, const uint32_t* len, size_t n, std::vector<uint32_t>* out,
                         size_t batch = 8192, size_t group = 32) const;

  size_t states() const { return rep_begin_.size() - 1; }
  uint32_t classes() const { return classes_; }
  size_t memory_bytes() const {
    return (delta_entries_ + rep_begin_.size() + rep_.size()) * sizeof(uint32_t) + pats_.size() * sizeof(AcPattern) +
           pat_bytes_.size();
  }
  const std::vector<Pattern>& patterns() const { return patterns_; }
  // The flat arrays the walks read (ac_core.h), pointing into this object (or, for the GPU copy,
  // at device copies of the same arrays: see the vectors below).
  const AcView& view() const { return view_; }
  const uint32_t* delta() const { return view_.delta; }
  size_t delta_entries() const { return delta_entries_; }
  // How much of the transition table sits on 2 MiB pages now (HugeRegion::huge_bytes; 0 for the
  // small tables kept in ordinary memory).
  size_t table_huge_bytes() const { return delta_.huge_bytes(); }
  const std::vector<uint32_t>& report_begin() const { return rep_begin_; }
  const std::vector<uint32_t>& reports() const { return rep_; }
  const std::vector<AcPattern>& pattern_records() const { return pats_; }
  const std::vector<uint8_t>& pattern_bytes() const { return pat_bytes_; }
  // The longest report list of a state (bounds the batched walk's candidate buffer).
  uint32_t max_reports() const { return max_reports_; }
  const uint8_t* byte_classes() const { return cls_; }

 private:
  void make_view();

  uint8_t cls_[256] = {};
  uint32_t classes_ = 1;
  // The transition table (ac_core.h: next row offset | kAcOutput) on transparent hugepages: a walk
  // reads rows all over a table of up to hundreds of MiB, and with 4 KiB pages nearly every new
  // row is also a TLB miss. Small tables (port groups' automata: hundreds of them) stay in
  // delta_small_ instead of taking 2 MiB each.
  HugeRegion delta_;
  std::vector<uint32_t> delta_small_;
  size_t delta_entries_ = 0;
  std::vector<uint32_t> rep_begin_ = {0};  // state s reports rep_[rep_begin_[s] .. rep_begin_[s + 1])
  std::vector<uint32_t> rep_;
  uint32_t max_reports_ = 0;
  std::vector<AcPattern> pats_;       // pattern id k's confirmation record (k from 1); its bytes in pat_bytes_
  std::vector<uint8_t> pat_bytes_;
  std::vector<Pattern> patterns_;
  AcView view_{};
};

// The reference: every pattern searched for in the payload on its own (nocase: ASCII case folded).
std::vector<uint32_t> naive_patterns_in(const std::vector<Pattern>& patterns, const uint8_t* p, size_t n);

}  // namespace tandem::dpi
