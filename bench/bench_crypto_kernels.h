// bench crypto's own GPU kernels for the payload algorithms of its paper tables (APUNet's eight
// algorithms, Koromilas et al.'s batch sweep): ChaCha20 alone, Poly1305 alone, MD5 / SHA-1 /
// SHA-256, AES-128-CBC with one key per connection, and an Aho-Corasick walk, each one message per
// thread through the shared `__host__ __device__` cores (apps/crypto/*_core.h, apps/dpi/ac_core.h);
// nothing here is an algorithm of its own.
//
// Two ways to reach the messages, both host to host:
//   copies  the messages and their descriptors copied in, the kernel on device memory, the results
//           copied back, the batch split over S streams so that copies and kernels overlap
//           (S = 1: one round trip, copy in, kernel, copy out)
//   mapped  no copy calls: the messages stay in mapped pinned host memory; each warp moves its 32
//           messages across PCIe itself (coalesced 16-byte loads into device scratch), runs the
//           same per-message code, and stores the results back into host memory the same way
//
// Host-only header (no CUDA types): the implementation is bench_crypto_kernels.cu's, registered
// through gpu/gpu_factory.h, so a build without CUDA links and create() throws the no-GPU
// gpu::GpuError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "gpu/gpu_factory.h"
#include "gpu/gpu_runtime.h"

namespace tandem::dpi {
class AhoCorasick;
}

namespace tandem::bench {

enum class PayloadOp : uint8_t { kChacha20, kPoly1305, kMd5, kSha1, kSha256, kAes128Cbc, kAhoCorasick };

constexpr const char* payload_op_name(PayloadOp op) {
  switch (op) {
    case PayloadOp::kChacha20: return "chacha20";
    case PayloadOp::kPoly1305: return "poly1305";
    case PayloadOp::kMd5: return "md5";
    case PayloadOp::kSha1: return "sha1";
    case PayloadOp::kSha256: return "sha256";
    case PayloadOp::kAes128Cbc: return "aes-128-cbc";
    case PayloadOp::kAhoCorasick: return "aho-corasick";
  }
  return "?";
}

// Bytes of one message's result in a tag array: 0 for the ciphers, which rewrite the message
// (out of place, at the message's own offset). Aho-Corasick: the number of distinct pattern ids
// found (kAcOverflow: more than the kernel keeps) and their sum, two little-endian 32-bit words.
constexpr uint32_t payload_tag_bytes(PayloadOp op) {
  switch (op) {
    case PayloadOp::kPoly1305: return 16;
    case PayloadOp::kMd5: return 16;
    case PayloadOp::kSha1: return 20;
    case PayloadOp::kSha256: return 32;
    case PayloadOp::kAhoCorasick: return 8;
    default: return 0;
  }
}
inline constexpr uint32_t kAcOverflow = 0xFFFFFFFFu;
inline constexpr uint32_t kAcKeptIds = 64;  // distinct ids a GPU walk keeps per message

// The bytes a cipher rewrites: ChaCha20 the message, AES-CBC the message zero-padded to its block
// size (the padding is part of the message's slot).
constexpr uint32_t payload_cipher_bytes(PayloadOp op, uint32_t len) {
  return op == PayloadOp::kAes128Cbc ? (len + 15) / 16 * 16 : len;
}

// n messages packed in one buffer: message k is bytes[offset[k] .. + length[k]), each starting on
// a 16-byte boundary and zero-padded to a multiple of 16 bytes; it belongs to connection conn[k]
// (whose key is keys[32 * conn[k] ..], AES-128 taking its first 16 bytes) and has its own 16-byte
// iv (ChaCha20: the first 12 bytes are the nonce, the block counter starts at 1 as in RFC 8439 2.4
// and intel-ipsec-mb; AES-CBC: the IV).
// Poly1305 takes the connection's 32-byte key as its one-time key (a benchmark, not a protocol).
struct Payloads {
  std::vector<uint8_t> bytes;
  std::vector<uint32_t> offset, length, conn;
  std::vector<uint8_t> iv;    // 16 per message
  std::vector<uint8_t> keys;  // 32 per connection
  size_t size() const { return length.size(); }
  size_t connections() const { return keys.size() / 32; }
  const uint8_t* msg(size_t k) const { return bytes.data() + offset[k]; }
  // Bytes of the buffer that the first n messages span (with their padding).
  size_t span(size_t n) const { return n ? offset[n - 1] + (length[n - 1] + 15) / 16 * 16 : 0; }
  // Appends a message of len bytes, copied from `from` (or left zero when null).
  uint8_t* add(uint32_t len, uint32_t connection, const uint8_t* from = nullptr);
};

class PayloadGpu {
 public:
  using Factory = gpu::GpuFactory<std::unique_ptr<PayloadGpu>(const Payloads&, const dpi::AhoCorasick*)>;
  // Copies every message of `p` into mapped pinned host memory, and its keys (AES-128 schedules
  // expanded on the host) and, when given, `ac`'s automaton into device memory. Throws
  // gpu::GpuError without a usable GPU.
  static std::unique_ptr<PayloadGpu> create(const Payloads& p, const dpi::AhoCorasick* ac = nullptr) {
    gpu::require_available();
    return Factory::create(p, ac);
  }
  virtual ~PayloadGpu() = default;

  // The first n messages of the payloads, host to host, as described above. Throws
  // std::invalid_argument for n beyond the payloads or kAhoCorasick without an automaton,
  // gpu::GpuError on a CUDA failure.
  virtual void run_copies(PayloadOp op, size_t n, int streams) = 0;
  virtual void run_mapped(PayloadOp op, size_t n) = 0;

  // The last run's results: a cipher's output for message k at out_bytes() + offset[k], a tag at
  // tags() + k * payload_tag_bytes(op).
  virtual const uint8_t* out_bytes() const = 0;
  virtual const uint8_t* tags() const = 0;
  // The pinned host copy of the messages and their descriptors (for runners that take host arrays,
  // such as crypto::DigestGpu, so that their copies run at pinned speed).
  virtual const uint8_t* in_bytes() const = 0;
  virtual const uint32_t* offsets() const = 0;
  virtual const uint32_t* lengths() const = 0;
};

}  // namespace tandem::bench
