// AES-128 and AES-256 (FIPS 197), CBC (SP 800-38A) and GCM with a 96-bit IV (SP 800-38D, as ESP
// uses it, RFC 4106), written once as `__host__ __device__` code for the GPU's IPsec ESP kernels.
// The CPU paths use OpenSSL, never these; the host build of this code exists for the tests, which
// check it against OpenSSL and the published test vectors.
//
// NOT CONSTANT-TIME. The block cipher uses the classic 32-bit T-tables and GHASH uses Shoup's
// 4-bit tables: both index memory with secret-dependent values, so the timing (and on the GPU the
// shared-memory bank or cache pattern) depends on the key and the data. That is accepted for the
// GPU path, which is documented as not constant-time; only the GCM tag comparison is constant-time,
// because a leak there would let an attacker forge tags byte by byte.
//
// Tables. The lookup tables live in one AesTables struct that every function takes by pointer, so
// a kernel can point them at a device copy in global memory or stage the part it needs (te + sbox
// to encrypt, td + inv_sbox to decrypt) into shared memory. Function-local constexpr tables would
// instead land in each thread's local memory on the GPU. The host copy, aes_tables(), is built at
// compile time, so nothing has to run (or be made thread-safe) before first use; a GPU user copies
// it to the device once (cudaMemcpy of sizeof(AesTables) bytes).
//
// Keys. AesKey holds an expanded schedule; GcmKey adds the GHASH tables for one key. Both are
// plain data, built on the host (or the device) once per security association, and read in place
// by the per-packet functions: pass a reference to the copy in global or shared memory rather than
// copying a key into a kernel-local variable.
#pragma once

#include <cstdint>

#include "core/compiler.h"

