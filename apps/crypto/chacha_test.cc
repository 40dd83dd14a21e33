// The ChaCha20, Poly1305 and ChaCha20-Poly1305 code written for the GPU (chacha_core.h), on the
// host, against the vectors of RFC 8439 and RFC 7634 and against OpenSSL: every data length from 0
// to 2,000 bytes, AAD of 0 to 20 bytes, sealing and opening each way; and any one bit flipped in
// the ciphertext, the tag or the AAD makes opening fail and leaves the data as it was.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "apps/crypto/chacha_core.h"

namespace tandem::crypto {
namespace {

using Bytes = std::vector<uint8_t>;

// Hex digits, ignoring spaces, newlines and colons (the RFCs' layouts).
Bytes unhex(const std::string& s) {
  auto nibble = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  Bytes out;
  std::string digits;
  for (char c : s) {
    if (c != ' ' && c != '\n' && c != ':') digits += c;
  }
  for (size_t i = 0; i + 1 < digits.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(nibble(digits[i]) << 4 | nibble(digits[i + 1])));
  }
  return out;
}

Bytes ascii(const std::string& s) { return Bytes(s.begin(), s.end()); }

std::string hex(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s += {d[p[i] >> 4], d[p[i] & 15]};
  return s;
}
std::string hex(const Bytes& b) { return hex(b.data(), b.size()); }

Bytes random_bytes(std::mt19937_64& rng, size_t n) {
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

const std::string kSunscreen =
    "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would "
    "be it.";

// ---- RFC 8439 ----

// 2.3.2: the block function.
TEST(Chacha20, BlockFunctionRfc8439) {
  Bytes key(32);
  for (int i = 0; i < 32; ++i) key[i] = static_cast<uint8_t>(i);
  const Bytes nonce = unhex("00 00 00 09 00 00 00 4a 00 00 00 00");
  uint8_t out[64];
  chacha20_block(key.data(), 1, nonce.data(), out);
  EXPECT_EQ(hex(out, 64), hex(unhex("10 f1 e7 e4 d1 3b 59 15 50 0f dd 1f a3 20 71 c4"
                                    "c7 d1 f4 c7 33 c0 68 03 04 22 aa 9a c3 d4 6c 4e"
                                    "d2 82 64 46 07 9f aa 09 14 c2 d7 05 d9 8b 02 a2"
                                    "b5 12 9c d1 de 16 4e b9 cb d0 83 e8 a2 50 3c 4e")));
}

// 2.4.2: encryption, 114 bytes from block 1 (a short last block), and back.
TEST(Chacha20, EncryptionRfc8439) {
  Bytes key(32);
  for (int i = 0; i < 32; ++i) key[i] = static_cast<uint8_t>(i);
  const Bytes nonce = unhex("00 00 00 00 00 00 00 4a 00 00 00 00");
  Bytes data = ascii(kSunscreen);
  ASSERT_EQ(data.size(), 114u);
  chacha20_xor(key.data(), 1, nonce.data(), data.data(), static_cast<uint32_t>(data.size()));
  EXPECT_EQ(hex(data), hex(unhex("6e 2e 35 9a 25 68 f9 80 41 ba 07 28 dd 0d 69 81"
                                 "e9 7e 7a ec 1d 43 60 c2 0a 27 af cc fd 9f ae 0b"
                                 "f9 1b 65 c5 52 47 33 ab 8f 59 3d ab cd 62 b3 57"
                                 "16 39 d6 24 e6 51 52 ab 8f 53 0c 35 9f 08 61 d8"
                                 "07 ca 0d bf 50 0d 6a 61 56 a3 8e 08 8a 22 b6 5e"
                                 "52 bc 51 4d 16 cc f8 06 81 8c e9 1a b7 79 37 36"
                                 "5a f9 0b bf 74 a3 5b e6 b4 0b 8e ed f2 78 5e 42"
                                 "87 4d")));
  chacha20_xor(key.data(), 1, nonce.data(), data.data(), static_cast<uint32_t>(data.size()));
  EXPECT_EQ(data, ascii(kSunscreen));
}

// 2.5.2: Poly1305, 34 bytes (a short last block); fed whole and in pieces of every size.
TEST(Poly1305, Rfc8439) {
  const Bytes key = unhex("85:d6:be:78:57:55:6d:33:7f:44:52:fe:42:d5:06:a8:"
                          "01:03:80:8a:fb:0d:b2:fd:4a:bf:f6:af:41:49:f5:1b");
  const Bytes msg = ascii("Cryptographic Forum Research Group");
  const std::string want = "a8061dc1305136c6c22b8baf0c0127a9";
  uint8_t tag[16];
  poly1305(key.data(), msg.data(), static_cast<uint32_t>(msg.size()), tag);
  EXPECT_EQ(hex(tag, 16), want);
  for (uint32_t piece = 1; piece <= msg.size(); ++piece) {
    Poly1305State st;
    poly1305_init(&st, key.data());
    for (uint32_t at = 0; at < msg.size(); at += piece) {
      poly1305_update(&st, msg.data() + at, std::min<uint32_t>(piece, static_cast<uint32_t>(msg.size()) - at));
    }
    poly1305_finish(&st, tag);
    EXPECT_EQ(hex(tag, 16), want) << "pieces of " << piece;
  }
}

// Appendix A.3: the cases chosen to exercise the final reduction and the carries (h just below, at
// and above 2^130 - 5, s overflowing 2^128).
TEST(Poly1305, ReductionEdgeCasesRfc8439) {
  struct Case {
    std::string r, s, msg, tag;
  };
  const std::string zero16 = "00000000000000000000000000000000";
  const std::string ff16 = "ffffffffffffffffffffffffffffffff";
  const Case cases[] = {
      {"02000000000000000000000000000000", zero16, ff16, "03000000000000000000000000000000"},
      {"02000000000000000000000000000000", ff16, "02000000000000000000000000000000",
       "03000000000000000000000000000000"},
      {"01000000000000000000000000000000", zero16,
       ff16 + "f0ffffffffffffffffffffffffffffff" + "11000000000000000000000000000000",
       "05000000000000000000000000000000"},
      {"01000000000000000000000000000000", zero16,
       ff16 + "fbfefefefefefefefefefefefefefefe" + "01010101010101010101010101010101", zero16},
      {"02000000000000000000000000000000", zero16, "fdffffffffffffffffffffffffffffff",
       "faffffffffffffffffffffffffffffff"},
      {"01000000000000000400000000000000", zero16,
       "e33594d7505e43b90000000000000000" "3394d7505e4379cd0100000000000000" + zero16 +
           "01000000000000000000000000000000",
       "14000000000000005500000000000000"},
      {"01000000000000000400000000000000", zero16,
       "e33594d7505e43b90000000000000000" "3394d7505e4379cd0100000000000000" + zero16,
       "13000000000000000000000000000000"},
  };
  for (const Case& c : cases) {
    const Bytes key = unhex(c.r + c.s), msg = unhex(c.msg);
    uint8_t tag[16];
    poly1305(key.data(), msg.data(), static_cast<uint32_t>(msg.size()), tag);
    EXPECT_EQ(hex(tag, 16), c.tag) << "r " << c.r << " s " << c.s << " message " << c.msg;
  }
}

// 2.6.2: the one-time Poly1305 key.
TEST(ChachaPoly, KeyGenerationRfc8439) {
  Bytes key(32);
  for (int i = 0; i < 32; ++i) key[i] = static_cast<uint8_t>(0x80 + i);
  const Bytes nonce = unhex("00 00 00 00 00 01 02 03 04 05 06 07");
  uint8_t otk[32];
  poly1305_key_gen(key.data(), nonce.data(), otk);
  EXPECT_EQ(hex(otk, 32), hex(unhex("8a d5 a0 8b 90 5f 81 cc 81 50 40 27 4a b2 94 71"
                                    "a8 33 b6 37 e3 fd 0d a5 08 db b8 e2 fd d1 a6 46")));
}

// 2.8.2: sealing, and opening it again.
TEST(ChachaPoly, SealRfc8439) {
  Bytes key(32);
  for (int i = 0; i < 32; ++i) key[i] = static_cast<uint8_t>(0x80 + i);
  const Bytes nonce = unhex("07 00 00 00 40 41 42 43 44 45 46 47");
  const Bytes aad = unhex("50 51 52 53 c0 c1 c2 c3 c4 c5 c6 c7");
  Bytes data = ascii(kSunscreen);
  uint8_t tag[16];
  chacha20_poly1305_seal(key.data(), nonce.data(), aad.data(), static_cast<uint32_t>(aad.size()), data.data(),
                         static_cast<uint32_t>(data.size()), tag);
  EXPECT_EQ(hex(data), hex(unhex("d3 1a 8d 34 64 8e 60 db 7b 86 af bc 53 ef 7e c2"
                                 "a4 ad ed 51 29 6e 08 fe a9 e2 b5 a7 36 ee 62 d6"
                                 "3d be a4 5e 8c a9 67 12 82 fa fb 69 da 92 72 8b"
                                 "1a 71 de 0a 9e 06 0b 29 05 d6 a5 b6 7e cd 3b 36"
                                 "92 dd bd 7f 2d 77 8b 8c 98 03 ae e3 28 09 1b 58"
                                 "fa b3 24 e4 fa d6 75 94 55 85 80 8b 48 31 d7 bc"
                                 "3f f4 de f0 8e 4b 7a 9d e5 76 d2 65 86 ce c6 4b"
                                 "61 16")));
  EXPECT_EQ(hex(tag, 16), "1ae10b594f09e26a7e902ecbd0600691");
  EXPECT_TRUE(chacha20_poly1305_open(key.data(), nonce.data(), aad.data(), static_cast<uint32_t>(aad.size()),
                                     data.data(), static_cast<uint32_t>(data.size()), tag));
  EXPECT_EQ(data, ascii(kSunscreen));
}

// Appendix A.5: opening.
TEST(ChachaPoly, OpenRfc8439) {
  const Bytes key = unhex("1c 92 40 a5 eb 55 d3 8a f3 33 88 86 04 f6 b5 f0"
                          "47 39 17 c1 40 2b 80 09 9d ca 5c bc 20 70 75 c0");
  const Bytes nonce = unhex("00 00 00 00 01 02 03 04 05 06 07 08");
  const Bytes aad = unhex("f3 33 88 86 00 00 00 00 00 00 4e 91");
  const Bytes tag = unhex("ee ad 9d 67 89 0c bb 22 39 23 36 fe a1 85 1f 38");
  Bytes data = unhex(
      "64 a0 86 15 75 86 1a f4 60 f0 62 c7 9b e6 43 bd 5e 80 5c fd 34 5c f3 89 f1 08 67 0a c7 6c 8c b2"
      "4c 6c fc 18 75 5d 43 ee a0 9e e9 4e 38 2d 26 b0 bd b7 b7 3c 32 1b 01 00 d4 f0 3b 7f 35 58 94 cf"
      "33 2f 83 0e 71 0b 97 ce 98 c8 a8 4a bd 0b 94 81 14 ad 17 6e 00 8d 33 bd 60 f9 82 b1 ff 37 c8 55"
      "97 97 a0 6e f4 f0 ef 61 c1 86 32 4e 2b 35 06 38 36 06 90 7b 6a 7c 02 b0 f9 f6 15 7b 53 c8 67 e4"
      "b9 16 6c 76 7b 80 4d 46 a5 9b 52 16 cd e7 a4 e9 90 40 c5 a4 04 33 22 5e e2 82 a1 b0 a0 6c 52 3e"
      "af 45 34 d7 f8 3f a1 15 5b 00 47 71 8c bc 54 6a 0d 07 2b 04 b3 56 4e ea 1b 42 22 73 f5 48 27 1a"
      "0b b2 31 60 53 fa 76 99 19 55 eb d6 31 59 43 4e ce bb 4e 46 6d ae 5a 10 73 a6 72 76 27 09 7a 10"
      "49 e6 17 d9 1d 36 10 94 fa 68 f0 ff 77 98 71 30 30 5b ea ba 2e da 04 df 99 7b 71 4d 6c 6f 2c 29"
      "a6 ad 5c b4 02 2b 02 70 9b");
  ASSERT_EQ(data.size(), 265u);
  ASSERT_TRUE(chacha20_poly1305_open(key.data(), nonce.data(), aad.data(), static_cast<uint32_t>(aad.size()),
                                     data.data(), static_cast<uint32_t>(data.size()), tag.data()));
  EXPECT_EQ(std::string(data.begin(), data.end()),
            "Internet-Drafts are draft documents valid for a maximum of six months and may be updated, replaced, "
            "or obsoleted by other documents at any time. It is inappropriate to use Internet-Drafts as "
            "reference material or to cite them other than as /\u201cwork in progress./\u201d");
}

// RFC 7634 appendix A: an ESP packet (an ICMP echo request and the ESP trailer). The nonce is the
// salt (the last 4 bytes of the keying material) and the IV; the AAD is the SPI and the sequence
// number.
TEST(ChachaPoly, EspExampleRfc7634) {
  Bytes key(32);
  for (int i = 0; i < 32; ++i) key[i] = static_cast<uint8_t>(0x80 + i);
  const Bytes nonce = unhex("a0 a1 a2 a3 10 11 12 13 14 15 16 17");
  const Bytes aad = unhex("01 02 03 04 00 00 00 05");
  const Bytes plain = unhex("45 00 00 54 a6 f2 00 00 40 01 e7 78 c6 33 64 05 c0 00 02 05 08 00 5b 7a 3a 08 00 00"
                            "55 3b ec 10 00 07 36 27 08 09 0a 0b 0c 0d 0e 0f 10 11 12 13 14 15 16 17 18 19 1a 1b"
                            "1c 1d 1e 1f 20 21 22 23 24 25 26 27 28 29 2a 2b 2c 2d 2e 2f 30 31 32 33 34 35 36 37"
                            "01 02 02 04");
  Bytes data = plain;
  uint8_t tag[16];
  chacha20_poly1305_seal(key.data(), nonce.data(), aad.data(), static_cast<uint32_t>(aad.size()), data.data(),
                         static_cast<uint32_t>(data.size()), tag);
  EXPECT_EQ(hex(data), hex(unhex("24 03 94 28 b9 7f 41 7e 3c 13 75 3a 4f 05 08 7b 67 c3 52 e6 a7 fa b1 b9 82 d4"
                                 "66 ef 40 7a e5 c6 14 ee 80 99 d5 28 44 eb 61 aa 95 df ab 4c 02 f7 2a a7 1e 7c"
                                 "4c 4f 64 c9 be fe 2f ac c6 38 e8 f3 cb ec 16 3f ac 46 9b 50 27 73 f6 fb 94 e6"
                                 "64 da 91 65 b8 28 29 f6 41 e0")));
  EXPECT_EQ(hex(tag, 16), "76aaa8266b7fb0f7b11b369907e1ad43");
  EXPECT_TRUE(chacha20_poly1305_open(key.data(), nonce.data(), aad.data(), static_cast<uint32_t>(aad.size()),
                                     data.data(), static_cast<uint32_t>(data.size()), tag));
  EXPECT_EQ(data, plain);
}

// The streaming Poly1305 API fed as RFC 8439 2.8 describes (one-time key from poly1305_key_gen,
// AAD, pad16, ciphertext in uneven pieces, pad16, lengths) gives the tag seal gives.
TEST(ChachaPoly, StreamingMacEqualsSealTag) {
  std::mt19937_64 rng(28);
  for (uint32_t n : {0u, 1u, 15u, 16u, 17u, 64u, 100u, 300u}) {
    for (uint32_t aad_len : {0u, 5u, 16u, 20u}) {
      const Bytes key = random_bytes(rng, 32), nonce = random_bytes(rng, 12), aad = random_bytes(rng, aad_len);
      Bytes data = random_bytes(rng, n);
      uint8_t tag[16], otk[32], streamed[16];
      chacha20_poly1305_seal(key.data(), nonce.data(), aad.data(), aad_len, data.data(), n, tag);
      poly1305_key_gen(key.data(), nonce.data(), otk);
      Poly1305State st;
      poly1305_init(&st, otk);
      poly1305_update(&st, aad.data(), aad_len);
      poly1305_pad16(&st);
      for (uint32_t at = 0, piece = 1; at < n; at += piece, piece = piece % 23 + 1) {
        poly1305_update(&st, data.data() + at, std::min(piece, n - at));
      }
      poly1305_pad16(&st);
      uint8_t lengths[16] = {};
      for (int i = 0; i < 4; ++i) {
        lengths[i] = static_cast<uint8_t>(aad_len >> (8 * i));
        lengths[8 + i] = static_cast<uint8_t>(n >> (8 * i));
      }
      poly1305_update(&st, lengths, 16);
      poly1305_finish(&st, streamed);
      EXPECT_EQ(hex(streamed, 16), hex(tag, 16)) << "length " << n << " aad " << aad_len;
    }
  }
}

// ---- OpenSSL as the reference ----

struct CipherCtx {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  ~CipherCtx() { EVP_CIPHER_CTX_free(ctx); }
};

// OpenSSL's ChaCha20 takes a 16-byte IV: the 32-bit block counter (little-endian), then the nonce.
Bytes openssl_chacha20(const Bytes& key, uint32_t counter, const Bytes& nonce, const Bytes& in) {
  uint8_t iv[16];
  for (int i = 0; i < 4; ++i) iv[i] = static_cast<uint8_t>(counter >> (8 * i));
  for (int i = 0; i < 12; ++i) iv[4 + i] = nonce[i];
  CipherCtx c;
  Bytes out(in.size() + 16);
  int len = 0, fin = 0;
  EXPECT_EQ(EVP_EncryptInit_ex(c.ctx, EVP_chacha20(), nullptr, key.data(), iv), 1);
  if (!in.empty()) {
    EXPECT_EQ(EVP_EncryptUpdate(c.ctx, out.data(), &len, in.data(), static_cast<int>(in.size())), 1);
  }
  EXPECT_EQ(EVP_EncryptFinal_ex(c.ctx, out.data() + len, &fin), 1);
  out.resize(static_cast<size_t>(len + fin));
  return out;
}

// Seals with EVP_chacha20_poly1305: the ciphertext followed by the 16-byte tag.
Bytes openssl_seal(const Bytes& key, const Bytes& nonce, const Bytes& aad, const Bytes& plain) {
  CipherCtx c;
  Bytes out(plain.size() + 16);
  int len = 0, fin = 0, aad_out = 0;
  EXPECT_EQ(EVP_EncryptInit_ex(c.ctx, EVP_chacha20_poly1305(), nullptr, nullptr, nullptr), 1);
  EXPECT_EQ(EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_AEAD_SET_IVLEN, 12, nullptr), 1);
  EXPECT_EQ(EVP_EncryptInit_ex(c.ctx, nullptr, nullptr, key.data(), nonce.data()), 1);
  if (!aad.empty()) {
    EXPECT_EQ(EVP_EncryptUpdate(c.ctx, nullptr, &aad_out, aad.data(), static_cast<int>(aad.size())), 1);
  }
  if (!plain.empty()) {
    EXPECT_EQ(EVP_EncryptUpdate(c.ctx, out.data(), &len, plain.data(), static_cast<int>(plain.size())), 1);
  }
  EXPECT_EQ(EVP_EncryptFinal_ex(c.ctx, out.data() + len, &fin), 1);
  EXPECT_EQ(static_cast<size_t>(len + fin), plain.size());
  EXPECT_EQ(EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_AEAD_GET_TAG, 16, out.data() + plain.size()), 1);
  return out;
}

