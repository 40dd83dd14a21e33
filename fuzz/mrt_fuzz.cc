// libFuzzer target for the MRT reader (io/mrt.h): any byte string is either read or rejected with
// MrtError; it must never crash, hang or read out of bounds, and every route it delivers must have
// a valid family and prefix length. tests/mrt_test.cc runs the same checks on mutated dumps under
// any compiler.
#include <cstdint>
#include <cstdlib>

#include "io/mrt.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    tandem::mrt::read_buffer(data, size, [](const tandem::mrt::RibRoute& r) {
      if ((r.family != 4 && r.family != 6) || r.len > (r.family == 4 ? 32 : 128)) std::abort();
      if (r.has_next_hop && r.next_hop_family != 4 && r.next_hop_family != 6) std::abort();
    });
  } catch (const tandem::mrt::MrtError&) {
  }
  return 0;
}
