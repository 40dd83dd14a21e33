#include "bench/variants/ipv6_variants.h"

#include <algorithm>

extern "C" void tandem_lpm6_lookup_gopt(const uint32_t* tbl24, const uint32_t* tbl8,
                                        const uint8_t (*addrs)[16], uint32_t* next_hops, int n);

namespace tandem::ipv6 {

using E = Lpm6Entry;

void lpm6_lookup_scalar(const Lpm6& t, const uint8_t (*addrs)[16], uint32_t* hops, size_t n) {
  const uint32_t* tbl24 = t.tbl24();
  const uint32_t* tbl8 = t.tbl8();
  for (size_t i = 0; i < n; ++i) hops[i] = lpm6_lookup(tbl24, tbl8, addrs[i]);
}

void lpm6_lookup_gopt(const Lpm6& t, const uint8_t (*addrs)[16], uint32_t* hops, size_t n) {
  // The generated function takes an int count: hand it at most 2^30 at a time.
  constexpr size_t kChunk = size_t{1} << 30;
  for (size_t off = 0; off < n; off += kChunk) {
    const size_t m = std::min(kChunk, n - off);
    tandem_lpm6_lookup_gopt(t.tbl24(), t.tbl8(), addrs + off, hops + off, static_cast<int>(m));
  }
}

namespace {

template <int Locality>
void prefetch_tbl24(const uint32_t* tbl24, const uint32_t* tbl8, const uint8_t (*addrs)[16],
                    uint32_t* hops, size_t n, uint32_t distance) {
  size_t i = 0;
  const size_t head = n > distance ? n - distance : 0;
  for (; i < head; ++i) {
    __builtin_prefetch(&tbl24[lpm6_tbl24_index(addrs[i + distance])], 0, Locality);
    hops[i] = lpm6_lookup(tbl24, tbl8, addrs[i]);
  }
  for (; i < n; ++i) hops[i] = lpm6_lookup(tbl24, tbl8, addrs[i]);
}

template <uint32_t G>
void lookup_levels(const uint32_t* tbl24, const uint32_t* tbl8, const uint8_t (*addrs)[16],
                   uint32_t* hops, size_t n) {
  size_t i = 0;
  for (; i + G <= n; i += G) {
    const uint8_t (*a)[16] = addrs + i;
    uint32_t e[G];
    for (uint32_t k = 0; k < G; ++k) prefetch_read(&tbl24[lpm6_tbl24_index(a[k])]);
    uint32_t any_ext = 0;
    for (uint32_t k = 0; k < G; ++k) {
      e[k] = tbl24[lpm6_tbl24_index(a[k])];
      any_ext |= e[k];
    }
    for (int byte = kTbl24Bytes; any_ext & E::kExtBit; ++byte) {
      for (uint32_t k = 0; k < G; ++k) {
        if (E::ext(e[k])) prefetch_read(&tbl8[lpm6_tbl8_index(e[k], a[k][byte])]);
      }
      any_ext = 0;
      for (uint32_t k = 0; k < G; ++k) {
        if (E::ext(e[k])) e[k] = tbl8[lpm6_tbl8_index(e[k], a[k][byte])];
        any_ext |= e[k];
      }
    }
    for (uint32_t k = 0; k < G; ++k) hops[i + k] = lpm6_result(e[k]);
  }
  for (; i < n; ++i) hops[i] = lpm6_lookup(tbl24, tbl8, addrs[i]);
}

}  // namespace

void lpm6_lookup_prefetch_tbl24(const Lpm6& t, const uint8_t (*addrs)[16], uint32_t* hops, size_t n,
                                uint32_t distance) {
  prefetch_tbl24<3>(t.tbl24(), t.tbl8(), addrs, hops, n, distance);
}

void lpm6_lookup_levels(const Lpm6& t, const uint8_t (*addrs)[16], uint32_t* hops, size_t n,
                        uint32_t group) {
  const uint32_t* t24 = t.tbl24();
  const uint32_t* t8 = t.tbl8();
  if (group <= 8) return lookup_levels<8>(t24, t8, addrs, hops, n);
  if (group <= 16) return lookup_levels<16>(t24, t8, addrs, hops, n);
  if (group <= 32) return lookup_levels<32>(t24, t8, addrs, hops, n);
  return lookup_levels<64>(t24, t8, addrs, hops, n);
}

}  // namespace tandem::ipv6