// Opens with EVP_chacha20_poly1305; false if OpenSSL rejects the tag.
bool openssl_open(const Bytes& key, const Bytes& nonce, const Bytes& aad, const Bytes& sealed, Bytes* plain) {
  const size_t n = sealed.size() - 16;
  CipherCtx c;
  plain->assign(n + 16, 0);
  Bytes tag(sealed.end() - 16, sealed.end());
  int len = 0, fin = 0, aad_out = 0;
  EXPECT_EQ(EVP_DecryptInit_ex(c.ctx, EVP_chacha20_poly1305(), nullptr, nullptr, nullptr), 1);
  EXPECT_EQ(EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_AEAD_SET_IVLEN, 12, nullptr), 1);
  EXPECT_EQ(EVP_DecryptInit_ex(c.ctx, nullptr, nullptr, key.data(), nonce.data()), 1);
  if (!aad.empty()) {
    EXPECT_EQ(EVP_DecryptUpdate(c.ctx, nullptr, &aad_out, aad.data(), static_cast<int>(aad.size())), 1);
  }
  if (n != 0) {
    EXPECT_EQ(EVP_DecryptUpdate(c.ctx, plain->data(), &len, sealed.data(), static_cast<int>(n)), 1);
  }
  EXPECT_EQ(EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_AEAD_SET_TAG, 16, tag.data()), 1);
  const bool ok = EVP_DecryptFinal_ex(c.ctx, plain->data() + len, &fin) == 1;
  plain->resize(n);
  return ok;
}