namespace tandem::crypto {

inline constexpr uint32_t kAesBlockBytes = 16;
inline constexpr uint32_t kAes128KeyBytes = 16;
inline constexpr uint32_t kAes256KeyBytes = 32;
inline constexpr uint32_t kGcmIvBytes = 12;
inline constexpr uint32_t kGcmTagBytes = 16;

// The forward and inverse round tables. te[j][x] is the MixColumns column of S(x), rotated right
// by 8*j bits: one round is 16 lookups and XORs. td[j][x] is the same for InvMixColumns of
// InvS(x), for the equivalent inverse cipher. The last round has no MixColumns and uses the plain
// S-boxes. 8,704 bytes in all.
struct AesTables {
  uint32_t te[4][256];
  uint32_t td[4][256];
  uint8_t sbox[256];
  uint8_t inv_sbox[256];
};

// An expanded key schedule: 4 * (rounds + 1) round-key words, big-endian (word i is bytes 4i..4i+3
// of the schedule as FIPS 197 lists it). rounds is 10 (AES-128) or 14 (AES-256). A decryption
// schedule (aes_expand_dec_key) has the same layout but holds the round keys in reverse order,
// those of the middle rounds passed through InvMixColumns.
struct AesKey {
  uint32_t rk[60];
  uint32_t rounds;
};

// Everything GCM needs for one key: the AES schedule and, for H = E_K(0^128), the products n*H for
// every 4-bit n (Shoup's table; h_hi/h_lo are the two 64-bit halves of each product). 504 bytes.
struct GcmKey {
  AesKey aes;
  uint64_t h_hi[16];
  uint64_t h_lo[16];
};

static_assert(sizeof(AesTables) == 8704);
static_assert(sizeof(GcmKey) == 504);

namespace detail {

// ---- Table generation (host, compile time) ----

constexpr uint8_t gf_mul(uint8_t a, uint8_t b) {
  // Multiplication in GF(2^8) mod x^8 + x^4 + x^3 + x + 1, shift and add.
  uint8_t p = 0;
  for (int i = 0; i < 8; ++i) {
    if (b & 1) p ^= a;
    const bool carry = a & 0x80;
    a = static_cast<uint8_t>(a << 1);
    if (carry) a ^= 0x1b;
    b >>= 1;
  }
  return p;
}

constexpr uint8_t rotl8(uint8_t x, int n) { return static_cast<uint8_t>(x << n | x >> (8 - n)); }
constexpr uint32_t rotr32(uint32_t x, int n) { return n == 0 ? x : x >> n | x << (32 - n); }

constexpr AesTables make_aes_tables() {
  AesTables t{};
  // Powers of the generator 3 give log/antilog tables; the multiplicative inverse of x != 0 is
  // then 3^(255 - log x). The S-box is the affine map of FIPS 197 5.1.1 applied to the inverse.
  uint8_t exp3[256]{}, log3[256]{};
  uint8_t p = 1;
  for (int i = 0; i < 255; ++i) {
    exp3[i] = p;
    log3[p] = static_cast<uint8_t>(i);
    p = gf_mul(p, 3);
  }
  for (int x = 0; x < 256; ++x) {
    const uint8_t inv = x == 0 ? 0 : exp3[(255 - log3[x]) % 255];
    const uint8_t s = inv ^ rotl8(inv, 1) ^ rotl8(inv, 2) ^ rotl8(inv, 3) ^ rotl8(inv, 4) ^ 0x63;
    t.sbox[x] = s;
    t.inv_sbox[s] = static_cast<uint8_t>(x);
  }
  for (int x = 0; x < 256; ++x) {
    const uint8_t s = t.sbox[x];
    const uint8_t is = t.inv_sbox[x];
    // MixColumns multiplies a column by {02 01 01 03} (rotated per row); InvMixColumns by
    // {0e 09 0d 0b}. Row 0 of the column is the top byte.
    const uint32_t e = uint32_t{gf_mul(s, 2)} << 24 | uint32_t{s} << 16 | uint32_t{s} << 8 | gf_mul(s, 3);
    const uint32_t d = uint32_t{gf_mul(is, 14)} << 24 | uint32_t{gf_mul(is, 9)} << 16 |
                       uint32_t{gf_mul(is, 13)} << 8 | gf_mul(is, 11);
    for (int j = 0; j < 4; ++j) {
      t.te[j][x] = rotr32(e, 8 * j);
      t.td[j][x] = rotr32(d, 8 * j);
    }
  }
  return t;
}

// ---- Byte order helpers ----

TANDEM_HD_INLINE uint32_t aes_load_be32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}
TANDEM_HD_INLINE void aes_store_be32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}
TANDEM_HD_INLINE uint64_t aes_load_be64(const uint8_t* p) {
  return uint64_t{aes_load_be32(p)} << 32 | aes_load_be32(p + 4);
}
TANDEM_HD_INLINE void aes_store_be64(uint8_t* p, uint64_t v) {
  aes_store_be32(p, static_cast<uint32_t>(v >> 32));
  aes_store_be32(p + 4, static_cast<uint32_t>(v));
}

// ---- The block cipher on a state held as four big-endian column words ----

TANDEM_HD_INLINE uint32_t sub_word(const AesTables* t, uint32_t w) {
  return uint32_t{t->sbox[w >> 24]} << 24 | uint32_t{t->sbox[(w >> 16) & 0xff]} << 16 |
         uint32_t{t->sbox[(w >> 8) & 0xff]} << 8 | uint32_t{t->sbox[w & 0xff]};
}

// InvMixColumns of one round-key word: td[j][sbox[b]] is InvMixColumns applied to byte b alone in
// row j, so four lookups give the whole column.
TANDEM_HD_INLINE uint32_t inv_mix_column(const AesTables* t, uint32_t w) {
  return t->td[0][t->sbox[w >> 24]] ^ t->td[1][t->sbox[(w >> 16) & 0xff]] ^
         t->td[2][t->sbox[(w >> 8) & 0xff]] ^ t->td[3][t->sbox[w & 0xff]];
}

