#include "apps/crypto/digest_cpu.h"

#include <openssl/evp.h>

#include <stdexcept>
#include <string>

namespace tandem::crypto {

const char* digest_name(DigestAlgo a) {
  switch (a) {
    case DigestAlgo::kMd5: return "md5";
    case DigestAlgo::kSha1: return "sha1";
    case DigestAlgo::kSha256: return "sha256";
  }
  return "unknown";
}

void openssl_digest(DigestAlgo a, const uint8_t* msg, size_t n, uint8_t* out) {
  const EVP_MD* md = a == DigestAlgo::kMd5 ? EVP_md5() : a == DigestAlgo::kSha1 ? EVP_sha1() : EVP_sha256();
  unsigned int len = 0;
  if (EVP_Digest(msg, n, out, &len, md, nullptr) != 1 || len != digest_bytes(a)) {
    throw std::runtime_error(std::string("OpenSSL cannot compute ") + digest_name(a));
  }
}

}  // namespace tandem::crypto
