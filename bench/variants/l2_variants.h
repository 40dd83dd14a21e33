// The MAC-table (2-8 cuckoo) lookup paths the benchmarks measure against the product's batched
// lookup (apps/l2/mac_table.h MacTable::lookup_batch, a pipeline of kBatchDistance keys): `tandem
// bench anchors` (against DPDK's rte_hash). Each gives MacTable::lookup's results
// (l2_variants_test.cc). The G-Opt microbenchmark's own cuckoo table is bench/cuckoo_bench.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "apps/l2/mac_table.h"

namespace tandem::l2 {

// ports[i] = t.lookup(macs[i]), one key at a time: the baseline.
void mac_lookup_scalar(const MacTable& t, const uint64_t* macs, uint32_t* ports, size_t n);

// Group prefetching: for `group` keys at a time (rounded up to a power of two, 4..64), hash and
// prefetch both buckets of every key, then probe them (bucket 1, then bucket 2 on a miss). Without
// MacTable's check against a concurrent writer: for a table nobody writes meanwhile.
void mac_lookup_groups(const MacTable& t, const uint64_t* macs, uint32_t* ports, size_t n, uint32_t group);

}  // namespace tandem::l2