TANDEM_HD_INLINE void encrypt_state(const AesKey& k, const AesTables* t, uint32_t& s0, uint32_t& s1,
                                    uint32_t& s2, uint32_t& s3) {
  const uint32_t* rk = k.rk;
  s0 ^= rk[0], s1 ^= rk[1], s2 ^= rk[2], s3 ^= rk[3];
  // Rounds 1..rounds-1: SubBytes, ShiftRows (row r of column c comes from column c + r) and
  // MixColumns in the table lookups, then AddRoundKey.
  for (uint32_t r = 1; r < k.rounds; ++r) {
    rk += 4;
    const uint32_t t0 = t->te[0][s0 >> 24] ^ t->te[1][(s1 >> 16) & 0xff] ^ t->te[2][(s2 >> 8) & 0xff] ^
                        t->te[3][s3 & 0xff] ^ rk[0];
    const uint32_t t1 = t->te[0][s1 >> 24] ^ t->te[1][(s2 >> 16) & 0xff] ^ t->te[2][(s3 >> 8) & 0xff] ^
                        t->te[3][s0 & 0xff] ^ rk[1];
    const uint32_t t2 = t->te[0][s2 >> 24] ^ t->te[1][(s3 >> 16) & 0xff] ^ t->te[2][(s0 >> 8) & 0xff] ^
                        t->te[3][s1 & 0xff] ^ rk[2];
    const uint32_t t3 = t->te[0][s3 >> 24] ^ t->te[1][(s0 >> 16) & 0xff] ^ t->te[2][(s1 >> 8) & 0xff] ^
                        t->te[3][s2 & 0xff] ^ rk[3];
    s0 = t0, s1 = t1, s2 = t2, s3 = t3;
  }
  // The last round has no MixColumns.
  rk += 4;
  const uint8_t* sb = t->sbox;
  const uint32_t o0 = (uint32_t{sb[s0 >> 24]} << 24 | uint32_t{sb[(s1 >> 16) & 0xff]} << 16 |
                       uint32_t{sb[(s2 >> 8) & 0xff]} << 8 | uint32_t{sb[s3 & 0xff]}) ^ rk[0];
  const uint32_t o1 = (uint32_t{sb[s1 >> 24]} << 24 | uint32_t{sb[(s2 >> 16) & 0xff]} << 16 |
                       uint32_t{sb[(s3 >> 8) & 0xff]} << 8 | uint32_t{sb[s0 & 0xff]}) ^ rk[1];
  const uint32_t o2 = (uint32_t{sb[s2 >> 24]} << 24 | uint32_t{sb[(s3 >> 16) & 0xff]} << 16 |
                       uint32_t{sb[(s0 >> 8) & 0xff]} << 8 | uint32_t{sb[s1 & 0xff]}) ^ rk[2];
  const uint32_t o3 = (uint32_t{sb[s3 >> 24]} << 24 | uint32_t{sb[(s0 >> 16) & 0xff]} << 16 |
                       uint32_t{sb[(s1 >> 8) & 0xff]} << 8 | uint32_t{sb[s2 & 0xff]}) ^ rk[3];
  s0 = o0, s1 = o1, s2 = o2, s3 = o3;
}

