/* G-Opt example (b): pointer chasing, the paper's microbenchmark with D = 100 dependent random
 * accesses per lookup. A G_EXPENSIVE inside a loop: the loop is lowered to labels and gotos. */
#include <stdint.h>
#include "gopt.h"

#define CHASE_DEPTH 100

typedef struct ChaseNode {
  const struct ChaseNode *next;
  uint64_t val;
  uint64_t pad[6]; /* one node per 64-byte cache line */
} ChaseNode;

/* out[i] = val of the node reached from starts[i] after CHASE_DEPTH hops. */
void chase_batch(const ChaseNode *const *starts, uint64_t *out, int n) {
  G_FOREACH(i, n) {
    const ChaseNode *p = starts[i];
    uint64_t sum = 0;
    for (int d = 0; d < CHASE_DEPTH; d++) {
      G_EXPENSIVE(p);
      sum += p->val;
      p = p->next;
    }
    G_EXPENSIVE(p);
    out[i] = sum ^ p->val;
  }
}