Bytes openssl_poly1305(const Bytes& key, const Bytes& msg) {
  EVP_MAC* mac = EVP_MAC_fetch(nullptr, "POLY1305", nullptr);
  EXPECT_NE(mac, nullptr);
  EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(mac);
  Bytes tag(16);
  size_t len = 0;
  EXPECT_EQ(EVP_MAC_init(ctx, key.data(), key.size(), nullptr), 1);
  if (!msg.empty()) {
    EXPECT_EQ(EVP_MAC_update(ctx, msg.data(), msg.size()), 1);
  }
  EXPECT_EQ(EVP_MAC_final(ctx, tag.data(), &len, tag.size()), 1);
  EXPECT_EQ(len, 16u);
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(mac);
  return tag;
}

TEST(Chacha20, EqualsOpenSsl) {
  std::mt19937_64 rng(8439);
  for (uint32_t n = 0; n <= 600; ++n) {
    const Bytes key = random_bytes(rng, 32), nonce = random_bytes(rng, 12), plain = random_bytes(rng, n);
    // Counters below 2^31: OpenSSL carries a wrapping block counter into the nonce, RFC 8439 does not.
    const uint32_t counter = static_cast<uint32_t>(rng() >> 33);
    Bytes data = plain;
    chacha20_xor(key.data(), counter, nonce.data(), data.data(), n);
    ASSERT_EQ(hex(data), hex(openssl_chacha20(key, counter, nonce, plain))) << "length " << n;
  }
}

