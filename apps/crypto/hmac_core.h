// HMAC-SHA1 (RFC 2104) written once as `__host__ __device__` code for the GPU's IPsec ESP kernels,
// which authenticate with HMAC-SHA1-96 (RFC 2404: the first 12 bytes of the MAC). The CPU paths use
// OpenSSL, never these; the host build of this code exists for the tests, which check it against
// OpenSSL and the vectors of RFC 2202.
//
// The key's two padded blocks are compressed once per SA (hmac_sha1_key_init), so a packet costs
// the blocks of its own bytes plus one for the outer hash. The message is hashed where it lies, a
// block at a time; only its last partial block is copied, into one 64-byte block on the stack.
#pragma once

#include <cstdint>

#include "apps/crypto/ct_compare.h"
#include "apps/crypto/digest_core.h"
#include "core/compiler.h"

namespace tandem::crypto {

inline constexpr uint32_t kHmacSha1Bytes = 20;
// The ICV of HMAC-SHA1-96 in ESP and AH: the MAC truncated to its first 96 bits (RFC 2404).
inline constexpr uint32_t kHmacSha1IcvBytes = 12;

// A key made ready for many messages: the SHA-1 states after compressing the key XOR ipad (inner)
// and the key XOR opad (outer).
struct HmacSha1Key {
  uint32_t inner[5];
  uint32_t outer[5];
};

namespace detail {

// The initial SHA-1 state (FIPS 180-4 5.3.1).
TANDEM_HD_INLINE void sha1_init(uint32_t h[5]) {
  h[0] = 0x67452301;
  h[1] = 0xefcdab89;
  h[2] = 0x98badcfe;
  h[3] = 0x10325476;
  h[4] = 0xc3d2e1f0;
}

// Ends a SHA-1 whose last `fill` (< 64) bytes wait in block: 0x80, zeros, then the total length in
// bits as a 64-bit big-endian number, in one block or, when fewer than 9 bytes are left, two.
TANDEM_HD_INLINE void sha1_final(uint32_t h[5], uint8_t block[64], uint32_t fill, uint64_t total_bits) {
  block[fill++] = 0x80;
  if (fill > 56) {
    for (; fill < 64; ++fill) block[fill] = 0;
    sha1_compress(h, block);
    fill = 0;
  }
  for (; fill < 56; ++fill) block[fill] = 0;
  store_be(block + 56, static_cast<uint32_t>(total_bits >> 32));
  store_be(block + 60, static_cast<uint32_t>(total_bits));
  sha1_compress(h, block);
}

}  // namespace detail

// Prepares key[0..len) (any length; one longer than the 64-byte block is hashed first, as RFC 2104
// says).
TANDEM_HD_INLINE void hmac_sha1_key_init(const uint8_t* key, uint32_t len, HmacSha1Key* out) {
  uint8_t block[64];
  uint32_t key_bytes = len;
  if (len > 64) {
    digest(DigestAlgo::kSha1, key, len, block);
    key_bytes = kSha1Bytes;
  } else {
    for (uint32_t i = 0; i < len; ++i) block[i] = key[i];
  }
  for (uint32_t i = key_bytes; i < 64; ++i) block[i] = 0;
  for (int i = 0; i < 64; ++i) block[i] ^= 0x36;
  detail::sha1_init(out->inner);
  detail::sha1_compress(out->inner, block);
  for (int i = 0; i < 64; ++i) block[i] ^= 0x36 ^ 0x5c;
  detail::sha1_init(out->outer);
  detail::sha1_compress(out->outer, block);
}

// The MAC of msg[0..n) followed by extra[0..extra_n), into out (20 bytes). `extra` is for bytes
// that are authenticated but not sent after the packet, such as the high half of an extended
// sequence number in ESP (RFC 4303 2.2.1); pass extra_n 0 when there are none.
TANDEM_HD_INLINE void hmac_sha1(const HmacSha1Key& key, const uint8_t* msg, uint32_t n, const uint8_t* extra,
                                uint32_t extra_n, uint8_t out[20]) {
  // Inner hash: it resumes after the key's block, which the length at the end counts.
  uint32_t h[5];
  TANDEM_UNROLL
  for (int i = 0; i < 5; ++i) h[i] = key.inner[i];
  uint32_t done = 0;
  for (; n - done >= 64; done += 64) detail::sha1_compress(h, msg + done);
  uint8_t block[64];
  uint32_t fill = 0;
  for (; done < n; ++done) block[fill++] = msg[done];
  for (uint32_t i = 0; i < extra_n; ++i) {
    block[fill++] = extra[i];
    if (fill == 64) {
      detail::sha1_compress(h, block);
      fill = 0;
    }
  }
  detail::sha1_final(h, block, fill, (uint64_t{64} + n + extra_n) * 8);
  // Outer hash: the key's block, then the inner digest, 84 bytes in all.
  uint32_t o[5];
  TANDEM_UNROLL
  for (int i = 0; i < 5; ++i) {
    o[i] = key.outer[i];
    detail::store_be(block + 4 * i, h[i]);
  }
  detail::sha1_final(o, block, kSha1Bytes, (64 + kSha1Bytes) * 8);
  TANDEM_UNROLL
  for (int i = 0; i < 5; ++i) detail::store_be(out + 4 * i, o[i]);
}

}  // namespace tandem::crypto
