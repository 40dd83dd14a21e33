// MD5 (RFC 1321), SHA-1 and SHA-256 (FIPS 180-4) of a contiguous message, written once as
// `__host__ __device__` code for the GPU kernels (packet hashing, HMAC-SHA1 for ESP). The CPU
// paths use OpenSSL, never these; the host build of this code exists for the tests, which check it
// against OpenSSL and the published test vectors.
//
// One message per thread: a block at a time through the compression function, then the padding
// (0x80, zeros, the length in bits) in one or two final blocks. No allocation, no library calls.
#pragma once

#include <cstdint>

#include "core/compiler.h"

namespace tandem::crypto {

enum class DigestAlgo : uint8_t { kMd5, kSha1, kSha256 };

inline constexpr uint32_t kMd5Bytes = 16;
inline constexpr uint32_t kSha1Bytes = 20;
inline constexpr uint32_t kSha256Bytes = 32;
inline constexpr uint32_t kMaxDigestBytes = 32;

TANDEM_HD_INLINE constexpr uint32_t digest_bytes(DigestAlgo a) {
  return a == DigestAlgo::kMd5 ? kMd5Bytes : a == DigestAlgo::kSha1 ? kSha1Bytes : kSha256Bytes;
}

namespace detail {

TANDEM_HD_INLINE uint32_t rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }
TANDEM_HD_INLINE uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
TANDEM_HD_INLINE uint32_t load_le(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
TANDEM_HD_INLINE uint32_t load_be(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}
TANDEM_HD_INLINE void store_le(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
TANDEM_HD_INLINE void store_be(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

TANDEM_HD_INLINE void md5_compress(uint32_t* h, const uint8_t* block) {
  // Per-round shift amounts and the constants floor(2^32 * |sin(i + 1)|), RFC 1321 3.4.
  constexpr uint8_t s[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                             5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                             4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                             6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};
  constexpr uint32_t k[64] = {
      0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
      0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
      0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
      0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
      0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
      0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
      0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
      0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};
  uint32_t m[16];
  for (int i = 0; i < 16; ++i) m[i] = load_le(block + 4 * i);
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
TANDEM_UNROLL
  for (int i = 0; i < 64; ++i) {
    uint32_t f;
    int g;
    if (i < 16) {
      f = (b & c) | (~b & d);
      g = i;
    } else if (i < 32) {
      f = (d & b) | (~d & c);
      g = (5 * i + 1) & 15;
    } else if (i < 48) {
      f = b ^ c ^ d;
      g = (3 * i + 5) & 15;
    } else {
      f = c ^ (b | ~d);
      g = (7 * i) & 15;
    }
    const uint32_t t = d;
    d = c;
    c = b;
    b = b + rotl(a + f + k[i] + m[g], s[i]);
    a = t;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
}

TANDEM_HD_INLINE void sha1_compress(uint32_t* h, const uint8_t* block) {
  uint32_t w[16];
  for (int i = 0; i < 16; ++i) w[i] = load_be(block + 4 * i);
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
TANDEM_UNROLL
  for (int i = 0; i < 80; ++i) {
    if (i >= 16) w[i & 15] = rotl(w[(i - 3) & 15] ^ w[(i - 8) & 15] ^ w[(i - 14) & 15] ^ w[i & 15], 1);
    uint32_t f, k;
    if (i < 20) {
      f = (b & c) | (~b & d);
      k = 0x5a827999;
    } else if (i < 40) {
      f = b ^ c ^ d;
      k = 0x6ed9eba1;
    } else if (i < 60) {
      f = (b & c) | (b & d) | (c & d);
      k = 0x8f1bbcdc;
    } else {
      f = b ^ c ^ d;
      k = 0xca62c1d6;
    }
    const uint32_t t = rotl(a, 5) + f + e + k + w[i & 15];
    e = d;
    d = c;
    c = rotl(b, 30);
    b = a;
    a = t;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
}

TANDEM_HD_INLINE void sha256_compress(uint32_t* h, const uint8_t* block) {
  constexpr uint32_t k[64] = {
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
      0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
      0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
      0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
      0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
      0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
      0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
      0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
  uint32_t w[16];
  for (int i = 0; i < 16; ++i) w[i] = load_be(block + 4 * i);
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
TANDEM_UNROLL
  for (int i = 0; i < 64; ++i) {
    if (i >= 16) {
      const uint32_t w15 = w[(i - 15) & 15], w2 = w[(i - 2) & 15];
      const uint32_t s0 = rotr(w15, 7) ^ rotr(w15, 18) ^ (w15 >> 3);
      const uint32_t s1 = rotr(w2, 17) ^ rotr(w2, 19) ^ (w2 >> 10);
      w[i & 15] += s0 + w[(i - 7) & 15] + s1;
    }
    const uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i & 15];
    const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += hh;
}

}  // namespace detail

// The digest of msg[0..n) into out (digest_bytes(algo) bytes).
TANDEM_HD_INLINE void digest(DigestAlgo algo, const uint8_t* msg, uint32_t n, uint8_t* out) {
  uint32_t h[8];
  int words;
  if (algo == DigestAlgo::kMd5) {
    h[0] = 0x67452301, h[1] = 0xefcdab89, h[2] = 0x98badcfe, h[3] = 0x10325476;
    words = 4;
  } else if (algo == DigestAlgo::kSha1) {
    h[0] = 0x67452301, h[1] = 0xefcdab89, h[2] = 0x98badcfe, h[3] = 0x10325476, h[4] = 0xc3d2e1f0;
    words = 5;
  } else {
    h[0] = 0x6a09e667, h[1] = 0xbb67ae85, h[2] = 0x3c6ef372, h[3] = 0xa54ff53a;
    h[4] = 0x510e527f, h[5] = 0x9b05688c, h[6] = 0x1f83d9ab, h[7] = 0x5be0cd19;
    words = 8;
  }
  auto compress = [&](const uint8_t* block) {
    if (algo == DigestAlgo::kMd5) {
      detail::md5_compress(h, block);
    } else if (algo == DigestAlgo::kSha1) {
      detail::sha1_compress(h, block);
    } else {
      detail::sha256_compress(h, block);
    }
  };
  uint32_t done = 0;
  for (; n - done >= 64; done += 64) compress(msg + done);
  // The tail, 0x80, zeros and the 64-bit length in bits: one block, or two when the tail leaves
  // fewer than 9 bytes.
  uint8_t last[128];
  const uint32_t tail = n - done;
  for (uint32_t i = 0; i < tail; ++i) last[i] = msg[done + i];
  last[tail] = 0x80;
  const uint32_t total = tail + 9 <= 64 ? 64 : 128;
  for (uint32_t i = tail + 1; i < total - 8; ++i) last[i] = 0;
  const uint64_t bits = uint64_t{n} * 8;
  for (int i = 0; i < 8; ++i) {
    // MD5 stores the length little-endian, the SHAs big-endian.
    const int shift = algo == DigestAlgo::kMd5 ? 8 * i : 56 - 8 * i;
    last[total - 8 + i] = static_cast<uint8_t>(bits >> shift);
  }
  compress(last);
  if (total == 128) compress(last + 64);
  for (int i = 0; i < words; ++i) {
    if (algo == DigestAlgo::kMd5) {
      detail::store_le(out + 4 * i, h[i]);
    } else {
      detail::store_be(out + 4 * i, h[i]);
    }
  }
}

}  // namespace tandem::crypto
