// libFuzzer target for parse_packet: the frame is the fuzzer's input, which libFuzzer hands over
// in a heap block of exactly that size, so ASan catches any read past the capture. Any violated
// invariant aborts, and libFuzzer saves the input as a crash-* file.
// tests/parse_fuzz_test.cc runs the same checks as a deterministic test under any compiler.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "core/parse.h"
#include "fuzz/parse_invariants.h"

namespace {

using tandem::DropReason;
using tandem::ParsedPacket;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "parse_fuzz: invariant violated: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 0xFFFFFFFFu) return 0;
  ParsedPacket p;
  const DropReason r = tandem::parse_packet(data, static_cast<uint32_t>(size), &p);
  if (const char* what = tandem::fuzz::check_parse_invariants(data, size, r, p)) fail(what);
  return 0;
}
