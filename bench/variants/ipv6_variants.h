// The IPv6 (rte_lpm6-layout) lookup paths the benchmarks measure against the product's batched
// lookup (apps/ipv6/lpm6.h Lpm6::lookup_batch, a window of kBatchWindow lookups): `tandem bench
// anchors` and the lookup-variant rows. Each gives the reference trie's results
// (ipv6_variants_test.cc). The hand-written group and AMAC versions of `tandem bench gopt` are
// bench/lpm6_variants.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "apps/ipv6/lpm6.h"

namespace tandem::ipv6 {

// hops[i] = t.lookup(addrs[i]): one address at a time, the plain baseline.
void lpm6_lookup_scalar(const Lpm6& t, const uint8_t (*addrs)[16], uint32_t* hops, size_t n);

// G-Opt (Kalia et al., NSDI'15): bench/variants/gopt/lpm6_batch.c interleaved by tools/gopt, in
// batches of 16 lookups that switch to the next one at every table access after prefetching it.
// Slower than lookup_batch: 16 misses in flight, and each batch drains before the next.
void lpm6_lookup_gopt(const Lpm6& t, const uint8_t (*addrs)[16], uint32_t* hops, size_t n);

// Software pipelining on tbl24 only: prefetch the tbl24 entry `distance` addresses ahead, then
// walk the groups without prefetching. Hides the tbl24 miss, not the group misses.
void lpm6_lookup_prefetch_tbl24(const Lpm6& t, const uint8_t (*addrs)[16], uint32_t* hops, size_t n,
                                uint32_t distance);

// Group prefetching by level (G-Opt paper, section 3.1): for `group` addresses at a time, prefetch
// every tbl24 entry, load them, then level by level prefetch and load the next slot of those still
// extended.
void lpm6_lookup_levels(const Lpm6& t, const uint8_t (*addrs)[16], uint32_t* hops, size_t n,
                        uint32_t group);

}  // namespace tandem::ipv6
