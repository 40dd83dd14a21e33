// The payload kernels of bench crypto's paper tables (bench_crypto_kernels.h): one message per
// thread through the shared cores, on device memory (copies) or on mapped host memory that each
// warp stages through device scratch itself (mapped).
#include "bench/bench_crypto_kernels.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/crypto/aes_core.h"
#include "apps/crypto/chacha_core.h"
#include "apps/crypto/digest_core.h"
#include "apps/dpi/ac_walk.cuh"
#include "apps/dpi/aho_corasick.h"
#include "gpu/cuda_util.cuh"

namespace tandem::bench {
namespace {

constexpr int kThreads = 128;  // 4 warps a block: a batch of long messages spreads over every multiprocessor
constexpr int kWarp = 32;

// Where one launch finds its messages and puts its results. Pointers are device pointers: device
// memory for the copies, the device's view of mapped host memory for `host_*` in mapped runs.
struct Batch {
  uint8_t* bytes;  // the messages, processed in place (device memory)
  uint32_t* offset;
  uint32_t* length;
  uint32_t* conn;
  uint8_t* iv;  // 16 per message
  uint8_t* tags;  // payload_tag_bytes(op) per message (device memory)
  const uint8_t* keys;  // 32 per connection
  const crypto::AesKey* aes_keys;
  const crypto::AesTables* aes_tables;
  dpi::AcView ac;
  size_t n;
  // Mapped runs only: the messages, their descriptors and the results in host memory (the device
  // arrays above are then the scratch each warp stages its messages in).
  const uint8_t* host_in;
  const uint32_t* host_offset;
  const uint32_t* host_length;
  const uint32_t* host_conn;
  const uint8_t* host_iv;
  uint8_t* host_out;
  uint8_t* host_tags;
};

// The distinct pattern ids of one walk: how many (kAcOverflow past kAcKeptIds) and their sum.
__device__ void ac_walk(const dpi::AcView& v, const uint8_t* p, uint32_t len, uint8_t* tag) {
  uint32_t found[kAcKeptIds];
  uint32_t nf = 0, sum = 0;
  bool overflow = false;
  auto seen = [&](uint32_t id) {
    for (uint32_t j = 0; j < nf; ++j) {
      if (found[j] == id) return true;
    }
    return false;
  };
  auto add = [&](uint32_t id) {
    if (nf == kAcKeptIds) {
      overflow = true;
      return;
    }
    found[nf++] = id;
    sum += id;
  };
  dpi::ac_walk_words(v, p, len, seen, add, [&] { return overflow; });  // messages are 16-byte aligned and padded
  const uint32_t out[2] = {overflow ? kAcOverflow : nf, sum};
  memcpy(tag, out, sizeof out);
}

// Message i of the batch, in place in b.bytes, its tag (if any) into b.tags.
template <PayloadOp kOp>
__device__ void process(const Batch& b, size_t i) {
  static_assert(payload_tag_bytes(kOp) % 4 == 0, "tags are moved in 4-byte words");
  uint8_t* p = b.bytes + b.offset[i];
  const uint32_t len = b.length[i];
  const uint8_t* key = b.keys + size_t{32} * b.conn[i];
  constexpr uint32_t tb = payload_tag_bytes(kOp);
  uint8_t* tag = b.tags + i * tb;
  if constexpr (kOp == PayloadOp::kChacha20) {
    crypto::chacha20_xor(key, 1, b.iv + 16 * i, p, len);  // counter 1, as RFC 8439 2.4 and intel-ipsec-mb
  } else if constexpr (kOp == PayloadOp::kPoly1305) {
    crypto::poly1305(key, p, len, tag);
  } else if constexpr (kOp == PayloadOp::kMd5) {
    crypto::digest(crypto::DigestAlgo::kMd5, p, len, tag);
  } else if constexpr (kOp == PayloadOp::kSha1) {
    crypto::digest(crypto::DigestAlgo::kSha1, p, len, tag);
  } else if constexpr (kOp == PayloadOp::kSha256) {
    crypto::digest(crypto::DigestAlgo::kSha256, p, len, tag);
  } else if constexpr (kOp == PayloadOp::kAes128Cbc) {
    crypto::aes_cbc_encrypt(b.aes_keys[b.conn[i]], b.aes_tables, b.iv + 16 * i, p, (len + 15) / 16 * 16);
  } else {
    ac_walk(b.ac, p, len, tag);
  }
}

// Copies [lo, hi) (multiples of 16) between two buffers, the warp's lanes taking 16 bytes each in
// turn: one coalesced transfer across PCIe when one side is mapped host memory.
__device__ void warp_copy(uint8_t* to, const uint8_t* from, size_t lo, size_t hi, uint32_t lane) {
  for (size_t k = lo + 16 * lane; k < hi; k += 16 * kWarp) {
    *reinterpret_cast<uint4*>(to + k) = *reinterpret_cast<const uint4*>(from + k);
  }
}

// Copies: one thread per message of [first, first + count), on device memory. Mapped: each warp
// takes 32 consecutive messages, moves their bytes from host memory into device scratch, processes
// them, and moves the results back.
template <PayloadOp kOp, bool kMapped>
__global__ void __launch_bounds__(kThreads) payload_kernel(Batch b, size_t first, size_t count) {
  if constexpr (!kMapped) {
    const size_t stride = size_t{gridDim.x} * blockDim.x;
    for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count; i += stride) process<kOp>(b, first + i);
  } else {
    const uint32_t lane = threadIdx.x % kWarp;
    const size_t warps = size_t{gridDim.x} * (blockDim.x / kWarp);
    for (size_t w = (size_t{blockIdx.x} * blockDim.x + threadIdx.x) / kWarp; w * kWarp < count; w += warps) {
      const size_t lo_i = first + w * kWarp, hi_i = min(lo_i + kWarp, first + count), i = lo_i + lane;
      // Each lane stages its own descriptor, then the warp its messages' bytes.
      if (i < hi_i) {
        b.offset[i] = b.host_offset[i];
        b.length[i] = b.host_length[i];
        b.conn[i] = b.host_conn[i];
        reinterpret_cast<uint4*>(b.iv)[i] = reinterpret_cast<const uint4*>(b.host_iv)[i];
      }
      __syncwarp();
      const size_t lo = b.offset[lo_i], hi = b.offset[hi_i - 1] + (b.length[hi_i - 1] + 15) / 16 * 16;
      warp_copy(b.bytes, b.host_in, lo, hi, lane);
      __syncwarp();
      if (i < hi_i) process<kOp>(b, i);
      __syncwarp();
      constexpr uint32_t tb = payload_tag_bytes(kOp);
      if constexpr (tb == 0) {
        warp_copy(b.host_out, b.bytes, lo, hi, lane);
      } else {
        // Tags are 4-byte multiples; a warp's are contiguous.
        const size_t words = (hi_i - lo_i) * tb / 4;
        const uint32_t* from = reinterpret_cast<const uint32_t*>(b.tags + lo_i * tb);
        uint32_t* to = reinterpret_cast<uint32_t*>(b.host_tags + lo_i * tb);
        for (size_t k = lane; k < words; k += kWarp) to[k] = from[k];
      }
    }
  }
}

template <bool kMapped>
void launch(PayloadOp op, const Batch& b, size_t first, size_t count, int blocks, cudaStream_t s) {
  switch (op) {
    case PayloadOp::kChacha20: payload_kernel<PayloadOp::kChacha20, kMapped><<<blocks, kThreads, 0, s>>>(b, first, count); break;
    case PayloadOp::kPoly1305: payload_kernel<PayloadOp::kPoly1305, kMapped><<<blocks, kThreads, 0, s>>>(b, first, count); break;
    case PayloadOp::kMd5: payload_kernel<PayloadOp::kMd5, kMapped><<<blocks, kThreads, 0, s>>>(b, first, count); break;
    case PayloadOp::kSha1: payload_kernel<PayloadOp::kSha1, kMapped><<<blocks, kThreads, 0, s>>>(b, first, count); break;
    case PayloadOp::kSha256: payload_kernel<PayloadOp::kSha256, kMapped><<<blocks, kThreads, 0, s>>>(b, first, count); break;
    case PayloadOp::kAes128Cbc: payload_kernel<PayloadOp::kAes128Cbc, kMapped><<<blocks, kThreads, 0, s>>>(b, first, count); break;
    case PayloadOp::kAhoCorasick: payload_kernel<PayloadOp::kAhoCorasick, kMapped><<<blocks, kThreads, 0, s>>>(b, first, count); break;
  }
  TANDEM_CUDA_CHECK_LAUNCH();
}

template <class T>
T* device_view(T* host) {
  void* d = nullptr;
  TANDEM_CUDA_CHECK(cudaHostGetDevicePointer(&d, host, 0));
  return static_cast<T*>(d);
}

class PayloadGpuImpl final : public PayloadGpu {
 public:
  PayloadGpuImpl(const Payloads& p, const dpi::AhoCorasick* ac) : n_(p.size()), span_(p.span(p.size())) {
    if (n_ == 0 || p.connections() == 0) throw std::invalid_argument("payload gpu: no messages or no keys");
    TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, 0));
    constexpr unsigned kMappedFlags = cudaHostAllocMapped;
    h_in_.resize(span_, kMappedFlags);
    h_out_.resize(span_, kMappedFlags);
    h_tags_.resize(n_ * crypto::kMaxDigestBytes, kMappedFlags);
    h_offset_.resize(n_, kMappedFlags);
    h_length_.resize(n_, kMappedFlags);
    h_conn_.resize(n_, kMappedFlags);
    h_iv_.resize(16 * n_, kMappedFlags);
    std::copy(p.bytes.begin(), p.bytes.begin() + span_, h_in_.get());
    std::copy(p.offset.begin(), p.offset.end(), h_offset_.get());
    std::copy(p.length.begin(), p.length.end(), h_length_.get());
    std::copy(p.conn.begin(), p.conn.end(), h_conn_.get());
    std::copy(p.iv.begin(), p.iv.begin() + 16 * n_, h_iv_.get());
    d_bytes_.resize(span_);
    d_tags_.resize(n_ * crypto::kMaxDigestBytes);
    d_offset_.resize(n_);
    d_length_.resize(n_);
    d_conn_.resize(n_);
    d_iv_.resize(16 * n_);
    keys_.upload(p.keys);
    std::vector<crypto::AesKey> aes(p.connections());
    for (size_t c = 0; c < aes.size(); ++c) crypto::aes_expand_enc_key(&aes[c], &crypto::aes_tables(), &p.keys[32 * c], 16);
    aes_keys_.upload(aes);
    tables_.upload(&crypto::aes_tables(), 1);
    if (ac) {
      delta_.upload(ac->delta(), ac->delta_entries());
      rep_begin_.upload(ac->report_begin());
      rep_.upload(ac->reports());
      pats_.upload(ac->pattern_records());
      cls_.upload(ac->byte_classes(), 256);
      pat_bytes_.upload(ac->pattern_bytes());
      ac_ = dpi::AcView{delta_.get(), cls_.get(),       rep_begin_.get(), rep_.get(),
                        pats_.get(),  pat_bytes_.get(), ac->classes(),    dpi::ac_row_magic(ac->classes())};
    }
    for (auto& s : streams_) s = std::make_unique<gpu::Stream>();
  }

  void run_copies(PayloadOp op, size_t n, int streams) override {
    check(op, n);
    const uint32_t tb = payload_tag_bytes(op);
    const size_t s_count = std::clamp<size_t>(static_cast<size_t>(std::max(streams, 1)), 1, std::min(kMaxStreams, n));
    Batch b = device_batch();
    for (size_t s = 0; s < s_count; ++s) {
      const size_t first = n * s / s_count, last = n * (s + 1) / s_count;
      if (first == last) continue;
      cudaStream_t st = streams_[s]->get();
      const size_t lo = h_offset_[first], hi = span_of(last), cnt = last - first;
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_bytes_.get() + lo, h_in_.get() + lo, hi - lo, cudaMemcpyHostToDevice, st));
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_offset_.get() + first, h_offset_.get() + first, cnt * 4, cudaMemcpyHostToDevice, st));
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_length_.get() + first, h_length_.get() + first, cnt * 4, cudaMemcpyHostToDevice, st));
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_conn_.get() + first, h_conn_.get() + first, cnt * 4, cudaMemcpyHostToDevice, st));
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_iv_.get() + 16 * first, h_iv_.get() + 16 * first, cnt * 16, cudaMemcpyHostToDevice, st));
      launch<false>(op, b, first, cnt, blocks(cnt), st);
      if (tb == 0) {
        TANDEM_CUDA_CHECK(cudaMemcpyAsync(h_out_.get() + lo, d_bytes_.get() + lo, hi - lo, cudaMemcpyDeviceToHost, st));
      } else {
        TANDEM_CUDA_CHECK(cudaMemcpyAsync(h_tags_.get() + first * tb, d_tags_.get() + first * tb, cnt * tb, cudaMemcpyDeviceToHost, st));
      }
    }
    for (size_t s = 0; s < s_count; ++s) streams_[s]->sync();
  }

  void run_mapped(PayloadOp op, size_t n) override {
    check(op, n);
    Batch b = device_batch();
    b.host_offset = device_view(h_offset_.get());
    b.host_length = device_view(h_length_.get());
    b.host_conn = device_view(h_conn_.get());
    b.host_iv = device_view(h_iv_.get());
    b.host_in = device_view(h_in_.get());
    b.host_out = device_view(h_out_.get());
    b.host_tags = device_view(h_tags_.get());
    const size_t warps = (n + kWarp - 1) / kWarp;
    const int blk = static_cast<int>(std::clamp<size_t>((warps + kThreads / kWarp - 1) / (kThreads / kWarp), 1, size_t(sm_count_) * 8));
    cudaStream_t st = streams_[0]->get();
    launch<true>(op, b, 0, n, blk, st);
    streams_[0]->sync();
  }

  const uint8_t* out_bytes() const override { return h_out_.get(); }
  const uint8_t* tags() const override { return h_tags_.get(); }
  const uint8_t* in_bytes() const override { return h_in_.get(); }
  const uint32_t* offsets() const override { return h_offset_.get(); }
  const uint32_t* lengths() const override { return h_length_.get(); }

 private:
  static constexpr size_t kMaxStreams = 8;

  void check(PayloadOp op, size_t n) const {
    if (n == 0 || n > n_) throw std::invalid_argument("payload gpu: " + std::to_string(n) + " messages of " + std::to_string(n_));
    if (op == PayloadOp::kAhoCorasick && ac_.delta == nullptr) throw std::invalid_argument("payload gpu: no automaton");
  }
  size_t span_of(size_t k) const { return h_offset_[k - 1] + (h_length_[k - 1] + 15) / 16 * 16; }
  int blocks(size_t n) const {
    return static_cast<int>(std::clamp<size_t>((n + kThreads - 1) / kThreads, 1, size_t(sm_count_) * 8));
  }
  Batch device_batch() const {
    Batch b{};
    b.bytes = d_bytes_.get();
    b.offset = d_offset_.get();
    b.length = d_length_.get();
    b.conn = d_conn_.get();
    b.iv = d_iv_.get();
    b.tags = d_tags_.get();
    b.keys = keys_.get();
    b.aes_keys = aes_keys_.get();
    b.aes_tables = tables_.get();
    b.ac = ac_;
    b.n = n_;
    return b;
  }

  size_t n_, span_;
  int sm_count_ = 0;
  gpu::PinnedBuffer<uint8_t> h_in_, h_out_, h_tags_, h_iv_;
  gpu::PinnedBuffer<uint32_t> h_offset_, h_length_, h_conn_;
  gpu::DeviceBuffer<uint8_t> d_bytes_, d_tags_, d_iv_, keys_;
  gpu::DeviceBuffer<uint32_t> d_offset_, d_length_, d_conn_;
  gpu::DeviceBuffer<crypto::AesKey> aes_keys_;
  gpu::DeviceBuffer<crypto::AesTables> tables_;
  gpu::DeviceBuffer<uint32_t> delta_, rep_begin_, rep_;
  gpu::DeviceBuffer<dpi::AcPattern> pats_;
  gpu::DeviceBuffer<uint8_t> cls_, pat_bytes_;
  dpi::AcView ac_{};
  std::unique_ptr<gpu::Stream> streams_[kMaxStreams];
};

const PayloadGpu::Factory::Registrar registered{&PayloadGpu::Factory::make<PayloadGpuImpl>};

}  // namespace
}  // namespace tandem::bench
