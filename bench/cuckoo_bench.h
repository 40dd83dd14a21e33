// The 2-8 cuckoo hash table of the G-Opt microbenchmark (tools/gopt/examples/cuckoo.c, mirrored
// in bench/gopt/gopt_bench.h) with its hand-written batch variants and its builder, shared by
// `tandem bench gopt` and `tandem bench anchors` (which times it against DPDK's rte_hash).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "bench/bench_report.h"
#include "bench/gopt/gopt_bench.h"
#include "core/huge_memory.h"

namespace tandem::bench {

// ---- cuckoo hashing: the hand-written variants of tools/gopt/examples/cuckoo.c ----

inline uint64_t cuckoo_hash1(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return k;
}

inline uint64_t cuckoo_hash2(uint64_t k) {
  k ^= k >> 29;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 32;
  return k;
}

inline void prefetch_bucket(const Bucket* b) {
  __builtin_prefetch(&b->vals[0]);  // the values are in the bucket's second cache line
  __builtin_prefetch(b);
}

inline uint32_t bucket_find(const Bucket* b, uint64_t k) {
  for (int s = 0; s < CUCKOO_SLOTS; ++s) {
    if (b->keys[s] == k) return b->vals[s];
  }
  return CUCKOO_NOT_FOUND;
}

inline void cuckoo_group(const CuckooTable* t, const uint64_t* keys, uint32_t* vals, int n, int g_max) {
  const Bucket* b[64];
  for (int base = 0; base < n; base += g_max) {
    const int g = std::min(g_max, n - base);
    const uint64_t* k = keys + base;
    uint32_t* v = vals + base;
    for (int j = 0; j < g; ++j) {  // stage 1: first buckets
      b[j] = &t->buckets[cuckoo_hash1(k[j]) & t->mask];
      prefetch_bucket(b[j]);
    }
    bool any_miss = false;
    for (int j = 0; j < g; ++j) {  // stage 2: search them; prefetch the second bucket of misses
      v[j] = bucket_find(b[j], k[j]);
      if (v[j] == CUCKOO_NOT_FOUND) {
        b[j] = &t->buckets[cuckoo_hash2(k[j]) & t->mask];
        prefetch_bucket(b[j]);
        any_miss = true;
      }
    }
    if (!any_miss) continue;
    for (int j = 0; j < g; ++j) {  // stage 3: search the second buckets
      if (v[j] == CUCKOO_NOT_FOUND) v[j] = bucket_find(b[j], k[j]);
    }
  }
}

inline void cuckoo_amac(const CuckooTable* t, const uint64_t* keys, uint32_t* vals, int n, int ring) {
  struct Slot {
    const Bucket* b;
    int stage;  // 0: first bucket prefetched, 1: second bucket prefetched, -1: empty
    int i;
  };
  Slot s[64];
  int next = 0, active = 0;
  auto start = [&](Slot& x) {
    if (next < n) {
      x = {&t->buckets[cuckoo_hash1(keys[next]) & t->mask], 0, next};
      prefetch_bucket(x.b);
      ++next;
      return true;
    }
    x.stage = -1;
    return false;
  };
  for (int k = 0; k < ring; ++k) active += start(s[k]);
  for (int k = 0; active > 0; k = k + 1 == ring ? 0 : k + 1) {
    Slot& x = s[k];
    if (x.stage < 0) continue;
    const uint64_t key = keys[x.i];
    const uint32_t v = bucket_find(x.b, key);
    if (v == CUCKOO_NOT_FOUND && x.stage == 0) {
      x.b = &t->buckets[cuckoo_hash2(key) & t->mask];
      x.stage = 1;
      prefetch_bucket(x.b);
      continue;
    }
    vals[x.i] = v;
    if (!start(x)) --active;
  }
}


// A table of `buckets` (a power of two) buckets filled to about 50% without kicking: a key goes into
// a free slot of its first bucket, else of its second (as tools/gopt/bench_examples.py); key 0
// marks an empty slot, so keys are odd. stored = the keys that found a slot, value = insertion
// number.
struct CuckooBench {
  HugeRegion memory;
  CuckooTable table;
  std::vector<uint64_t> stored;

  CuckooBench(uint64_t buckets, uint64_t seed)
      : memory(buckets * sizeof(Bucket)), table{static_cast<Bucket*>(memory.data()), buckets - 1} {
    Rng rng{seed};
    stored.reserve(buckets * CUCKOO_SLOTS / 2);
    for (uint64_t j = 0; j < buckets * CUCKOO_SLOTS / 2; ++j) {
      const uint64_t k = rng.next() | 1;
      Bucket* bs[2] = {&table.buckets[cuckoo_hash1(k) & table.mask], &table.buckets[cuckoo_hash2(k) & table.mask]};
      bool done = false;
      for (int b = 0; b < 2 && !done; ++b) {
        for (int s = 0; s < CUCKOO_SLOTS && !done; ++s) {
          if (bs[b]->keys[s] == 0) {
            bs[b]->keys[s] = k;
            bs[b]->vals[s] = static_cast<uint32_t>(j);
            done = true;
          }
        }
      }
      if (done) stored.push_back(k);
    }
  }
  // n lookups of stored keys in random order.
  std::vector<uint64_t> sample_keys(size_t n, uint64_t seed) const {
    Rng rng{seed};
    std::vector<uint64_t> keys(n);
    for (auto& k : keys) k = stored[rng.below(stored.size())];
    return keys;
  }
};

}  // namespace tandem::bench
