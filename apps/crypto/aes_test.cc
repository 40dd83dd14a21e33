// The AES, CBC and GCM code written for the GPU (aes_core.h), run on the host against the
// published test vectors (FIPS 197, SP 800-38A, the GCM specification's test cases) and, byte for
// byte, against OpenSSL's EVP ciphers for random keys, IVs and lengths.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "apps/crypto/aes_core.h"

namespace tandem::crypto {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes from_hex(const std::string& s) {
  auto nibble = [](char c) { return static_cast<uint8_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10); };
  Bytes b(s.size() / 2);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(nibble(s[2 * i]) << 4 | nibble(s[2 * i + 1]));
  return b;
}

std::string hex(const Bytes& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t x : b) s += {d[x >> 4], d[x & 15]};
  return s;
}

Bytes random_bytes(std::mt19937_64& rng, size_t n) {
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

const AesTables* tables() { return &aes_tables(); }

// ---- OpenSSL references ----

struct CtxFree {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
using Ctx = std::unique_ptr<EVP_CIPHER_CTX, CtxFree>;

Bytes openssl_cbc(bool encrypt, const Bytes& key, const Bytes& iv, const Bytes& in) {
  const EVP_CIPHER* cipher = key.size() == 16 ? EVP_aes_128_cbc() : EVP_aes_256_cbc();
  Ctx ctx(EVP_CIPHER_CTX_new());
  Bytes out(in.size() + 16);
  int len = 0, fin = 0;
  EXPECT_EQ(EVP_CipherInit_ex(ctx.get(), cipher, nullptr, key.data(), iv.data(), encrypt ? 1 : 0), 1);
  EXPECT_EQ(EVP_CIPHER_CTX_set_padding(ctx.get(), 0), 1);
  EXPECT_EQ(EVP_CipherUpdate(ctx.get(), out.data(), &len, in.data(), static_cast<int>(in.size())), 1);
  EXPECT_EQ(EVP_CipherFinal_ex(ctx.get(), out.data() + len, &fin), 1);
  out.resize(static_cast<size_t>(len + fin));
  return out;
}

// Ciphertext followed by the 16-byte tag.
Bytes openssl_gcm_seal(const Bytes& key, const Bytes& iv, const Bytes& aad, const Bytes& plain) {
  const EVP_CIPHER* cipher = key.size() == 16 ? EVP_aes_128_gcm() : EVP_aes_256_gcm();
  Ctx ctx(EVP_CIPHER_CTX_new());
  Bytes out(plain.size() + 16);
  int len = 0, fin = 0;
  EXPECT_EQ(EVP_EncryptInit_ex(ctx.get(), cipher, nullptr, key.data(), iv.data()), 1);  // 96-bit IV is the default
  EXPECT_EQ(EVP_EncryptUpdate(ctx.get(), nullptr, &len, aad.data(), static_cast<int>(aad.size())), 1);
  EXPECT_EQ(EVP_EncryptUpdate(ctx.get(), out.data(), &len, plain.data(), static_cast<int>(plain.size())), 1);
  EXPECT_EQ(EVP_EncryptFinal_ex(ctx.get(), out.data() + len, &fin), 1);
  EXPECT_EQ(static_cast<size_t>(len + fin), plain.size());
  EXPECT_EQ(EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, 16, out.data() + plain.size()), 1);
  return out;
}

// ---- Published vectors ----

// FIPS 197 Appendix C.1 (AES-128) and C.3 (AES-256).
TEST(Aes, Fips197Blocks) {
  struct Case {
    const char* key;
    const char* cipher;
  };
  const Case cases[] = {
      {"000102030405060708090a0b0c0d0e0f", "69c4e0d86a7b0430d8cdb78070b4c55a"},
      {"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", "8ea2b7ca516745bfeafc49904b496089"},
  };
  const Bytes plain = from_hex("00112233445566778899aabbccddeeff");
  for (const Case& c : cases) {
    const Bytes key = from_hex(c.key);
    AesKey enc, dec;
    ASSERT_TRUE(aes_expand_enc_key(&enc, tables(), key.data(), static_cast<uint32_t>(key.size())));
    ASSERT_TRUE(aes_expand_dec_key(&dec, tables(), key.data(), static_cast<uint32_t>(key.size())));
    EXPECT_EQ(enc.rounds, key.size() == 16 ? 10u : 14u);
    Bytes block = plain;
    aes_encrypt_block(enc, tables(), block.data(), block.data());  // in place
    EXPECT_EQ(hex(block), c.cipher) << c.key;
    Bytes back(16);
    aes_decrypt_block(dec, tables(), block.data(), back.data());
    EXPECT_EQ(back, plain) << c.key;
  }
}

TEST(Aes, KeyLengthsOtherThan128And256AreRejected) {
  const Bytes key(32, 0x5a);
  for (uint32_t len : {0u, 8u, 15u, 17u, 24u, 31u, 33u}) {
    AesKey k{};
    k.rounds = 77;
    GcmKey g{};
    EXPECT_FALSE(aes_expand_enc_key(&k, tables(), key.data(), len)) << len;
    EXPECT_FALSE(aes_expand_dec_key(&k, tables(), key.data(), len)) << len;
    EXPECT_FALSE(gcm_key_init(&g, tables(), key.data(), len)) << len;
    EXPECT_EQ(k.rounds, 77u);
  }
}

// SP 800-38A F.2.1/F.2.2 (CBC-AES128) and F.2.5/F.2.6 (CBC-AES256): one plaintext, one IV.
TEST(Aes, Sp80038aCbc) {
  const Bytes iv = from_hex("000102030405060708090a0b0c0d0e0f");
  const Bytes plain = from_hex(
      "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
      "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710");
  struct Case {
    const char* key;
    const char* cipher;
  };
  const Case cases[] = {
      {"2b7e151628aed2a6abf7158809cf4f3c",
       "7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b2"
       "73bed6b8e3c1743b7116e69e222295163ff1caa1681fac09120eca307586e1a7"},
      {"603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
       "f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d"
       "39f23369a9d9bacfa530e26304231461b2eb05e2c39be9fcda6c19078c6a9d1b"},
  };
  for (const Case& c : cases) {
    const Bytes key = from_hex(c.key);
    AesKey enc, dec;
    ASSERT_TRUE(aes_expand_enc_key(&enc, tables(), key.data(), static_cast<uint32_t>(key.size())));
    ASSERT_TRUE(aes_expand_dec_key(&dec, tables(), key.data(), static_cast<uint32_t>(key.size())));
    Bytes data = plain;
    ASSERT_TRUE(aes_cbc_encrypt(enc, tables(), iv.data(), data.data(), static_cast<uint32_t>(data.size())));
    EXPECT_EQ(hex(data), c.cipher) << c.key;
    ASSERT_TRUE(aes_cbc_decrypt(dec, tables(), iv.data(), data.data(), static_cast<uint32_t>(data.size())));
    EXPECT_EQ(data, plain) << c.key;
  }
}

TEST(Aes, CbcRejectsPartialBlocksAndLeavesDataAlone) {
  const Bytes key(16, 1), iv(16, 2);
  AesKey enc, dec;
  ASSERT_TRUE(aes_expand_enc_key(&enc, tables(), key.data(), 16));
  ASSERT_TRUE(aes_expand_dec_key(&dec, tables(), key.data(), 16));
  const Bytes orig(33, 0xab);
  Bytes data = orig;
  EXPECT_FALSE(aes_cbc_encrypt(enc, tables(), iv.data(), data.data(), 33));
  EXPECT_FALSE(aes_cbc_decrypt(dec, tables(), iv.data(), data.data(), 33));
  EXPECT_EQ(data, orig);
  // Zero bytes is a valid (empty) input.
  EXPECT_TRUE(aes_cbc_encrypt(enc, tables(), iv.data(), data.data(), 0));
  EXPECT_EQ(data, orig);
}

// The GCM specification's test cases (McGrew and Viega, "The Galois/Counter Mode of Operation"):
// 1-4 with AES-128, 13-16 with AES-256. Cases 5/6 and 17/18 use IVs other than 96 bits, which ESP
// never does, and are left out.
struct GcmCase {
  int id;
  const char* key;
  const char* iv;
  const char* plain;
  const char* aad;
  const char* cipher;
  const char* tag;
};

constexpr const char* kP3 =
    "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
    "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255";
constexpr const char* kP4 =
    "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
    "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39";
constexpr const char* kA4 = "feedfacedeadbeeffeedfacedeadbeefabaddad2";
constexpr const char* kIv3 = "cafebabefacedbaddecaf888";
constexpr const char* kZeroIv = "000000000000000000000000";

const GcmCase kGcmCases[] = {
    {1, "00000000000000000000000000000000", kZeroIv, "", "", "", "58e2fccefa7e3061367f1d57a4e7455a"},
    {2, "00000000000000000000000000000000", kZeroIv, "00000000000000000000000000000000", "",
     "0388dace60b6a392f328c2b971b2fe78", "ab6e47d42cec13bdf53a67b21257bddf"},
    {3, "feffe9928665731c6d6a8f9467308308", kIv3, kP3, "",
     "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
     "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985",
     "4d5c2af327cd64a62cf35abd2ba6fab4"},
    {4, "feffe9928665731c6d6a8f9467308308", kIv3, kP4, kA4,
     "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
     "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091",
     "5bc94fbc3221a5db94fae95ae7121a47"},
    {13, "0000000000000000000000000000000000000000000000000000000000000000", kZeroIv, "", "", "",
     "530f8afbc74536b9a963b4f1c4cb738b"},
    {14, "0000000000000000000000000000000000000000000000000000000000000000", kZeroIv,
     "00000000000000000000000000000000", "", "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"},
    {15, "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", kIv3, kP3, "",
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
     "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
     "b094dac5d93471bdec1a502270e3cc6c"},
    {16, "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", kIv3, kP4, kA4,
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
     "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
     "76fc6ece0f4e1768cddf8853bb2d551b"},
};

GcmKey make_gcm_key(const Bytes& key) {
  GcmKey g;
  EXPECT_TRUE(gcm_key_init(&g, tables(), key.data(), static_cast<uint32_t>(key.size())));
  return g;
}

TEST(AesGcm, SpecTestCases) {
  for (const GcmCase& c : kGcmCases) {
    SCOPED_TRACE("GCM test case " + std::to_string(c.id));
    const Bytes key = from_hex(c.key), iv = from_hex(c.iv), plain = from_hex(c.plain), aad = from_hex(c.aad);
    const GcmKey g = make_gcm_key(key);
    Bytes data = plain, tag(16);
    gcm_seal(g, tables(), iv.data(), aad.data(), static_cast<uint32_t>(aad.size()), data.data(),
             static_cast<uint32_t>(data.size()), tag.data());
    EXPECT_EQ(hex(data), c.cipher);
    EXPECT_EQ(hex(tag), c.tag);
    EXPECT_TRUE(gcm_open(g, tables(), iv.data(), aad.data(), static_cast<uint32_t>(aad.size()), data.data(),
                         static_cast<uint32_t>(data.size()), tag.data()));
    EXPECT_EQ(data, plain);
  }
}

// Any single flipped bit in the ciphertext, the tag or the AAD fails open, and the data stays the
// ciphertext it was.
TEST(AesGcm, TamperingFailsAndLeavesDataUntouched) {
  for (const GcmCase& c : kGcmCases) {
    SCOPED_TRACE("GCM test case " + std::to_string(c.id));
    const Bytes key = from_hex(c.key), iv = from_hex(c.iv), aad = from_hex(c.aad);
    const Bytes cipher = from_hex(c.cipher), tag = from_hex(c.tag);
    const GcmKey g = make_gcm_key(key);
    auto open = [&](Bytes a, Bytes data, Bytes t, const Bytes& expect_data) {
      const bool ok = gcm_open(g, tables(), iv.data(), a.data(), static_cast<uint32_t>(a.size()), data.data(),
                               static_cast<uint32_t>(data.size()), t.data());
      EXPECT_EQ(data, expect_data);
      return ok;
    };
    for (size_t bit = 0; bit < cipher.size() * 8; bit += 7) {
      Bytes bad = cipher;
      bad[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      EXPECT_FALSE(open(aad, bad, tag, bad)) << "ciphertext bit " << bit;
    }
    for (size_t bit = 0; bit < 128; ++bit) {
      Bytes bad = tag;
      bad[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      EXPECT_FALSE(open(aad, cipher, bad, cipher)) << "tag bit " << bit;
    }
    for (size_t bit = 0; bit < aad.size() * 8; bit += 5) {
      Bytes bad = aad;
      bad[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      EXPECT_FALSE(open(bad, cipher, tag, cipher)) << "aad bit " << bit;
    }
    // A different IV fails too.
    Bytes other_iv = iv;
    other_iv[11] ^= 1;
    Bytes data = cipher, t = tag;
    EXPECT_FALSE(gcm_open(g, tables(), other_iv.data(), aad.data(), static_cast<uint32_t>(aad.size()), data.data(),
                          static_cast<uint32_t>(data.size()), t.data()));
    EXPECT_EQ(data, cipher);
  }
}

// ---- Against OpenSSL ----

TEST(Aes, CbcMatchesOpenSsl) {
  for (uint64_t i = 0; i < 300; ++i) {
    std::mt19937_64 rng(0xc0ffee + i);
    const size_t key_len = i % 2 == 0 ? 16 : 32;
    const Bytes key = random_bytes(rng, key_len), iv = random_bytes(rng, 16);
    const Bytes plain = random_bytes(rng, 16 * (rng() % 126));  // 0..2000 bytes
    SCOPED_TRACE("iteration " + std::to_string(i) + ", key " + std::to_string(key_len) + " bytes, " +
                 std::to_string(plain.size()) + " bytes");
    AesKey enc, dec;
    ASSERT_TRUE(aes_expand_enc_key(&enc, tables(), key.data(), static_cast<uint32_t>(key_len)));
    ASSERT_TRUE(aes_expand_dec_key(&dec, tables(), key.data(), static_cast<uint32_t>(key_len)));
    Bytes data = plain;
    ASSERT_TRUE(aes_cbc_encrypt(enc, tables(), iv.data(), data.data(), static_cast<uint32_t>(data.size())));
    const Bytes want = openssl_cbc(true, key, iv, plain);
    ASSERT_EQ(data, want);
    ASSERT_TRUE(aes_cbc_decrypt(dec, tables(), iv.data(), data.data(), static_cast<uint32_t>(data.size())));
    ASSERT_EQ(data, plain);
    ASSERT_EQ(openssl_cbc(false, key, iv, want), plain);
  }
}

// Seal must produce OpenSSL's ciphertext and tag; open must accept OpenSSL's output and give back
// the plaintext.
void check_gcm_against_openssl(const Bytes& key, const Bytes& iv, const Bytes& aad, const Bytes& plain) {
  const GcmKey g = make_gcm_key(key);
  Bytes data = plain, tag(16);
  gcm_seal(g, tables(), iv.data(), aad.data(), static_cast<uint32_t>(aad.size()), data.data(),
           static_cast<uint32_t>(data.size()), tag.data());
  const Bytes want = openssl_gcm_seal(key, iv, aad, plain);
  ASSERT_EQ(hex(data), hex(Bytes(want.begin(), want.end() - 16)));
  ASSERT_EQ(hex(tag), hex(Bytes(want.end() - 16, want.end())));
  ASSERT_TRUE(gcm_open(g, tables(), iv.data(), aad.data(), static_cast<uint32_t>(aad.size()), data.data(),
                       static_cast<uint32_t>(data.size()), tag.data()));
  ASSERT_EQ(data, plain);
}

TEST(AesGcm, RandomMatchesOpenSsl) {
  for (uint64_t i = 0; i < 300; ++i) {
    std::mt19937_64 rng(0x6c6d + i);
    const size_t key_len = i % 2 == 0 ? 16 : 32;
    const Bytes key = random_bytes(rng, key_len), iv = random_bytes(rng, 12);
    const Bytes aad = random_bytes(rng, rng() % 21);
    const Bytes plain = random_bytes(rng, rng() % 2001);
    SCOPED_TRACE("iteration " + std::to_string(i) + ", key " + std::to_string(key_len) + " bytes, aad " +
                 std::to_string(aad.size()) + ", " + std::to_string(plain.size()) + " bytes");
    check_gcm_against_openssl(key, iv, aad, plain);
  }
}

// Every AAD length 0..64 against every data length 0..48: all the block-boundary cases of both.
TEST(AesGcm, AllSmallLengthsMatchOpenSsl) {
  std::mt19937_64 rng(4106);
  for (size_t key_len : {16u, 32u}) {
    const Bytes key = random_bytes(rng, key_len), iv = random_bytes(rng, 12);
    for (size_t a = 0; a <= 64; ++a) {
      for (size_t n = 0; n <= 48; ++n) {
        SCOPED_TRACE("key " + std::to_string(key_len) + " bytes, aad " + std::to_string(a) + ", " +
                     std::to_string(n) + " bytes");
        check_gcm_against_openssl(key, iv, random_bytes(rng, a), random_bytes(rng, n));
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// A message of 300 blocks takes the 32-bit block counter past 0xff, carrying into its next byte.
TEST(AesGcm, CounterByteCarriesMatchOpenSsl) {
  std::mt19937_64 rng(38);
  const Bytes key = random_bytes(rng, 16), iv(12, 0xff), aad = random_bytes(rng, 8);
  check_gcm_against_openssl(key, iv, aad, random_bytes(rng, 16 * 300 + 5));
}

}  // namespace
}  // namespace tandem::crypto
