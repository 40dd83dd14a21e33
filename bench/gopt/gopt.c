/* The G-Opt versions for `tandem bench gopt`: the checked-in output of tools/gopt/gopt.py for the
 * two examples (regenerate with the commands below; tests/e2e/test_gopt_generated.py checks them),
 * renamed. Built with tools/gopt on the include path (CMakeLists.txt).
 *   python3 tools/gopt/gopt.py tools/gopt/examples/pointer_chase.c --max-batch 64 \
 *     -o bench/gopt/pointer_chase.gopt.c
 *   python3 tools/gopt/gopt.py tools/gopt/examples/cuckoo.c --max-batch 64 -o bench/gopt/cuckoo.gopt.c
 * and the same with --refill into *.refill.gopt.c (compiled by refill_b{8,16,32,64}.c), plus
 *   python3 tools/gopt/gopt.py bench/variants/gopt/lpm6_batch.c --max-batch 64 --refill \
 *     -o bench/gopt/lpm6.refill.gopt.c */
#define chase_batch tandem_gopt_chase_gopt
#include "pointer_chase.gopt.c"
#undef chase_batch

#define cuckoo_lookup_batch tandem_gopt_cuckoo_gopt
#include "cuckoo.gopt.c"
#undef cuckoo_lookup_batch

/* IPv6: the checked-in G-Opt output of the IPv6 lookup (bench/variants/gopt/), here with 64-entry
 * state arrays (GOPT_MAX_BATCH is already 64 in this file), so that chunks of up to 64 can be
 * measured. */
#define tandem_lpm6_lookup_gopt tandem_gopt_lpm6_gopt
#include "bench/variants/gopt/lpm6_batch.gopt.c"
#undef tandem_lpm6_lookup_gopt

#include "gopt_bench.h"
