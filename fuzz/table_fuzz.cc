// libFuzzer target for the text reader every table, rule and key file goes through (LineReader)
// and the table loaders built on it (fuzz/table_invariants.h says what must hold).
// tests/table_fuzz_test.cc runs the same checks on mutated real tables under any compiler.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "fuzz/table_invariants.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 65536) return 0;
  if (const char* what = tandem::fuzz::check_table_input(data, size)) {
    std::fprintf(stderr, "table_fuzz: invariant violated: %s\n", what);
    std::abort();
  }
  return 0;
}
