/* The G-Opt microbenchmarks of `tandem bench gopt` (bench/bench_gopt.cc): the data structures of
 * tools/gopt/examples/pointer_chase.c and cuckoo.c, mirrored here for C++ (bench_gopt.cc checks
 * their layout with static_asserts, and every variant's results against the naive version's), and
 * the naive and G-Opt versions of the two batch functions, compiled from the example (naive.c) and
 * from the checked-in transformer output (gopt.c) under these names. */
#ifndef TANDEM_BENCH_GOPT_BENCH_H
#define TANDEM_BENCH_GOPT_BENCH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef CHASE_DEPTH /* as in tools/gopt/examples/pointer_chase.c */
#define CHASE_DEPTH 100

typedef struct ChaseNode {
  const struct ChaseNode *next;
  uint64_t val;
  uint64_t pad[6]; /* one node per 64-byte cache line */
} ChaseNode;
#endif

#ifndef CUCKOO_SLOTS /* as in tools/gopt/examples/cuckoo.c */
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
#endif

/* out[i] = val of the node reached from starts[i] after CHASE_DEPTH hops (plus the hop sum). */
void tandem_gopt_chase_naive(const ChaseNode *const *starts, uint64_t *out, int n);
void tandem_gopt_chase_gopt(const ChaseNode *const *starts, uint64_t *out, int n);

/* vals[i] = value of keys[i], or CUCKOO_NOT_FOUND. Key 0 marks an empty slot. */
void tandem_gopt_cuckoo_naive(const CuckooTable *t, const uint64_t *keys, uint32_t *vals, int n);
void tandem_gopt_cuckoo_gopt(const CuckooTable *t, const uint64_t *keys, uint32_t *vals, int n);

/* hops[i] = next hop of the 16-byte address addrs[i] in an rte_lpm6-style table (apps/ipv6), or
 * 0xFFFFFFFF: bench/variants/gopt/lpm6_batch.c as is, and its G-Opt output. */
void tandem_gopt_lpm6_naive(const uint32_t *tbl24, const uint32_t *tbl8, const uint8_t (*addrs)[16], uint32_t *hops,
                            int n);
void tandem_gopt_lpm6_gopt(const uint32_t *tbl24, const uint32_t *tbl8, const uint8_t (*addrs)[16], uint32_t *hops,
                           int n);

/* The --refill versions: a finished lookup's slot starts the next one at once; b slots. */
#define TANDEM_GOPT_REFILL(b)                                                                      \
  void tandem_gopt_chase_refill_b##b(const ChaseNode *const *starts, uint64_t *out, int n);        \
  void tandem_gopt_cuckoo_refill_b##b(const CuckooTable *t, const uint64_t *keys, uint32_t *vals, int n); \
  void tandem_gopt_lpm6_refill_b##b(const uint32_t *tbl24, const uint32_t *tbl8, const uint8_t (*addrs)[16], \
                                    uint32_t *hops, int n);
TANDEM_GOPT_REFILL(8)
TANDEM_GOPT_REFILL(16)
TANDEM_GOPT_REFILL(32)
TANDEM_GOPT_REFILL(64)
#undef TANDEM_GOPT_REFILL

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_BENCH_GOPT_BENCH_H */
