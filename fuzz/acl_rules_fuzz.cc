// libFuzzer target for the firewall rule loader (ClassBench filters and Tandem's syntax), the
// ClassBench trace reader and HyperSplit built from what loads (fuzz/rules_invariants.h says what
// must hold). tests/rules_fuzz_test.cc runs the same checks on mutated real rules under any compiler.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "fuzz/rules_invariants.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;
  if (const char* what = tandem::fuzz::check_acl_rules_input(data, size)) {
    std::fprintf(stderr, "acl_rules_fuzz: invariant violated: %s\n", what);
    std::abort();
  }
  return 0;
}
