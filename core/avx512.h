// What the AVX-512 table lookups (apps/ipv4/dir24_8_avx512.cc, apps/ipv6/lpm6_avx512.cc) share:
// the CPU checks that choose them at run time, and the base their gathers index from.
#pragma once

#include <cstdint>

namespace tandem {

inline bool cpu_has_avx512f() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

inline bool cpu_has_avx512bw() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return __builtin_cpu_supports("avx512bw");
#else
  return false;
#endif
}

// A gather takes signed 32-bit indices, and the tables' group slots (group << 8 | byte) reach
// 2^32 - 1. Sent with its top bit flipped (slot - 2^31), an index against this base, 2^31 entries
// past the table's start, reaches every slot: base + (slot - 2^31) is the table's slot. The address
// is computed as an integer; nothing is read there but through the flipped indices.
inline const int* gather_base_for_unsigned_index(const uint32_t* table) {
  return reinterpret_cast<const int*>(reinterpret_cast<uintptr_t>(table) + (uintptr_t{1} << 31) * sizeof(uint32_t));
}

}  // namespace tandem
