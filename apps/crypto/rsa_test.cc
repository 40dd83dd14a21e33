// The RSA code written for the GPU (rsa_core.h) against OpenSSL: Montgomery multiplication, the
// modular helpers, the key constants and exponentiation against BIGNUM on random values; the whole
// CRT private operation against OpenSSL's raw RSA for generated 2048-bit keys, random inputs and
// the edges (0, 1, n - 1, multiples of p and q). Where a GPU is usable, the batch kernel against
// OpenSSL operation by operation, with several keys, both table lookups and refused inputs.
#include <gtest/gtest.h>
#include <openssl/bn.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "apps/crypto/rsa_core.h"
#include "apps/crypto/rsa_cpu.h"
#include "apps/crypto/rsa_gpu.h"
#include "tests/test_util.h"

namespace tandem::crypto {
namespace {

constexpr int L = kRsaHalfLimbs;

struct BnDeleter {
  void operator()(BIGNUM* b) const { BN_free(b); }
};
using Bn = std::unique_ptr<BIGNUM, BnDeleter>;
struct CtxDeleter {
  void operator()(BN_CTX* c) const { BN_CTX_free(c); }
};

// Limbs are little-endian words, so on a little-endian host their bytes are a little-endian number.
Bn bn_from_limbs(const uint32_t* x, int limbs) {
  uint8_t le[4 * kRsaLimbs];
  for (int j = 0; j < limbs; ++j) {
    for (int b = 0; b < 4; ++b) le[4 * j + b] = static_cast<uint8_t>(x[j] >> (8 * b));
  }
  return Bn(BN_lebin2bn(le, 4 * limbs, nullptr));
}
void limbs_from_bn(const BIGNUM* b, int limbs, uint32_t* x) {
  uint8_t le[4 * kRsaLimbs];
  ASSERT_EQ(BN_bn2lebinpad(b, le, 4 * limbs), 4 * limbs);
  for (int j = 0; j < limbs; ++j) {
    x[j] = uint32_t{le[4 * j]} | uint32_t{le[4 * j + 1]} << 8 | uint32_t{le[4 * j + 2]} << 16 | uint32_t{le[4 * j + 3]} << 24;
  }
}
Bn bn_from_bytes(const uint8_t* be, size_t n) { return Bn(BN_bin2bn(be, static_cast<int>(n), nullptr)); }

class Rng {
 public:
  explicit Rng(uint64_t seed) : g_(seed) {}
  void fill(uint32_t* x, int limbs) {
    for (int j = 0; j < limbs; ++j) x[j] = static_cast<uint32_t>(g_());
  }
  // Uniform-enough below m (a random number of twice the width, reduced).
  Bn below(const BIGNUM* m) {
    uint32_t wide[2 * kRsaLimbs];
    fill(wide, 2 * kRsaLimbs);
    Bn x = bn_from_limbs(wide, kRsaLimbs), y(BN_new());
    std::unique_ptr<BN_CTX, CtxDeleter> ctx(BN_CTX_new());
    BN_nnmod(y.get(), x.get(), m, ctx.get());
    return y;
  }
  uint64_t next() { return g_(); }

