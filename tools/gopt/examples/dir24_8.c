/* G-Opt example (c): IPv4 longest-prefix match with DIR-24-8 (tbl24 indexed by the top 24 bits;
 * an entry with bit 15 set points to a 256-entry tbl8 group for the last 8 bits). */
#include <stdint.h>
#include "gopt.h"

#define DIR_TBL8_FLAG 0x8000u

typedef struct {
  const uint16_t *tbl24; /* 1 << 24 entries */
  const uint16_t *tbl8;  /* groups of 256 entries */
} Dir24_8;

/* hops[i] = next hop of addrs[i] (host byte order). */
void dir24_8_lookup_batch(const Dir24_8 *t, const uint32_t *addrs, uint16_t *hops, int n) {
  G_FOREACH(i, n) {
    uint32_t a = addrs[i];
    const uint16_t *e24 = &t->tbl24[a >> 8];
    G_EXPENSIVE(e24);
    uint16_t e = *e24;
    if (e & DIR_TBL8_FLAG) {
      const uint16_t *e8 = &t->tbl8[((uint32_t)(e & ~DIR_TBL8_FLAG) << 8) | (a & 0xFF)];
      G_EXPENSIVE(e8);
      e = *e8;
    }
    hops[i] = e;
  }
}
