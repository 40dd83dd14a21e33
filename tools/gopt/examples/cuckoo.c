/* G-Opt example (a): batched lookups in a 2-8 cuckoo hash table (2 hash functions, 8-slot
 * buckets of 64-bit integer keys), the paper's cuckoo hashing benchmark. */
#include <stdint.h>
#include "gopt.h"

#define CUCKOO_SLOTS 8
#define CUCKOO_NOT_FOUND 0xFFFFFFFFu

typedef struct {
  uint64_t keys[CUCKOO_SLOTS];
  uint32_t vals[CUCKOO_SLOTS];
} __attribute__((aligned(64))) Bucket;

typedef struct {
  Bucket *buckets;
  uint64_t mask; /* number of buckets - 1 (a power of two) */
} CuckooTable;

static inline uint64_t cuckoo_hash1(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return k;
}

static inline uint64_t cuckoo_hash2(uint64_t k) {
  k ^= k >> 29;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 32;
  return k;
}

/* vals[i] = value of keys[i], or CUCKOO_NOT_FOUND. Key 0 marks an empty slot. */
void cuckoo_lookup_batch(const CuckooTable *t, const uint64_t *keys, uint32_t *vals, int n) {
  G_FOREACH(i, n) {
    uint64_t k = keys[i];
    uint32_t v = CUCKOO_NOT_FOUND;
    const Bucket *b1 = &t->buckets[cuckoo_hash1(k) & t->mask];
    G_PREFETCH(&b1->vals[0]); /* the values are in the bucket's second cache line */
    G_EXPENSIVE(b1);
    for (int s = 0; s < CUCKOO_SLOTS; s++) {
      if (b1->keys[s] == k) {
        v = b1->vals[s];
        break;
      }
    }
    if (v == CUCKOO_NOT_FOUND) {
      const Bucket *b2 = &t->buckets[cuckoo_hash2(k) & t->mask];
      G_PREFETCH(&b2->vals[0]);
      G_EXPENSIVE(b2);
      for (int s = 0; s < CUCKOO_SLOTS; s++) {
        if (b2->keys[s] == k) {
          v = b2->vals[s];
          break;
        }
      }
    }
    vals[i] = v;
  }
}
