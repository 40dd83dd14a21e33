/* The --refill G-Opt versions (tools/gopt/gopt.py --refill) with 16 slots, for `tandem bench gopt`:
 * the checked-in output, compiled once per slot count (the count sizes the per-slot arrays). */
#define GOPT_MAX_BATCH 16
#define chase_batch tandem_gopt_chase_refill_b16
#include "pointer_chase.refill.gopt.c"
#undef chase_batch

#define cuckoo_lookup_batch tandem_gopt_cuckoo_refill_b16
#include "cuckoo.refill.gopt.c"
#undef cuckoo_lookup_batch

#define tandem_lpm6_lookup_gopt tandem_gopt_lpm6_refill_b16
#include "lpm6.refill.gopt.c"
#undef tandem_lpm6_lookup_gopt

#include "gopt_bench.h"
