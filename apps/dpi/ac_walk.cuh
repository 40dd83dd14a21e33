// The automaton's walk over one payload on the GPU (apps/dpi/ac_core.h's steps), 16 bytes per
// load: what the DPI app's kernel and the benchmarks' payload kernels share.
#pragma once

#include <cstdint>

#include "apps/dpi/ac_core.h"

namespace tandem::dpi {

// Walks the `len` bytes at p (16-byte aligned, readable in whole 16-byte words) from the root,
// reporting each output state's patterns through ac_report(seen, add); stops before the next 16
// bytes once done() is true.
template <class Seen, class Add, class Done>
__device__ __forceinline__ void ac_walk_words(const AcView& v, const uint8_t* p, uint32_t len, Seen& seen, Add& add,
                                              const Done& done) {
  uint32_t x = 0;
  const uint4* p4 = reinterpret_cast<const uint4*>(p);
  for (uint32_t k0 = 0; k0 < len && !done(); k0 += 16) {
    const uint4 w = p4[k0 / 16];
    const uint32_t word[4] = {w.x, w.y, w.z, w.w};
    const uint32_t m = min(16u, len - k0);
#pragma unroll
    for (uint32_t b = 0; b < 16; ++b) {
      if (b < m) {
        x = ac_step(v, x, static_cast<uint8_t>(word[b / 4] >> (8 * (b % 4))));
        if (x & kAcOutput) ac_report(v, x, p, k0 + b + 1, seen, add);
      }
    }
  }
}

}  // namespace tandem::dpi