// The equivalent inverse cipher (FIPS 197 5.3.5): the same shape as encryption with the inverse
// tables, InvShiftRows (row r of column c comes from column c - r) and a decryption schedule.
TANDEM_HD_INLINE void decrypt_state(const AesKey& k, const AesTables* t, uint32_t& s0, uint32_t& s1,
                                    uint32_t& s2, uint32_t& s3) {
  const uint32_t* rk = k.rk;
  s0 ^= rk[0], s1 ^= rk[1], s2 ^= rk[2], s3 ^= rk[3];
  for (uint32_t r = 1; r < k.rounds; ++r) {
    rk += 4;
    const uint32_t t0 = t->td[0][s0 >> 24] ^ t->td[1][(s3 >> 16) & 0xff] ^ t->td[2][(s2 >> 8) & 0xff] ^
                        t->td[3][s1 & 0xff] ^ rk[0];
    const uint32_t t1 = t->td[0][s1 >> 24] ^ t->td[1][(s0 >> 16) & 0xff] ^ t->td[2][(s3 >> 8) & 0xff] ^
                        t->td[3][s2 & 0xff] ^ rk[1];
    const uint32_t t2 = t->td[0][s2 >> 24] ^ t->td[1][(s1 >> 16) & 0xff] ^ t->td[2][(s0 >> 8) & 0xff] ^
                        t->td[3][s3 & 0xff] ^ rk[2];
    const uint32_t t3 = t->td[0][s3 >> 24] ^ t->td[1][(s2 >> 16) & 0xff] ^ t->td[2][(s1 >> 8) & 0xff] ^
                        t->td[3][s0 & 0xff] ^ rk[3];
    s0 = t0, s1 = t1, s2 = t2, s3 = t3;
  }
  rk += 4;
  const uint8_t* ib = t->inv_sbox;
  const uint32_t o0 = (uint32_t{ib[s0 >> 24]} << 24 | uint32_t{ib[(s3 >> 16) & 0xff]} << 16 |
                       uint32_t{ib[(s2 >> 8) & 0xff]} << 8 | uint32_t{ib[s1 & 0xff]}) ^ rk[0];
  const uint32_t o1 = (uint32_t{ib[s1 >> 24]} << 24 | uint32_t{ib[(s0 >> 16) & 0xff]} << 16 |
                       uint32_t{ib[(s3 >> 8) & 0xff]} << 8 | uint32_t{ib[s2 & 0xff]}) ^ rk[1];
  const uint32_t o2 = (uint32_t{ib[s2 >> 24]} << 24 | uint32_t{ib[(s1 >> 16) & 0xff]} << 16 |
                       uint32_t{ib[(s0 >> 8) & 0xff]} << 8 | uint32_t{ib[s3 & 0xff]}) ^ rk[2];
  const uint32_t o3 = (uint32_t{ib[s3 >> 24]} << 24 | uint32_t{ib[(s2 >> 16) & 0xff]} << 16 |
                       uint32_t{ib[(s1 >> 8) & 0xff]} << 8 | uint32_t{ib[s0 & 0xff]}) ^ rk[3];
  s0 = o0, s1 = o1, s2 = o2, s3 = o3;
}

// ---- GHASH ----
//
// GCM numbers the bits of a block from the most significant bit of byte 0 (the coefficient of x^0)
// to the least significant bit of byte 15 (x^127). A block is held as hi = bytes 0..7 and
// lo = bytes 8..15, big-endian, so multiplying by x is a right shift by one, and the bit shifted
// out (x^128) is reduced by x^128 = 1 + x + x^2 + x^7, which is 0xe1 in the top byte.

inline constexpr uint64_t kGcmR = 0xe100000000000000ull;

// (hi, lo) *= x.
TANDEM_HD_INLINE void gf128_mul_x(uint64_t& hi, uint64_t& lo) {
  const uint64_t carry = uint64_t{0} - (lo & 1);  // all ones when x^127 was set
  lo = lo >> 1 | hi << 63;
  hi = hi >> 1 ^ (kGcmR & carry);
}

// The reduction of the four bits x^128..x^131 that (hi, lo) * x^4 shifts out: bit b of r (the
// low nibble of lo before the shift) stands for x^(131 - b), and x^(128 + k) reduces to
// x^k * (1 + x + x^2 + x^7), i.e. 0xe1 shifted right by k from the top. Computed rather than
// looked up, so the GPU needs no table (and no secret-indexed load) for it.
TANDEM_HD_INLINE uint64_t gf128_reduce4(uint64_t r) {
  return ((uint64_t{0} - (r & 1)) & (kGcmR >> 3)) ^ ((uint64_t{0} - ((r >> 1) & 1)) & (kGcmR >> 2)) ^
         ((uint64_t{0} - ((r >> 2) & 1)) & (kGcmR >> 1)) ^ ((uint64_t{0} - ((r >> 3) & 1)) & kGcmR);
}

// (hi, lo) = (hi, lo) * H with Shoup's 4-bit method: Horner's rule over the 32 nibbles from the
// highest powers of x (the low nibble of byte 15) down, multiplying the accumulator by x^4 and
// adding nibble * H from the table each step. A nibble's top bit is its lowest power of x, which
// is why h[8] = H (see gcm_key_init).
TANDEM_HD_INLINE void ghash_mul(const GcmKey& g, uint64_t& hi, uint64_t& lo) {
  uint64_t zhi = 0, zlo = 0;
  uint64_t word = lo;
TANDEM_UNROLL
  for (int i = 0; i < 32; ++i) {
    if (i == 16) word = hi;
    const uint32_t nib = static_cast<uint32_t>(word >> (4 * (i & 15))) & 0xf;
    const uint64_t rem = zlo & 0xf;
    zlo = zlo >> 4 | zhi << 60;
    zhi = zhi >> 4 ^ gf128_reduce4(rem);
    zhi ^= g.h_hi[nib];
    zlo ^= g.h_lo[nib];
  }
  hi = zhi;
  lo = zlo;
}

