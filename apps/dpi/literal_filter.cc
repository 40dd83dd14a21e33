#include "apps/dpi/literal_filter.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

// The 128-bit path moves 64-bit values in and out of vector registers: x86-64 only.
#if defined(__SSE2__) && defined(__x86_64__)
#define TANDEM_LITERAL_FILTER_SSE2 1
#include <emmintrin.h>
#endif

namespace tandem::dpi {

namespace {

inline uint8_t lower(uint8_t c) { return static_cast<uint8_t>(c - 'A') < 26 ? static_cast<uint8_t>(c + 32) : c; }

// The byte and, for a nocase pattern's ASCII letter, its other case.
std::vector<uint8_t> cases_of(uint8_t c, bool nocase) {
  const uint8_t l = lower(c), u = static_cast<uint8_t>(l - 'a') < 26 ? static_cast<uint8_t>(l - 32) : l;
  if (!nocase || l == u) return {c};
  return {l, u};
}

// Bytes [0, len) of p (len <= 4) with the length above them: never 0, and no two keys of
// different lengths are equal.
inline uint64_t key_of(const uint8_t* p, uint32_t len) {
  uint64_t k = 0;
  for (uint32_t j = 0; j < len; ++j) k |= uint64_t{p[j]} << (8 * j);
  return k | uint64_t{len} << 32;
}

inline uint64_t hash_of(uint64_t key) { return (key * 0x9E3779B97F4A7C15ull) >> 29; }

inline uint32_t index_at(const uint8_t* b) {
  return b[0] | uint32_t{b[1]} << 8;  // one 16-bit load on a little-endian machine
}

#if defined(TANDEM_LITERAL_FILTER_SSE2)
template <int K>
inline __m128i or_entry(__m128i acc, const uint64_t* reach, const uint8_t* b) {
  const __m128i r = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(reach + index_at(b + K - 1)));
  return _mm_or_si128(acc, _mm_slli_si128(r, K));
}
#endif

// The block at b (b[-1 .. 8) readable): `carry` ORed with each byte k's entry shifted left by k
// bytes, as a 128-bit value in *lo and *hi. With SSE2 a byte costs one whole-byte shift of a
// 128-bit register (two 64-bit shifts without).
inline void ors_of_block(const uint64_t* reach, const uint8_t* b, uint64_t carry, uint64_t* lo, uint64_t* hi) {
#if defined(TANDEM_LITERAL_FILTER_SSE2)
  __m128i acc = _mm_cvtsi64_si128(static_cast<long long>(carry));
  acc = or_entry<0>(acc, reach, b);
  acc = or_entry<1>(acc, reach, b);
  acc = or_entry<2>(acc, reach, b);
  acc = or_entry<3>(acc, reach, b);
  acc = or_entry<4>(acc, reach, b);
  acc = or_entry<5>(acc, reach, b);
  acc = or_entry<6>(acc, reach, b);
  acc = or_entry<7>(acc, reach, b);
  *lo = static_cast<uint64_t>(_mm_cvtsi128_si64(acc));
  *hi = static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(acc, acc)));
#else
  uint64_t l = carry, h = 0;
  for (int k = 0; k < 8; ++k) {
    const uint64_t r = reach[index_at(b + k - 1)];
    l |= r << (8 * k);
    if (k) h |= r >> (64 - 8 * k);
  }
  *lo = l;
  *hi = h;
#endif
}

}  // namespace

