// Multi-pattern search (DPI stage 1): an Aho-Corasick automaton over all patterns, as a full DFA
// (every state has a next state for every input class: one table read per payload byte, the
// structure Snort's ac_full, the G-Opt paper and the GPU DPI work use).
//
// Case: the automaton runs on ASCII-lowercased input with lowercased patterns; a match of a
// case-sensitive pattern is then confirmed against the payload's own bytes. Alphabet: bytes that
// occur in no pattern share one input class, so a row has (distinct pattern bytes + 1) entries,
// not 256. Outputs: each state lists the patterns ending exactly there; a dictionary-suffix link
// leads to the next shorter pattern that also ends at this point.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "apps/dpi/ids_rules.h"

namespace tandem::dpi {

class AhoCorasick {
 public:
  AhoCorasick() = default;
  // Pattern k (0-based) is reported as id k + 1.
  static AhoCorasick build(const std::vector<Pattern>& patterns);

  // Calls f(pattern id, end offset + 1) for every occurrence in p[0..n) (confirmed for
  // case-sensitive patterns), in order of end offset.
  template <class F>
  void scan(const uint8_t* p, size_t n, F&& f) const {
    uint32_t s = 0;
    for (size_t i = 0; i < n; ++i) {
      s = delta_[size_t{s} * classes_ + cls_[p[i]]];
      if (has_output_[s]) report(s, p, i + 1, f);
    }
  }

  // The sorted, unique ids of the patterns that occur in p[0..n): `out` is cleared first.
  void patterns_in(const uint8_t* p, size_t n, std::vector<uint32_t>* out) const;

  // patterns_in for n payloads with the G-Opt paper's DPI optimizations: payloads are taken in
  // batches of `batch`, sorted by length, and walked `group` at a time in lockstep (byte k of every
  // payload in the group, then byte k + 1), so the table reads of different payloads are
  // independent and their cache misses overlap instead of following each other. out[i] gets
  // payload i's ids.
  void patterns_in_batch(const uint8_t* const* p, const uint32_t* len, size_t n, std::vector<std::vector<uint32_t>>* out,
                         size_t batch = 8192, size_t group = 16) const;

  size_t states() const { return has_output_.size(); }
  uint32_t classes() const { return classes_; }
  size_t memory_bytes() const { return delta_.size() * sizeof(uint32_t) + out_.size() * sizeof(uint32_t) * 2; }
  const std::vector<Pattern>& patterns() const { return patterns_; }
  // The DFA arrays (for a GPU copy): row-major states x classes, and the byte -> class map.
  const std::vector<uint32_t>& delta() const { return delta_; }
  const uint8_t* byte_classes() const { return cls_; }

 private:
  template <class F>
  void report(uint32_t s, const uint8_t* p, size_t end, F& f) const {
    for (uint32_t x = s; x != 0; x = dict_link_[x]) {
      for (uint32_t k = out_begin_[x]; k < out_begin_[x + 1]; ++k) {
        const uint32_t id = out_[k];
        if (confirm(id, p, end)) f(id, end);
      }
    }
  }
  bool confirm(uint32_t id, const uint8_t* p, size_t end) const;

  uint8_t cls_[256] = {};
  uint32_t classes_ = 1;
  std::vector<uint32_t> delta_;
  std::vector<uint8_t> has_output_;   // the state or a dictionary-suffix state has outputs
  std::vector<uint32_t> dict_link_;   // next state with outputs along the failure chain, 0: none
  std::vector<uint32_t> out_begin_;   // outputs of state s: out_[out_begin_[s] .. out_begin_[s + 1])
  std::vector<uint32_t> out_;
  std::vector<Pattern> patterns_;
};

// The reference: every pattern searched for in the payload on its own (nocase: ASCII case folded).
std::vector<uint32_t> naive_patterns_in(const std::vector<Pattern>& patterns, const uint8_t* p, size_t n);

}  // namespace tandem::dpi
