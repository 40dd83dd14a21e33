// libFuzzer target for the Snort/Suricata rule loader and the DPI engine built from what it loads:
// the input is a rule file, and also the payload searched (fuzz/rules_invariants.h says what must
// hold). tests/rules_fuzz_test.cc runs the same checks on mutated real rules under any compiler.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "fuzz/rules_invariants.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;  // a few rules: larger inputs only slow the search down
  if (const char* what = tandem::fuzz::check_ids_rules_input(data, size)) {
    std::fprintf(stderr, "ids_rules_fuzz: invariant violated: %s\n", what);
    std::abort();
  }
  return 0;
}