LiteralFilter LiteralFilter::build(const std::vector<Pattern>& patterns) {
  LiteralFilter f;
  f.reach_.assign(size_t{1} << 16, ~uint64_t{0});
  uint64_t anywhere = ~uint64_t{0};  // the (offset, bucket) bits cleared in every entry
  for (uint32_t len = 1; len <= 3; ++len) f.short_[len - 1].assign((size_t{1} << (8 * len)) / 64, 0);
  std::vector<std::pair<uint64_t, uint32_t>> keyed;  // (key, pattern index)
  keyed.reserve(patterns.size());
  for (uint32_t k = 0; k < patterns.size(); ++k) {
    const std::string& b = patterns[k].bytes;
    if (b.empty() || b.size() > 65535) throw std::length_error("literal filter: a pattern must have 1 to 65535 bytes");
    const auto len = static_cast<uint32_t>(b.size());
    const auto off = static_cast<uint32_t>(f.raw_.size());
    for (const char c : b) {
      f.raw_.push_back(static_cast<uint8_t>(c));
      f.lowered_.push_back(lower(static_cast<uint8_t>(c)));
    }
    const bool nocase = patterns[k].nocase;
    f.pats_.push_back({off, static_cast<uint16_t>(len), nocase});
    // Keyed by its last four bytes (all of them when shorter), case folded.
    const uint32_t klen = std::min<uint32_t>(len, 4);
    const uint64_t key = key_of(f.lowered_.data() + off + len - klen, klen);
    int bucket = static_cast<int>(len) - 1;  // 0-2: one to three bytes
    if (len >= 6) {
      bucket = 4 + static_cast<int>(hash_of(key) % 4);
    } else if (len >= 4) {
      bucket = 3;
    }
    if (len <= 3) {
      const uint64_t x = key & 0xFFFFFFFFu;
      f.short_[len - 1][x / 64] |= uint64_t{1} << (x % 64);
    }
    // Offset t counts back from the pattern's last byte: the entry of the byte t before it (and
    // of the byte before that one) says the bucket may hold a pattern ending t bytes later.
    const uint8_t* own = f.raw_.data() + off;
    for (uint32_t t = 0; t < 8; ++t) {
      const uint64_t bit = uint64_t{1} << (8 * t + bucket);
      if (t >= len) {
        anywhere &= ~bit;
        continue;
      }
      const uint32_t j = len - 1 - t;  // the pattern's byte at offset t
      for (const uint8_t c : cases_of(own[j], nocase)) {
        if (j == 0) {
          for (uint32_t prev = 0; prev < 256; ++prev) f.reach_[entry(static_cast<uint8_t>(prev), c)] &= ~bit;
        } else {
          for (const uint8_t prev : cases_of(own[j - 1], nocase)) f.reach_[entry(prev, c)] &= ~bit;
        }
      }
    }
    keyed.emplace_back(key, k);
  }
  for (uint64_t& r : f.reach_) r &= anywhere;
  std::sort(keyed.begin(), keyed.end());
  size_t keys = 0;
  for (size_t i = 0; i < keyed.size(); ++i) keys += i == 0 || keyed[i].first != keyed[i - 1].first;
  size_t cap = 16;
  while (cap < 2 * keys) cap *= 2;
  f.slots_.assign(cap, Slot{});
  f.slot_mask_ = cap - 1;
  f.ids_.reserve(keyed.size());
  for (size_t i = 0; i < keyed.size();) {
    size_t j = i;
    while (j < keyed.size() && keyed[j].first == keyed[i].first) f.ids_.push_back(keyed[j++].second);
    uint64_t h = hash_of(keyed[i].first) & f.slot_mask_;
    while (f.slots_[h].key != 0) h = (h + 1) & f.slot_mask_;
    f.slots_[h] = {keyed[i].first, static_cast<uint32_t>(f.ids_.size() - (j - i)), static_cast<uint32_t>(f.ids_.size())};
    i = j;
  }
  return f;
}

const LiteralFilter::Slot* LiteralFilter::find(uint64_t key) const {
  for (uint64_t h = hash_of(key) & slot_mask_;; h = (h + 1) & slot_mask_) {
    const Slot& s = slots_[h];
    if (s.key == key) return &s;
    if (s.key == 0) return nullptr;
  }
}

