/* G-Opt example (d): IPv6 lookup in a multi-level stride-8 trie (up to 16 levels), a
 * data-dependent loop with G_EXPENSIVE inside, a break out of it and a continue that finishes
 * one lookup early. */
#include <stdint.h>
#include "gopt.h"

#define TRIE6_LEAF 0x80000000u /* entry flag: a next hop in the low bits, else a child node */
#define TRIE6_LEVELS 16

typedef struct {
  uint32_t e[256];
} Trie6Node;

typedef struct {
  const Trie6Node *nodes; /* node 0 is the root */
  uint32_t multicast_hop;
} Trie6;

/* hops[i] = next hop of the 16-byte address addrs[i]. */
void trie6_lookup_batch(const Trie6 *t, const uint8_t (*addrs)[16], uint32_t *hops, int n) {
  G_FOREACH(i, n) {
    const uint8_t *a = addrs[i];
    if (a[0] == 0xFF) { /* multicast: no lookup */
      hops[i] = t->multicast_hop;
      continue;
    }
    uint32_t node = 0;
    uint32_t e = TRIE6_LEAF;
    int depth = 0;
    while (depth < TRIE6_LEVELS) {
      const uint32_t *slot = &t->nodes[node].e[a[depth]];
      G_EXPENSIVE(slot);
      e = *slot;
      if (e & TRIE6_LEAF)
        break;
      node = e;
      depth++;
    }
    hops[i] = e & ~TRIE6_LEAF;
  }
}
