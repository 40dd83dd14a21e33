// Big-endian (network order) stores and loads of header fields, for host and device code.
#pragma once

#include <cstdint>

#include "core/compiler.h"

namespace tandem {

TANDEM_HD_INLINE void store_be16(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

TANDEM_HD_INLINE void store_be32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

TANDEM_HD_INLINE uint32_t load_be16(const uint8_t* p) { return (uint32_t{p[0]} << 8) | p[1]; }

TANDEM_HD_INLINE uint32_t load_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// A MAC address as the low 48 bits.
TANDEM_HD_INLINE uint64_t load_be48(const uint8_t* p) { return (uint64_t{load_be16(p)} << 32) | load_be32(p + 2); }

TANDEM_HD_INLINE uint64_t load_be64(const uint8_t* p) { return (uint64_t{load_be32(p)} << 32) | load_be32(p + 4); }

}  // namespace tandem
