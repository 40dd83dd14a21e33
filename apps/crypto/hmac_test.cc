// The HMAC-SHA1 code written for the GPU (hmac_core.h), on the host, against the vectors of RFC 2202
// and against OpenSSL's HMAC: every key length from 0 to 100 bytes (either side of the 64-byte
// block, past which the key is hashed first), every message length from 0 to 2,000, with the 0 to 8
// bytes authenticated after the message (ESP's high sequence number bits); and ct_equal.
#include <gtest/gtest.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "apps/crypto/ct_compare.h"
#include "apps/crypto/hmac_core.h"

namespace tandem::crypto {
namespace {

using Bytes = std::vector<uint8_t>;

std::string hex(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s += {d[p[i] >> 4], d[p[i] & 15]};
  return s;
}

Bytes random_bytes(std::mt19937_64& rng, size_t n) {
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

std::string core_hmac_hex(const Bytes& key, const Bytes& msg, const Bytes& extra = {}) {
  HmacSha1Key k;
  hmac_sha1_key_init(key.data(), static_cast<uint32_t>(key.size()), &k);
  uint8_t out[kHmacSha1Bytes];
  hmac_sha1(k, msg.data(), static_cast<uint32_t>(msg.size()), extra.data(), static_cast<uint32_t>(extra.size()), out);
  return hex(out, kHmacSha1Bytes);
}

Bytes ascii(const std::string& s) { return Bytes(s.begin(), s.end()); }

// RFC 2202 section 3, test cases 1 to 7 (6 and 7 have an 80-byte key, hashed first).
TEST(HmacSha1, Rfc2202) {
  EXPECT_EQ(core_hmac_hex(Bytes(20, 0x0b), ascii("Hi There")), "b617318655057264e28bc0b6fb378c8ef146be00");
  EXPECT_EQ(core_hmac_hex(ascii("Jefe"), ascii("what do ya want for nothing?")),
            "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
  EXPECT_EQ(core_hmac_hex(Bytes(20, 0xaa), Bytes(50, 0xdd)), "125d7342b9ac11cd91a39af48aa17b4f63f175d3");
  Bytes key4;
  for (int i = 1; i <= 25; ++i) key4.push_back(static_cast<uint8_t>(i));
  EXPECT_EQ(core_hmac_hex(key4, Bytes(50, 0xcd)), "4c9007f4026250c6bc8414f9bf50c86c2d7235da");
  const std::string mac5 = core_hmac_hex(Bytes(20, 0x0c), ascii("Test With Truncation"));
  EXPECT_EQ(mac5, "4c1a03424b55e07fe7f27be1d58bb9324a9a5a04");
  EXPECT_EQ(mac5.substr(0, 2 * kHmacSha1IcvBytes), "4c1a03424b55e07fe7f27be1");  // HMAC-SHA1-96
  EXPECT_EQ(core_hmac_hex(Bytes(80, 0xaa), ascii("Test Using Larger Than Block-Size Key - Hash Key First")),
            "aa4ae5e15272d00e95705637ce8a3b55ed402112");
  EXPECT_EQ(core_hmac_hex(Bytes(80, 0xaa),
                          ascii("Test Using Larger Than Block-Size Key and Larger Than One Block-Size Data")),
            "e8e99d0f45237d786d6bbaa7965c7808bbff1a91");
}

// The extra bytes are MACed as though they followed the message.
TEST(HmacSha1, ExtraBytesFollowTheMessage) {
  const Bytes key = ascii("Jefe"), whole = ascii("what do ya want for nothing?");
  for (size_t extra = 0; extra <= 8; ++extra) {
    const Bytes msg(whole.begin(), whole.end() - static_cast<std::ptrdiff_t>(extra));
    const Bytes tail(whole.end() - static_cast<std::ptrdiff_t>(extra), whole.end());
    EXPECT_EQ(core_hmac_hex(key, msg, tail), "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79") << extra;
  }
}

// OpenSSL 3's HMAC (EVP_MAC) over msg || extra.
class OpenSslHmacSha1 {
 public:
  OpenSslHmacSha1() : mac_(EVP_MAC_fetch(nullptr, "HMAC", nullptr)) {}
  ~OpenSslHmacSha1() { EVP_MAC_free(mac_); }
  OpenSslHmacSha1(const OpenSslHmacSha1&) = delete;
  OpenSslHmacSha1& operator=(const OpenSslHmacSha1&) = delete;

  std::string operator()(const Bytes& key, const Bytes& msg, const Bytes& extra) const {
    EXPECT_NE(mac_, nullptr);
    EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(mac_);
    char digest[] = "SHA1";
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                                 OSSL_PARAM_construct_end()};
    // A zero-length key still needs a non-null pointer: OpenSSL takes null to mean "the key set before".
    static const uint8_t kNoKey = 0;
    EXPECT_EQ(EVP_MAC_init(ctx, key.empty() ? &kNoKey : key.data(), key.size(), params), 1);
    if (!msg.empty()) {
      EXPECT_EQ(EVP_MAC_update(ctx, msg.data(), msg.size()), 1);
    }
    if (!extra.empty()) {
      EXPECT_EQ(EVP_MAC_update(ctx, extra.data(), extra.size()), 1);
    }
    uint8_t out[EVP_MAX_MD_SIZE];
    size_t len = 0;
    EXPECT_EQ(EVP_MAC_final(ctx, out, &len, sizeof(out)), 1);
    EXPECT_EQ(len, kHmacSha1Bytes);
    EVP_MAC_CTX_free(ctx);
    return hex(out, len);
  }

 private:
  EVP_MAC* mac_;
};

// Every key length with a few random messages, each prepared key reused for all of them.
TEST(HmacSha1, EqualsOpenSslEveryKeyLength) {
  const OpenSslHmacSha1 openssl;
  std::mt19937_64 rng(2104);
  for (uint32_t key_len = 0; key_len <= 100; ++key_len) {
    const Bytes key = random_bytes(rng, key_len);
    HmacSha1Key k;
    hmac_sha1_key_init(key.data(), key_len, &k);
    for (int i = 0; i < 6; ++i) {
      const Bytes msg = random_bytes(rng, rng() % 2001), extra = random_bytes(rng, rng() % 9);
      uint8_t out[kHmacSha1Bytes];
      hmac_sha1(k, msg.data(), static_cast<uint32_t>(msg.size()), extra.data(), static_cast<uint32_t>(extra.size()),
                out);
      ASSERT_EQ(hex(out, kHmacSha1Bytes), openssl(key, msg, extra))
          << "key " << key_len << " message " << msg.size() << " extra " << extra.size();
    }
  }
}

// Every message length, so that message and extra bytes end at every offset of the block, either
// side of the 56 bytes past which the padding takes a second block.
TEST(HmacSha1, EqualsOpenSslEveryMessageLength) {
  const OpenSslHmacSha1 openssl;
  std::mt19937_64 rng(2404);
  for (uint32_t n = 0; n <= 2000; ++n) {
    const Bytes key = random_bytes(rng, n % 101), msg = random_bytes(rng, n), extra = random_bytes(rng, n % 9);
    ASSERT_EQ(core_hmac_hex(key, msg, extra), openssl(key, msg, extra))
        << "key " << key.size() << " message " << n << " extra " << extra.size();
  }
}

// The ESN case exactly: 4 bytes of high sequence number after every short packet length.
TEST(HmacSha1, EqualsOpenSslWithEsnTail) {
  const OpenSslHmacSha1 openssl;
  std::mt19937_64 rng(4303);
  const Bytes key = random_bytes(rng, 20);
  for (uint32_t n = 0; n <= 200; ++n) {
    const Bytes msg = random_bytes(rng, n), esn_high = random_bytes(rng, 4);
    ASSERT_EQ(core_hmac_hex(key, msg, esn_high), openssl(key, msg, esn_high)) << "message " << n;
  }
}

TEST(CtEqual, ComparesEveryByte) {
  std::mt19937_64 rng(12);
  EXPECT_TRUE(ct_equal(nullptr, nullptr, 0));
  for (uint32_t n = 1; n <= 32; ++n) {
    const Bytes a = random_bytes(rng, n);
    Bytes b = a;
    EXPECT_TRUE(ct_equal(a.data(), b.data(), n));
    for (uint32_t bit = 0; bit < 8 * n; ++bit) {
      b[bit / 8] ^= static_cast<uint8_t>(1 << (bit % 8));
      EXPECT_FALSE(ct_equal(a.data(), b.data(), n)) << "length " << n << " bit " << bit;
      b[bit / 8] ^= static_cast<uint8_t>(1 << (bit % 8));
    }
    b.assign(n, 0);
    Bytes c(n, 0xff);
    EXPECT_FALSE(ct_equal(b.data(), c.data(), n));
    // Only the first n bytes count.
    c = a;
    c.push_back(0x00);
    b = a;
    b.push_back(0x01);
    EXPECT_TRUE(ct_equal(b.data(), c.data(), n));
  }
}

}  // namespace
}  // namespace tandem::crypto
