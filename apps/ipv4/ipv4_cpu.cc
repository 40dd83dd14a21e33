#include "apps/ipv4/ipv4_cpu.h"

namespace tandem::ipv4 {

namespace {

template <int Locality>
void prefetch_stream(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n,
                     uint32_t distance) {
  const uint32_t* tbl24 = table.tbl24();
  const uint32_t* tbl8 = table.tbl8();
  size_t i = 0;
  const size_t head = n > distance ? n - distance : 0;
  for (; i < head; ++i) {
    __builtin_prefetch(&tbl24[dir24_8_tbl24_index(ips[i + distance])], 0, Locality);
    next_hops[i] = dir24_8_lookup(tbl24, tbl8, ips[i]);
  }
  for (; i < n; ++i) next_hops[i] = dir24_8_lookup(tbl24, tbl8, ips[i]);
}

}  // namespace

void lookup_prefetch_stream(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n,
                            uint32_t distance) {
  prefetch_stream<3>(table, ips, next_hops, n, distance);
}

void lookup_batched(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n) {
  static const bool avx512 = dir24_8_avx512_supported();
  if (avx512) return lookup_avx512(table, ips, next_hops, n, kPrefetchDistance);
  lookup_prefetch_stream(table, ips, next_hops, n, kPrefetchDistance);
}

}  // namespace tandem::ipv4
