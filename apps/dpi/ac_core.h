// The Aho-Corasick DFA step and match report, written once as `__host__ __device__` code: the CPU
// walks (one payload at a time, and payloads in lockstep) and the GPU kernel run exactly this.
//
// Layout (built by AhoCorasick::build): the transition table is row-major, one row of `classes`
// entries per state. An entry holds the next state's ROW OFFSET (state * classes) rather than its
// number, so a step is one add and one load, with no multiply on the dependent chain; bit 31 of an
// entry says the next state reports matches (it or a state on its dictionary-suffix chain has
// outputs), so the walk needs no second array read per byte. A state's number is recovered (a
// multiply by a precomputed reciprocal) only when it reports, which match-free traffic never does.
// Reports: each state's list holds every pattern ending there, its own and those of the states on
// its dictionary-suffix chain, flattened at build time, so a report reads one range of ids instead
// of following a chain of dependent loads (match-heavy traffic reports at a fifth of its bytes).
#pragma once

#include <cstdint>
#include <cstring>

#include "core/compiler.h"

namespace tandem::dpi {

inline constexpr uint32_t kAcOutput = 0x80000000u;  // an entry's "the next state reports" bit
inline constexpr uint32_t kAcRowMask = ~kAcOutput;
// Zero ids after the last report range, so that a reader may take the first kAcRepPad ids of any
// range without a bounds check and drop those past its end (aho_corasick.cc's batched walk).
inline constexpr uint32_t kAcRepPad = 2;

// What confirming a case-sensitive match needs of a pattern, in one 16-byte record.
struct AcPattern {
  uint64_t tail;   // the pattern's last min(len, 8) bytes, the last one in the highest used byte
  uint32_t begin;  // its bytes (case kept): pat_bytes[begin .. begin + len)
  uint16_t len;
  uint8_t nocase;
  uint8_t pad;
};

struct AcView {
  const uint32_t* delta;      // states x classes entries: next row offset | kAcOutput
  const uint8_t* cls;         // 256 entries: the input class of each byte (ASCII case folded)
  const uint32_t* rep_begin;  // per state + 1: the ids it reports are rep[rep_begin[s] .. rep_begin[s + 1])
  const uint32_t* rep;        // pattern ids (from 1): each state's own, then its suffix chain's;
                              // kAcRepPad zeros after the last range
  const AcPattern* pats;      // per pattern id (pats[0]: no pattern)
  const uint8_t* pat_bytes;   // every pattern's own bytes (case kept), for case-sensitive confirmation
  uint32_t classes;
  uint64_t row_magic;  // ceil(2^32 / classes): the state of a row offset is (row * row_magic) >> 32
};

constexpr uint64_t ac_row_magic(uint32_t classes) { return ((uint64_t{1} << 32) + classes - 1) / classes; }

// The state whose row starts at entry x's row offset. Exact: the offset is state * classes, so the
// product is state * 2^32 + state * r with r = classes * row_magic - 2^32 < classes, and state * r
// < 2^31 (the table has under 2^31 entries) never reaches the next multiple of 2^32.
TANDEM_HD_INLINE uint32_t ac_state(const AcView& v, uint32_t x) {
  return static_cast<uint32_t>((static_cast<uint64_t>(x & kAcRowMask) * v.row_magic) >> 32);
}

// The entry after reading byte b in the state whose entry is x (the start state's entry is 0).
TANDEM_HD_INLINE uint32_t ac_step(const AcView& v, uint32_t x, uint8_t b) {
  return v.delta[(x & kAcRowMask) + v.cls[b]];
}

// The m (1..8) bytes before p[end], packed as AcPattern::tail packs a pattern's last bytes. With
// 8 bytes to read one load does (the common case); before that, byte by byte, never before p.
TANDEM_HD_INLINE uint64_t ac_tail(const uint8_t* p, uint32_t end, uint32_t m) {
  uint64_t w = 0;
  if (end >= 8) {
    memcpy(&w, p + end - 8, 8);  // little endian: p[end - 1] in the highest byte
    return w >> (8 * (8 - m));
  }
  for (uint32_t i = 0; i < m; ++i) w |= static_cast<uint64_t>(p[end - m + i]) << (8 * i);
  return w;
}

// Whether the bytes of a case-sensitive pattern a (over 8 bytes), ending at p[end - 1], match before
// its tail word: 8 bytes at a time, from the start. Each word read lies within the pattern's span
// (offset i < len - 8, so i + 8 < len); a last word that reaches into the tail compares bytes the
// tail word has confirmed already.
TANDEM_HD_INLINE bool ac_confirm_head(const AcView& v, const AcPattern& a, const uint8_t* p, uint32_t end) {
  const uint8_t* q = p + end - a.len;
  const uint8_t* t = v.pat_bytes + a.begin;
  for (uint32_t i = 0; i + 8 < a.len; i += 8) {
    uint64_t x, y;
    memcpy(&x, q + i, 8);
    memcpy(&y, t + i, 8);
    if (x != y) return false;
  }
  return true;
}

// Whether pattern `id`, found case-folded by the automaton and ending at p[end - 1], matches with
// its case: nocase patterns always do; others are compared, their last 8 bytes in one word.
TANDEM_HD_INLINE bool ac_confirm(const AcView& v, uint32_t id, const uint8_t* p, uint32_t end) {
  const AcPattern& a = v.pats[id];
  if (a.nocase) return true;
  if (ac_tail(p, end, a.len < 8 ? a.len : 8) != a.tail) return false;
  return a.len <= 8 || ac_confirm_head(v, a, p, end);
}

// Calls f(id) for the ids rep[b .. e) (one state's reports, ac_state + rep_begin) of the patterns
// ending at p[end - 1] that are confirmed, skipping (before the confirmation) the ids for which
// seen(id) is true: a payload's repeated occurrences of one pattern are reported once.
template <class Seen, class F>
TANDEM_HD_INLINE void ac_report_range(const AcView& v, uint32_t b, uint32_t e, const uint8_t* p, uint32_t end, Seen& seen,
                                      F& f) {
  for (uint32_t k = b; k < e; ++k) {
    const uint32_t id = v.rep[k];
    if (!seen(id) && ac_confirm(v, id, p, end)) f(id);
  }
}

// The same for the walk in entry x (x has kAcOutput).
template <class Seen, class F>
TANDEM_HD_INLINE void ac_report(const AcView& v, uint32_t x, const uint8_t* p, uint32_t end, Seen& seen, F& f) {
  const uint32_t s = ac_state(v, x);
  ac_report_range(v, v.rep_begin[s], v.rep_begin[s + 1], p, end, seen, f);
}

}  // namespace tandem::dpi
