// The digest code written for the GPU (digest_core.h) against the published test vectors and
// OpenSSL, on the host here and, where a GPU is usable, on the device: every length from 0 to
// 300 bytes (one and two final blocks, every padding boundary) and random messages up to 9,000.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "apps/crypto/digest_core.h"
#include "apps/crypto/digest_cpu.h"
#include "apps/crypto/digest_gpu.h"
#include "tests/test_util.h"

namespace tandem::crypto {
namespace {

constexpr DigestAlgo kAlgos[] = {DigestAlgo::kMd5, DigestAlgo::kSha1, DigestAlgo::kSha256};

std::string hex(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s += {d[p[i] >> 4], d[p[i] & 15]};
  return s;
}

std::string core_hex(DigestAlgo a, const std::string& m) {
  uint8_t out[kMaxDigestBytes];
  digest(a, reinterpret_cast<const uint8_t*>(m.data()), static_cast<uint32_t>(m.size()), out);
  return hex(out, digest_bytes(a));
}

// RFC 1321 A.5; FIPS 180-2 appendices A and B (one block, two blocks).
TEST(Digest, PublishedVectors) {
  EXPECT_EQ(core_hex(DigestAlgo::kMd5, ""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(core_hex(DigestAlgo::kMd5, "abc"), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(core_hex(DigestAlgo::kMd5, "message digest"), "f96b697d7cb7938d525a2f31aaf161d0");
  EXPECT_EQ(core_hex(DigestAlgo::kMd5, "12345678901234567890123456789012345678901234567890123456789012345678901234567890"),
            "57edf4a22be3c955ac49da2e2107b67a");
  EXPECT_EQ(core_hex(DigestAlgo::kSha1, "abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(core_hex(DigestAlgo::kSha1, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  EXPECT_EQ(core_hex(DigestAlgo::kSha256, "abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(core_hex(DigestAlgo::kSha256, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const std::string million(1000000, 'a');
  EXPECT_EQ(core_hex(DigestAlgo::kSha1, million), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
  EXPECT_EQ(core_hex(DigestAlgo::kSha256, million), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Messages of every length 0..300, then random ones, as one batch (offsets into one buffer).
struct Batch {
  std::vector<uint8_t> bytes;
  std::vector<uint32_t> offsets, lengths;
};
Batch messages() {
  std::mt19937_64 rng(16);
  Batch b;
  auto add = [&](uint32_t len) {
    b.offsets.push_back(static_cast<uint32_t>(b.bytes.size()));
    b.lengths.push_back(len);
    for (uint32_t i = 0; i < len; ++i) b.bytes.push_back(static_cast<uint8_t>(rng()));
    b.bytes.push_back(0xEE);  // a byte between messages that no digest may read
  };
  for (uint32_t len = 0; len <= 300; ++len) add(len);
  for (int i = 0; i < 500; ++i) add(static_cast<uint32_t>(rng() % 9000));
  return b;
}

TEST(Digest, HostBuildOfTheGpuCodeEqualsOpenSsl) {
  const Batch b = messages();
  for (DigestAlgo a : kAlgos) {
    for (size_t k = 0; k < b.offsets.size(); ++k) {
      uint8_t want[kMaxDigestBytes], got[kMaxDigestBytes];
      openssl_digest(a, b.bytes.data() + b.offsets[k], b.lengths[k], want);
      digest(a, b.bytes.data() + b.offsets[k], b.lengths[k], got);
      ASSERT_EQ(hex(got, digest_bytes(a)), hex(want, digest_bytes(a))) << digest_name(a) << " length " << b.lengths[k];
    }
  }
}

TEST(Digest, GpuEqualsOpenSsl) {
  TANDEM_REQUIRE_GPU();
  const Batch b = messages();
  auto g = DigestGpu::create();
  for (DigestAlgo a : kAlgos) {
    const size_t db = digest_bytes(a), n = b.offsets.size();
    std::vector<uint8_t> got(n * db);
    g->digests(a, b.bytes.data(), b.bytes.size(), b.offsets.data(), b.lengths.data(), n, got.data());
    for (size_t k = 0; k < n; ++k) {
      uint8_t want[kMaxDigestBytes];
      openssl_digest(a, b.bytes.data() + b.offsets[k], b.lengths[k], want);
      ASSERT_EQ(hex(got.data() + k * db, db), hex(want, db)) << digest_name(a) << " length " << b.lengths[k];
    }
  }
  const uint32_t off = 0, len = 10;
  uint8_t out[kMaxDigestBytes];
  EXPECT_THROW(g->digests(DigestAlgo::kSha1, b.bytes.data(), 5, &off, &len, 1, out), std::invalid_argument);
}

TEST(Digest, WithoutAGpuCreatingOneIsAClearError) {
  std::string why;
  if (gpu::available(&why)) GTEST_SKIP() << "a GPU is usable";
  EXPECT_THROW(DigestGpu::create(), gpu::GpuError);
}

}  // namespace
}  // namespace tandem::crypto
