// ChaCha20, Poly1305 and the AEAD built from them, AEAD_CHACHA20_POLY1305 (RFC 8439), written once
// as `__host__ __device__` code for the GPU's IPsec ESP kernels (RFC 7634: the nonce is the SA's
// 4-byte salt followed by the packet's 8-byte IV, the AAD is the SPI and the sequence number). The
// CPU paths use OpenSSL, never these; the host build of this code exists for the tests, which check
// it against OpenSSL and the RFCs' vectors.
//
// One packet per thread. ChaCha20 keeps its 16-word state in registers. Poly1305 holds its 130-bit
// numbers in five 26-bit limbs, the layout of the public-domain poly1305-donna-32: a product of two
// limbs, summed five at a time, fits a 64-bit integer, so nothing needs 128-bit arithmetic (which
// the GPU lacks). The AEAD never buffers: it feeds Poly1305 whole blocks where they lie, the
// ciphertext straight from registers as it is made, and builds each zero-padded last block in
// registers, so on the GPU its whole state stays in registers. No allocation, no library calls, and
// no branch or memory index depends on the key, the data or a tag; only lengths (and, in open, the
// verdict) steer the code.
#pragma once

#include <cstdint>

#include "apps/crypto/ct_compare.h"
#include "apps/crypto/digest_core.h"
#include "core/compiler.h"