// The patterns listed under s that end at p[e].
void LiteralFilter::confirm(const Slot* s, const uint8_t* p, size_t e, uint64_t* seen, std::vector<uint32_t>* out) const {
  if (!s) return;
  for (uint32_t k = s->begin; k < s->end; ++k) {
    const uint32_t id = ids_[k];
    if ((seen[id / 64] >> (id % 64)) & 1) continue;  // found already: no need to compare again
    const Pat& pat = pats_[id];
    if (pat.len > e + 1) continue;
    const uint8_t* at = p + e + 1 - pat.len;
    bool same = true;
    if (pat.nocase) {
      const uint8_t* lw = lowered_.data() + pat.bytes;
      for (uint32_t j = 0; j < pat.len && same; ++j) same = lower(at[j]) == lw[j];
    } else {
      same = std::memcmp(at, raw_.data() + pat.bytes, pat.len) == 0;
    }
    if (same) {
      out->push_back(id + 1);  // first: a bit is set only for an id the output holds
      seen[id / 64] |= uint64_t{1} << (id % 64);
    }
  }
}

// A candidate ending at p[e] for the buckets in m: the short patterns (buckets 0-2) through their
// bitmaps, the longer ones listed under their last four bytes.
void LiteralFilter::candidate(const uint8_t* p, size_t e, uint32_t m, uint64_t* seen, std::vector<uint32_t>* out) const {
  uint8_t lw[4] = {};  // the (up to) four bytes ending at e, case folded, in order
  const uint32_t have = static_cast<uint32_t>(std::min<size_t>(4, e + 1));
  for (uint32_t j = 0; j < have && j < 4; ++j) lw[4 - have + j] = lower(p[e + 1 - have + j]);
  for (uint32_t len = 1; len <= 3 && len <= have; ++len) {
    if (!(m & (1u << (len - 1)))) continue;
    const uint8_t* k = lw + 4 - len;
    const uint32_t x = k[0] | (len > 1 ? uint32_t{k[1]} << 8 : 0) | (len > 2 ? uint32_t{k[2]} << 16 : 0);
    if ((short_[len - 1][x / 64] >> (x % 64)) & 1) confirm(find(key_of(k, len)), p, e, seen, out);
  }
  if ((m & ~kShortBuckets) && have == 4) confirm(find(key_of(lw, 4)), p, e, seen, out);
}

void LiteralFilter::patterns_in(const uint8_t* p, size_t n, std::vector<uint32_t>* out) const {
  scan(p, n, false, out);
}

bool LiteralFilter::patterns_in_if_sparse(const uint8_t* p, size_t n, std::vector<uint32_t>* out) const {
  return scan(p, n, true, out);
}

