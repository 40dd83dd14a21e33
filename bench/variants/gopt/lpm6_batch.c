/* The IPv6 rte_lpm6-style lookup over a batch, annotated for the G-Opt transformer (tools/gopt):
 * the source of the benchmarks' G-Opt IPv6 path (bench/variants/ipv6_variants.h lpm6_lookup_gopt)
 * and of `tandem bench gopt`'s IPv6 rows. lpm6_batch.gopt.c is generated from it:
 *   python3 tools/gopt/gopt.py bench/variants/gopt/lpm6_batch.c --max-batch 16 \
 *     -o bench/variants/gopt/lpm6_batch.gopt.c
 * and tests/e2e/test_gopt_generated.py checks that the checked-in file is what the tool makes.
 * Entry layout as apps/ipv6/lpm6_core.h: next hop or tbl8 group in bits 0..23, valid bit 24,
 * extended bit 25. tbl24 is indexed by address bytes 0..2, each tbl8 level by one more byte; the
 * loop is data-dependent (1 to 14 accesses). Without a route the result is 0xFFFFFFFF. */
#include <stdint.h>
#include "gopt.h"

#define TANDEM_LPM6_VALUE 0x00FFFFFFu
#define TANDEM_LPM6_VALID 0x01000000u
#define TANDEM_LPM6_EXT 0x02000000u
#define TANDEM_LPM6_NO_ROUTE 0xFFFFFFFFu

void tandem_lpm6_lookup_gopt(const uint32_t *tbl24, const uint32_t *tbl8, const uint8_t (*addrs)[16],
                             uint32_t *next_hops, int n) {
  G_FOREACH(i, n) {
    const uint8_t *a = addrs[i];
    const uint32_t *slot = &tbl24[((uint32_t)a[0] << 16) | ((uint32_t)a[1] << 8) | a[2]];
    int byte = 3;
    G_EXPENSIVE(slot);
    uint32_t e = *slot;
    while (e & TANDEM_LPM6_EXT) {
      slot = &tbl8[((e & TANDEM_LPM6_VALUE) << 8) | a[byte]];
      byte++;
      G_EXPENSIVE(slot);
      e = *slot;
    }
    next_hops[i] = (e & TANDEM_LPM6_VALID) ? (e & TANDEM_LPM6_VALUE) : TANDEM_LPM6_NO_ROUTE;
  }
}
