/* The naive versions of the G-Opt examples for `tandem bench gopt`: the annotated sources compiled
 * as they are (gopt.h makes G_FOREACH a plain loop and G_EXPENSIVE a no-op), renamed. Built with
 * tools/gopt on the include path (CMakeLists.txt). */
#define chase_batch tandem_gopt_chase_naive
#include "examples/pointer_chase.c"
#undef chase_batch

#define cuckoo_lookup_batch tandem_gopt_cuckoo_naive
#include "examples/cuckoo.c"
#undef cuckoo_lookup_batch

/* IPv6: Tandem's own annotated lookup (bench/variants/gopt/lpm6_batch.c), not an example. */
#define tandem_lpm6_lookup_gopt tandem_gopt_lpm6_naive
#include "bench/variants/gopt/lpm6_batch.c"
#undef tandem_lpm6_lookup_gopt

#include "gopt_bench.h" /* after the examples, so its prototypes are checked against them */
