// Test support for the dpi app's tests: a frame with a given payload, transport and ports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/checksum.h"

namespace tandem::dpi::test_frames {

// A frame: Ethernet, IPv4 (flags and fragment offset `frag`), TCP to `dport` or UDP, payload.
inline std::vector<uint8_t> frame(const std::string& payload, uint16_t dport = 80, uint8_t proto = 6,
                                  uint16_t frag = 0) {
  using Bytes = std::vector<uint8_t>;
  Bytes l4;
  auto put16 = [](Bytes& b, uint32_t v) {
    b.push_back(uint8_t(v >> 8));
    b.push_back(uint8_t(v));
  };
  put16(l4, 40000);
  put16(l4, dport);
  if (proto == 6) {
    l4.resize(12, 0);
    l4.insert(l4.end(), {0x50, 0x18, 0xFF, 0xFF, 0, 0, 0, 0});
  } else {
    put16(l4, uint32_t(8 + payload.size()));
    put16(l4, 0);
  }
  l4.insert(l4.end(), payload.begin(), payload.end());
  Bytes f = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00, 0x45, 0};
  put16(f, uint32_t(20 + l4.size()));
  put16(f, 0x1234);
  put16(f, frag);
  f.insert(f.end(), {64, proto, 0, 0, 10, 0, 0, 1, 1, 2, 3, 4});
  const uint16_t c = ipv4_header_checksum(f.data() + 14, 20);
  f[24] = uint8_t(c >> 8);
  f[25] = uint8_t(c);
  f.insert(f.end(), l4.begin(), l4.end());
  return f;
}

}  // namespace tandem::dpi::test_frames