// Loads m <= 16 bytes as a block, zero-padded on the right. The unrolled loop keeps every byte
// position a constant, so the GPU keeps the block in registers.
TANDEM_HD_INLINE void load_block_partial(const uint8_t* p, uint32_t m, uint64_t& hi, uint64_t& lo) {
  hi = 0;
  lo = 0;
TANDEM_UNROLL
  for (uint32_t i = 0; i < 8; ++i) {
    if (i < m) hi |= uint64_t{p[i]} << (56 - 8 * i);
    if (i + 8 < m) lo |= uint64_t{p[i + 8]} << (56 - 8 * i);
  }
}

// Absorbs n bytes into the GHASH state, whole blocks then the zero-padded tail.
TANDEM_HD_INLINE void ghash_update(const GcmKey& g, uint64_t& hi, uint64_t& lo, const uint8_t* p,
                                   uint32_t n) {
  uint32_t off = 0;
  for (; n - off >= 16; off += 16) {
    hi ^= aes_load_be64(p + off);
    lo ^= aes_load_be64(p + off + 8);
    ghash_mul(g, hi, lo);
  }
  if (off < n) {
    uint64_t bhi, blo;
    load_block_partial(p + off, n - off, bhi, blo);
    hi ^= bhi;
    lo ^= blo;
    ghash_mul(g, hi, lo);
  }
}

// p[0..m) ^= the first m bytes of the keystream block (k0..k3), m <= 16; constant byte positions
// as in load_block_partial.
TANDEM_HD_INLINE void xor_keystream(uint8_t* p, uint32_t m, uint32_t k0, uint32_t k1, uint32_t k2,
                                    uint32_t k3) {
  if (m == 16) {
    aes_store_be32(p, aes_load_be32(p) ^ k0);
    aes_store_be32(p + 4, aes_load_be32(p + 4) ^ k1);
    aes_store_be32(p + 8, aes_load_be32(p + 8) ^ k2);
    aes_store_be32(p + 12, aes_load_be32(p + 12) ^ k3);
    return;
  }
TANDEM_UNROLL
  for (uint32_t i = 0; i < 16; ++i) {
    const uint32_t w = i < 4 ? k0 : i < 8 ? k1 : i < 12 ? k2 : k3;
    if (i < m) p[i] ^= static_cast<uint8_t>(w >> (24 - 8 * (i & 3)));
  }
}

// CTR mode of GCM over data[0..n) in place: block i uses the counter block IV || (2 + i), the
// 32-bit counter big-endian and wrapping (inc32). Counter 1 is kept for the tag. When absorb_after
// is set, each ciphertext block is fed to GHASH right after it is produced (sealing).
TANDEM_HD_INLINE void gcm_ctr(const GcmKey& g, const AesTables* t, const uint8_t* iv, uint8_t* data,
                              uint32_t n, bool absorb_after, uint64_t& hi, uint64_t& lo) {
  const uint32_t iv0 = aes_load_be32(iv), iv1 = aes_load_be32(iv + 4), iv2 = aes_load_be32(iv + 8);
  uint32_t ctr = 2;
  for (uint32_t off = 0; off < n; ++ctr) {
    uint32_t k0 = iv0, k1 = iv1, k2 = iv2, k3 = ctr;
    encrypt_state(g.aes, t, k0, k1, k2, k3);
    const uint32_t m = n - off < 16 ? n - off : 16;
    xor_keystream(data + off, m, k0, k1, k2, k3);
    if (absorb_after) ghash_update(g, hi, lo, data + off, m);
    off += m;  // never past n, so no wrap near 2^32
  }
}

