// The CPU lookup over a dense array of IPv4 destination addresses (host byte order): the ipv4
// app's batched path, `tandem lookup` and the fw-router's route lookup. The paths measured against
// it (scalar, group prefetching, G-Opt, AVX-512 gathers) are the benchmarks'
// (bench/variants/ipv4_variants.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "apps/ipv4/dir24_8.h"

namespace tandem::ipv4 {

// Software-pipelined prefetching at distance kPrefetchDistance (lookup_prefetch_stream). Measured
// faster than group prefetching on every machine tried (docs/RESULTS.md): a group's prefetches
// have not landed when the same group's loads issue, whereas a distance of 64 keeps a steady ~64
// misses in flight.
inline constexpr uint32_t kPrefetchDistance = 64;
void lookup_batched(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n);

// Software-pipelined prefetching: while resolving address i, prefetch the tbl24 entry of address
// i + distance. Keeps a steady number of misses in flight without group boundaries. The distance
// is a parameter so that the benchmarks can sweep it.
void lookup_prefetch_stream(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n,
                            uint32_t distance);

}  // namespace tandem::ipv4