bool LiteralFilter::scan(const uint8_t* p, size_t n, bool bounded, std::vector<uint32_t>* out) const {
  out->clear();
  if (n == 0 || pats_.empty()) return true;
  size_t candidates = 0;
  const uint64_t* reach = reach_.data();
  // The patterns found so far, a bit each: one bitmap per thread, all clear between calls, also
  // when a call leaves by an exception (a bit stuck set would hide its pattern from every later
  // call on the thread).
  thread_local std::vector<uint64_t> seen_bits;
  if (seen_bits.size() < pats_.size() / 64 + 1) seen_bits.assign(pats_.size() / 64 + 1, 0);
  uint64_t* seen = seen_bits.data();
  struct ClearSeen {
    uint64_t* seen;
    const std::vector<uint32_t>* ids;
    ~ClearSeen() {
      for (const uint32_t id : *ids) seen[(id - 1) / 64] = 0;
    }
  } clear_seen{seen, out};
  // Shift-or, eight bytes at a time. Byte d of a byte's entry concerns patterns ending d bytes
  // after it; shifted left by as many bytes as it lies into the block, it lands on the byte of
  // the block's 128-bit word that stands for that end. The low 64 bits, with what the previous
  // block left for them, then hold every entry's say on the ends in this block: a bucket bit
  // still clear there is a candidate. Before the payload nothing is excluded, and the byte before
  // it reads as 0.
  uint64_t carry = 0;
  // b[-1 .. count) readable; b[k - 1] and b[k] little-endian are byte k's entry index.
  // False once a bounded scan has met more than kDenseSlack candidates plus one per
  // 2^kDenseShift bytes before this block.
  const auto block = [&](size_t i, const uint8_t* b, size_t count) {
    uint64_t lo, hi;
    ors_of_block(reach, b, carry, &lo, &hi);
    carry = hi;
    uint64_t cand = ~lo;
    if (count < 8) cand &= (uint64_t{1} << (8 * count)) - 1;  // ends past the payload
    while (__builtin_expect(cand != 0, 0)) {
      if (++candidates > kDenseSlack + (i >> kDenseShift) && bounded) return false;
      const uint32_t q = static_cast<uint32_t>(__builtin_ctzll(cand)) / 8;
      candidate(p, i + q, static_cast<uint32_t>(cand >> (8 * q)) & 0xFF, seen, out);
      cand &= ~(uint64_t{0xFF} << (8 * q));
    }
    return true;
  };
  // The first block and the last, partial one read a copy with the byte before them and zeros
  // after (entries of bytes past the payload only concern ends past it).
  const auto padded = [&](size_t i, size_t count) {
    uint8_t buf[17] = {};
    buf[0] = i ? p[i - 1] : 0;
    std::memcpy(buf + 1, p + i, count);
    return block(i, buf + 1, count);
  };
  bool within = true;
  size_t i = 0;
  if (n >= 8) {
    within = padded(0, 8);
    for (i = 8; within && i + 8 <= n; i += 8) within = block(i, p + i, 8);
  }
  if (within && i < n) within = padded(i, n - i);
  if (!within) {
    for (const uint32_t id : *out) seen[(id - 1) / 64] = 0;
    out->clear();
    return false;
  }
  std::sort(out->begin(), out->end());
  return true;
}

void patterns_in_hybrid(const LiteralFilter& filter, const AhoCorasick& ac, const uint8_t* const* p, const uint32_t* len,
                        size_t n, std::vector<uint32_t>* out, size_t batch, size_t group) {
  if (batch == 0 || group == 0) throw std::invalid_argument("patterns_in_hybrid: batch and group must be > 0");
  // Per thread, so that the dpi app's bursts reuse them.
  thread_local std::vector<const uint8_t*> dense_p;
  thread_local std::vector<uint32_t> dense_len;
  thread_local std::vector<size_t> dense_at;
  thread_local std::vector<std::vector<uint32_t>> dense_out;
  for (size_t b = 0; b < n; b += batch) {
    const size_t e = std::min(n, b + batch);
    dense_p.clear();
    dense_len.clear();
    dense_at.clear();
    for (size_t i = b; i < e; ++i) {
      if (!filter.patterns_in_if_sparse(p[i], len[i], &out[i])) {
        dense_p.push_back(p[i]);
        dense_len.push_back(len[i]);
        dense_at.push_back(i);
      }
    }
    if (dense_at.empty()) continue;
    if (dense_out.size() < dense_at.size()) dense_out.resize(dense_at.size());
    ac.patterns_in_batch(dense_p.data(), dense_len.data(), dense_at.size(), dense_out.data(), batch, group);
    for (size_t k = 0; k < dense_at.size(); ++k) out[dense_at[k]].swap(dense_out[k]);
  }
}

size_t LiteralFilter::memory_bytes() const {
  size_t bits = 0;
  for (const auto& b : short_) bits += b.size() * sizeof(uint64_t);
  return reach_.size() * sizeof(uint64_t) + bits + slots_.size() * sizeof(Slot) + ids_.size() * sizeof(uint32_t) +
         pats_.size() * sizeof(Pat) + raw_.size() + lowered_.size();
}

}  // namespace tandem::dpi
