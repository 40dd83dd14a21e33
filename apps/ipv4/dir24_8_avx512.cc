// DIR-24-8 lookups 16 at a time with AVX-512 gathers: one gather issues 16 independent tbl24
// loads, a masked second gather resolves the extended entries, and the tbl24 entries `distance`
// addresses ahead are prefetched. Faster than the scalar prefetch pipeline on every machine
// measured, most where the last-level cache holds tbl24 (docs/RESULTS.md). Compiled for AVX-512
// with a target attribute and chosen at run time (lookup_batched), so the binary still runs on
// CPUs without it.
#include <immintrin.h>

#include <cstdint>

#include "apps/ipv4/ipv4_cpu.h"
#include "core/avx512.h"

namespace tandem::ipv4 {

bool dir24_8_avx512_supported() { return cpu_has_avx512f(); }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// GCC 12 reports its own AVX-512 intrinsics' "__Y" temporaries as (maybe) uninitialized when they
// are compiled through a target attribute (a false positive of the header, not of this code).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
namespace {

// tbl8_mid: gather_base_for_unsigned_index(tbl8); slots (group << 8 | octet) go with their top bit
// flipped (core/avx512.h).
__attribute__((target("avx512f"))) void lookup16(const int* tbl24, const int* tbl8_mid, const uint32_t* ips,
                                                 uint32_t* out) {
  const __m512i ip = _mm512_loadu_si512(ips);
  __m512i e = _mm512_i32gather_epi32(_mm512_srli_epi32(ip, 8), tbl24, 4);
  const __mmask16 ext = _mm512_test_epi32_mask(e, _mm512_set1_epi32(static_cast<int>(Dir24_8Entry::kExtBit)));
  if (ext) {  // prefixes longer than /24: group * 256 + last octet
    const __m512i value = _mm512_and_si512(e, _mm512_set1_epi32(static_cast<int>(Dir24_8Entry::kValueMask)));
    const __m512i idx8 = _mm512_or_si512(_mm512_slli_epi32(value, 8), _mm512_and_si512(ip, _mm512_set1_epi32(0xFF)));
    e = _mm512_mask_i32gather_epi32(e, ext, _mm512_xor_si512(idx8, _mm512_set1_epi32(INT32_MIN)), tbl8_mid, 4);
  }
  const __mmask16 valid = _mm512_test_epi32_mask(e, _mm512_set1_epi32(static_cast<int>(Dir24_8Entry::kValidBit)));
  const __m512i hop = _mm512_and_si512(e, _mm512_set1_epi32(static_cast<int>(Dir24_8Entry::kValueMask)));
  _mm512_storeu_si512(out, _mm512_mask_blend_epi32(valid, _mm512_set1_epi32(-1), hop));  // -1 = kNoRoute
}

__attribute__((target("avx512f"))) void lookup_all(const uint32_t* tbl24u, const uint32_t* tbl8u, const uint32_t* ips,
                                                   uint32_t* out, size_t n, uint32_t distance) {
  const int* tbl24 = reinterpret_cast<const int*>(tbl24u);
  const int* tbl8_mid = gather_base_for_unsigned_index(tbl8u);
  size_t i = 0;
  const size_t ahead = n > distance + 16 ? n - distance - 16 : 0;
  for (; i < ahead; i += 16) {
    for (uint32_t k = 0; k < 16; ++k) _mm_prefetch(reinterpret_cast<const char*>(&tbl24u[ips[i + distance + k] >> 8]), _MM_HINT_T0);
    lookup16(tbl24, tbl8_mid, ips + i, out + i);
  }
  for (; i + 16 <= n; i += 16) lookup16(tbl24, tbl8_mid, ips + i, out + i);
  for (; i < n; ++i) out[i] = dir24_8_lookup(tbl24u, tbl8u, ips[i]);
}

}  // namespace
#pragma GCC diagnostic pop
#endif

void lookup_avx512(const uint32_t* tbl24, const uint32_t* tbl8, const uint32_t* ips, uint32_t* next_hops, size_t n,
                   uint32_t distance) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool supported = dir24_8_avx512_supported();
  if (supported) {
    lookup_all(tbl24, tbl8, ips, next_hops, n, distance);
    return;
  }
#endif
  for (size_t i = 0; i < n; ++i) next_hops[i] = dir24_8_lookup(tbl24, tbl8, ips[i]);
}

void lookup_avx512(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n, uint32_t distance) {
  static const bool supported = dir24_8_avx512_supported();
  if (!supported) return lookup_prefetch_stream(table, ips, next_hops, n, kPrefetchDistance);
  lookup_avx512(table.tbl24(), table.tbl8(), ips, next_hops, n, distance);
}

}  // namespace tandem::ipv4
