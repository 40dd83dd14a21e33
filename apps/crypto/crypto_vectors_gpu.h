// The jobs of the published-vector test (crypto_vectors_test.cc): one AES-GCM, ChaCha20-Poly1305,
// AES-CBC or HMAC-SHA1 operation each, on bytes in one arena. run_vector_job runs one job with the
// cores (aes_core.h, chacha_core.h, hmac_core.h); the test calls it on the host, and the GPU runner
// (crypto_vectors_gpu.cu, compiled into that test only) calls it in a kernel, one thread per job, so
// both paths run the same code over the same vectors. Builds without CUDA have no GPU runner:
// create() throws the no-GPU gpu::GpuError (gpu/gpu_factory.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "apps/crypto/aes_core.h"
#include "apps/crypto/chacha_core.h"
#include "apps/crypto/ct_compare.h"
#include "apps/crypto/hmac_core.h"
#include "core/compiler.h"
#include "gpu/gpu_factory.h"
#include "gpu/gpu_runtime.h"

namespace tandem::crypto {

enum class VectorOp : uint32_t {
  kGcmSeal,
  kGcmOpen,
  kChachaSeal,
  kChachaOpen,
  kCbcEncrypt,
  kCbcDecrypt,
  kHmacSha1,
};

// Offsets (into the arena) and lengths of one operation's inputs, and where its output goes in the
// output arena: first in_len bytes of data (the ciphertext or plaintext; after a failed open, the
// input as it was left), then up to kVectorJobExtra bytes: a seal's 16-byte tag, HMAC's 20-byte
// MAC.
struct VectorJob {
  VectorOp op;
  uint32_t key, key_len;
  uint32_t iv;  // GCM and ChaCha20-Poly1305: the 12-byte nonce; CBC: the 16-byte IV
  uint32_t aad, aad_len;
  uint32_t in, in_len;    // the plaintext, the ciphertext or the message
  uint32_t tag, tag_len;  // open: the 16-byte tag; HMAC: the expected MAC's first tag_len bytes
  uint32_t out;
};

inline constexpr uint32_t kVectorJobExtra = 20;

// Runs one job. Returns 1 when the operation succeeded (a seal or CBC pass done, an open that
// found the tag right, an HMAC whose first tag_len bytes equal the tag, compared in constant
// time), 0 otherwise (a key length the core rejects, a wrong tag, a CBC length that is not whole
// blocks). `t`: the AES tables, the host's or a device copy.
TANDEM_HD inline uint8_t run_vector_job(const VectorJob& j, const uint8_t* arena, uint8_t* out_arena,
                                        const AesTables* t) {
  uint8_t* data = out_arena + j.out;
  uint8_t* extra = data + j.in_len;
  for (uint32_t i = 0; i < j.in_len; ++i) data[i] = arena[j.in + i];
  const uint8_t* key = arena + j.key;
  switch (j.op) {
    case VectorOp::kGcmSeal:
    case VectorOp::kGcmOpen: {
      GcmKey g;
      if (!gcm_key_init(&g, t, key, j.key_len)) return 0;
      if (j.op == VectorOp::kGcmSeal) {
        gcm_seal(g, t, arena + j.iv, arena + j.aad, j.aad_len, data, j.in_len, extra);
        return 1;
      }
      return gcm_open(g, t, arena + j.iv, arena + j.aad, j.aad_len, data, j.in_len, arena + j.tag) ? 1 : 0;
    }
    case VectorOp::kChachaSeal:
      if (j.key_len != kChachaKeyBytes) return 0;
      chacha20_poly1305_seal(key, arena + j.iv, arena + j.aad, j.aad_len, data, j.in_len, extra);
      return 1;
    case VectorOp::kChachaOpen:
      if (j.key_len != kChachaKeyBytes) return 0;
      return chacha20_poly1305_open(key, arena + j.iv, arena + j.aad, j.aad_len, data, j.in_len, arena + j.tag) ? 1
                                                                                                                 : 0;
    case VectorOp::kCbcEncrypt: {
      AesKey k;
      if (!aes_expand_enc_key(&k, t, key, j.key_len)) return 0;
      return aes_cbc_encrypt(k, t, arena + j.iv, data, j.in_len) ? 1 : 0;
    }
    case VectorOp::kCbcDecrypt: {
      AesKey k;
      if (!aes_expand_dec_key(&k, t, key, j.key_len)) return 0;
      return aes_cbc_decrypt(k, t, arena + j.iv, data, j.in_len) ? 1 : 0;
    }
    case VectorOp::kHmacSha1: {
      HmacSha1Key k;
      hmac_sha1_key_init(key, j.key_len, &k);
      hmac_sha1(k, arena + j.in, j.in_len, nullptr, 0, extra);
      return j.tag_len <= kHmacSha1Bytes && ct_equal(extra, arena + j.tag, j.tag_len) ? 1 : 0;
    }
  }
  return 0;
}

// Runs jobs on the GPU, one thread each, with the cores' device build.
class VectorJobsGpu {
 public:
  using Factory = gpu::GpuFactory<std::unique_ptr<VectorJobsGpu>()>;
  // Throws gpu::GpuError without a usable GPU.
  static std::unique_ptr<VectorJobsGpu> create() {
    gpu::require_available();
    return Factory::create();
  }
  virtual ~VectorJobsGpu() = default;

  // The arena and the jobs in, jobs[k]'s status to status[k] and out_bytes of output arena back to
  // out (both resized). Throws gpu::GpuError.
  virtual void run(const std::vector<uint8_t>& arena, const std::vector<VectorJob>& jobs, size_t out_bytes,
                   std::vector<uint8_t>* out, std::vector<uint8_t>* status) = 0;
};

}  // namespace tandem::crypto