namespace tandem::crypto {

inline constexpr uint32_t kChachaKeyBytes = 32;
inline constexpr uint32_t kChachaNonceBytes = 12;
inline constexpr uint32_t kChachaBlockBytes = 64;
inline constexpr uint32_t kPoly1305KeyBytes = 32;
inline constexpr uint32_t kPoly1305TagBytes = 16;

namespace detail {

// Poly1305's numbers (RFC 8439 2.5): r, clamped, and the accumulator h in 26-bit limbs, least
// significant first; s as little-endian words. Between blocks each limb of h is below 2^26 + 2^10:
// h is kept small, not fully reduced, until the tag is made.
struct Poly1305Limbs {
  uint32_t r[5];
  uint32_t h[5];
  uint32_t s[4];
};

}  // namespace detail

// Poly1305 part-way through a message fed in pieces of any size: poly1305_init, poly1305_update
// (and poly1305_pad16), poly1305_finish.
struct Poly1305State {
  detail::Poly1305Limbs limbs;
  uint8_t partial[16];   // bytes fed that do not yet make a whole 16-byte block
  uint32_t partial_len;  // how many of them
};

namespace detail {

inline constexpr uint32_t kLimbMask = 0x3ffffff;  // 26 bits
// The 2^128 bit a whole 16-byte block carries above its bytes (RFC 8439 2.5.1), as it lands in the
// top limb (bits 104..129).
inline constexpr uint32_t kPoly1305WholeBlockBit = 1u << 24;

TANDEM_HD_INLINE void chacha_quarter_round(uint32_t& a, uint32_t& b, uint32_t& c, uint32_t& d) {
  a += b, d ^= a, d = rotl(d, 16);
  c += d, b ^= c, b = rotl(b, 12);
  a += b, d ^= a, d = rotl(d, 8);
  c += d, b ^= c, b = rotl(b, 7);
}

// The input state of RFC 8439 2.3: the constant "expand 32-byte k", the key, the block counter and
// the nonce, as little-endian words. Word 12, the counter, is what moves from block to block.
TANDEM_HD_INLINE void chacha20_init(uint32_t state[16], const uint8_t key[32], uint32_t counter,
                                    const uint8_t nonce[12]) {
  state[0] = 0x61707865;
  state[1] = 0x3320646e;
  state[2] = 0x79622d32;
  state[3] = 0x6b206574;
  TANDEM_UNROLL
  for (int i = 0; i < 8; ++i) state[4 + i] = load_le(key + 4 * i);
  state[12] = counter;
  TANDEM_UNROLL
  for (int i = 0; i < 3; ++i) state[13 + i] = load_le(nonce + 4 * i);
}

// The keystream block of `state` as 16 words: ten double rounds (four quarter rounds down the
// columns, four along the diagonals), then the input added back in.
TANDEM_HD_INLINE void chacha20_keystream(const uint32_t state[16], uint32_t ks[16]) {
  uint32_t x[16];
  TANDEM_UNROLL
  for (int i = 0; i < 16; ++i) x[i] = state[i];
  for (int i = 0; i < 10; ++i) {
    chacha_quarter_round(x[0], x[4], x[8], x[12]);
    chacha_quarter_round(x[1], x[5], x[9], x[13]);
    chacha_quarter_round(x[2], x[6], x[10], x[14]);
    chacha_quarter_round(x[3], x[7], x[11], x[15]);
    chacha_quarter_round(x[0], x[5], x[10], x[15]);
    chacha_quarter_round(x[1], x[6], x[11], x[12]);
    chacha_quarter_round(x[2], x[7], x[8], x[13]);
    chacha_quarter_round(x[3], x[4], x[9], x[14]);
  }
  TANDEM_UNROLL
  for (int i = 0; i < 16; ++i) ks[i] = x[i] + state[i];
}

// data[0..len) ^= the keystream block ks, for len <= 64.
TANDEM_HD_INLINE void chacha20_xor_block(const uint32_t ks[16], uint8_t* data, uint32_t len) {
  if (len == kChachaBlockBytes) {
    TANDEM_UNROLL
    for (int i = 0; i < 16; ++i) store_le(data + 4 * i, load_le(data + 4 * i) ^ ks[i]);
    return;
  }
  // A short last block, a byte at a time. Both loops unroll, so ks is only ever indexed by
  // constants and stays in registers on the GPU instead of going out to local memory.
  TANDEM_UNROLL
  for (uint32_t w = 0; w < 16; ++w) {
    TANDEM_UNROLL
    for (uint32_t b = 0; b < 4; ++b) {
      if (4 * w + b < len) data[4 * w + b] ^= static_cast<uint8_t>(ks[w] >> (8 * b));
    }
  }
}

// data[0..n) ^= the keystream from block state[12] on; leaves state[12] at the block after the
// last one used. The counter wraps modulo 2^32, as the 32-bit block counter of RFC 8439 does.
TANDEM_HD_INLINE void chacha20_xor_stream(uint32_t state[16], uint8_t* data, uint32_t n) {
  for (uint32_t done = 0; done < n; done += kChachaBlockBytes) {
    uint32_t ks[16];
    chacha20_keystream(state, ks);
    ++state[12];
    chacha20_xor_block(ks, data + done, n - done < kChachaBlockBytes ? n - done : kChachaBlockBytes);
  }
}

// A 128-bit number given as little-endian words, split into five 26-bit limbs.
TANDEM_HD_INLINE void poly1305_to_limbs(uint32_t t0, uint32_t t1, uint32_t t2, uint32_t t3, uint32_t limbs[5]) {
  limbs[0] = t0 & kLimbMask;
  limbs[1] = ((t0 >> 26) | (t1 << 6)) & kLimbMask;
  limbs[2] = ((t1 >> 20) | (t2 << 12)) & kLimbMask;
  limbs[3] = ((t2 >> 14) | (t3 << 18)) & kLimbMask;
  limbs[4] = t3 >> 8;
}

// a * b as a 64-bit number.
TANDEM_HD_INLINE uint64_t mul_wide(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  // One IMAD.WIDE.U32. Written plainly, the compiler proves some operands small, widens them before
  // multiplying, and emits full 64 x 64-bit multiplies, several instructions each.
  uint64_t p;
  asm("mul.wide.u32 %0, %1, %2;" : "=l"(p) : "r"(a), "r"(b));
  return p;
#else
  return uint64_t{a} * b;
#endif
}

// h = (h + block) * r mod 2^130 - 5 for one 16-byte block given as little-endian words; top_bit is
// kPoly1305WholeBlockBit for a whole block and 0 for a short last one, which carries its end
// marker (a 0x01 byte) among its bytes instead.
//
// Bounds: between blocks each limb of h is below 2^26 + 2^10, and the block adds less than 2^26,
// so each limb of the sum is below 2^27.01. Limbs of r are below 2^26, so 5 * r[i] is below 2^29;
// each product is then below 2^56 and each sum of five below 2^59, well inside 64 bits.
TANDEM_HD_INLINE void poly1305_absorb(Poly1305Limbs& p, uint32_t t0, uint32_t t1, uint32_t t2, uint32_t t3,
                                      uint32_t top_bit) {
  uint32_t m[5];
  poly1305_to_limbs(t0, t1, t2, t3, m);
  const uint32_t h0 = p.h[0] + m[0];
  const uint32_t h1 = p.h[1] + m[1];
  const uint32_t h2 = p.h[2] + m[2];
  const uint32_t h3 = p.h[3] + m[3];
  const uint32_t h4 = p.h[4] + (m[4] | top_bit);
  const uint32_t r0 = p.r[0], r1 = p.r[1], r2 = p.r[2], r3 = p.r[3], r4 = p.r[4];
  // 2^130 = 5 (mod p): a product that lands at limb 5 or above wraps round to limb i - 5, times 5.
  const uint32_t s1 = r1 * 5, s2 = r2 * 5, s3 = r3 * 5, s4 = r4 * 5;
  uint64_t d0 = mul_wide(h0, r0) + mul_wide(h1, s4) + mul_wide(h2, s3) + mul_wide(h3, s2) + mul_wide(h4, s1);
  uint64_t d1 = mul_wide(h0, r1) + mul_wide(h1, r0) + mul_wide(h2, s4) + mul_wide(h3, s3) + mul_wide(h4, s2);
  uint64_t d2 = mul_wide(h0, r2) + mul_wide(h1, r1) + mul_wide(h2, r0) + mul_wide(h3, s4) + mul_wide(h4, s3);
  uint64_t d3 = mul_wide(h0, r3) + mul_wide(h1, r2) + mul_wide(h2, r1) + mul_wide(h3, r0) + mul_wide(h4, s4);
  uint64_t d4 = mul_wide(h0, r4) + mul_wide(h1, r3) + mul_wide(h2, r2) + mul_wide(h3, r1) + mul_wide(h4, r0);
  // Back to 26-bit limbs. What carries out of the top limb is a multiple of 2^130, so it re-enters
  // at the bottom times 5; what that carries out of limb 0 stays in limb 1 (it is below 2^10).
  d1 += d0 >> 26;
  d2 += d1 >> 26;
  d3 += d2 >> 26;
  d4 += d3 >> 26;
  const uint64_t low = (d0 & kLimbMask) + (d4 >> 26) * 5;
  p.h[0] = static_cast<uint32_t>(low & kLimbMask);
  p.h[1] = static_cast<uint32_t>((d1 & kLimbMask) + (low >> 26));
  p.h[2] = static_cast<uint32_t>(d2 & kLimbMask);
  p.h[3] = static_cast<uint32_t>(d3 & kLimbMask);
  p.h[4] = static_cast<uint32_t>(d4 & kLimbMask);
}

TANDEM_HD_INLINE void poly1305_absorb_bytes(Poly1305Limbs& p, const uint8_t* block, uint32_t top_bit) {
  poly1305_absorb(p, load_le(block), load_le(block + 4), load_le(block + 8), load_le(block + 12), top_bit);
}

// Feeds m[0..n) zero-padded to a multiple of 16 bytes, as the AEAD does with the AAD and the
// ciphertext: whole blocks where they lie, the last one assembled in registers.
TANDEM_HD_INLINE void poly1305_absorb_padded(Poly1305Limbs& p, const uint8_t* m, uint32_t n) {
  for (; n >= 16; m += 16, n -= 16) poly1305_absorb_bytes(p, m, kPoly1305WholeBlockBit);
  if (n == 0) return;
  uint32_t t[4] = {0, 0, 0, 0};
  TANDEM_UNROLL
  for (uint32_t i = 0; i < 16; ++i) {
    if (i < n) t[i / 4] |= uint32_t{m[i]} << (8 * (i % 4));
  }
  poly1305_absorb(p, t[0], t[1], t[2], t[3], kPoly1305WholeBlockBit);
}

// Sets up for a one-time key given as little-endian words: r (clamped here) then s.
TANDEM_HD_INLINE void poly1305_setup(Poly1305Limbs& p, const uint32_t key[8]) {
  // Clamping (RFC 8439 2.5) clears the top four bits of r's bytes 3, 7, 11 and 15 and the bottom
  // two of bytes 4, 8 and 12, as the design of Poly1305 requires.
  poly1305_to_limbs(key[0] & 0x0fffffff, key[1] & 0x0ffffffc, key[2] & 0x0ffffffc, key[3] & 0x0ffffffc, p.r);
  TANDEM_UNROLL
  for (int i = 0; i < 5; ++i) p.h[i] = 0;
  TANDEM_UNROLL
  for (int i = 0; i < 4; ++i) p.s[i] = key[4 + i];
}

// The tag once every block is in: (h mod 2^130 - 5) + s, mod 2^128.
TANDEM_HD_INLINE void poly1305_tag(const Poly1305Limbs& p, uint8_t tag[16]) {
  uint32_t h0 = p.h[0], h1 = p.h[1], h2 = p.h[2], h3 = p.h[3], h4 = p.h[4];
  // Two carry passes leave every limb below 2^26, so h < 2^130. The first brings h1 under 2^26 and
  // can leave h0 up to 2^26 + 4; the second can carry out of h4 again only if it carried out of h0
  // and through all of h1..h3, and then h0 is below 5 before the 5 comes back in.
  for (int pass = 0; pass < 2; ++pass) {
    h1 += h0 >> 26, h0 &= kLimbMask;
    h2 += h1 >> 26, h1 &= kLimbMask;
    h3 += h2 >> 26, h2 &= kLimbMask;
    h4 += h3 >> 26, h3 &= kLimbMask;
    h0 += (h4 >> 26) * 5, h4 &= kLimbMask;
  }
  // g = h + 5 - 2^130 = h - p. When h < p, g is negative and the subtraction of 2^130 borrows into
  // bit 31 of g4; then keep h, else take g. Chosen by mask, not by branch.
  uint32_t g0 = h0 + 5;
  uint32_t g1 = h1 + (g0 >> 26);
  g0 &= kLimbMask;
  uint32_t g2 = h2 + (g1 >> 26);
  g1 &= kLimbMask;
  uint32_t g3 = h3 + (g2 >> 26);
  g2 &= kLimbMask;
  const uint32_t g4 = h4 + (g3 >> 26) - (1u << 26);
  g3 &= kLimbMask;
  const uint32_t take_g = (g4 >> 31) - 1;  // all ones when h >= p
  h0 = (h0 & ~take_g) | (g0 & take_g);
  h1 = (h1 & ~take_g) | (g1 & take_g);
  h2 = (h2 & ~take_g) | (g2 & take_g);
  h3 = (h3 & ~take_g) | (g3 & take_g);
  h4 = (h4 & ~take_g) | (g4 & take_g);
  // The low 128 bits of h as little-endian words, plus s, carrying from word to word.
  const uint32_t w0 = h0 | (h1 << 26);
  const uint32_t w1 = (h1 >> 6) | (h2 << 20);
  const uint32_t w2 = (h2 >> 12) | (h3 << 14);
  const uint32_t w3 = (h3 >> 18) | (h4 << 8);
  uint64_t f = uint64_t{w0} + p.s[0];
  store_le(tag, static_cast<uint32_t>(f));
  f = uint64_t{w1} + p.s[1] + (f >> 32);
  store_le(tag + 4, static_cast<uint32_t>(f));
  f = uint64_t{w2} + p.s[2] + (f >> 32);
  store_le(tag + 8, static_cast<uint32_t>(f));
  f = uint64_t{w3} + p.s[3] + (f >> 32);
  store_le(tag + 12, static_cast<uint32_t>(f));
}

}  // namespace detail

// ---- ChaCha20 ----

// The 64-byte keystream block `counter` for (key, nonce), RFC 8439 2.3.
TANDEM_HD_INLINE void chacha20_block(const uint8_t key[32], uint32_t counter, const uint8_t nonce[12],
                                     uint8_t out[64]) {
  uint32_t state[16], ks[16];
  detail::chacha20_init(state, key, counter, nonce);
  detail::chacha20_keystream(state, ks);
  TANDEM_UNROLL
  for (int i = 0; i < 16; ++i) detail::store_le(out + 4 * i, ks[i]);
}

// Encrypts or decrypts data[0..n) in place (RFC 8439 2.4): XORs it with the keystream starting at
// block `counter`. The block counter is 32 bits and wraps; keep counter + ceil(n / 64) <= 2^32.
TANDEM_HD_INLINE void chacha20_xor(const uint8_t key[32], uint32_t counter, const uint8_t nonce[12], uint8_t* data,
                                   uint32_t n) {
  uint32_t state[16];
  detail::chacha20_init(state, key, counter, nonce);
  detail::chacha20_xor_stream(state, data, n);
}

// ---- Poly1305 ----

// Starts a MAC with a 32-byte one-time key (r then s). A key must never authenticate two messages.
TANDEM_HD_INLINE void poly1305_init(Poly1305State* st, const uint8_t key[32]) {
  uint32_t words[8];
  TANDEM_UNROLL
  for (int i = 0; i < 8; ++i) words[i] = detail::load_le(key + 4 * i);
  detail::poly1305_setup(st->limbs, words);
  st->partial_len = 0;
}

// Feeds m[0..n). Whole blocks are read where they lie; only a piece of a block is held back.
TANDEM_HD_INLINE void poly1305_update(Poly1305State* st, const uint8_t* m, uint32_t n) {
  if (st->partial_len != 0) {
    while (n != 0 && st->partial_len < 16) {
      st->partial[st->partial_len++] = *m++;
      --n;
    }
    if (st->partial_len < 16) return;
    detail::poly1305_absorb_bytes(st->limbs, st->partial, detail::kPoly1305WholeBlockBit);
    st->partial_len = 0;
  }
  for (; n >= 16; m += 16, n -= 16) detail::poly1305_absorb_bytes(st->limbs, m, detail::kPoly1305WholeBlockBit);
  for (uint32_t i = 0; i < n; ++i) st->partial[i] = m[i];
  st->partial_len = n;
}

// Feeds zeros up to the next multiple of 16 bytes, none if already there (the AEAD's pad16).
TANDEM_HD_INLINE void poly1305_pad16(Poly1305State* st) {
  if (st->partial_len == 0) return;
  for (uint32_t i = st->partial_len; i < 16; ++i) st->partial[i] = 0;
  detail::poly1305_absorb_bytes(st->limbs, st->partial, detail::kPoly1305WholeBlockBit);
  st->partial_len = 0;
}

// Writes the tag of everything fed.
TANDEM_HD_INLINE void poly1305_finish(Poly1305State* st, uint8_t tag[16]) {
  if (st->partial_len != 0) {
    // A short last block ends with a 0x01 byte, then zeros, and lacks the 2^128 bit.
    st->partial[st->partial_len] = 1;
    for (uint32_t i = st->partial_len + 1; i < 16; ++i) st->partial[i] = 0;
    detail::poly1305_absorb_bytes(st->limbs, st->partial, 0);
    st->partial_len = 0;
  }
  detail::poly1305_tag(st->limbs, tag);
}

// The tag of m[0..n) under a one-time key, in one call.
TANDEM_HD_INLINE void poly1305(const uint8_t key[32], const uint8_t* m, uint32_t n, uint8_t tag[16]) {
  Poly1305State st;
  poly1305_init(&st, key);
  poly1305_update(&st, m, n);
  poly1305_finish(&st, tag);
}

// ---- AEAD_CHACHA20_POLY1305 ----

// The Poly1305 key the AEAD derives for (key, nonce): the first 32 bytes of keystream block 0
// (RFC 8439 2.6).
TANDEM_HD_INLINE void poly1305_key_gen(const uint8_t key[32], const uint8_t nonce[12], uint8_t otk[32]) {
  uint32_t state[16], ks[16];
  detail::chacha20_init(state, key, 0, nonce);
  detail::chacha20_keystream(state, ks);
  TANDEM_UNROLL
  for (int i = 0; i < 8; ++i) detail::store_le(otk + 4 * i, ks[i]);
}

namespace detail {

// The AEAD's MAC covers aad || pad16 || ciphertext || pad16 || aad length || ciphertext length
// (RFC 8439 2.8). This starts it: derives the one-time key from block 0 of `state` (whose counter
// is 0) and feeds the padded AAD.
TANDEM_HD_INLINE void aead_mac_begin(Poly1305Limbs& mac, const uint32_t state[16], const uint8_t* aad,
                                     uint32_t aad_len) {
  uint32_t ks[16];
  chacha20_keystream(state, ks);
  poly1305_setup(mac, ks);
  poly1305_absorb_padded(mac, aad, aad_len);
}

// Ends it once the padded ciphertext is in: feeds both lengths as 64-bit little-endian numbers.
TANDEM_HD_INLINE void aead_mac_end(Poly1305Limbs& mac, uint32_t aad_len, uint32_t n, uint8_t tag[16]) {
  poly1305_absorb(mac, aad_len, 0, n, 0, kPoly1305WholeBlockBit);
  poly1305_tag(mac, tag);
}

}  // namespace detail

// Encrypts data[0..n) in place and writes the 16-byte tag over aad[0..aad_len) and the ciphertext
// (RFC 8439 2.8). A (key, nonce) pair must never seal two messages.
TANDEM_HD_INLINE void chacha20_poly1305_seal(const uint8_t key[32], const uint8_t nonce[12], const uint8_t* aad,
                                             uint32_t aad_len, uint8_t* data, uint32_t n, uint8_t tag[16]) {
  uint32_t state[16];
  detail::chacha20_init(state, key, 0, nonce);
  detail::Poly1305Limbs mac;
  detail::aead_mac_begin(mac, state, aad, aad_len);
  state[12] = 1;
  // One pass: each whole 64-byte block of ciphertext goes into the MAC from registers, as four
  // 16-byte blocks, right after it is written. Only a short last block is read back from memory.
  for (uint32_t done = 0; done < n; done += kChachaBlockBytes) {
    uint32_t ks[16];
    detail::chacha20_keystream(state, ks);
    ++state[12];
    uint8_t* block = data + done;
    if (n - done >= kChachaBlockBytes) {
      uint32_t c[16];
      TANDEM_UNROLL
      for (int i = 0; i < 16; ++i) {
        c[i] = detail::load_le(block + 4 * i) ^ ks[i];
        detail::store_le(block + 4 * i, c[i]);
      }
      TANDEM_UNROLL
      for (int i = 0; i < 16; i += 4) {
        detail::poly1305_absorb(mac, c[i], c[i + 1], c[i + 2], c[i + 3], detail::kPoly1305WholeBlockBit);
      }
    } else {
      detail::chacha20_xor_block(ks, block, n - done);
      detail::poly1305_absorb_padded(mac, block, n - done);
    }
  }
  detail::aead_mac_end(mac, aad_len, n, tag);
}

// Checks the tag over aad[0..aad_len) and the ciphertext data[0..n) and, only if it is right,
// decrypts data in place and returns true. On a wrong tag returns false with data untouched, so no
// unauthenticated plaintext is ever released. The tags are compared in constant time.
TANDEM_HD_INLINE bool chacha20_poly1305_open(const uint8_t key[32], const uint8_t nonce[12], const uint8_t* aad,
                                             uint32_t aad_len, uint8_t* data, uint32_t n, const uint8_t tag[16]) {
  uint32_t state[16];
  detail::chacha20_init(state, key, 0, nonce);
  detail::Poly1305Limbs mac;
  detail::aead_mac_begin(mac, state, aad, aad_len);
  detail::poly1305_absorb_padded(mac, data, n);
  uint8_t expected[kPoly1305TagBytes];
  detail::aead_mac_end(mac, aad_len, n, expected);
  if (!ct_equal(expected, tag, kPoly1305TagBytes)) return false;
  state[12] = 1;
  detail::chacha20_xor_stream(state, data, n);
  return true;
}

}  // namespace tandem::crypto
