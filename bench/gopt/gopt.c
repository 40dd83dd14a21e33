/* The G-Opt versions for `tandem bench gopt`: the checked-in output of tools/gopt/gopt.py for the
 * two examples (regenerate with the commands below; tests/e2e/test_gopt_generated.py checks them),
 * renamed. Built with tools/gopt on the include path (CMakeLists.txt).
 *   python3 tools/gopt/gopt.py tools/gopt/examples/pointer_chase.c --max-batch 64 \
 *     -o bench/gopt/pointer_chase.gopt.c
 *   python3 tools/gopt/gopt.py tools/gopt/examples/cuckoo.c --max-batch 64 -o bench/gopt/cuckoo.gopt.c */
#define chase_batch tandem_gopt_chase_gopt
#include "pointer_chase.gopt.c"
#undef chase_batch

#define cuckoo_lookup_batch tandem_gopt_cuckoo_gopt
#include "cuckoo.gopt.c"
#undef cuckoo_lookup_batch

#include "gopt_bench.h"
