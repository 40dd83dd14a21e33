// RSA-2048 private-key operations by the Chinese remainder theorem, written once as
// `__host__ __device__` code for the GPU's batch kernel (rsa_gpu.cu). The CPU path uses OpenSSL
// (rsa_cpu.h); the host build of this code exists for the tests, which check it against OpenSSL's
// BIGNUM and raw RSA.
//
// The operation is raw RSA, m = c^d mod n, computed as
//   m1 = c^dp mod p,  m2 = c^dq mod q,  h = qinv * (m1 - m2) mod p,  m = m2 + q * h
// (Garner's recombination, HAC section 14.5.2). Padding (PKCS#1 v1.5, OAEP, PSS) is out of scope:
// callers hand in the already padded block as c, or take m and unpad it themselves.
//
// Arithmetic. Each CRT half works modulo a 1024-bit prime with 32 limbs of 32 bits, in Montgomery
// form (R = 2^1024; Montgomery multiplication as in HAC algorithm 14.36), multiplied by CIOS
// (coarsely integrated operand scanning, Koc, Acar and Kaliski): per word b[i] of one operand, a
// row t += a * b[i] and a reduction row t = (t + m * n) / 2^32, with m chosen so the low word
// cancels. Both rows are written as carry chains in the shape of
// PTX's mad.lo.cc / madc.hi.cc: on the GPU every step is one instruction with the hardware carry
// flag (inline PTX), on the host the same steps run on a carry kept in a variable (CarryChain), so
// the tests exercise exactly the sequence of steps the kernel executes. Define
// TANDEM_RSA_PORTABLE_DEVICE to compile the device side on the portable carry as well.
//
// Registers. The operand `a`, the modulus and the accumulator (34 words) live in registers: every
// loop over limbs is unrolled so their indices are constants. The other operand `b` is read one
// word per row from memory (a table entry, or a copy of the accumulator when squaring); the row
// loop itself is not unrolled, which keeps one Montgomery multiplication at a loop body of about
// 270 instructions (sm_90) rather than 8,500 unrolled ones. Under nvcc for sm_90 the multiplication
// needs about 114 registers and the whole kernel fits 128 without spilling in its loops.
//
// Exponentiation. Fixed 5-bit windows over all 1024 exponent bits whatever the exponent's length:
// a table of c^0..c^31 (30 multiplications), then 204 windows of 5 squarings and one
// multiplication (by c^0 = R mod p when the window is zero). Every operation thus runs the same
// instruction sequence, which keeps the two threads of a pair and all of a warp's lanes together.
//
// Side channels. The sequence of operations, the conditional subtractions (done by masks, never
// branches) and the memory addresses touched do not depend on secrets, except for the window-table
// read, which has two forms (RsaTableLookup):
//   kScan    reads every table entry and keeps the wanted one by a mask: addresses independent of
//            the exponent, at the cost of reading the whole 4 KiB table instead of one 128-byte
//            entry for each of the 205 table multiplications.
//   kDirect  reads entry c^w only: faster, but NOT CONSTANT-TIME: the address depends on 5 secret
//            exponent bits at a time, which an observer of the GPU's caches could in principle learn.
// The code has no secret-dependent branch in its source; that the compiler kept it so is not
// verified instruction by instruction. The host build is for the tests and makes no such claim.
//
// Keys. make_rsa_crt_key() builds the per-key constants on the host (n' = -n^-1 mod 2^32, R mod p,
// R^2 mod p, R^3 mod p, the same for q, and qinv * R mod p) from the big-endian key parts OpenSSL
// hands out; the result is plain data a kernel reads in place from device memory. Both primes
// must be odd and below 2^1024 (RSA-2048 keys have two 1024-bit primes).
#pragma once

#include <cstdint>
#include <stdexcept>

#include "core/compiler.h"

#if defined(__CUDACC__)
#define TANDEM_RSA_UNROLL _Pragma("unroll")
#define TANDEM_RSA_NO_UNROLL _Pragma("unroll 1")
#else
#define TANDEM_RSA_UNROLL _Pragma("GCC unroll 70")
#define TANDEM_RSA_NO_UNROLL
#endif

