// The CPU lookup over a dense array of IPv4 destination addresses (host byte order): the ipv4
// app's batched path, `tandem lookup` and the fw-router's route lookup. The paths measured against
// it (scalar, group prefetching, G-Opt) are the benchmarks' (bench/variants/ipv4_variants.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "apps/ipv4/dir24_8.h"

namespace tandem::ipv4 {

// The fastest lookup this CPU runs: lookup_avx512 where it has AVX-512F, else the software-
// pipelined prefetching of lookup_prefetch_stream at distance kPrefetchDistance, measured faster
// than group prefetching on every machine tried (docs/RESULTS.md): a group's prefetches have not
// landed when the same group's loads issue, whereas a distance of 64 keeps a steady ~64 misses in
// flight.
inline constexpr uint32_t kPrefetchDistance = 64;
void lookup_batched(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n);

// 16 addresses per step with AVX-512 gathers (tbl24, then a masked gather of the extended
// entries' tbl8 slots), tbl24 entries prefetched `distance` addresses ahead (dir24_8_avx512.cc).
// lookup_prefetch_stream on CPUs without AVX-512F.
bool dir24_8_avx512_supported();
void lookup_avx512(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n,
                   uint32_t distance = kPrefetchDistance);
// The same on bare arrays of the layout (tbl24: 2^24 entries; tbl8: the groups any entry points
// to), for tests that lay out groups a table reaches only with millions of long prefixes.
void lookup_avx512(const uint32_t* tbl24, const uint32_t* tbl8, const uint32_t* ips, uint32_t* next_hops, size_t n,
                   uint32_t distance = kPrefetchDistance);

// Software-pipelined prefetching: while resolving address i, prefetch the tbl24 entry of address
// i + distance. Keeps a steady number of misses in flight without group boundaries. The distance
// is a parameter so that the benchmarks can sweep it.
void lookup_prefetch_stream(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n,
                            uint32_t distance);

}  // namespace tandem::ipv4