// The tag as two big-endian halves: GHASH(A, C) finished with the lengths block (len(A) and
// len(C) in bits, 64 bits each) and masked with E_K(IV || 1).
TANDEM_HD_INLINE void gcm_tag(const GcmKey& g, const AesTables* t, const uint8_t* iv, uint32_t aad_len,
                              uint32_t n, uint64_t hi, uint64_t lo, uint64_t& tag_hi, uint64_t& tag_lo) {
  hi ^= uint64_t{aad_len} * 8;
  lo ^= uint64_t{n} * 8;
  ghash_mul(g, hi, lo);
  uint32_t j0 = aes_load_be32(iv), j1 = aes_load_be32(iv + 4), j2 = aes_load_be32(iv + 8), j3 = 1;
  encrypt_state(g.aes, t, j0, j1, j2, j3);
  tag_hi = hi ^ (uint64_t{j0} << 32 | j1);
  tag_lo = lo ^ (uint64_t{j2} << 32 | j3);
}

}  // namespace detail

// The host copy of the tables, computed at compile time (no run-time initialisation). A GPU user
// copies it into device memory once and passes that copy's address to the kernels.
inline const AesTables& aes_tables() {
  static constexpr AesTables kTables = detail::make_aes_tables();
  return kTables;
}

// ---- Key schedules ----

// Expands a 16-byte (AES-128) or 32-byte (AES-256) key into an encryption schedule (FIPS 197
// 5.2). Returns false, leaving *k unchanged, for any other key length.
TANDEM_HD inline bool aes_expand_enc_key(AesKey* k, const AesTables* t, const uint8_t* key,
                                         uint32_t key_len) {
  if (key_len != kAes128KeyBytes && key_len != kAes256KeyBytes) return false;
  const uint32_t nk = key_len / 4;
  const uint32_t rounds = nk + 6;
  const uint32_t words = 4 * (rounds + 1);
  for (uint32_t i = 0; i < nk; ++i) k->rk[i] = detail::aes_load_be32(key + 4 * i);
  uint32_t rcon = 0x01;
  for (uint32_t i = nk; i < words; ++i) {
    uint32_t w = k->rk[i - 1];
    if (i % nk == 0) {
      w = detail::sub_word(t, w << 8 | w >> 24) ^ rcon << 24;  // RotWord, SubWord, Rcon
      rcon = (rcon << 1) ^ ((rcon >> 7) * 0x11b);                // xtime in GF(2^8)
    } else if (nk == 8 && i % nk == 4) {
      w = detail::sub_word(t, w);  // AES-256 only: an extra SubWord mid-key
    }
    k->rk[i] = k->rk[i - nk] ^ w;
  }
  k->rounds = rounds;
  return true;
}

// Turns an encryption schedule into the decryption schedule of the equivalent inverse cipher:
// round keys in reverse order, all but the first and last through InvMixColumns. dec may not
// alias enc.
TANDEM_HD inline void aes_dec_key_from_enc(AesKey* dec, const AesTables* t, const AesKey& enc) {
  const uint32_t rounds = enc.rounds;
  for (uint32_t r = 0; r <= rounds; ++r) {
    for (uint32_t j = 0; j < 4; ++j) {
      const uint32_t w = enc.rk[4 * (rounds - r) + j];
      dec->rk[4 * r + j] = (r == 0 || r == rounds) ? w : detail::inv_mix_column(t, w);
    }
  }
  dec->rounds = rounds;
}

// Expands a 16- or 32-byte key straight into a decryption schedule. Returns false, leaving *k
// unchanged, for any other key length.
TANDEM_HD inline bool aes_expand_dec_key(AesKey* k, const AesTables* t, const uint8_t* key,
                                         uint32_t key_len) {
  AesKey enc;
  if (!aes_expand_enc_key(&enc, t, key, key_len)) return false;
  aes_dec_key_from_enc(k, t, enc);
  return true;
}

// ---- Single blocks ----

