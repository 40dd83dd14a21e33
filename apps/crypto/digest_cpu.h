// Digests on the CPU through OpenSSL 3 (EVP): the CPU path of the hashing app and the reference
// the GPU's digest code is checked against.
#pragma once

#include <cstddef>
#include <cstdint>

#include "apps/crypto/digest_core.h"

namespace tandem::crypto {

// The name OpenSSL and the command line use: "md5", "sha1", "sha256".
const char* digest_name(DigestAlgo a);

// The digest of msg[0..n) into out (digest_bytes(a) bytes). Throws std::runtime_error if OpenSSL
// fails (e.g. MD5 refused by a FIPS-only configuration).
void openssl_digest(DigestAlgo a, const uint8_t* msg, size_t n, uint8_t* out);

}  // namespace tandem::crypto
