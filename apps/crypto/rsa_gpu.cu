#include <stdexcept>
#include <string>
#include <vector>

#include "apps/crypto/rsa_gpu.h"
#include "gpu/cuda_util.cuh"

namespace tandem::crypto {
namespace {

// Threads per block, and the blocks one multiprocessor should hold at once: the bound caps the
// registers at 65,536 / (128 * 4) = 128 per thread, enough for the three 32-word register arrays
// of a Montgomery multiplication (operand, modulus, accumulator) without spilling, and 16 warps
// per multiprocessor to hide the latency of the carry chains.
constexpr int kThreads = 128;
constexpr int kMinBlocks = 4;

__device__ __forceinline__ uint32_t bswap32(uint32_t x) { return __byte_perm(x, 0, 0x0123); }

// Threads 2k and 2k + 1 of a warp compute the p and q halves of one operation; the p thread then
// recombines and writes the result. The loop advances whole warps, and threads past the batch work
// on its last operation without storing, so that every lane reaches the shuffle.
template <RsaTableLookup Lookup>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
rsa_kernel(const RsaCrtKey* keys, uint32_t key_count, const uint32_t* key_index, const uint8_t* in, uint8_t* out,
           uint8_t* status, uint32_t n) {
  const uint32_t lane = threadIdx.x & 31;
  const uint32_t half = lane & 1;
  const uint64_t threads = 2ull * n;
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  for (uint64_t warp0 = uint64_t{blockIdx.x} * blockDim.x + (threadIdx.x & ~31u); warp0 < threads; warp0 += stride) {
    const uint64_t t = warp0 + lane;
    const bool live = t < threads;
    const uint32_t op = live ? static_cast<uint32_t>(t >> 1) : n - 1;
    uint32_t k = key_index ? key_index[op] : 0;
    const bool key_ok = k < key_count;
    k = key_ok ? k : 0;
    const RsaCrtKey& key = keys[k];

    uint32_t c[kRsaLimbs];
    const uint32_t* w = reinterpret_cast<const uint32_t*>(in + size_t{op} * kRsaBytes);
#pragma unroll
    for (int j = 0; j < kRsaLimbs; ++j) c[j] = bswap32(w[kRsaLimbs - 1 - j]);

    // Checked first, so that c need not stay in registers through the exponentiation.
    const bool ok = key_ok && rsa_less_than<kRsaLimbs>(c, key.n);

    uint32_t r[kRsaHalfLimbs];
    rsa_crt_half<Lookup>(key.half[half], c, r);
    uint32_t halves[2][kRsaHalfLimbs];  // [0]: m1 (mod p), [1]: m2 (mod q), as the p thread sees them
#pragma unroll
    for (int j = 0; j < kRsaHalfLimbs; ++j) {
      halves[0][j] = r[j];
      halves[1][j] = __shfl_xor_sync(0xffffffffu, r[j], 1);
    }

    if (live && half == 0) {
      uint32_t m[kRsaLimbs];
      rsa_crt_combine(key, halves[0], halves[1], m);
      uint32_t* o = reinterpret_cast<uint32_t*>(out + size_t{op} * kRsaBytes);
#pragma unroll
      for (int j = 0; j < kRsaLimbs; ++j) o[kRsaLimbs - 1 - j] = ok ? bswap32(m[j]) : 0;
      status[op] = ok;
    }
  }
}

class RsaGpuImpl final : public RsaGpu {
 public:
  RsaGpuImpl(const std::vector<RsaCrtKey>& keys, size_t max_ops) : max_ops_(max_ops) {
    if (keys.empty()) throw std::invalid_argument("rsa gpu: no keys");
    if (max_ops == 0 || max_ops > (size_t{1} << 30)) throw std::invalid_argument("rsa gpu: max_ops must be 1..2^30");
    TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, 0));
    keys_.upload(keys);
    key_count_ = static_cast<uint32_t>(keys.size());
    h_in_.resize(max_ops * kRsaBytes);
    h_out_.resize(max_ops * kRsaBytes);
    h_keys_.resize(max_ops);
    h_status_.resize(max_ops);
    d_in_.resize(max_ops * kRsaBytes);
    d_out_.resize(max_ops * kRsaBytes);
    d_keys_.resize(max_ops);
    d_status_.resize(max_ops);
    for (size_t i = 0; i < max_ops; ++i) h_keys_[i] = 0;
  }