// out = E_K(in), 16 bytes; in and out may be the same buffer. k is an encryption schedule.
TANDEM_HD_INLINE void aes_encrypt_block(const AesKey& k, const AesTables* t, const uint8_t* in,
                                        uint8_t* out) {
  uint32_t s0 = detail::aes_load_be32(in), s1 = detail::aes_load_be32(in + 4),
           s2 = detail::aes_load_be32(in + 8), s3 = detail::aes_load_be32(in + 12);
  detail::encrypt_state(k, t, s0, s1, s2, s3);
  detail::aes_store_be32(out, s0);
  detail::aes_store_be32(out + 4, s1);
  detail::aes_store_be32(out + 8, s2);
  detail::aes_store_be32(out + 12, s3);
}

// out = D_K(in), 16 bytes; in and out may be the same buffer. k is a decryption schedule.
TANDEM_HD_INLINE void aes_decrypt_block(const AesKey& k, const AesTables* t, const uint8_t* in,
                                        uint8_t* out) {
  uint32_t s0 = detail::aes_load_be32(in), s1 = detail::aes_load_be32(in + 4),
           s2 = detail::aes_load_be32(in + 8), s3 = detail::aes_load_be32(in + 12);
  detail::decrypt_state(k, t, s0, s1, s2, s3);
  detail::aes_store_be32(out, s0);
  detail::aes_store_be32(out + 4, s1);
  detail::aes_store_be32(out + 8, s2);
  detail::aes_store_be32(out + 12, s3);
}

// ---- CBC (SP 800-38A 6.2), in place, no padding ----

// Encrypts data[0..n) in place with the 16-byte iv; k is an encryption schedule. n must be a
// multiple of 16 (ESP pads to the block size before this): otherwise returns false and leaves the
// data untouched.
TANDEM_HD inline bool aes_cbc_encrypt(const AesKey& k, const AesTables* t, const uint8_t* iv,
                                      uint8_t* data, uint32_t n) {
  if (n % kAesBlockBytes != 0) return false;
  uint32_t c0 = detail::aes_load_be32(iv), c1 = detail::aes_load_be32(iv + 4),
           c2 = detail::aes_load_be32(iv + 8), c3 = detail::aes_load_be32(iv + 12);
  for (uint32_t off = 0; off < n; off += 16) {
    uint8_t* p = data + off;
    c0 ^= detail::aes_load_be32(p);
    c1 ^= detail::aes_load_be32(p + 4);
    c2 ^= detail::aes_load_be32(p + 8);
    c3 ^= detail::aes_load_be32(p + 12);
    detail::encrypt_state(k, t, c0, c1, c2, c3);
    detail::aes_store_be32(p, c0);
    detail::aes_store_be32(p + 4, c1);
    detail::aes_store_be32(p + 8, c2);
    detail::aes_store_be32(p + 12, c3);
  }
  return true;
}

// Decrypts data[0..n) in place with the 16-byte iv; k is a decryption schedule. Each ciphertext
// block is kept (it is the next block's chaining value) before the plaintext overwrites it. n must
// be a multiple of 16: otherwise returns false and leaves the data untouched.
TANDEM_HD inline bool aes_cbc_decrypt(const AesKey& k, const AesTables* t, const uint8_t* iv,
                                      uint8_t* data, uint32_t n) {
  if (n % kAesBlockBytes != 0) return false;
  uint32_t v0 = detail::aes_load_be32(iv), v1 = detail::aes_load_be32(iv + 4),
           v2 = detail::aes_load_be32(iv + 8), v3 = detail::aes_load_be32(iv + 12);
  for (uint32_t off = 0; off < n; off += 16) {
    uint8_t* p = data + off;
    const uint32_t c0 = detail::aes_load_be32(p), c1 = detail::aes_load_be32(p + 4),
                   c2 = detail::aes_load_be32(p + 8), c3 = detail::aes_load_be32(p + 12);
    uint32_t s0 = c0, s1 = c1, s2 = c2, s3 = c3;
    detail::decrypt_state(k, t, s0, s1, s2, s3);
    detail::aes_store_be32(p, s0 ^ v0);
    detail::aes_store_be32(p + 4, s1 ^ v1);
    detail::aes_store_be32(p + 8, s2 ^ v2);
    detail::aes_store_be32(p + 12, s3 ^ v3);
    v0 = c0, v1 = c1, v2 = c2, v3 = c3;
  }
  return true;
}

