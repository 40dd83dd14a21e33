#include "apps/crypto/rsa_cpu.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace tandem::crypto {
namespace {

// The newest OpenSSL error as text (and the queue cleared), for exception messages.
std::string openssl_error(const std::string& what) {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  char buf[256] = "unknown error";
  if (e) ERR_error_string_n(e, buf, sizeof buf);
  return what + ": " + buf;
}

struct BnFree {
  void operator()(BIGNUM* b) const { BN_clear_free(b); }
};
struct CtxFree {
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};

// Parameter `name` of the key, big-endian in exactly `width` bytes.
template <size_t N>
void get_part(const EVP_PKEY* k, const char* name, std::array<uint8_t, N>* out) {
  BIGNUM* raw = nullptr;
  if (EVP_PKEY_get_bn_param(k, name, &raw) != 1) {
    ERR_clear_error();
    throw std::invalid_argument(std::string("rsa key: no ") + name + " (a key without its CRT parts?)");
  }
  std::unique_ptr<BIGNUM, BnFree> bn(raw);
  if (BN_bn2binpad(bn.get(), out->data(), static_cast<int>(N)) != static_cast<int>(N)) {
    throw std::invalid_argument(std::string("rsa key: ") + name + " is wider than " + std::to_string(N * 8) +
                                " bits (only RSA-2048 with two 1024-bit primes is supported)");
  }
}

}  // namespace

RsaPrivateKey RsaPrivateKey::generate(int bits, uint64_t e) {
  std::unique_ptr<EVP_PKEY_CTX, CtxFree> ctx(EVP_PKEY_CTX_new_from_name(nullptr, "RSA", nullptr));
  std::unique_ptr<BIGNUM, BnFree> pub(BN_new());
  if (!ctx || !pub || BN_set_word(pub.get(), e) != 1 || EVP_PKEY_keygen_init(ctx.get()) != 1 ||
      EVP_PKEY_CTX_set_rsa_keygen_bits(ctx.get(), bits) != 1 ||
      EVP_PKEY_CTX_set1_rsa_keygen_pubexp(ctx.get(), pub.get()) != 1) {
    throw std::runtime_error(openssl_error("rsa keygen setup"));
  }
  EVP_PKEY* k = nullptr;
  if (EVP_PKEY_keygen(ctx.get(), &k) != 1) throw std::runtime_error(openssl_error("rsa keygen"));
  return RsaPrivateKey(k);
}

RsaPrivateKey RsaPrivateKey::from_pem(const std::string& pem) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EVP_PKEY* k = bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr;
  if (!k) throw std::runtime_error(openssl_error("rsa key from PEM"));
  RsaPrivateKey key(k);
  if (!EVP_PKEY_is_a(k, "RSA")) throw std::runtime_error("rsa key from PEM: not an RSA key");
  return key;
}

RsaPrivateKey& RsaPrivateKey::operator=(RsaPrivateKey&& o) noexcept {
  std::swap(pkey_, o.pkey_);
  return *this;
}

RsaPrivateKey::~RsaPrivateKey() { EVP_PKEY_free(pkey_); }

int RsaPrivateKey::bits() const { return EVP_PKEY_get_bits(pkey_); }

RsaKeyParts RsaPrivateKey::parts() const {
  if (bits() != 2048) throw std::invalid_argument("rsa key: " + std::to_string(bits()) + " bits, not 2048");
  RsaKeyParts p;
  get_part(pkey_, OSSL_PKEY_PARAM_RSA_N, &p.n);
  get_part(pkey_, OSSL_PKEY_PARAM_RSA_D, &p.d);
  get_part(pkey_, OSSL_PKEY_PARAM_RSA_FACTOR1, &p.p);
  get_part(pkey_, OSSL_PKEY_PARAM_RSA_FACTOR2, &p.q);
  get_part(pkey_, OSSL_PKEY_PARAM_RSA_EXPONENT1, &p.dp);
  get_part(pkey_, OSSL_PKEY_PARAM_RSA_EXPONENT2, &p.dq);
  get_part(pkey_, OSSL_PKEY_PARAM_RSA_COEFFICIENT1, &p.qinv);
  std::array<uint8_t, 8> e{};
  get_part(pkey_, OSSL_PKEY_PARAM_RSA_E, &e);
  for (uint8_t b : e) p.e = p.e << 8 | b;
  return p;
}

std::string RsaPrivateKey::to_pem() const {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), pkey_, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    throw std::runtime_error(openssl_error("rsa key to PEM"));
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

RsaCrtKey rsa_crt_key(const RsaPrivateKey& k) {
  const RsaKeyParts p = k.parts();
  return make_rsa_crt_key(p.n.data(), p.p.data(), p.q.data(), p.dp.data(), p.dq.data(), p.qinv.data());
}

RsaPrivateOp::RsaPrivateOp(const RsaPrivateKey& k) : bytes_(static_cast<size_t>((k.bits() + 7) / 8)) {
  pkey_ = EVP_PKEY_dup(k.get());
  if (!pkey_) throw std::runtime_error(openssl_error("rsa key copy"));
  ctx_ = EVP_PKEY_CTX_new(pkey_, nullptr);
  if (!ctx_ || EVP_PKEY_decrypt_init(ctx_) != 1 || EVP_PKEY_CTX_set_rsa_padding(ctx_, RSA_NO_PADDING) != 1) {
    const std::string msg = openssl_error("rsa raw decrypt setup");
    EVP_PKEY_CTX_free(ctx_);
    EVP_PKEY_free(pkey_);
    throw std::runtime_error(msg);
  }
}

RsaPrivateOp::~RsaPrivateOp() {
  EVP_PKEY_CTX_free(ctx_);
  EVP_PKEY_free(pkey_);
}

bool RsaPrivateOp::run(const uint8_t* in, uint8_t* out) {
  size_t len = bytes_;
  if (EVP_PKEY_decrypt(ctx_, out, &len, in, bytes_) == 1 && len == bytes_) return true;
  ERR_clear_error();  // an input >= n; the queue would otherwise grow with every refusal
  std::memset(out, 0, bytes_);
  return false;
}

size_t RsaPrivateOp::run_batch(const uint8_t* in, size_t count, uint8_t* out, uint8_t* status) {
  size_t done = 0;
  for (size_t k = 0; k < count; ++k) {
    const bool ok = run(in + k * bytes_, out + k * bytes_);
    done += ok;
    if (status) status[k] = ok;
  }
  return done;
}

}  // namespace tandem::crypto
