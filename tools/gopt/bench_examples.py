#!/usr/bin/env python3
"""Quick sanity measurement of G-Opt: naive vs transformed lookups/s on big tables, one core.

    python3 tools/gopt/bench_examples.py [--batch 16,64] [--cflags "-O2"] [--mib 128] [--only cuckoo]

Transforms examples/cuckoo.c and examples/pointer_chase.c with gopt.py, compiles each naive and
transformed version into one benchmark program (cc), builds tables of about --mib MiB (far larger
than the L3 cache; transparent huge pages requested), checks that both versions give the same
outputs and prints lookups/s and the speedup. Numbers are indicative only (noisy neighbours,
frequency scaling); the paper reports 2.6x (cuckoo) and 6.6x (pointer chasing, D = 100)."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

COMMON = r"""
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
static uint64_t rng_state = 12345;
static uint64_t rnd(void) {
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
static void *big_alloc(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 1 << 21, bytes)) { perror("alloc"); exit(1); }
#ifdef MADV_HUGEPAGE
  madvise(p, bytes, MADV_HUGEPAGE);
#endif
  memset(p, 0, bytes);
  return p;
}
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static void report(const char *name, int batch, long lookups, double tn, double tg, int same) {
  printf("%-14s batch %3d: naive %8.2f Mlookups/s, G-Opt %8.2f Mlookups/s, speedup %.2fx%s\n",
         name, batch, lookups / tn / 1e6, lookups / tg / 1e6, tn / tg, same ? "" : "  OUTPUTS DIFFER");
  fflush(stdout);
}
"""

BENCH = {
    "cuckoo": ("cuckoo_lookup_batch",
               "void cuckoo_lookup_batch(const CuckooTable *t, const uint64_t *keys, uint32_t *vals, int n);",
               r"""
int main(int argc, char **argv) {
  size_t mib = atoi(argv[1]);
  uint64_t nb = 1;
  while ((nb * 2) * sizeof(Bucket) <= mib << 20) nb *= 2;
  CuckooTable t = {big_alloc(nb * sizeof(Bucket)), nb - 1};
  long nkeys = nb * CUCKOO_SLOTS / 2, ns = 0; /* about 50% load */
  uint64_t *stored = malloc(nkeys * 8);
  for (long j = 0; j < nkeys; j++) {
    uint64_t k = rnd() | 1;
    Bucket *bs[2] = {&t.buckets[cuckoo_hash1(k) & t.mask], &t.buckets[cuckoo_hash2(k) & t.mask]};
    int done = 0;
    for (int w = 0; w < 2 && !done; w++)
      for (int s = 0; s < CUCKOO_SLOTS && !done; s++)
        if (bs[w]->keys[s] == 0) { bs[w]->keys[s] = k; bs[w]->vals[s] = (uint32_t)j; done = 1; }
    if (done) stored[ns++] = k;
  }
  long n = 1 << 22;
  uint64_t *keys = malloc(n * 8);
  uint32_t *v1 = malloc(n * 4), *v2 = malloc(n * 4);
  for (long j = 0; j < n; j++) keys[j] = stored[rnd() % ns];
  printf("cuckoo: %lu buckets (%zu MiB), %ld keys, %ld lookups of stored keys\n",
         (unsigned long)nb, (size_t)(nb * sizeof(Bucket) >> 20), ns, n);
  for (int a = 2; a < argc; a++) {
    int b = atoi(argv[a]);
    double tn = 1e9, tg = 1e9;
    for (int rep = 0; rep < 3; rep++) {
      double t0 = now();
      for (long j = 0; j + b <= n; j += b) cuckoo_lookup_batch_naive(&t, keys + j, v1 + j, b);
      double t1 = now();
      for (long j = 0; j + b <= n; j += b) cuckoo_lookup_batch(&t, keys + j, v2 + j, b);
      double t2 = now();
      if (t1 - t0 < tn) tn = t1 - t0;
      if (t2 - t1 < tg) tg = t2 - t1;
    }
    report("cuckoo", b, n / b * b, tn, tg, !memcmp(v1, v2, n / b * b * 4));
  }
  return 0;
}
"""),
    "pointer_chase": ("chase_batch",
                      "void chase_batch(const ChaseNode *const *starts, uint64_t *out, int n);",
                      r"""
int main(int argc, char **argv) {
  size_t mib = atoi(argv[1]);
  long nn = (long)((mib << 20) / sizeof(ChaseNode));
  ChaseNode *nodes = big_alloc(nn * sizeof(ChaseNode));
  uint32_t *perm = malloc(nn * 4);
  for (long j = 0; j < nn; j++) perm[j] = j;
  for (long j = nn - 1; j > 0; j--) { long x = rnd() % (j + 1); uint32_t t = perm[j]; perm[j] = perm[x]; perm[x] = t; }
  for (long j = 0; j < nn; j++) { nodes[perm[j]].next = &nodes[perm[(j + 1) % nn]]; nodes[j].val = rnd(); }
  free(perm);
  long n = 1 << 16;
  const ChaseNode **starts = malloc(n * sizeof *starts);
  uint64_t *o1 = malloc(n * 8), *o2 = malloc(n * 8);
  for (long j = 0; j < n; j++) starts[j] = &nodes[rnd() % nn];
  printf("pointer chasing: %ld nodes (%zu MiB), D = %d, %ld lookups\n", nn, mib, CHASE_DEPTH, n);
  for (int a = 2; a < argc; a++) {
    int b = atoi(argv[a]);
    double tn = 1e9, tg = 1e9;
    for (int rep = 0; rep < 3; rep++) {
      double t0 = now();
      for (long j = 0; j + b <= n; j += b) chase_batch_naive(starts + j, o1 + j, b);
      double t1 = now();
      for (long j = 0; j + b <= n; j += b) chase_batch(starts + j, o2 + j, b);
      double t2 = now();
      if (t1 - t0 < tn) tn = t1 - t0;
      if (t2 - t1 < tg) tg = t2 - t1;
    }
    report("pointer_chase", b, n / b * b, tn, tg, !memcmp(o1, o2, n / b * b * 8));
  }
  return 0;
}
"""),
}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", default="8,16,32,64", help="comma-separated batch sizes")
    p.add_argument("--cflags", default="-O2", help="compiler flags (default -O2)")
    p.add_argument("--mib", type=int, default=128, help="table size in MiB (default 128)")
    p.add_argument("--only", choices=sorted(BENCH), help="run one benchmark only")
    a = p.parse_args()
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    batches = [int(x) for x in a.batch.split(",")]
    max_batch = max(batches)
    d = tempfile.mkdtemp(prefix="gopt_bench_")
    rc_all = 0
    for name, (fn, proto, body) in BENCH.items():
        if a.only and name != a.only:
            continue
        src = os.path.join(HERE, "examples", name + ".c")
        out = os.path.join(d, name + "_gopt.c")
        subprocess.run([sys.executable, os.path.join(HERE, "gopt.py"), src, "-o", out,
                        "--max-batch", str(max_batch)], check=True)
        h = os.path.join(d, name + "_bench.c")
        with open(h, "w") as f:
            f.write(COMMON + f'#define {fn} {fn}_naive\n#include "{src}"\n#undef {fn}\n{proto}\n{body}')
        exe = os.path.join(d, name)
        subprocess.run([cc, *a.cflags.split(), "-I", HERE, h, out, "-o", exe], check=True)
        r = subprocess.run([exe, str(a.mib), *map(str, batches)])
        rc_all |= r.returncode
    shutil.rmtree(d, ignore_errors=True)
    return rc_all


if __name__ == "__main__":
    sys.exit(main())