 private:
  std::mt19937_64 g_;
};

// A random odd modulus of `bits` bits (top bit set), as limbs, and its constants.
RsaMontModulus random_modulus(Rng& rng, int bits) {
  uint32_t n[L];
  rng.fill(n, L);
  for (int j = 0; j < L; ++j) {
    const int lo = 32 * j;
    if (lo >= bits) n[j] = 0;
    else if (lo + 32 > bits) n[j] &= (1u << (bits - lo)) - 1;
  }
  n[(bits - 1) / 32] |= 1u << ((bits - 1) % 32);
  n[0] |= 1;
  uint8_t be[kRsaHalfBytes];
  rsa_to_bytes(n, L, be);
  return make_rsa_mont_modulus(be);
}

// Three RSA-2048 keys for the whole test program (generating one takes up to a second).
const std::vector<RsaPrivateKey>& keys() {
  static const std::vector<RsaPrivateKey> k = [] {
    std::vector<RsaPrivateKey> v;
    for (int i = 0; i < 3; ++i) v.push_back(RsaPrivateKey::generate(2048));
    return v;
  }();
  return k;
}

struct BnFixture {
  std::unique_ptr<BN_CTX, CtxDeleter> ctx{BN_CTX_new()};
  Bn r_mod(const BIGNUM* n, int power) {  // R^power mod n, R = 2^1024
    Bn r(BN_new()), out(BN_new());
    BN_set_bit(r.get(), 1024 * power);
    BN_nnmod(out.get(), r.get(), n, ctx.get());
    return out;
  }
};

TEST(Rsa, ModulusConstantsMatchBignum) {
  Rng rng(1);
  BnFixture f;
  for (int bits : {1024, 1023, 1000, 523, 64}) {
    const RsaMontModulus m = random_modulus(rng, bits);
    Bn n = bn_from_limbs(m.n, L);
    EXPECT_EQ(m.n0inv * m.n[0], 0xffffffffu) << bits;  // n * n' = -1 mod 2^32
    for (auto [limbs, power] : {std::pair{m.one, 1}, {m.rr, 2}, {m.rrr, 3}}) {
      Bn want = f.r_mod(n.get(), power);
      EXPECT_EQ(BN_cmp(bn_from_limbs(limbs, L).get(), want.get()), 0) << bits << " bits, R^" << power;
    }
  }
  const uint8_t even[kRsaHalfBytes] = {0x80};
  EXPECT_THROW(make_rsa_mont_modulus(even), std::invalid_argument);
  uint8_t one[kRsaHalfBytes] = {};
  one[kRsaHalfBytes - 1] = 1;
  EXPECT_THROW(make_rsa_mont_modulus(one), std::invalid_argument);
}

// r * R = a * b (mod n), r < n, for random and extreme operands; a may be any value below R.
TEST(Rsa, MontMulMatchesBignum) {
  Rng rng(2);
  BnFixture f;
  for (int bits : {1024, 1017, 700}) {
    const RsaMontModulus m = random_modulus(rng, bits);
    uint32_t n[L];
    std::memcpy(n, m.n, sizeof n);
    Bn bn_n = bn_from_limbs(m.n, L);
    Bn r_mod_n = f.r_mod(bn_n.get(), 1);
    Bn n_minus_1(BN_dup(bn_n.get()));
    BN_sub_word(n_minus_1.get(), 1);
    for (int i = 0; i < 200; ++i) {
      Bn a = rng.below(bn_n.get()), b = rng.below(bn_n.get());
      if (i == 0) BN_copy(a.get(), n_minus_1.get()), BN_copy(b.get(), n_minus_1.get());
      if (i == 1) BN_zero(a.get());
      if (i == 2) BN_one(b.get());
      uint32_t x[L], y[L], r[L];
      limbs_from_bn(a.get(), L, x);
      limbs_from_bn(b.get(), L, y);
      if (i == 3) std::memset(x, 0xff, sizeof x);  // a = R - 1 (above n): allowed with b < n
      Bn ax = bn_from_limbs(x, L);
      rsa_mont_mul(r, x, y, n, m.n0inv);
      Bn got = bn_from_limbs(r, L), lhs(BN_new()), rhs(BN_new());
      ASSERT_LT(BN_cmp(got.get(), bn_n.get()), 0) << bits << " bits, case " << i;
      BN_mod_mul(lhs.get(), got.get(), r_mod_n.get(), bn_n.get(), f.ctx.get());
      BN_mod_mul(rhs.get(), ax.get(), b.get(), bn_n.get(), f.ctx.get());
      ASSERT_EQ(BN_cmp(lhs.get(), rhs.get()), 0) << bits << " bits, case " << i;
    }
  }
}

TEST(Rsa, ModAddSubMatchBignum) {
  Rng rng(3);
  BnFixture f;
  const RsaMontModulus m = random_modulus(rng, 1024);
  uint32_t n[L];
  std::memcpy(n, m.n, sizeof n);
  Bn bn_n = bn_from_limbs(m.n, L);
  for (int i = 0; i < 300; ++i) {
    Bn a = rng.below(bn_n.get()), b = rng.below(bn_n.get());
    if (i == 0) BN_sub(a.get(), bn_n.get(), BN_value_one()), BN_copy(b.get(), a.get());
    if (i == 1) BN_zero(a.get());
    uint32_t x[L], y[L], s[L], d[L];
    limbs_from_bn(a.get(), L, x);
    limbs_from_bn(b.get(), L, y);
    std::memcpy(s, x, sizeof s);
    std::memcpy(d, x, sizeof d);
    rsa_mod_add(s, y, n);
    rsa_mod_sub(d, y, n);
    Bn want_s(BN_new()), want_d(BN_new());
    BN_mod_add(want_s.get(), a.get(), b.get(), bn_n.get(), f.ctx.get());
    BN_mod_sub(want_d.get(), a.get(), b.get(), bn_n.get(), f.ctx.get());
    ASSERT_EQ(BN_cmp(bn_from_limbs(s, L).get(), want_s.get()), 0) << i;
    ASSERT_EQ(BN_cmp(bn_from_limbs(d, L).get(), want_d.get()), 0) << i;
  }
}

// One CRT half as modular exponentiation in its own right: c^d mod m for a 2048-bit c, random odd
// moduli (not only primes) and exponents of every shape.
template <RsaTableLookup Lookup>
void check_exponentiation() {
  Rng rng(4);
  BnFixture f;
  for (int t = 0; t < 6; ++t) {
    RsaCrtHalf h{};
    h.mod = random_modulus(rng, t < 4 ? 1024 : 1021);
    rng.fill(h.d, L);
    if (t == 1) std::memset(h.d, 0, sizeof h.d);     // d = 0: c^0 = 1
    if (t == 2) std::memset(h.d, 0, sizeof h.d), h.d[0] = 1;  // d = 1
    if (t == 3) std::memset(h.d, 0xff, sizeof h.d);  // every window 31
    if (t == 4) std::memset(h.d, 0, sizeof h.d), h.d[5] = 0x10000;  // one bit, mid-way
    uint32_t c[kRsaLimbs];
    rng.fill(c, kRsaLimbs);
    if (t == 5) std::memset(c, 0, sizeof c);
    uint32_t r[L];
    rsa_crt_half<Lookup>(h, c, r);
    Bn bn_c = bn_from_limbs(c, kRsaLimbs), bn_d = bn_from_limbs(h.d, L), bn_n = bn_from_limbs(h.mod.n, L);
    Bn want(BN_new());
    BN_mod_exp(want.get(), bn_c.get(), bn_d.get(), bn_n.get(), f.ctx.get());
    EXPECT_EQ(BN_cmp(bn_from_limbs(r, L).get(), want.get()), 0) << "case " << t;
  }
}
TEST(Rsa, ExponentiationMatchesBignumScan) { check_exponentiation<RsaTableLookup::kScan>(); }
TEST(Rsa, ExponentiationMatchesBignumDirect) { check_exponentiation<RsaTableLookup::kDirect>(); }

// Inputs for one key: the edges (0, 1, n - 1, 3p and q: zero modulo one prime), then random
// values below n.
std::vector<std::array<uint8_t, kRsaBytes>> inputs_for(const RsaKeyParts& p, Rng& rng, int random_count) {
  Bn n = bn_from_bytes(p.n.data(), p.n.size());
  Bn n_minus_1(BN_dup(n.get())), p3 = bn_from_bytes(p.p.data(), p.p.size());
  BN_sub_word(n_minus_1.get(), 1);
  BN_mul_word(p3.get(), 3);
  std::vector<Bn> values;
  values.emplace_back(BN_new());
  BN_zero(values.back().get());
  values.emplace_back(BN_new());
  BN_one(values.back().get());
  values.push_back(std::move(n_minus_1));
  values.push_back(std::move(p3));
  values.push_back(bn_from_bytes(p.q.data(), p.q.size()));
  for (int i = 0; i < random_count; ++i) values.push_back(rng.below(n.get()));
  std::vector<std::array<uint8_t, kRsaBytes>> v(values.size());
  for (size_t i = 0; i < values.size(); ++i) BN_bn2binpad(values[i].get(), v[i].data(), kRsaBytes);
  return v;
}

TEST(Rsa, CrtPrivateMatchesOpenssl) {
  Rng rng(5);
  for (const RsaPrivateKey& key : keys()) {
    const RsaKeyParts parts = key.parts();
    ASSERT_EQ(parts.e, 65537u);
    const RsaCrtKey k = rsa_crt_key(key);
    RsaPrivateOp op(key);
    ASSERT_EQ(op.bytes(), kRsaBytes);
    BnFixture f;
    Bn n = bn_from_bytes(parts.n.data(), parts.n.size()), d = bn_from_bytes(parts.d.data(), parts.d.size());
    int i = 0;
    for (const auto& in : inputs_for(parts, rng, 4)) {
      uint8_t want[kRsaBytes], got[kRsaBytes];
      ASSERT_TRUE(op.run(in.data(), want));
      uint32_t c[kRsaLimbs], m[kRsaLimbs];
      rsa_from_bytes(in.data(), kRsaLimbs, c);
      ASSERT_TRUE(rsa_less_than<kRsaLimbs>(c, k.n));
      if (i % 2) rsa_crt_private<RsaTableLookup::kDirect>(k, c, m);
      else rsa_crt_private<RsaTableLookup::kScan>(k, c, m);
      rsa_to_bytes(m, kRsaLimbs, got);
      EXPECT_EQ(0, std::memcmp(got, want, kRsaBytes)) << "input " << i;
      if (i == 5) {  // and once against c^d mod n without the CRT
        Bn bc = bn_from_bytes(in.data(), kRsaBytes), e(BN_new());
        BN_mod_exp(e.get(), bc.get(), d.get(), n.get(), f.ctx.get());
        EXPECT_EQ(BN_cmp(bn_from_bytes(got, kRsaBytes).get(), e.get()), 0);
      }
      ++i;
    }
  }
}

TEST(Rsa, OpensslRefusesInputsNotBelowN) {
  const RsaPrivateKey& key = keys()[0];
  const RsaKeyParts parts = key.parts();
  RsaPrivateOp op(key);
  uint8_t out[kRsaBytes];
  EXPECT_FALSE(op.run(parts.n.data(), out));
  EXPECT_EQ(out[0], 0);
  std::vector<uint8_t> in(2 * kRsaBytes, 0xff), outs(2 * kRsaBytes);
  in[kRsaBytes] = 0;  // the second input is below n
  uint8_t status[2];
  EXPECT_EQ(op.run_batch(in.data(), 2, outs.data(), status), 1u);
  EXPECT_EQ(status[0], 0);
  EXPECT_EQ(status[1], 1);
}

TEST(Rsa, PemRoundTripKeepsTheKey) {
  const RsaPrivateKey& key = keys()[1];
  const RsaPrivateKey back = RsaPrivateKey::from_pem(key.to_pem());
  const RsaKeyParts a = key.parts(), b = back.parts();
  EXPECT_EQ(a.n, b.n);
  EXPECT_EQ(a.d, b.d);
  EXPECT_EQ(a.qinv, b.qinv);
  EXPECT_THROW(RsaPrivateKey::from_pem("not a key"), std::runtime_error);
  EXPECT_THROW(RsaPrivateKey::generate(1024).parts(), std::invalid_argument);
}

// The batch kernel: 3 keys, per-operation key indices, edges, random inputs, refused inputs
// (c = n, c = 2^2048 - 1) and an unknown key index; then one key for all. Both lookups.
TEST(Rsa, GpuBatchMatchesOpenssl) {
  TANDEM_REQUIRE_GPU();
  Rng rng(6);
  std::vector<RsaCrtKey> crt;
  std::vector<std::unique_ptr<RsaPrivateOp>> ops;
  std::vector<RsaKeyParts> parts;
  for (const RsaPrivateKey& k : keys()) {
    crt.push_back(rsa_crt_key(k));
    ops.push_back(std::make_unique<RsaPrivateOp>(k));
    parts.push_back(k.parts());
  }
  struct Case {
    std::array<uint8_t, kRsaBytes> in;
    uint32_t key;
  };
  std::vector<Case> cases;
  for (uint32_t k = 0; k < crt.size(); ++k) {
    for (const auto& in : inputs_for(parts[k], rng, 331)) cases.push_back({in, k});
  }
  std::array<uint8_t, kRsaBytes> all_ones;
  all_ones.fill(0xff);
  cases.push_back({parts[1].n, 1});
  cases.push_back({all_ones, 2});
  cases.push_back({cases[7].in, 99});  // no such key
  // Mix keys within warps, and leave the last warp part-full (an odd count of operations).
  std::shuffle(cases.begin(), cases.end(), std::mt19937_64(rng.next()));
  const size_t n = cases.size();
  ASSERT_NE(n % 16, 0u);

  auto gpu = RsaGpu::create(crt, n + 5);
  std::vector<uint8_t> want(n * kRsaBytes);
  std::vector<uint8_t> want_ok(n);
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(gpu->inputs() + i * kRsaBytes, cases[i].in.data(), kRsaBytes);
    gpu->key_indices()[i] = cases[i].key;
    want_ok[i] = cases[i].key < crt.size() && ops[cases[i].key]->run(cases[i].in.data(), &want[i * kRsaBytes]);
    if (!want_ok[i]) std::memset(&want[i * kRsaBytes], 0, kRsaBytes);
  }
  for (RsaTableLookup lookup : {RsaTableLookup::kScan, RsaTableLookup::kDirect}) {
    gpu->run(n, true, lookup);
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) {
      const bool same = gpu->status()[i] == want_ok[i] &&
                        std::memcmp(gpu->outputs() + i * kRsaBytes, &want[i * kRsaBytes], kRsaBytes) == 0;
      if (!same && ++wrong <= 5) ADD_FAILURE() << "operation " << i << " (key " << cases[i].key << ") differs";
    }
    EXPECT_EQ(wrong, 0u) << "lookup " << static_cast<int>(lookup);
    const RsaKernelInfo info = gpu->kernel_info(lookup);
    EXPECT_GT(info.registers, 0);
    EXPECT_GT(info.blocks_per_sm, 0);
  }

  // One key for all: the operations of key 0 only, without indices.
  size_t m = 0;
  std::vector<size_t> of_key0;
  for (size_t i = 0; i < n; ++i) {
    if (cases[i].key != 0) continue;
    std::memcpy(gpu->inputs() + m * kRsaBytes, cases[i].in.data(), kRsaBytes);
    gpu->key_indices()[m] = 12345;  // ignored without per_key
    of_key0.push_back(i);
    ++m;
  }
  gpu->run(m);
  for (size_t j = 0; j < m; ++j) {
    ASSERT_EQ(gpu->status()[j], 1) << j;
    ASSERT_EQ(0, std::memcmp(gpu->outputs() + j * kRsaBytes, &want[of_key0[j] * kRsaBytes], kRsaBytes)) << j;
  }
  EXPECT_GT(gpu->time_kernel(m, false, RsaTableLookup::kScan, 1), 0);
  EXPECT_THROW(gpu->run(n + 6), std::invalid_argument);
  EXPECT_THROW(RsaGpu::create({}, 1), std::invalid_argument);
}

}  // namespace
}  // namespace tandem::crypto
