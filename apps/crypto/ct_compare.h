// Constant-time equality of authentication tags (ESP ICVs, AEAD tags), shared by the
// `__host__ __device__` crypto cores. A comparison that stops at the first differing byte tells
// an attacker, through its timing, how many leading bytes of a forged tag were right, and so lets
// them find a valid tag a byte at a time; this one reads every byte whatever the contents.
#pragma once

#include <cstdint>

#include "core/compiler.h"

namespace tandem::crypto {

// Whether a[0..n) equals b[0..n). The time taken depends on n only.
TANDEM_HD_INLINE bool ct_equal(const uint8_t* a, const uint8_t* b, uint32_t n) {
  uint32_t diff = 0;
  for (uint32_t i = 0; i < n; ++i) {
    diff |= static_cast<uint32_t>(a[i] ^ b[i]);
#if defined(__GNUC__) && !defined(__CUDA_ARCH__)
    // Hides diff's value from the optimiser, which could otherwise leave the loop as soon as diff
    // is non-zero (nothing later can clear a bit of it).
    __asm__("" : "+r"(diff));
#endif
  }
  // diff - 1 borrows into bit 31 only when diff is 0 (diff is at most 0xff).
  return ((diff - 1) >> 31) != 0;
}

}  // namespace tandem::crypto
