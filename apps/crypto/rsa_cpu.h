// RSA on the CPU through OpenSSL 3: keys (generated, or read from PEM), their parts for the GPU's
// key setup (rsa_core.h), and the raw private operation m = c^d mod n, which is both the CPU path
// of the RSA workload and the reference the GPU code is checked against. Raw means no padding:
// inputs and outputs are whole big-endian blocks of the modulus's size.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "apps/crypto/rsa_core.h"

struct evp_pkey_st;
struct evp_pkey_ctx_st;

namespace tandem::crypto {

// A key's numbers, big-endian and zero-padded to fixed widths (RSA-2048: 1024-bit primes).
struct RsaKeyParts {
  std::array<uint8_t, kRsaBytes> n{}, d{};
  std::array<uint8_t, kRsaHalfBytes> p{}, q{}, dp{}, dq{}, qinv{};
  uint64_t e = 0;
};

// An OpenSSL RSA private key (owned).
class RsaPrivateKey {
 public:
  // A fresh key of `bits` bits and public exponent e. Throws std::runtime_error if OpenSSL fails.
  static RsaPrivateKey generate(int bits = 2048, uint64_t e = 65537);
  // A private key from PEM text (PKCS#8 or PKCS#1). Throws std::runtime_error if it is none, or
  // not RSA.
  static RsaPrivateKey from_pem(const std::string& pem);

  RsaPrivateKey(RsaPrivateKey&& o) noexcept : pkey_(o.pkey_) { o.pkey_ = nullptr; }
  RsaPrivateKey& operator=(RsaPrivateKey&& o) noexcept;
  RsaPrivateKey(const RsaPrivateKey&) = delete;
  RsaPrivateKey& operator=(const RsaPrivateKey&) = delete;
  ~RsaPrivateKey();

  int bits() const;
  // The numbers at the widths of RsaKeyParts. Throws std::invalid_argument unless the key is
  // RSA-2048 with both primes of at most 1024 bits and all CRT parts present.
  RsaKeyParts parts() const;
  // The PEM text (PKCS#8, unencrypted) of the private key.
  std::string to_pem() const;
  evp_pkey_st* get() const { return pkey_; }

 private:
  explicit RsaPrivateKey(evp_pkey_st* p) : pkey_(p) {}
  evp_pkey_st* pkey_ = nullptr;
};

// The GPU's key constants (rsa_core.h) for an RSA-2048 key; throws std::invalid_argument as
// parts() and make_rsa_crt_key() do.
RsaCrtKey rsa_crt_key(const RsaPrivateKey& k);

// Raw private operations with one key, for one thread (an OpenSSL context is not to be shared).
// It works on its own copy of the key: OpenSSL 3.0 shares one blinding value per key between
// threads under a lock, which would make threads of one key wait for each other.
class RsaPrivateOp {
 public:
  explicit RsaPrivateOp(const RsaPrivateKey& k);
  RsaPrivateOp(const RsaPrivateOp&) = delete;
  RsaPrivateOp& operator=(const RsaPrivateOp&) = delete;
  ~RsaPrivateOp();

  // Bytes of an input or output block (the modulus's size).
  size_t bytes() const { return bytes_; }
  // out = in^d mod n (both bytes() bytes, big-endian). False, with out zeroed, when OpenSSL
  // refuses the input (in >= n).
  bool run(const uint8_t* in, uint8_t* out);
  // Block k of in to block k of out for k < count; status[k] is 1 for done, 0 for refused (may be
  // null). Returns how many were done.
  size_t run_batch(const uint8_t* in, size_t count, uint8_t* out, uint8_t* status);

 private:
  evp_pkey_st* pkey_ = nullptr;
  evp_pkey_ctx_st* ctx_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace tandem::crypto
