/* The DIR-24-8 lookup over a batch, annotated for the G-Opt transformer (tools/gopt): the source
 * of the benchmarks' G-Opt IPv4 path (bench/variants/ipv4_variants.h lookup_gopt).
 * dir24_8_batch.gopt.c is generated from it:
 *   python3 tools/gopt/gopt.py bench/variants/gopt/dir24_8_batch.c --max-batch 16 \
 *     -o bench/variants/gopt/dir24_8_batch.gopt.c
 * and tests/e2e/test_gopt_generated.py checks that the checked-in file is what the tool makes.
 * Entry layout as apps/ipv4/dir24_8_core.h: next hop or tbl8 group in bits 0..23, valid bit 24,
 * extended bit 25. Without a route the result is 0xFFFFFFFF (kNoRoute). */
#include <stdint.h>
#include "gopt.h"

#define TANDEM_D24_VALUE 0x00FFFFFFu
#define TANDEM_D24_VALID 0x01000000u
#define TANDEM_D24_EXT 0x02000000u
#define TANDEM_D24_NO_ROUTE 0xFFFFFFFFu

void tandem_dir24_8_lookup_gopt(const uint32_t *tbl24, const uint32_t *tbl8, const uint32_t *ips,
                                uint32_t *next_hops, int n) {
  G_FOREACH(i, n) {
    uint32_t ip = ips[i];
    const uint32_t *e24 = &tbl24[ip >> 8];
    G_EXPENSIVE(e24);
    uint32_t e = *e24;
    if (e & TANDEM_D24_EXT) {
      const uint32_t *e8 = &tbl8[((e & TANDEM_D24_VALUE) << 8) | (ip & 0xFFu)];
      G_EXPENSIVE(e8);
      e = *e8;
    }
    next_hops[i] = (e & TANDEM_D24_VALID) ? (e & TANDEM_D24_VALUE) : TANDEM_D24_NO_ROUTE;
  }
}
