"""The G-Opt source-to-source transformer (tools/gopt/gopt.py): every example in tools/gopt/examples
is transformed, the naive and the transformed version are compiled with `cc -O2` into a generated
harness and must give exactly the same outputs on random tables and inputs for several batch sizes;
inputs outside the accepted subset must be rejected with exit code 2 and FILE:LINE in the message.
Needs pycparser and a C compiler (skipped otherwise); does not need the tandem binary."""
import os
import shutil
import subprocess
import sys

from e2e_util import SKIP, Checker, args, run, tmpdir

BATCHES = "1, 2, 7, 16, 64, 37, 100, 1000"  # 100 and 1000 exceed the per-chunk maximum

COMMON = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint64_t rnd(void) {
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
static const int batches[] = {BATCHES};
static int failures = 0;
static void check(const void *a, const void *b, size_t bytes, const char *what, int n) {
  if (memcmp(a, b, bytes) != 0) {
    printf("MISMATCH %s batch %d\n", what, n);
    failures++;
  }
}
""".replace("BATCHES", BATCHES)

# Per example: the function name, its prototype (for the transformed copy) and the test body.
HARNESS = {
    "cuckoo": ("cuckoo_lookup_batch",
               "void cuckoo_lookup_batch(const CuckooTable *t, const uint64_t *keys, uint32_t *vals, int n);",
               r"""
int main(void) {
  CuckooTable t;
  uint64_t nb = 1 << 12;
  t.mask = nb - 1;
  t.buckets = calloc(nb, sizeof(Bucket));
  uint64_t stored[20000];
  int ns = 0;
  for (int j = 0; j < 20000; j++) { /* insert without kicking: fill a free slot of b1 or b2 */
    uint64_t k = rnd() | 1;
    Bucket *bs[2] = {&t.buckets[cuckoo_hash1(k) & t.mask], &t.buckets[cuckoo_hash2(k) & t.mask]};
    int done = 0;
    for (int w = 0; w < 2 && !done; w++)
      for (int s = 0; s < CUCKOO_SLOTS && !done; s++)
        if (bs[w]->keys[s] == 0) { bs[w]->keys[s] = k; bs[w]->vals[s] = (uint32_t)rnd() & 0x7FFFFFFF; done = 1; }
    if (done) stored[ns++] = k;
  }
  for (int r = 0; r < 3; r++)
  for (unsigned b = 0; b < sizeof batches / sizeof *batches; b++) {
    int n = batches[b];
    uint64_t *keys = malloc(n * sizeof *keys);
    uint32_t *v1 = malloc((n + 1) * sizeof *v1), *v2 = malloc((n + 1) * sizeof *v2);
    for (int j = 0; j < n; j++) keys[j] = (rnd() & 3) ? stored[rnd() % ns] : (rnd() | 1);
    memset(v1, 0xAB, (n + 1) * sizeof *v1); memset(v2, 0xAB, (n + 1) * sizeof *v2);
    cuckoo_lookup_batch_naive(&t, keys, v1, n);
    cuckoo_lookup_batch(&t, keys, v2, n);
    check(v1, v2, (n + 1) * sizeof *v1, "cuckoo", n);
    free(keys); free(v1); free(v2);
  }
  printf("cuckoo: %s\n", failures ? "FAIL" : "ok");
  return failures != 0;
}
"""),
    "pointer_chase": ("chase_batch",
                      "void chase_batch(const ChaseNode *const *starts, uint64_t *out, int n);",
                      r"""
int main(void) {
  int nn = 1 << 14;
  ChaseNode *nodes = calloc(nn, sizeof *nodes);
  int *perm = malloc(nn * sizeof *perm);
  for (int j = 0; j < nn; j++) perm[j] = j;
  for (int j = nn - 1; j > 0; j--) { int x = rnd() % (j + 1); int t = perm[j]; perm[j] = perm[x]; perm[x] = t; }
  for (int j = 0; j < nn; j++) { nodes[perm[j]].next = &nodes[perm[(j + 1) % nn]]; nodes[j].val = rnd(); }
  for (int r = 0; r < 3; r++)
  for (unsigned b = 0; b < sizeof batches / sizeof *batches; b++) {
    int n = batches[b];
    const ChaseNode **starts = malloc(n * sizeof *starts);
    uint64_t *o1 = malloc((n + 1) * 8), *o2 = malloc((n + 1) * 8);
    for (int j = 0; j < n; j++) starts[j] = &nodes[rnd() % nn];
    memset(o1, 0xAB, (n + 1) * 8); memset(o2, 0xAB, (n + 1) * 8);
    chase_batch_naive(starts, o1, n);
    chase_batch(starts, o2, n);
    check(o1, o2, (n + 1) * 8, "pointer_chase", n);
    free(starts); free(o1); free(o2);
  }
  printf("pointer_chase: %s\n", failures ? "FAIL" : "ok");
  return failures != 0;
}
"""),
    "dir24_8": ("dir24_8_lookup_batch",
                "void dir24_8_lookup_batch(const Dir24_8 *t, const uint32_t *addrs, uint16_t *hops, int n);",
                r"""
int main(void) {
  uint16_t *tbl24 = malloc((1u << 24) * sizeof *tbl24);
  int ngroups = 4096;
  uint16_t *tbl8 = malloc((size_t)ngroups * 256 * sizeof *tbl8);
  for (uint32_t j = 0; j < (1u << 24); j++) tbl24[j] = (uint16_t)(j * 2654435761u >> 20) & 0x7FFF;
  for (int j = 0; j < ngroups * 256; j++) tbl8[j] = (uint16_t)rnd() & 0x7FFF;
  uint32_t hot[4096];
  for (int g = 0; g < ngroups; g++) { hot[g] = (uint32_t)rnd() >> 8; tbl24[hot[g]] = DIR_TBL8_FLAG | g; }
  Dir24_8 t = {tbl24, tbl8};
  for (int r = 0; r < 3; r++)
  for (unsigned b = 0; b < sizeof batches / sizeof *batches; b++) {
    int n = batches[b];
    uint32_t *addrs = malloc(n * sizeof *addrs);
    uint16_t *h1 = malloc((n + 1) * 2), *h2 = malloc((n + 1) * 2);
    for (int j = 0; j < n; j++)
      addrs[j] = (rnd() & 1) ? (hot[rnd() % ngroups] << 8 | (uint32_t)(rnd() & 0xFF)) : (uint32_t)rnd();
    memset(h1, 0xAB, (n + 1) * 2); memset(h2, 0xAB, (n + 1) * 2);
    dir24_8_lookup_batch_naive(&t, addrs, h1, n);
    dir24_8_lookup_batch(&t, addrs, h2, n);
    check(h1, h2, (n + 1) * 2, "dir24_8", n);
    free(addrs); free(h1); free(h2);
  }
  printf("dir24_8: %s\n", failures ? "FAIL" : "ok");
  return failures != 0;
}
"""),
    "trie6": ("trie6_lookup_batch",
              "void trie6_lookup_batch(const Trie6 *t, const uint8_t (*addrs)[16], uint32_t *hops, int n);",
              r"""
int main(void) {
  int cap = 4096, nn = 1;
  Trie6Node *nodes = calloc(cap, sizeof *nodes);
  for (int s = 0; s < 256; s++) nodes[0].e[s] = TRIE6_LEAF | 1;
  uint8_t pfx[300][16];
  for (int p = 0; p < 300; p++) { /* prefixes of 8..128 bits (whole bytes) */
    for (int j = 0; j < 16; j++) pfx[p][j] = (uint8_t)rnd();
    if (pfx[p][0] == 0xFF) pfx[p][0] = 0x20;
    int len = 1 + rnd() % 16;
    uint32_t node = 0;
    for (int d = 0; d < len - 1 && nn < cap; d++) {
      uint32_t e = nodes[node].e[pfx[p][d]];
      if (e & TRIE6_LEAF) {
        for (int s = 0; s < 256; s++) nodes[nn].e[s] = e;
        nodes[node].e[pfx[p][d]] = nn;
        node = nn++;
      } else node = e;
    }
    if (nodes[node].e[pfx[p][len - 1]] & TRIE6_LEAF) nodes[node].e[pfx[p][len - 1]] = TRIE6_LEAF | (uint32_t)(rnd() & 0xFFFF);
  }
  Trie6 t = {nodes, 77};
  for (int r = 0; r < 3; r++)
  for (unsigned b = 0; b < sizeof batches / sizeof *batches; b++) {
    int n = batches[b];
    uint8_t (*addrs)[16] = malloc(n * 16);
    uint32_t *h1 = malloc((n + 1) * 4), *h2 = malloc((n + 1) * 4);
    for (int j = 0; j < n; j++) {
      int p = rnd() % 300, keep = rnd() % 17;
      for (int k = 0; k < 16; k++) addrs[j][k] = k < keep ? pfx[p][k] : (uint8_t)rnd();
      if (rnd() % 8 == 0) addrs[j][0] = 0xFF;
    }
    memset(h1, 0xAB, (n + 1) * 4); memset(h2, 0xAB, (n + 1) * 4);
    trie6_lookup_batch_naive(&t, (const uint8_t (*)[16])addrs, h1, n);
    trie6_lookup_batch(&t, (const uint8_t (*)[16])addrs, h2, n);
    check(h1, h2, (n + 1) * 4, "trie6", n);
    free(addrs); free(h1); free(h2);
  }
  printf("trie6: %s (%d nodes)\n", failures ? "FAIL" : "ok", nn);
  return failures != 0;
}
"""),
    "constructs": ("constructs_batch",
                   "void constructs_batch(const uint32_t *tab, uint32_t mask, const uint32_t *in, uint32_t *out, int n);",
                   r"""
int main(void) {
  uint32_t mask = (1u << 16) - 1;
  uint32_t *tab = malloc((mask + 1) * sizeof *tab);
  for (uint32_t j = 0; j <= mask; j++) tab[j] = (uint32_t)rnd();
  for (int r = 0; r < 3; r++)
  for (unsigned b = 0; b < sizeof batches / sizeof *batches; b++) {
    int n = batches[b];
    uint32_t *in = malloc(n * 4), *o1 = malloc((n + 1) * 4), *o2 = malloc((n + 1) * 4);
    for (int j = 0; j < n; j++) in[j] = (rnd() & 1) ? (uint32_t)rnd() : (uint32_t)(rnd() % 200);
    memset(o1, 0xAB, (n + 1) * 4); memset(o2, 0xAB, (n + 1) * 4);
    constructs_batch_naive(tab, mask, in, o1, n);
    constructs_batch(tab, mask, in, o2, n);
    check(o1, o2, (n + 1) * 4, "constructs", n);
    free(in); free(o1); free(o2);
  }
  printf("constructs: %s\n", failures ? "FAIL" : "ok");
  return failures != 0;
}
"""),
}

# Out-of-subset inputs: (name, source, line the message must name, a word it must contain).
PRELUDE = '#include <stdint.h>\n#include "gopt.h"\n'  # lines 1-2
BAD = [
    ("goto", PRELUDE + """void f(const uint64_t *keys, uint64_t *out, int n) {
  G_FOREACH(i, n) {
    uint64_t k = keys[i];
    if (k == 0) goto skip;
    G_EXPENSIVE(&keys[k]);
    out[i] = keys[k];
  skip:;
  }
}
""", 6, "goto"),
    ("expensive_in_called_function", PRELUDE + """static inline uint64_t get(const uint64_t *p) {
  G_EXPENSIVE(p);
  return *p;
}
void f(const uint64_t *keys, uint64_t *out, int n) {
  G_FOREACH(i, n) {
    out[i] = get(&keys[keys[i]]);
  }
}
""", 4, "G_EXPENSIVE"),
    ("expensive_in_call_argument", PRELUDE + """void use(int x);
void f(const uint64_t *keys, uint64_t *out, int n) {
  G_FOREACH(i, n) {
    uint64_t k = keys[i];
    use((G_EXPENSIVE(&keys[k]), 1));
    out[i] = keys[k];
  }
}
""", 7, "G_EXPENSIVE"),
    ("address_of_live_local", PRELUDE + """void g(uint64_t *p);
void f(const uint64_t *keys, uint64_t *out, int n) {
  G_FOREACH(i, n) {
    uint64_t k = keys[i];
    G_EXPENSIVE(&keys[k]);
    g(&k);
    out[i] = keys[k];
  }
}
""", 8, "address"),
    ("two_foreach", PRELUDE + """void f(const uint64_t *keys, uint64_t *out, int n) {
  G_FOREACH(i, n) {
    G_EXPENSIVE(&keys[i]);
    out[i] = keys[i];
  }
  G_FOREACH(j, n) {
    out[j] += 1;
  }
}
""", 8, "G_FOREACH"),
    ("foreach_not_whole_body", PRELUDE + """void f(const uint64_t *keys, uint64_t *out, int n) {
  uint64_t salt = 5;
  G_FOREACH(i, n) {
    G_EXPENSIVE(&keys[i]);
    out[i] = keys[i] ^ salt;
  }
}
""", 4, "whole body"),
    ("syntax_error", PRELUDE + """void f(const uint64_t *keys, uint64_t *out, int n) {
  G_FOREACH(i, n) {
    G_EXPENSIVE(&keys[i]);
    out[i] = keys[i] +* ;
  }
}
""", 6, "syntax"),
    ("return_in_foreach", PRELUDE + """void f(const uint64_t *keys, uint64_t *out, int n) {
  G_FOREACH(i, n) {
    G_EXPENSIVE(&keys[i]);
    if (keys[i] == 0)
      return;
    out[i] = keys[i];
  }
}
""", 7, "return"),
    ("static_local", PRELUDE + """void f(const uint64_t *keys, uint64_t *out, int n) {
  G_FOREACH(i, n) {
    static uint64_t last;
    G_EXPENSIVE(&keys[i]);
    out[i] = keys[i] + last;
  }
}
""", 5, "static"),
    ("vla", PRELUDE + """void f(const uint64_t *keys, uint64_t *out, int n) {
  G_FOREACH(i, n) {
    uint64_t tmp[n];
    G_EXPENSIVE(&keys[i]);
    tmp[0] = keys[i];
    out[i] = tmp[0];
  }
}
""", 5, "variable-length"),
    ("break_out_of_foreach", PRELUDE + """void f(const uint64_t *keys, uint64_t *out, int n) {
  G_FOREACH(i, n) {
    G_EXPENSIVE(&keys[i]);
    if (keys[i] == 0)
      break;
    out[i] = keys[i];
  }
}
""", 7, "break"),
]


def main():
    a = args()
    c = Checker()
    try:
        import pycparser  # noqa: F401
    except ImportError:
        print("SKIP: pycparser is not installed (python3 -m pip install pycparser)")
        sys.exit(SKIP)
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        print("SKIP: no C compiler")
        sys.exit(SKIP)
    gdir = os.path.abspath(os.path.join(a.source_dir, "tools/gopt"))
    tool = os.path.join(gdir, "gopt.py")
    d = tmpdir()

    # 1. Every example: naive vs transformed, several batch sizes, two --max-batch values, with and
    #    without --refill.
    procs = []
    for name, (fn, proto, body) in HARNESS.items():
        src = os.path.join(gdir, "examples", name + ".c")
        for mb, refill in ((64, False), (5, False), (64, True), (5, True)):
            tag = f"{mb}{'r' if refill else ''}"
            what = f"{name} (--max-batch {mb}{' --refill' if refill else ''})"
            out = os.path.join(d, f"{name}_gopt{tag}.c")
            rc, so, se = run([sys.executable, tool, src, "-o", out, "--max-batch", str(mb)]
                             + (["--refill"] if refill else []))
            c.check(rc == 0, f"{what}: transform failed rc {rc}: {se.strip()}")
            if rc != 0:
                continue
            text = open(out).read()
            c.check("goto *gopt_labels" in text and "__builtin_prefetch" in text,
                    f"{what}: no prefetch / computed goto in the output")
            c.check(("gopt_next++" in text) == refill, f"{what}: refill slot code {'missing' if refill else 'present'}")
            h = os.path.join(d, f"{name}_harness.c")
            with open(h, "w") as f:
                f.write(COMMON + f'#define {fn} {fn}_naive\n#include "{src}"\n#undef {fn}\n'
                        + proto + "\n" + body)
            exe = os.path.join(d, f"{name}_{tag}")
            if mb == 64:  # the generated code itself compiles without warnings
                rc, so, se = run([cc, "-O2", "-std=gnu11", "-Wall", "-Werror", "-I", gdir,
                                  "-c", out, "-o", os.path.join(d, f"{name}_{tag}.o")])
                c.check(rc == 0, f"{what}: transformed code has warnings/errors: {(so + se).strip()[:2000]}")
            cmd = [cc, "-O2", "-std=gnu11", "-I", gdir, h, out, "-o", exe]
            procs.append((what, exe, subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    for what, exe, p in procs:
        msg, _ = p.communicate(timeout=300)
        c.check(p.returncode == 0, f"{what}: compile failed: {msg.strip()[:2000]}")
        if p.returncode == 0:
            rc, so, se = run([exe])
            print(what + ": " + so.strip().splitlines()[-1] if so.strip() else what)
            c.check(rc == 0, f"{what}: naive and transformed outputs differ: {so.strip()[:1000]} {se}")

    # 2. Inputs outside the subset: exit code 2 and FILE:LINE: in the message.
    for name, src, line, word in BAD:
        path = os.path.join(d, f"bad_{name}.c")
        with open(path, "w") as f:
            f.write(src)
        rc, so, se = run([sys.executable, tool, path, "-o", os.path.join(d, "unused.c"), "-I", gdir])
        msg = (so + se).strip()
        c.check(rc == 2, f"{name}: expected exit code 2, got {rc}: {msg[:300]}")
        c.check(f"bad_{name}.c:{line}:" in msg, f"{name}: message lacks 'bad_{name}.c:{line}:': {msg[:300]}")
        c.check(word.lower() in msg.lower(), f"{name}: message lacks {word!r}: {msg[:300]}")
        print(f"rejected {name}: {msg.splitlines()[0] if msg else ''}")
    c.done()


if __name__ == "__main__":
    main()