// Random keys and messages, and keys and messages of all ones, which drive h to its largest limbs.
TEST(Poly1305, EqualsOpenSsl) {
  std::mt19937_64 rng(1305);
  for (uint32_t n = 0; n <= 300; ++n) {
    for (int kind = 0; kind < 3; ++kind) {
      Bytes key = random_bytes(rng, 32), msg = random_bytes(rng, n);
      if (kind >= 1) key.assign(32, 0xff);
      if (kind == 2) msg.assign(n, 0xff);
      uint8_t tag[16];
      poly1305(key.data(), msg.data(), n, tag);
      ASSERT_EQ(hex(tag, 16), hex(openssl_poly1305(key, msg))) << "length " << n << " kind " << kind;
    }
  }
}

// One AEAD case both ways: our seal equals OpenSSL's, each opens the other's, and the plaintext
// comes back.
void check_against_openssl(std::mt19937_64& rng, uint32_t n, uint32_t aad_len) {
  const Bytes key = random_bytes(rng, 32), nonce = random_bytes(rng, 12), aad = random_bytes(rng, aad_len);
  const Bytes plain = random_bytes(rng, n);
  const Bytes want = openssl_seal(key, nonce, aad, plain);

  Bytes data = plain;
  uint8_t tag[16];
  chacha20_poly1305_seal(key.data(), nonce.data(), aad.data(), aad_len, data.data(), n, tag);
  Bytes got = data;
  got.insert(got.end(), tag, tag + 16);
  ASSERT_EQ(hex(got), hex(want)) << "length " << n << " aad " << aad_len;

  Bytes opened;
  ASSERT_TRUE(openssl_open(key, nonce, aad, got, &opened)) << "length " << n << " aad " << aad_len;
  ASSERT_EQ(opened, plain);

  data.assign(want.begin(), want.end() - 16);
  ASSERT_TRUE(chacha20_poly1305_open(key.data(), nonce.data(), aad.data(), aad_len, data.data(), n,
                                     want.data() + n))
      << "length " << n << " aad " << aad_len;
  ASSERT_EQ(data, plain) << "length " << n << " aad " << aad_len;
}

