// IPv6 lookups 16 at a time with AVX-512 gathers (DPDK's rte_fib6 vector lookup, on the rte_lpm6
// layout of lpm6_core.h). The scalar walk pays a branch misprediction whenever the next address
// stops at another level than the last; here the 16 lanes walk the levels together under a mask:
// one gather per level issues the loads of every lane still extended, and the loop runs as many
// levels as the deepest of the 16 needs. Compiled through target attributes and chosen at run time
// (Lpm6::select_lookup), so the binary still runs on CPUs without AVX-512.
#include <immintrin.h>

#include <cstdint>

#include "apps/ipv6/lpm6.h"
#include "core/avx512.h"
#include "core/compiler.h"

namespace tandem::ipv6 {

bool lpm6_avx512_supported() { return cpu_has_avx512f() && cpu_has_avx512bw(); }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// GCC 12 reports its own AVX-512 intrinsics' "__Y" temporaries as (maybe) uninitialized when they
// are compiled through a target attribute (a false positive of the header, not of this code).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
namespace {

using E = Lpm6Entry;

#define TANDEM_AVX512 __attribute__((target("avx512f,avx512bw")))

// Address dword j (bytes 4j..4j+3, most significant byte first) of each of 16 addresses, from the
// four registers that hold them byte-swapped per dword (four addresses each).
TANDEM_AVX512 inline __m512i address_word(const __m512i r[4], int j) {
  const __m512i idx = _mm512_add_epi32(_mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28),
                                       _mm512_set1_epi32(j));
  const __m512i lo = _mm512_permutex2var_epi32(r[0], idx, r[1]);  // lanes 0..7: addresses 0..7
  const __m512i hi = _mm512_permutex2var_epi32(r[2], idx, r[3]);  // lanes 8..15: addresses 8..15
  return _mm512_mask_blend_epi32(0xFF00, lo, hi);
}

// 16 addresses in flight: their words, the entries reached so far and the lanes still extended.
struct Lanes16 {
  __m512i r[4];  // the 16 addresses, byte-swapped per dword (four addresses a register)
  __m512i word;  // the address dword the current byte is in
  __m512i e;
  __mmask16 ext;
};

TANDEM_AVX512 inline void start16(Lanes16& l, const int* tbl24, const uint8_t (*addrs)[16]) {
  // Per 128-bit lane: reverse the bytes of each dword, so that address byte 4j is a word's top byte.
  const __m512i bswap = _mm512_set4_epi32(0x0C0D0E0F, 0x08090A0B, 0x04050607, 0x00010203);
  for (int k = 0; k < 4; ++k) l.r[k] = _mm512_shuffle_epi8(_mm512_loadu_si512(addrs + 4 * k), bswap);
  l.word = address_word(l.r, 0);
  l.e = _mm512_i32gather_epi32(_mm512_srli_epi32(l.word, 8), tbl24, 4);
  l.ext = _mm512_test_epi32_mask(l.e, _mm512_set1_epi32(static_cast<int>(E::kExtBit)));
}

// One level down for the lanes still extended. Every such lane is at the same address byte: they
// all started at byte 3 together. tbl8_mid: gather_base_for_unsigned_index(tbl8), the slot sent
// with its top bit flipped (core/avx512.h).
TANDEM_AVX512 inline void step16(Lanes16& l, const int* tbl8_mid, int byte) {
  if (!l.ext) return;
  if (byte % 4 == 0) l.word = address_word(l.r, byte / 4);
  const __m512i b = _mm512_and_si512(_mm512_srlv_epi32(l.word, _mm512_set1_epi32(8 * (3 - byte % 4))), _mm512_set1_epi32(0xFF));
  const __m512i slot = _mm512_or_si512(
      _mm512_slli_epi32(_mm512_and_si512(l.e, _mm512_set1_epi32(static_cast<int>(E::kValueMask))), 8), b);
  l.e = _mm512_mask_i32gather_epi32(l.e, l.ext, _mm512_xor_si512(slot, _mm512_set1_epi32(INT32_MIN)), tbl8_mid, 4);
  l.ext = _mm512_test_epi32_mask(l.e, _mm512_set1_epi32(static_cast<int>(E::kExtBit)));
}

TANDEM_AVX512 inline void finish16(const Lanes16& l, uint32_t* out) {
  const __mmask16 valid = _mm512_test_epi32_mask(l.e, _mm512_set1_epi32(static_cast<int>(E::kValidBit)));
  _mm512_storeu_si512(out, _mm512_mask_blend_epi32(valid, _mm512_set1_epi32(static_cast<int>(kNoRoute)),
                                                   _mm512_and_si512(l.e, _mm512_set1_epi32(static_cast<int>(E::kValueMask)))));
}

// kSets sets of 16 walked side by side: a level's gathers of every set are issued before any is
// waited for. rte_fib6 walks two sets; on long arrays eight keep more misses in flight (the
// tables' upper levels miss the cache on every lookup), measured in docs/RESULTS.md.
template <int kSets>
TANDEM_AVX512 inline void lookup_sets(const int* tbl24, const int* tbl8_mid, const uint8_t (*addrs)[16], uint32_t* out) {
  Lanes16 l[kSets];
  for (int k = 0; k < kSets; ++k) start16(l[k], tbl24, addrs + 16 * k);
  for (int byte = kTbl24Bytes; byte < 16; ++byte) {
    uint32_t any = 0;
    for (int k = 0; k < kSets; ++k) any |= l[k].ext;
    if (!any) break;
    for (int k = 0; k < kSets; ++k) step16(l[k], tbl8_mid, byte);
  }
  for (int k = 0; k < kSets; ++k) finish16(l[k], out + 16 * k);
}

TANDEM_AVX512 void lookup_all(const uint32_t* tbl24u, const uint32_t* tbl8u, const uint8_t (*addrs)[16], uint32_t* out,
                              size_t n) {
  const int* tbl24 = reinterpret_cast<const int*>(tbl24u);
  const int* tbl8_mid = gather_base_for_unsigned_index(tbl8u);
  size_t i = 0;
  for (; i + 128 <= n; i += 128) lookup_sets<8>(tbl24, tbl8_mid, addrs + i, out + i);
  for (; i + 32 <= n; i += 32) lookup_sets<2>(tbl24, tbl8_mid, addrs + i, out + i);
  if (i + 16 <= n) {
    lookup_sets<1>(tbl24, tbl8_mid, addrs + i, out + i);
    i += 16;
  }
  for (; i < n; ++i) out[i] = lpm6_lookup(tbl24u, tbl8u, addrs[i]);
}

}  // namespace
#pragma GCC diagnostic pop
#endif

void lpm6_lookup_avx512(const uint32_t* tbl24, const uint32_t* tbl8, const uint8_t (*addrs)[16], uint32_t* hops,
                        size_t n) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool supported = lpm6_avx512_supported();
  if (supported) {
    lookup_all(tbl24, tbl8, addrs, hops, n);
    return;
  }
#endif
  for (size_t i = 0; i < n; ++i) hops[i] = lpm6_lookup(tbl24, tbl8, addrs[i]);
}

void lpm6_lookup_avx512(const Lpm6& t, const uint8_t (*addrs)[16], uint32_t* hops, size_t n) {
  static const bool supported = lpm6_avx512_supported();
  if (!supported) return lpm6_lookup_window(t, addrs, hops, n, kBatchWindow);
  lpm6_lookup_avx512(t.tbl24(), t.tbl8(), addrs, hops, n);
}

}  // namespace tandem::ipv6
