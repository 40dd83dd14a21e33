// Building frames and records byte by byte in tests: appending big-endian fields to a byte vector.
// (core/byte_order.h stores into a buffer; these grow one.)
#pragma once

#include <cstdint>
#include <vector>

namespace tandem::test {

using Bytes = std::vector<uint8_t>;

inline void put16(Bytes& b, uint32_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}
inline void put32(Bytes& b, uint32_t v) {
  put16(b, v >> 16);
  put16(b, v);
}
inline void append(Bytes& b, const Bytes& x) { b.insert(b.end(), x.begin(), x.end()); }
inline Bytes cat(Bytes a, const Bytes& b) {
  append(a, b);
  return a;
}

}  // namespace tandem::test
