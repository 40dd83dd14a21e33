#include "apps/ipsec/esp_openssl.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "core/byte_order.h"

namespace tandem::ipsec {

namespace {

const EVP_CIPHER* evp_cipher(Cipher c) {
  switch (c) {
    case Cipher::kAes128Cbc: return EVP_aes_128_cbc();
    case Cipher::kAes128Gcm: return EVP_aes_128_gcm();
    case Cipher::kAes256Gcm: return EVP_aes_256_gcm();
    case Cipher::kChacha20Poly1305: return EVP_chacha20_poly1305();
  }
  return nullptr;
}

constexpr uint32_t kAeadTagBytes = 16;
constexpr uint32_t kHmacSha1IcvBytes = 12;

// The HMAC-SHA1 of an ESP frame (RFC 4303 2.2.1: SPI to the end of the payload, then the high half
// of the sequence number with ESN) into mac (EVP_MAX_MD_SIZE bytes); false if OpenSSL failed.
bool hmac(EVP_MAC_CTX* m, bool esn, const uint8_t* frame, const EspLayout& l, uint64_t seq, uint8_t* mac) {
  uint8_t seq_high[4];
  store_be32(seq_high, static_cast<uint32_t>(seq >> 32));
  size_t n = 0;
  return EVP_MAC_init(m, nullptr, 0, nullptr) == 1 && EVP_MAC_update(m, frame + l.esp, l.icv - l.esp) == 1 &&
         (!esn || EVP_MAC_update(m, seq_high, 4) == 1) && EVP_MAC_final(m, mac, &n, EVP_MAX_MD_SIZE) == 1;
}

}  // namespace

struct EspOpenSsl::Contexts {
  EVP_CIPHER_CTX* cipher = nullptr;
  EVP_MAC_CTX* mac = nullptr;
  ~Contexts() {
    EVP_CIPHER_CTX_free(cipher);
    EVP_MAC_CTX_free(mac);
  }
};

EspOpenSsl::EspOpenSsl(const SaTable& table) : table_(table), ctx_(table.capacity()) {}
EspOpenSsl::~EspOpenSsl() = default;

void EspOpenSsl::forget(uint32_t i) { ctx_[i].reset(); }

EspOpenSsl::Contexts& EspOpenSsl::contexts(uint32_t i) {
  if (ctx_[i]) return *ctx_[i];
  const Sa& sa = table_.sa(i);
  auto c = std::make_unique<Contexts>();
  const bool enc = sa.dir == SaDir::kOut;
  c->cipher = EVP_CIPHER_CTX_new();
  if (!c->cipher || EVP_CipherInit_ex2(c->cipher, evp_cipher(sa.cipher), sa.key.data(), nullptr, enc ? 1 : 0, nullptr) != 1) {
    throw std::runtime_error("OpenSSL: cannot set up " + std::string(cipher_name(sa.cipher)));
  }
  if (sa.cipher == Cipher::kAes128Cbc) EVP_CIPHER_CTX_set_padding(c->cipher, 0);
  if (sa.auth == Auth::kHmacSha1_96) {
    EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    c->mac = mac ? EVP_MAC_CTX_new(mac) : nullptr;
    EVP_MAC_free(mac);
    char digest[] = "SHA1";
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0), OSSL_PARAM_construct_end()};
    if (!c->mac || EVP_MAC_init(c->mac, sa.auth_key.data(), sa.auth_key.size(), params) != 1) {
      throw std::runtime_error("OpenSSL: cannot set up HMAC-SHA1");
    }
  }
  ctx_[i] = std::move(c);
  return *ctx_[i];
}

bool EspOpenSsl::seal(uint32_t i, uint8_t* frame, const EspLayout& l, uint64_t seq) {
  const Sa& sa = table_.sa(i);
  Contexts& c = contexts(i);
  int n = 0;
  esp_iv_seed(sa.cipher, sa.spi, seq, frame + l.iv);
  if (sa.cipher == Cipher::kAes128Cbc) {
    // The seed block encrypted under a zero IV is the IV, and the pass goes on as CBC under it.
    static constexpr uint8_t kZeroIv[16] = {};
    if (EVP_EncryptInit_ex2(c.cipher, nullptr, nullptr, kZeroIv, nullptr) != 1 ||
        EVP_EncryptUpdate(c.cipher, frame + l.iv, &n, frame + l.iv, static_cast<int>(16 + l.payload_len)) != 1) {
      return false;
    }
    uint8_t icv[EVP_MAX_MD_SIZE];
    if (!hmac(c.mac, sa.esn, frame, l, seq, icv)) return false;
    std::memcpy(frame + l.icv, icv, kHmacSha1IcvBytes);
    return true;
  }
  uint8_t nonce[12], aad[12];
  esp_aead_nonce(sa.salt.data(), frame + l.iv, nonce);
  const int aad_len = static_cast<int>(esp_aad(sa.spi, seq, sa.esn, aad));
  uint8_t* p = frame + l.payload;
  return EVP_EncryptInit_ex2(c.cipher, nullptr, nullptr, nonce, nullptr) == 1 &&
         EVP_EncryptUpdate(c.cipher, nullptr, &n, aad, aad_len) == 1 &&
         EVP_EncryptUpdate(c.cipher, p, &n, p, static_cast<int>(l.payload_len)) == 1 &&
         EVP_EncryptFinal_ex(c.cipher, p + n, &n) == 1 &&
         EVP_CIPHER_CTX_ctrl(c.cipher, EVP_CTRL_AEAD_GET_TAG, kAeadTagBytes, frame + l.icv) == 1;
}

DropReason EspOpenSsl::open(uint32_t i, uint8_t* frame, const EspLayout& l, uint64_t seq) {
  const Sa& sa = table_.sa(i);
  Contexts& c = contexts(i);
  int n = 0;
  if (sa.cipher == Cipher::kAes128Cbc) {
    uint8_t icv[EVP_MAX_MD_SIZE];
    if (!hmac(c.mac, sa.esn, frame, l, seq, icv)) return kCryptoError;
    if (CRYPTO_memcmp(icv, frame + l.icv, kHmacSha1IcvBytes) != 0) return kBadIcv;
    if (EVP_DecryptInit_ex2(c.cipher, nullptr, nullptr, frame + l.iv, nullptr) != 1 ||
        EVP_DecryptUpdate(c.cipher, frame + l.payload, &n, frame + l.payload, static_cast<int>(l.payload_len)) != 1) {
      return kCryptoError;
    }
    return DropReason::kNone;
  }
  uint8_t nonce[12], aad[12];
  esp_aead_nonce(sa.salt.data(), frame + l.iv, nonce);
  const int aad_len = static_cast<int>(esp_aad(sa.spi, seq, sa.esn, aad));
  uint8_t* p = frame + l.payload;
  if (EVP_DecryptInit_ex2(c.cipher, nullptr, nullptr, nonce, nullptr) != 1 ||
      EVP_CIPHER_CTX_ctrl(c.cipher, EVP_CTRL_AEAD_SET_TAG, kAeadTagBytes, frame + l.icv) != 1 ||
      EVP_DecryptUpdate(c.cipher, nullptr, &n, aad, aad_len) != 1 ||
      EVP_DecryptUpdate(c.cipher, p, &n, p, static_cast<int>(l.payload_len)) != 1) {
    return kCryptoError;
  }
  return EVP_DecryptFinal_ex(c.cipher, p + n, &n) == 1 ? DropReason::kNone : kBadIcv;
}

}  // namespace tandem::ipsec
