// CPU lookup paths over a dense array of IPv4 destination addresses (host byte order).
#pragma once

#include <cstddef>
#include <cstdint>

#include "apps/ipv4/dir24_8.h"

namespace tandem::ipv4 {

// One address at a time: the plain baseline.
void lookup_scalar(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n);

// The batched path Tandem uses: software-pipelined prefetching at distance kPrefetchDistance
// (lookup_prefetch_stream). Measured faster than group prefetching on every machine tried
// (docs/RESULTS.md): a group's prefetches have not landed when the same group's loads issue,
// whereas a distance of 64 keeps a steady ~64 misses in flight.
inline constexpr uint32_t kPrefetchDistance = 64;
void lookup_batched(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n);

// Group prefetching (G-Opt paper, section 3.1): for each group of `group` addresses (a power of
// two, 1..64), first prefetch all their tbl24 entries, then load them and prefetch the tbl8 slots
// of extended entries, then resolve. Kept as the paper's baseline technique for the benches.
void lookup_batched_group(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n,
                          uint32_t group);

// G-Opt (Kalia et al., NSDI'15, sec. 3.2): the lookup written once as annotated C
// (apps/ipv4/gopt/dir24_8_batch.c) and interleaved by tools/gopt: batches of 16 lookups, each
// switching to the next at every expensive access after prefetching it.
void lookup_gopt(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n);

// Software-pipelined prefetching: while resolving address i, prefetch the tbl24 entry of address
// i + distance. Keeps a steady number of misses in flight without group boundaries.
void lookup_prefetch_stream(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n,
                            uint32_t distance);

// The same with a prefetch that fills L2 but not L1 (x86 prefetcht2/t1 hint), for the benches.
void lookup_prefetch_stream_l2(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops,
                               size_t n, uint32_t distance);

// 16 addresses per step with AVX-512 gathers (tbl24, then a masked gather of the extended
// entries' tbl8 slots), tbl24 entries prefetched `distance` addresses ahead
// (ipv4_cpu_avx512.cc). Falls back to lookup_batched on CPUs without AVX-512F.
bool have_avx512();
void lookup_avx512(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n, uint32_t distance = 64);

}  // namespace tandem::ipv4
