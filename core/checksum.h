// Internet checksum (RFC 1071) and its incremental update (RFC 1624), usable on host and device.
#pragma once

#include "core/compiler.h"

namespace tandem {

// One's-complement sum of `len` bytes (big-endian 16-bit words), not folded or inverted.
TANDEM_HD_INLINE uint32_t csum_partial(const uint8_t* p, uint32_t len, uint32_t sum = 0) {
  while (len > 1) {
    sum += (static_cast<uint32_t>(p[0]) << 8) | p[1];
    p += 2;
    len -= 2;
  }
  if (len) sum += static_cast<uint32_t>(p[0]) << 8;
  return sum;
}

TANDEM_HD_INLINE uint16_t csum_fold(uint32_t sum) {
  sum = (sum & 0xFFFF) + (sum >> 16);
  sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

// The value to store in an IPv4 header's checksum field: computed with the field's current bytes
// treated as zero.
TANDEM_HD_INLINE uint16_t ipv4_header_checksum(const uint8_t* hdr, uint32_t hdr_len) {
  uint32_t sum = csum_partial(hdr, hdr_len);
  sum -= (static_cast<uint32_t>(hdr[10]) << 8) | hdr[11];  // exclude the stored checksum
  // sum may have wrapped below the subtracted word's contribution only if it was smaller, which
  // cannot happen: the stored word was one of the addends.
  return static_cast<uint16_t>(~csum_fold(sum));
}

// True when the header (including its stored checksum) sums to 0xFFFF.
TANDEM_HD_INLINE bool ipv4_checksum_ok(const uint8_t* hdr, uint32_t hdr_len) {
  return csum_fold(csum_partial(hdr, hdr_len)) == 0xFFFF;
}

// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), for one 16-bit word m changing to m'.
TANDEM_HD_INLINE uint16_t csum_update16(uint16_t hc, uint16_t old_word, uint16_t new_word) {
  uint32_t sum = static_cast<uint16_t>(~hc);
  sum += static_cast<uint16_t>(~old_word);
  sum += new_word;
  return static_cast<uint16_t>(~csum_fold(sum));
}

// Decrements the TTL of the IPv4 header at `ip` and patches its checksum incrementally.
// The caller has checked TTL > 1. TTL shares its 16-bit word with the protocol byte.
TANDEM_HD_INLINE void ipv4_decrement_ttl(uint8_t* ip) {
  const uint16_t old_word = static_cast<uint16_t>((ip[8] << 8) | ip[9]);
  ip[8] = static_cast<uint8_t>(ip[8] - 1);
  const uint16_t new_word = static_cast<uint16_t>((ip[8] << 8) | ip[9]);
  const uint16_t hc = static_cast<uint16_t>((ip[10] << 8) | ip[11]);
  const uint16_t nc = csum_update16(hc, old_word, new_word);
  ip[10] = static_cast<uint8_t>(nc >> 8);
  ip[11] = static_cast<uint8_t>(nc & 0xFF);
}

}  // namespace tandem