TEST(ChachaPoly, EqualsOpenSslEveryLength) {
  std::mt19937_64 rng(7539);
  for (uint32_t n = 0; n <= 2000; ++n) check_against_openssl(rng, n, n % 21);
}

TEST(ChachaPoly, EqualsOpenSslEveryAadLength) {
  std::mt19937_64 rng(7634);
  for (uint32_t aad_len = 0; aad_len <= 20; ++aad_len) {
    for (uint32_t n : {0u, 1u, 15u, 16u, 17u, 63u, 64u, 65u, 127u, 128u, 129u, 1400u, 2000u}) {
      check_against_openssl(rng, n, aad_len);
    }
  }
}

// Any single bit flipped in the ciphertext, the tag or the AAD, or a different key or nonce: open
// refuses, and the data is still the ciphertext it was given.
TEST(ChachaPoly, TamperingIsRejectedAndLeavesDataUntouched) {
  std::mt19937_64 rng(4303);
  for (uint32_t n : {0u, 1u, 16u, 63u, 64u, 65u, 130u}) {
    for (uint32_t aad_len : {0u, 8u, 13u}) {
      const Bytes key = random_bytes(rng, 32), nonce = random_bytes(rng, 12);
      Bytes aad = random_bytes(rng, aad_len);
      Bytes ct = random_bytes(rng, n);
      uint8_t tag[16];
      chacha20_poly1305_seal(key.data(), nonce.data(), aad.data(), aad_len, ct.data(), n, tag);
      auto open_copy = [&](const Bytes& k, const Bytes& iv, const Bytes& ad, const Bytes& c, const uint8_t* t) {
        Bytes data = c;
        const bool ok = chacha20_poly1305_open(k.data(), iv.data(), ad.data(), aad_len, data.data(), n, t);
        EXPECT_TRUE(ok || data == c) << "a refused open changed the data";
        return ok;
      };
      ASSERT_TRUE(open_copy(key, nonce, aad, ct, tag));
      for (uint32_t bit = 0; bit < 8 * n; ++bit) {
        ct[bit / 8] ^= static_cast<uint8_t>(1 << (bit % 8));
        ASSERT_FALSE(open_copy(key, nonce, aad, ct, tag)) << "ciphertext bit " << bit << " length " << n;
        ct[bit / 8] ^= static_cast<uint8_t>(1 << (bit % 8));
      }
      for (uint32_t bit = 0; bit < 128; ++bit) {
        tag[bit / 8] ^= static_cast<uint8_t>(1 << (bit % 8));
        ASSERT_FALSE(open_copy(key, nonce, aad, ct, tag)) << "tag bit " << bit << " length " << n;
        tag[bit / 8] ^= static_cast<uint8_t>(1 << (bit % 8));
      }
      for (uint32_t bit = 0; bit < 8 * aad_len; ++bit) {
        aad[bit / 8] ^= static_cast<uint8_t>(1 << (bit % 8));
        ASSERT_FALSE(open_copy(key, nonce, aad, ct, tag)) << "aad bit " << bit << " length " << n;
        aad[bit / 8] ^= static_cast<uint8_t>(1 << (bit % 8));
      }
      Bytes other = key;
      other[rng() % 32] ^= 0x01;
      EXPECT_FALSE(open_copy(other, nonce, aad, ct, tag));
      other = nonce;
      other[rng() % 12] ^= 0x80;
      EXPECT_FALSE(open_copy(key, other, aad, ct, tag));
      ASSERT_TRUE(open_copy(key, nonce, aad, ct, tag));
    }
  }
}

}  // namespace
}  // namespace tandem::crypto
