// The Aho-Corasick DFA step and match report, written once as `__host__ __device__` code: the CPU
// walks (one payload at a time, and payloads in lockstep) and the GPU kernel run exactly this.
//
// Layout (built by AhoCorasick::build): the transition table is row-major, one row of `classes`
// entries per state. An entry holds the next state's ROW OFFSET (state * classes) rather than its
// number, so a step is one add and one load, with no multiply on the dependent chain; bit 31 of an
// entry says the next state reports matches (it or a state on its dictionary-suffix chain has
// outputs), so the walk needs no second array read per byte. A state's number is recovered (a
// division) only when it reports, which match-free traffic never does.
#pragma once

#include <cstdint>

#include "core/compiler.h"

namespace tandem::dpi {

inline constexpr uint32_t kAcOutput = 0x80000000u;  // an entry's "the next state reports" bit
inline constexpr uint32_t kAcRowMask = ~kAcOutput;

struct AcView {
  const uint32_t* delta;      // states x classes entries: next row offset | kAcOutput
  const uint8_t* cls;         // 256 entries: the input class of each byte (ASCII case folded)
  const uint32_t* dict_link;  // per state: the next state with outputs along the failure chain, 0: none
  const uint32_t* out_begin;  // per state + 1: its outputs are out[out_begin[s] .. out_begin[s + 1])
  const uint32_t* out;        // pattern ids (from 1)
  const uint32_t* pat_begin;  // per pattern (id - 1) + 1: its bytes are pat_bytes[pat_begin[k] .. pat_begin[k + 1])
  const uint8_t* pat_bytes;   // every pattern's own bytes (case kept), for case-sensitive confirmation
  const uint8_t* pat_nocase;  // per pattern (id - 1)
  uint32_t classes;
};

// The entry after reading byte b in the state whose entry is x (the start state's entry is 0).
TANDEM_HD_INLINE uint32_t ac_step(const AcView& v, uint32_t x, uint8_t b) {
  return v.delta[(x & kAcRowMask) + v.cls[b]];
}

// Whether pattern `id`, found case-folded by the automaton and ending at p[end - 1], matches with
// its case: nocase patterns always do; others are compared byte for byte.
TANDEM_HD_INLINE bool ac_confirm(const AcView& v, uint32_t id, const uint8_t* p, uint32_t end) {
  if (v.pat_nocase[id - 1]) return true;
  const uint32_t b = v.pat_begin[id - 1], n = v.pat_begin[id] - b;
  const uint8_t* q = p + end - n;
  for (uint32_t i = 0; i < n; ++i) {
    if (q[i] != v.pat_bytes[b + i]) return false;
  }
  return true;
}

// Calls f(id) for every pattern ending at p[end - 1] when the walk is in entry x (x has kAcOutput),
// skipping (before the confirmation) the ids for which seen(id) is true: a payload's repeated
// occurrences of one pattern are reported once.
template <class Seen, class F>
TANDEM_HD_INLINE void ac_report(const AcView& v, uint32_t x, const uint8_t* p, uint32_t end, Seen& seen, F& f) {
  for (uint32_t s = (x & kAcRowMask) / v.classes; s != 0; s = v.dict_link[s]) {
    for (uint32_t k = v.out_begin[s]; k < v.out_begin[s + 1]; ++k) {
      const uint32_t id = v.out[k];
      if (!seen(id) && ac_confirm(v, id, p, end)) f(id);
    }
  }
}

}  // namespace tandem::dpi
