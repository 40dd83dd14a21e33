// ESP's cryptography written once as `__host__ __device__` code over apps/crypto's cores: what the
// GPU kernels run, and the independent implementation the CPU path (OpenSSL) is verified against
// (--verify, the tests). Per SA, the keys are expanded once into EspSaKeys; per packet, seal and
// open work in place on a frame laid out by apps/ipsec/esp_frame.h, byte for byte as
// apps/ipsec/esp_openssl.cc does (same IVs, same AAD, same ICVs).
//
// Not constant-time: the AES and GHASH code is table-based (apps/crypto/aes_core.h).
#pragma once

#include <cstdint>

#include "apps/crypto/aes_core.h"
#include "apps/crypto/chacha_core.h"
#include "apps/crypto/ct_compare.h"
#include "apps/crypto/hmac_core.h"
#include "apps/ipsec/esp_frame.h"
#include "apps/ipsec/sa_file.h"

namespace tandem::ipsec {

// One SA's keys, expanded (about 1.3 KB; the cipher's part alone is filled in).
struct EspSaKeys {
  Cipher cipher = Cipher::kAes128Cbc;
  bool esn = false;
  uint32_t spi = 0;
  uint8_t salt[4] = {};
  crypto::AesKey cbc;       // AES-CBC: encryption schedule (outbound) or decryption one (inbound)
  crypto::AesKey cbc_iv;    // AES-CBC outbound: the encryption schedule that makes the IV
  crypto::GcmKey gcm;       // AES-GCM
  crypto::HmacSha1Key hmac; // AES-CBC's HMAC-SHA1-96
  uint8_t chacha[32] = {};  // ChaCha20-Poly1305
};

// Expands an SA's keys (host code; the tables are the host copy).
inline EspSaKeys esp_sa_keys(const Sa& sa) {
  EspSaKeys k;
  k.cipher = sa.cipher;
  k.esn = sa.esn;
  k.spi = sa.spi;
  for (size_t i = 0; i < sa.salt.size() && i < 4; ++i) k.salt[i] = sa.salt[i];
  const crypto::AesTables* t = &crypto::aes_tables();
  const auto key_len = static_cast<uint32_t>(sa.key.size());
  switch (sa.cipher) {
    case Cipher::kAes128Cbc:
      crypto::aes_expand_enc_key(&k.cbc_iv, t, sa.key.data(), key_len);
      if (sa.dir == SaDir::kOut) {
        k.cbc = k.cbc_iv;
      } else {
        crypto::aes_dec_key_from_enc(&k.cbc, t, k.cbc_iv);
      }
      crypto::hmac_sha1_key_init(sa.auth_key.data(), static_cast<uint32_t>(sa.auth_key.size()), &k.hmac);
      break;
    case Cipher::kAes128Gcm:
    case Cipher::kAes256Gcm: crypto::gcm_key_init(&k.gcm, t, sa.key.data(), key_len); break;
    case Cipher::kChacha20Poly1305:
      for (uint32_t i = 0; i < 32 && i < key_len; ++i) k.chacha[i] = sa.key[i];
      break;
  }
  return k;
}

// The HMAC-SHA1-96 ICV of an ESP frame: over SPI .. end of the payload, then the high half of the
// sequence number with ESN (RFC 4303 2.2.1).
TANDEM_HD_INLINE void esp_hmac(const EspSaKeys& k, const uint8_t* frame, const EspLayout& l, uint64_t seq,
                               uint8_t* mac) {
  uint8_t seq_high[4];
  store_be32(seq_high, static_cast<uint32_t>(seq >> 32));
  crypto::hmac_sha1(k.hmac, frame + l.esp, l.icv - l.esp, seq_high, k.esn ? 4 : 0, mac);
}

// Outbound: writes the IV, encrypts the payload in place and writes the ICV.
TANDEM_HD_INLINE void esp_hd_seal(const EspSaKeys& k, const crypto::AesTables* t, uint8_t* frame, const EspLayout& l,
                                  uint64_t seq) {
  esp_iv_seed(k.cipher, k.spi, seq, frame + l.iv);
  if (k.cipher == Cipher::kAes128Cbc) {
    // As esp_openssl.cc: the seed block, encrypted, is the IV, and CBC goes on under it.
    crypto::aes_encrypt_block(k.cbc, t, frame + l.iv, frame + l.iv);
    crypto::aes_cbc_encrypt(k.cbc, t, frame + l.iv, frame + l.payload, l.payload_len);
    uint8_t mac[20];
    esp_hmac(k, frame, l, seq, mac);
    for (int i = 0; i < 12; ++i) frame[l.icv + i] = mac[i];
    return;
  }
  uint8_t nonce[12], aad[12];
  esp_aead_nonce(k.salt, frame + l.iv, nonce);
  const uint32_t aad_len = esp_aad(k.spi, seq, k.esn, aad);
  if (k.cipher == Cipher::kChacha20Poly1305) {
    crypto::chacha20_poly1305_seal(k.chacha, nonce, aad, aad_len, frame + l.payload, l.payload_len, frame + l.icv);
  } else {
    crypto::gcm_seal(k.gcm, t, nonce, aad, aad_len, frame + l.payload, l.payload_len, frame + l.icv);
  }
}

// Inbound: verifies the ICV and, when it is right, decrypts the payload in place (kNone);
// kBadIcv, the frame untouched, when it is not.
TANDEM_HD_INLINE DropReason esp_hd_open(const EspSaKeys& k, const crypto::AesTables* t, uint8_t* frame,
                                        const EspLayout& l, uint64_t seq) {
  if (k.cipher == Cipher::kAes128Cbc) {
    uint8_t mac[20];
    esp_hmac(k, frame, l, seq, mac);
    if (!crypto::ct_equal(mac, frame + l.icv, 12)) return kBadIcv;
    crypto::aes_cbc_decrypt(k.cbc, t, frame + l.iv, frame + l.payload, l.payload_len);
    return DropReason::kNone;
  }
  uint8_t nonce[12], aad[12];
  esp_aead_nonce(k.salt, frame + l.iv, nonce);
  const uint32_t aad_len = esp_aad(k.spi, seq, k.esn, aad);
  const bool ok = k.cipher == Cipher::kChacha20Poly1305
                      ? crypto::chacha20_poly1305_open(k.chacha, nonce, aad, aad_len, frame + l.payload, l.payload_len,
                                                       frame + l.icv)
                      : crypto::gcm_open(k.gcm, t, nonce, aad, aad_len, frame + l.payload, l.payload_len, frame + l.icv);
  return ok ? DropReason::kNone : kBadIcv;
}

}  // namespace tandem::ipsec