// ---- GCM (SP 800-38D) with a 96-bit IV and a 128-bit tag ----

// Builds the per-key GCM state from a 16- or 32-byte key: the AES schedule, H = E_K(0^128) and
// the table h[n] = n * H for every nibble n (h[8] = H, h[4] = H*x, h[2] = H*x^2, h[1] = H*x^3, the
// rest by linearity). Returns false, leaving *g unchanged, for any other key length.
TANDEM_HD inline bool gcm_key_init(GcmKey* g, const AesTables* t, const uint8_t* key, uint32_t key_len) {
  if (!aes_expand_enc_key(&g->aes, t, key, key_len)) return false;
  uint32_t h0 = 0, h1 = 0, h2 = 0, h3 = 0;
  detail::encrypt_state(g->aes, t, h0, h1, h2, h3);
  uint64_t hi = uint64_t{h0} << 32 | h1, lo = uint64_t{h2} << 32 | h3;
  g->h_hi[0] = 0;
  g->h_lo[0] = 0;
  for (uint32_t bit = 8; bit != 0; bit >>= 1) {
    g->h_hi[bit] = hi;
    g->h_lo[bit] = lo;
    detail::gf128_mul_x(hi, lo);
  }
  for (uint32_t top = 2; top <= 8; top <<= 1) {
    for (uint32_t low = 1; low < top; ++low) {
      g->h_hi[top | low] = g->h_hi[top] ^ g->h_hi[low];
      g->h_lo[top | low] = g->h_lo[top] ^ g->h_lo[low];
    }
  }
  return true;
}

// Authenticated encryption: encrypts data[0..n) in place and writes the 16-byte tag over
// aad[0..aad_len) and the ciphertext. iv is the 12-byte nonce (for ESP, RFC 4106: the 4-byte salt
// then the 8-byte explicit IV); it must never repeat under one key. Any n and aad_len that fit in
// 32 bits (GCM's own limit, 2^32 - 2 blocks, is far above that).
TANDEM_HD inline void gcm_seal(const GcmKey& g, const AesTables* t, const uint8_t* iv, const uint8_t* aad,
                               uint32_t aad_len, uint8_t* data, uint32_t n, uint8_t* tag) {
  uint64_t hi = 0, lo = 0;
  detail::ghash_update(g, hi, lo, aad, aad_len);
  detail::gcm_ctr(g, t, iv, data, n, /*absorb_after=*/true, hi, lo);
  uint64_t tag_hi, tag_lo;
  detail::gcm_tag(g, t, iv, aad_len, n, hi, lo, tag_hi, tag_lo);
  detail::aes_store_be64(tag, tag_hi);
  detail::aes_store_be64(tag + 8, tag_lo);
}

// Authenticated decryption of data[0..n) in place. The tag is recomputed over aad and the
// ciphertext first and compared with `tag` in constant time (every byte, no early exit); only if
// it matches is the data decrypted, and true returned. On a mismatch the data is left exactly as
// it was and false is returned: no unauthenticated plaintext is ever written.
TANDEM_HD inline bool gcm_open(const GcmKey& g, const AesTables* t, const uint8_t* iv, const uint8_t* aad,
                               uint32_t aad_len, uint8_t* data, uint32_t n, const uint8_t* tag) {
  uint64_t hi = 0, lo = 0;
  detail::ghash_update(g, hi, lo, aad, aad_len);
  detail::ghash_update(g, hi, lo, data, n);
  uint64_t tag_hi, tag_lo;
  detail::gcm_tag(g, t, iv, aad_len, n, hi, lo, tag_hi, tag_lo);
  // All 16 bytes are compared before the one branch on the result.
  const uint64_t diff = (tag_hi ^ detail::aes_load_be64(tag)) | (tag_lo ^ detail::aes_load_be64(tag + 8));
  if (diff != 0) return false;
  detail::gcm_ctr(g, t, iv, data, n, /*absorb_after=*/false, hi, lo);
  return true;
}

}  // namespace tandem::crypto

