// The DIR-24-8 lookup paths the benchmarks measure against the product's batched lookup
// (apps/ipv4/ipv4_cpu.h lookup_batched): `tandem bench ipv4`, `bench anchors` and `bench
// fw-router`. Each gives lookup_batched's results (ipv4_variants_test.cc).
#pragma once

#include <cstddef>
#include <cstdint>

#include "apps/ipv4/dir24_8.h"

namespace tandem::ipv4 {

// One address at a time: the plain baseline.
void lookup_scalar(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n);

// Group prefetching (G-Opt paper, section 3.1): for each group of `group` addresses (a power of
// two, 1..64), first prefetch all their tbl24 entries, then load them and prefetch the tbl8 slots
// of extended entries, then resolve. The paper's baseline technique.
void lookup_batched_group(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n,
                          uint32_t group);

// G-Opt (Kalia et al., NSDI'15, sec. 3.2): the lookup written once as annotated C
// (bench/variants/gopt/dir24_8_batch.c) and interleaved by tools/gopt: batches of 16 lookups, each
// switching to the next at every expensive access after prefetching it.
void lookup_gopt(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n);

// lookup_prefetch_stream with a prefetch that fills L2 but not L1 (x86 prefetcht2/t1 hint).
void lookup_prefetch_stream_l2(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops,
                               size_t n, uint32_t distance);

}  // namespace tandem::ipv4
