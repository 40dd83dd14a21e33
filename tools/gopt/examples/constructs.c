/* G-Opt example (e): not a real lookup, a test of the accepted subset: a do-while and a nested
 * while with G_EXPENSIVE (lowered to gotos) with continue and break, a switch with G_EXPENSIVE
 * in a case, a struct local with an initializer list, a local array and a shadowed name living
 * across annotations, and a continue that finishes one lookup early. */
#include <stdint.h>
#include "gopt.h"

typedef struct {
  uint32_t a, b;
} Pair;

static inline uint32_t constructs_mix(uint32_t x) { return (x * 2654435761u) ^ (x >> 13); }

void constructs_batch(const uint32_t *tab, uint32_t mask, const uint32_t *in, uint32_t *out, int n) {
  G_FOREACH(i, n) {
    uint32_t x = in[i];
    Pair pr = {x, 1};
    uint32_t acc[4];
    for (int j = 0; j < 4; j++)
      acc[j] = x + j;
    if ((x & 7) == 0) {
      out[i] = 0;
      continue;
    }
    int k = 0;
    do {
      G_EXPENSIVE(&tab[(x + k) & mask]);
      uint32_t v = tab[(x + k) & mask];
      k++;
      if (v & 1)
        continue;
      pr.b += v;
    } while (k < (int)(x % 5));
    for (int j = 0; j < 3; j++) {
      uint32_t y = pr.a ^ j;
      while (y & 3) {
        G_EXPENSIVE(&tab[y & mask]);
        y = tab[y & mask];
        if (y % 11 == 0)
          break;
        acc[j] ^= y;
      }
      {
        uint32_t x = y * 3; /* shadows the outer x */
        acc[j + 1] += x;
      }
    }
    switch (pr.b & 3) {
      case 0:
        G_EXPENSIVE(&tab[pr.b & mask]);
        pr.a += tab[pr.b & mask];
        break;
      case 1:
        pr.a ^= 5;
        pr.a += 2;
        break;
      default:
        pr.a += 1;
    }
    uint32_t r = constructs_mix(pr.a + pr.b + acc[0] + acc[1] + acc[2] + acc[3]);
    out[i] = x > 100 ? r : r + x;
  }
}