namespace tandem::crypto {

inline constexpr int kRsaHalfLimbs = 32;   // 1024-bit CRT half
inline constexpr int kRsaLimbs = 64;       // 2048-bit modulus
inline constexpr uint32_t kRsaBytes = 256;
inline constexpr uint32_t kRsaHalfBytes = 128;
inline constexpr int kRsaWindowBits = 5;
inline constexpr int kRsaWindowEntries = 1 << kRsaWindowBits;

enum class RsaTableLookup : uint8_t {
  kScan,    // every entry read, the wanted one kept by a mask (addresses independent of d)
  kDirect,  // only the wanted entry read (faster; addresses depend on the exponent)
};

// Montgomery constants of one odd modulus below R = 2^1024. Limbs are little-endian words.
struct RsaMontModulus {
  uint32_t n[kRsaHalfLimbs];
  uint32_t one[kRsaHalfLimbs];  // R mod n: 1 in Montgomery form
  uint32_t rr[kRsaHalfLimbs];   // R^2 mod n: converts into Montgomery form
  uint32_t rrr[kRsaHalfLimbs];  // R^3 mod n: converts the high half of a 2048-bit input
  uint32_t n0inv;               // -n^-1 mod 2^32
};

// One CRT half: a prime and its private exponent (dp for p, dq for q).
struct RsaCrtHalf {
  RsaMontModulus mod;
  uint32_t d[kRsaHalfLimbs];
};

// Everything one key's private operation needs, as plain data (device-copyable).
struct RsaCrtKey {
  RsaCrtHalf half[2];               // [0]: p, dp; [1]: q, dq
  uint32_t qinv_r[kRsaHalfLimbs];   // qinv * R mod p: one Montgomery multiplication gives qinv * x
  uint32_t n[kRsaLimbs];            // the public modulus p*q, to reject inputs >= n
};

namespace rsa_detail {

inline constexpr int L = kRsaHalfLimbs;

// Extended-precision steps with a carry flag, named after the PTX instructions they stand for
// (lo/hi: the low or high word of the 64-bit product; "c" in front: carry in; ".cc": carry out).
// For subtraction the flag is a borrow, as in PTX. A chain must not be interleaved with another.
#if defined(__CUDA_ARCH__) && !defined(TANDEM_RSA_PORTABLE_DEVICE)
// The hardware flag. Each step is its own volatile asm statement, so the compiler keeps the order;
// it emits no flag-setting instruction of its own between them (plain adds do not touch CC).
struct CarryChain {
#define TANDEM_RSA_PTX3(name, op)                                                         \
  __device__ __forceinline__ uint32_t name(uint32_t a, uint32_t b, uint32_t c) {          \
    uint32_t r;                                                                           \
    asm volatile(op " %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));               \
    return r;                                                                             \
  }
#define TANDEM_RSA_PTX2(name, op)                                                         \
  __device__ __forceinline__ uint32_t name(uint32_t a, uint32_t b) {                      \
    uint32_t r;                                                                           \
    asm volatile(op " %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));                           \
    return r;                                                                             \
  }
  TANDEM_RSA_PTX3(mad_lo_cc, "mad.lo.cc.u32")
  TANDEM_RSA_PTX3(madc_lo_cc, "madc.lo.cc.u32")
  TANDEM_RSA_PTX3(mad_hi_cc, "mad.hi.cc.u32")
  TANDEM_RSA_PTX3(madc_hi_cc, "madc.hi.cc.u32")
  TANDEM_RSA_PTX2(add_cc, "add.cc.u32")
  TANDEM_RSA_PTX2(addc_cc, "addc.cc.u32")
  TANDEM_RSA_PTX2(addc, "addc.u32")
  TANDEM_RSA_PTX2(sub_cc, "sub.cc.u32")
  TANDEM_RSA_PTX2(subc_cc, "subc.cc.u32")
  TANDEM_RSA_PTX2(subc, "subc.u32")
#undef TANDEM_RSA_PTX3
#undef TANDEM_RSA_PTX2
};
#else
// The same steps on a flag held in a variable (64-bit sums), for the host and for checking.
struct CarryChain {
  uint32_t cf = 0;
  TANDEM_HD_INLINE uint32_t put(uint64_t s) {
    cf = static_cast<uint32_t>(s >> 32);
    return static_cast<uint32_t>(s);
  }
  static TANDEM_HD_INLINE uint64_t lo(uint32_t a, uint32_t b) { return static_cast<uint32_t>(uint64_t{a} * b); }
  static TANDEM_HD_INLINE uint64_t hi(uint32_t a, uint32_t b) { return (uint64_t{a} * b) >> 32; }
  TANDEM_HD_INLINE uint32_t mad_lo_cc(uint32_t a, uint32_t b, uint32_t c) { return put(lo(a, b) + c); }
  TANDEM_HD_INLINE uint32_t madc_lo_cc(uint32_t a, uint32_t b, uint32_t c) { return put(lo(a, b) + c + cf); }
  TANDEM_HD_INLINE uint32_t mad_hi_cc(uint32_t a, uint32_t b, uint32_t c) { return put(hi(a, b) + c); }
  TANDEM_HD_INLINE uint32_t madc_hi_cc(uint32_t a, uint32_t b, uint32_t c) { return put(hi(a, b) + c + cf); }
  TANDEM_HD_INLINE uint32_t add_cc(uint32_t a, uint32_t b) { return put(uint64_t{a} + b); }
  TANDEM_HD_INLINE uint32_t addc_cc(uint32_t a, uint32_t b) { return put(uint64_t{a} + b + cf); }
  TANDEM_HD_INLINE uint32_t addc(uint32_t a, uint32_t b) { return a + b + cf; }
  // a - b - borrow as a 64-bit difference: bit 32 and up are all ones exactly when it borrows.
  TANDEM_HD_INLINE uint32_t sub_cc(uint32_t a, uint32_t b) { return put_borrow(uint64_t{a} - b); }
  TANDEM_HD_INLINE uint32_t subc_cc(uint32_t a, uint32_t b) { return put_borrow(uint64_t{a} - b - cf); }
  TANDEM_HD_INLINE uint32_t subc(uint32_t a, uint32_t b) { return a - b - cf; }
  TANDEM_HD_INLINE uint32_t put_borrow(uint64_t d) {
    cf = static_cast<uint32_t>(d >> 63);
    return static_cast<uint32_t>(d);
  }
};
#endif

// t[0..L+1] += a * b, where t[L+1] takes the carry out of t[L]. Low words of the products first,
// then the high words one position up: two chains, one flag.
TANDEM_HD_INLINE void mul_add_row(uint32_t (&t)[L + 2], const uint32_t (&a)[L], uint32_t b) {
  CarryChain c;
  t[0] = c.mad_lo_cc(a[0], b, t[0]);
  TANDEM_RSA_UNROLL
  for (int j = 1; j < L; ++j) t[j] = c.madc_lo_cc(a[j], b, t[j]);
  t[L] = c.addc_cc(t[L], 0);
  t[L + 1] = c.addc(0, 0);
  t[1] = c.mad_hi_cc(a[0], b, t[1]);
  TANDEM_RSA_UNROLL
  for (int j = 1; j < L; ++j) t[j + 1] = c.madc_hi_cc(a[j], b, t[j + 1]);
  t[L + 1] = c.addc(t[L + 1], 0);
}

// t = (t + m * n) / 2^32 for m = t[0] * n0inv, which makes the low word zero. The shift is free:
// each result goes straight to the position one word down.
TANDEM_HD_INLINE void reduce_row(uint32_t (&t)[L + 2], const uint32_t (&n)[L], uint32_t n0inv) {
  const uint32_t m = t[0] * n0inv;
  CarryChain c;
  (void)c.mad_lo_cc(m, n[0], t[0]);  // the low word: zero, only its carry matters
  TANDEM_RSA_UNROLL
  for (int j = 1; j < L; ++j) t[j - 1] = c.madc_lo_cc(m, n[j], t[j]);
  t[L - 1] = c.addc_cc(t[L], 0);
  t[L] = c.addc(t[L + 1], 0);
  t[0] = c.mad_hi_cc(m, n[0], t[0]);
  TANDEM_RSA_UNROLL
  for (int j = 1; j < L; ++j) t[j] = c.madc_hi_cc(m, n[j], t[j]);
  t[L] = c.addc(t[L], 0);
}

// r = x mod n for x = x[0..L) + top * 2^(32L) < 2n: subtracts n, then adds it back under a mask
// when that borrowed (no branch, and only x's registers live, no second array).
TANDEM_HD_INLINE void reduce_once(uint32_t (&r)[L], const uint32_t (&x)[L], uint32_t top, const uint32_t (&n)[L]) {
  CarryChain s;
  r[0] = s.sub_cc(x[0], n[0]);
  TANDEM_RSA_UNROLL
  for (int j = 1; j < L; ++j) r[j] = s.subc_cc(x[j], n[j]);
  const uint32_t back = s.subc(top, 0);  // all ones when x < n (the subtraction borrowed), else 0
  CarryChain a;
  r[0] = a.add_cc(r[0], n[0] & back);
  TANDEM_RSA_UNROLL
  for (int j = 1; j < L - 1; ++j) r[j] = a.addc_cc(r[j], n[j] & back);
  r[L - 1] = a.addc(r[L - 1], n[L - 1] & back);
}

}  // namespace rsa_detail

// r = a * b / R mod n (Montgomery multiplication), for a * b < R * n (e.g. a < R and b < n, or
// both < n): the result is fully reduced, < n. `a` and the modulus are register arrays; `b` is read
// one word per row, from memory. r may be a itself.
TANDEM_HD_INLINE void rsa_mont_mul(uint32_t (&r)[kRsaHalfLimbs], const uint32_t (&a)[kRsaHalfLimbs], const uint32_t* b,
                                   const uint32_t (&n)[kRsaHalfLimbs], uint32_t n0inv) {
  using namespace rsa_detail;
  uint32_t t[L + 2];
  TANDEM_RSA_UNROLL
  for (int j = 0; j < L + 2; ++j) t[j] = 0;
  // After each pass t < a + n < 2R, so t[L] <= 1 and t[L + 1] only carries within a pass; at the
  // end t = (a*b + M*n) / R < a*b/R + n < 2n.
  uint32_t bi = b[0];
  TANDEM_RSA_NO_UNROLL
  for (int i = 0; i < L; ++i) {
    // The next word is read a row ahead, so the load's latency hides behind this row's 270 or so
    // instructions instead of stalling the next row's first multiplication.
    const uint32_t next = b[(i + 1) & (L - 1)];
    mul_add_row(t, a, bi);
    reduce_row(t, n, n0inv);
    bi = next;
  }
  uint32_t low[L];
  TANDEM_RSA_UNROLL
  for (int j = 0; j < L; ++j) low[j] = t[j];
  reduce_once(r, low, t[L], n);
}

// a = a + b mod n for a, b < n (b in memory).
TANDEM_HD_INLINE void rsa_mod_add(uint32_t (&a)[kRsaHalfLimbs], const uint32_t* b, const uint32_t (&n)[kRsaHalfLimbs]) {
  using namespace rsa_detail;
  CarryChain c;
  a[0] = c.add_cc(a[0], b[0]);
  TANDEM_RSA_UNROLL
  for (int j = 1; j < L; ++j) a[j] = c.addc_cc(a[j], b[j]);
  const uint32_t top = c.addc(0, 0);
  reduce_once(a, a, top, n);
}

// a = a - b mod n for a, b < n (b in memory): subtracts, then adds n back under the borrow's mask.
TANDEM_HD_INLINE void rsa_mod_sub(uint32_t (&a)[kRsaHalfLimbs], const uint32_t* b, const uint32_t (&n)[kRsaHalfLimbs]) {
  using namespace rsa_detail;
  CarryChain s;
  a[0] = s.sub_cc(a[0], b[0]);
  TANDEM_RSA_UNROLL
  for (int j = 1; j < L; ++j) a[j] = s.subc_cc(a[j], b[j]);
  const uint32_t back = s.subc(0, 0);
  CarryChain c;
  a[0] = c.add_cc(a[0], n[0] & back);
  TANDEM_RSA_UNROLL
  for (int j = 1; j < L - 1; ++j) a[j] = c.addc_cc(a[j], n[j] & back);
  a[L - 1] = c.addc(a[L - 1], n[L - 1] & back);
}

// Whether a < b for numbers of Limbs words. The chain is unrolled: the carry flag of a PTX chain
// must not have to live across a loop's branch.
template <int Limbs>
TANDEM_HD_INLINE bool rsa_less_than(const uint32_t* a, const uint32_t* b) {
  rsa_detail::CarryChain s;
  (void)s.sub_cc(a[0], b[0]);
  TANDEM_RSA_UNROLL
  for (int j = 1; j < Limbs; ++j) (void)s.subc_cc(a[j], b[j]);
  return s.subc(0, 0) != 0;
}

// Window `bits` wide whose lowest bit is `bit`, of the 1024-bit exponent d.
TANDEM_HD_INLINE uint32_t rsa_window(const uint32_t* d, int bit, int bits) {
  const int w = bit >> 5;
  uint64_t x = d[w];
  if (w + 1 < kRsaHalfLimbs) x |= uint64_t{d[w + 1]} << 32;
  return static_cast<uint32_t>(x >> (bit & 31)) & ((1u << bits) - 1);
}

// r = table[w] (entries of kRsaHalfLimbs words), by the lookup's rule.
template <RsaTableLookup Lookup>
TANDEM_HD_INLINE void rsa_table_read(uint32_t (&r)[kRsaHalfLimbs], const uint32_t (*table)[kRsaHalfLimbs], uint32_t w) {
  if constexpr (Lookup == RsaTableLookup::kDirect) {
    TANDEM_RSA_UNROLL
    for (int j = 0; j < kRsaHalfLimbs; ++j) r[j] = table[w][j];
  } else {
    TANDEM_RSA_UNROLL
    for (int j = 0; j < kRsaHalfLimbs; ++j) r[j] = 0;
    TANDEM_RSA_NO_UNROLL
    for (uint32_t e = 0; e < kRsaWindowEntries; ++e) {
      // All ones for the wanted entry, else zero, computed without a comparison the compiler could
      // turn into a branch: (e ^ w) - 1 borrows into bit 31 only when e == w (both below 2^31).
      const uint32_t keep = 0u - (((e ^ w) - 1) >> 31);
      TANDEM_RSA_UNROLL
      for (int j = 0; j < kRsaHalfLimbs; ++j) r[j] |= table[e][j] & keep;
    }
  }
}

// r = c^d mod p for one CRT half: c is the whole 2048-bit input (kRsaLimbs words in memory), r is
// fully reduced.
template <RsaTableLookup Lookup>
TANDEM_HD_INLINE void rsa_crt_half(const RsaCrtHalf& h, const uint32_t* c, uint32_t (&r)[kRsaHalfLimbs]) {
  constexpr int L = kRsaHalfLimbs;
  uint32_t n[L];
  TANDEM_RSA_UNROLL
  for (int j = 0; j < L; ++j) n[j] = h.mod.n[j];
  const uint32_t n0inv = h.mod.n0inv;
  uint32_t table[kRsaWindowEntries][L];  // c^k in Montgomery form
  uint32_t b[L];                         // the memory operand of a squaring
  uint32_t acc[L];

  // c * R mod p = c_hi * R^3 / R + c_lo * R^2 / R, with c = c_hi * R + c_lo: both products are
  // below R * p (c_hi, c_lo < R; R^3, R^2 mod p < p), so each result is reduced.
  TANDEM_RSA_UNROLL
  for (int j = 0; j < L; ++j) acc[j] = c[j];
  rsa_mont_mul(acc, acc, h.mod.rr, n, n0inv);
  TANDEM_RSA_UNROLL
  for (int j = 0; j < L; ++j) b[j] = acc[j];
  TANDEM_RSA_UNROLL
  for (int j = 0; j < L; ++j) acc[j] = c[L + j];
  rsa_mont_mul(acc, acc, h.mod.rrr, n, n0inv);
  rsa_mod_add(acc, b, n);

  TANDEM_RSA_UNROLL
  for (int j = 0; j < L; ++j) {
    table[0][j] = h.mod.one[j];
    table[1][j] = acc[j];
  }
  TANDEM_RSA_NO_UNROLL
  for (int k = 2; k < kRsaWindowEntries; ++k) {
    rsa_mont_mul(acc, acc, table[1], n, n0inv);
    TANDEM_RSA_UNROLL
    for (int j = 0; j < L; ++j) table[k][j] = acc[j];
  }

  // The top window is 1024 mod 5 = 4 bits wide; then 204 windows of 5 bits down to bit 0.
  constexpr int kBits = 32 * L;
  constexpr int kTop = kBits % kRsaWindowBits;
  rsa_table_read<Lookup>(acc, table, rsa_window(h.d, kBits - kTop, kTop));
  TANDEM_RSA_NO_UNROLL
  for (int bit = kBits - kTop - kRsaWindowBits; bit >= 0; bit -= kRsaWindowBits) {
    TANDEM_RSA_NO_UNROLL
    for (int s = 0; s < kRsaWindowBits; ++s) {
      TANDEM_RSA_UNROLL
      for (int j = 0; j < L; ++j) b[j] = acc[j];
      rsa_mont_mul(acc, acc, b, n, n0inv);
    }
    const uint32_t w = rsa_window(h.d, bit, kRsaWindowBits);
    if constexpr (Lookup == RsaTableLookup::kDirect) {
      rsa_mont_mul(acc, acc, table[w], n, n0inv);
    } else {
      uint32_t e[L];
      rsa_table_read<Lookup>(e, table, w);
      TANDEM_RSA_UNROLL
      for (int j = 0; j < L; ++j) b[j] = e[j];
      rsa_mont_mul(acc, acc, b, n, n0inv);
    }
  }

  // Out of Montgomery form: acc * 1 / R, reduced since acc * 1 < R * p.
  TANDEM_RSA_UNROLL
  for (int j = 0; j < L; ++j) b[j] = j == 0;
  rsa_mont_mul(r, acc, b, n, n0inv);
}

// m = m2 + q * (qinv * (m1 - m2) mod p): the 2048-bit result (kRsaLimbs words to memory) from the
// two halves in memory, m1 = c^dp mod p (< p) and m2 = c^dq mod q (< q). m2 may exceed p: the
// products with qinv * R reduce both terms mod p before the subtraction. The halves are read from
// memory as needed, so no more than one 32-word number besides the multiplication's own registers
// is live at a time.
TANDEM_HD_INLINE void rsa_crt_combine(const RsaCrtKey& k, const uint32_t* m1, const uint32_t* m2, uint32_t* m) {
  using namespace rsa_detail;
  const RsaMontModulus& p = k.half[0].mod;
  uint32_t pn[L], a[L], x[L];
  TANDEM_RSA_UNROLL
  for (int j = 0; j < L; ++j) pn[j] = p.n[j];
  TANDEM_RSA_UNROLL
  for (int j = 0; j < L; ++j) a[j] = m2[j];
  rsa_mont_mul(a, a, k.qinv_r, pn, p.n0inv);  // m2 * qinv mod p
  TANDEM_RSA_UNROLL
  for (int j = 0; j < L; ++j) x[j] = a[j];
  TANDEM_RSA_UNROLL
  for (int j = 0; j < L; ++j) a[j] = m1[j];
  rsa_mont_mul(a, a, k.qinv_r, pn, p.n0inv);  // m1 * qinv mod p
  rsa_mod_sub(a, x, pn);                      // h

  // m = m2 + sum_i h * q[i] * 2^(32 i): the window t holds the words not yet final, and one leaves
  // per row. h < p and m2 < q give m < p*q, so nothing carries past word 63.
  const uint32_t* q = k.half[1].mod.n;
  uint32_t t[L + 2];
  TANDEM_RSA_UNROLL
  for (int j = 0; j < L; ++j) t[j] = m2[j];
  t[L] = t[L + 1] = 0;
  TANDEM_RSA_NO_UNROLL
  for (int i = 0; i < L; ++i) {
    mul_add_row(t, a, q[i]);
    m[i] = t[0];
    TANDEM_RSA_UNROLL
    for (int j = 0; j < L + 1; ++j) t[j] = t[j + 1];
  }
  TANDEM_RSA_UNROLL
  for (int j = 0; j < L; ++j) m[L + j] = t[j];
}

// The whole private operation on one thread: m = c^d mod n for c < n (kRsaLimbs words each).
template <RsaTableLookup Lookup = RsaTableLookup::kScan>
TANDEM_HD_INLINE void rsa_crt_private(const RsaCrtKey& k, const uint32_t* c, uint32_t* m) {
  uint32_t m1[kRsaHalfLimbs], m2[kRsaHalfLimbs];
  rsa_crt_half<Lookup>(k.half[0], c, m1);
  rsa_crt_half<Lookup>(k.half[1], c, m2);
  rsa_crt_combine(k, m1, m2, m);
}

// Big-endian bytes (OpenSSL's and the wire's order) to little-endian limbs and back.
TANDEM_HD_INLINE void rsa_from_bytes(const uint8_t* be, int limbs, uint32_t* x) {
  for (int j = 0; j < limbs; ++j) {
    const uint8_t* p = be + 4 * (limbs - 1 - j);
    x[j] = uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
  }
}
TANDEM_HD_INLINE void rsa_to_bytes(const uint32_t* x, int limbs, uint8_t* be) {
  for (int j = 0; j < limbs; ++j) {
    uint8_t* p = be + 4 * (limbs - 1 - j);
    p[0] = static_cast<uint8_t>(x[j] >> 24);
    p[1] = static_cast<uint8_t>(x[j] >> 16);
    p[2] = static_cast<uint8_t>(x[j] >> 8);
    p[3] = static_cast<uint8_t>(x[j]);
  }
}

// Host-side key setup.

// The Montgomery constants of an odd modulus n < 2^1024 (big-endian, kRsaHalfBytes bytes).
// Throws std::invalid_argument for an even modulus or 1.
inline RsaMontModulus make_rsa_mont_modulus(const uint8_t* n_be) {
  constexpr int L = kRsaHalfLimbs;
  RsaMontModulus m{};
  rsa_from_bytes(n_be, L, m.n);
  bool above_one = false;
  for (int j = 1; j < L; ++j) above_one |= m.n[j] != 0;
  if ((m.n[0] & 1) == 0 || !(above_one || m.n[0] > 1)) {
    throw std::invalid_argument("rsa: a CRT modulus must be odd and above 1");
  }
  // -n^-1 mod 2^32 by Newton's iteration: an odd n is its own inverse mod 8, and every step
  // doubles the number of correct low bits (3, 6, 12, 24, 48).
  uint32_t inv = m.n[0];
  for (int i = 0; i < 4; ++i) inv *= 2 - m.n[0] * inv;
  m.n0inv = 0u - inv;
  // R^2 mod n by doubling 1 2048 times (branch-free modular additions: p is secret); then
  // R = R^2 * 1 / R and R^3 = R^2 * R^2 / R by Montgomery multiplication.
  uint32_t n[L], x[L] = {1};
  for (int j = 0; j < L; ++j) n[j] = m.n[j];
  for (int i = 0; i < 2 * 32 * L; ++i) {
    uint32_t copy[L];
    for (int j = 0; j < L; ++j) copy[j] = x[j];
    rsa_mod_add(x, copy, n);
  }
  for (int j = 0; j < L; ++j) m.rr[j] = x[j];
  const uint32_t unit[L] = {1};
  uint32_t y[L];
  rsa_mont_mul(y, x, unit, n, m.n0inv);
  for (int j = 0; j < L; ++j) m.one[j] = y[j];
  rsa_mont_mul(y, x, m.rr, n, m.n0inv);
  for (int j = 0; j < L; ++j) m.rrr[j] = y[j];
  return m;
}

// A key from its parts, big-endian as OpenSSL's BN_bn2binpad writes them: n in kRsaBytes bytes, the
// others in kRsaHalfBytes (so every part is below 2^1024 by its width). Throws
// std::invalid_argument if a prime is even (or 1), or qinv is not below p.
inline RsaCrtKey make_rsa_crt_key(const uint8_t* n, const uint8_t* p, const uint8_t* q, const uint8_t* dp,
                                  const uint8_t* dq, const uint8_t* qinv) {
  constexpr int L = kRsaHalfLimbs;
  RsaCrtKey k{};
  k.half[0].mod = make_rsa_mont_modulus(p);
  k.half[1].mod = make_rsa_mont_modulus(q);
  rsa_from_bytes(dp, L, k.half[0].d);
  rsa_from_bytes(dq, L, k.half[1].d);
  rsa_from_bytes(n, kRsaLimbs, k.n);
  uint32_t qi[L], pn[L];
  rsa_from_bytes(qinv, L, qi);
  for (int j = 0; j < L; ++j) pn[j] = k.half[0].mod.n[j];
  if (!rsa_less_than<L>(qi, k.half[0].mod.n)) throw std::invalid_argument("rsa: qinv must be below p");
  uint32_t r[L];
  rsa_mont_mul(r, qi, k.half[0].mod.rr, pn, k.half[0].mod.n0inv);  // qinv * R^2 / R
  for (int j = 0; j < L; ++j) k.qinv_r[j] = r[j];
  return k;
}

}  // namespace tandem::crypto