  size_t max_ops() const override { return max_ops_; }
  uint8_t* inputs() override { return h_in_.get(); }
  uint32_t* key_indices() override { return h_keys_.get(); }
  const uint8_t* outputs() const override { return h_out_.get(); }
  const uint8_t* status() const override { return h_status_.get(); }

  void run(size_t n, bool per_key, RsaTableLookup lookup) override {
    check(n);
    if (n == 0) return;
    cudaStream_t s = stream_.get();
    copy_in(n, per_key, s);
    launch(n, per_key, lookup, s);
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(h_out_.get(), d_out_.get(), n * kRsaBytes, cudaMemcpyDeviceToHost, s));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(h_status_.get(), d_status_.get(), n, cudaMemcpyDeviceToHost, s));
    stream_.sync();
  }

  double time_kernel(size_t n, bool per_key, RsaTableLookup lookup, int reps) override {
    check(n);
    if (n == 0 || reps < 1) return 0;
    cudaStream_t s = stream_.get();
    copy_in(n, per_key, s);
    gpu::Event start, stop;
    double total = 0;
    for (int r = 0; r < reps; ++r) {
      start.record(s);
      launch(n, per_key, lookup, s);
      stop.record(s);
      stream_.sync();
      total += stop.since(start) / 1e3;
    }
    return total / reps;
  }

  RsaKernelInfo kernel_info(RsaTableLookup lookup) const override {
    const void* f = lookup == RsaTableLookup::kDirect ? reinterpret_cast<const void*>(&rsa_kernel<RsaTableLookup::kDirect>)
                                                      : reinterpret_cast<const void*>(&rsa_kernel<RsaTableLookup::kScan>);
    cudaFuncAttributes a{};
    TANDEM_CUDA_CHECK(cudaFuncGetAttributes(&a, f));
    RsaKernelInfo info;
    info.registers = a.numRegs;
    info.local_bytes = a.localSizeBytes;
    info.threads_per_block = kThreads;
    TANDEM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&info.blocks_per_sm, f, kThreads, 0));
    info.sm_count = sm_count_;
    return info;
  }

 private:
  void check(size_t n) const {
    if (n > max_ops_) {
      throw std::invalid_argument("rsa gpu: batch of " + std::to_string(n) + " over the runner's " +
                                  std::to_string(max_ops_));
    }
  }
  void copy_in(size_t n, bool per_key, cudaStream_t s) {
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_in_.get(), h_in_.get(), n * kRsaBytes, cudaMemcpyHostToDevice, s));
    if (per_key) {
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_keys_.get(), h_keys_.get(), n * sizeof(uint32_t), cudaMemcpyHostToDevice, s));
    }
  }
  void launch(size_t n, bool per_key, RsaTableLookup lookup, cudaStream_t s) {
    // One thread per half, every operation at once: the grid-stride loop only matters for batches
    // beyond 2^31 threads, which max_ops excludes.
    const size_t blocks = (2 * n + kThreads - 1) / kThreads;
    const uint32_t* keys = per_key ? d_keys_.get() : nullptr;
    const auto count = static_cast<uint32_t>(n);
    if (lookup == RsaTableLookup::kDirect) {
      rsa_kernel<RsaTableLookup::kDirect><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(
          keys_.get(), key_count_, keys, d_in_.get(), d_out_.get(), d_status_.get(), count);
    } else {
      rsa_kernel<RsaTableLookup::kScan><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(
          keys_.get(), key_count_, keys, d_in_.get(), d_out_.get(), d_status_.get(), count);
    }
    TANDEM_CUDA_CHECK_LAUNCH();
  }

  size_t max_ops_;
  int sm_count_ = 0;
  uint32_t key_count_ = 0;
  gpu::Stream stream_;
  gpu::DeviceBuffer<RsaCrtKey> keys_;
  gpu::PinnedBuffer<uint8_t> h_in_, h_out_, h_status_;
  gpu::PinnedBuffer<uint32_t> h_keys_;
  gpu::DeviceBuffer<uint8_t> d_in_, d_out_, d_status_;
  gpu::DeviceBuffer<uint32_t> d_keys_;
};

const RsaGpu::Factory::Registrar registered{&RsaGpu::Factory::make<RsaGpuImpl>};

}  // namespace
}  // namespace tandem::crypto
