#include "gpu/memory_probe.h"

#include <algorithm>
#include <vector>

#include "gpu/cuda_util.cuh"

namespace tandem::gpu {

namespace {

constexpr int kThreadsPerBlock = 256;
constexpr uint64_t kWordsPerCell = 8;  // 64-byte cells of 8-byte words, as the CPU table

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

__global__ void fill_kernel(uint64_t* a, uint64_t n) {
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) a[i] = splitmix64(i);
}

// Access i reads the first word of cell splitmix64(seed + i) mod ncells. The XOR of the values
// read is written only when it equals a value it cannot (in practice) have, so no load can be
// dropped and nothing is stored.
__global__ void random_read_kernel(const uint64_t* __restrict__ a, uint64_t ncells, uint64_t accesses,
                                   uint64_t seed, uint64_t* out) {
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  uint64_t acc = 0;
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < accesses; i += stride) {
    const uint64_t cell = __umul64hi(splitmix64(seed + i), ncells);  // uniform in [0, ncells)
    acc ^= __ldg(&a[cell * kWordsPerCell]);
  }
  if (acc == 0x5EED5EED5EED5EEDULL) *out = acc;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

double gpu_random_read_rate(size_t bytes, uint64_t accesses, int reps, double* ms_out) {
  require_available();
  const uint64_t ncells = bytes / (kWordsPerCell * sizeof(uint64_t));
  if (ncells == 0 || accesses == 0 || reps < 1) throw GpuError("gpu_random_read_rate: empty table or no accesses");
  DeviceBuffer<uint64_t> a(ncells * kWordsPerCell), out(1);
  cudaDeviceProp p{};
  TANDEM_CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
  int per_sm = 0;
  TANDEM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, random_read_kernel, kThreadsPerBlock, 0));
  // Every SM full, and no more blocks than there are accesses to share.
  const uint64_t want = std::max<uint64_t>(1, uint64_t(p.multiProcessorCount) * std::max(per_sm, 1));
  const unsigned blocks =
      static_cast<unsigned>(std::min<uint64_t>(want, (accesses + kThreadsPerBlock - 1) / kThreadsPerBlock));

  Stream s;
  fill_kernel<<<p.multiProcessorCount * 4, kThreadsPerBlock, 0, s.get()>>>(a.get(), a.size());
  TANDEM_CUDA_CHECK_LAUNCH();
  Event start, stop;
  std::vector<double> ms;
  for (int rep = -1; rep < reps; ++rep) {  // rep -1: warm-up
    start.record(s.get());
    random_read_kernel<<<blocks, kThreadsPerBlock, 0, s.get()>>>(a.get(), ncells, accesses,
                                                                 uint64_t(rep + 1) * accesses, out.get());
    TANDEM_CUDA_CHECK_LAUNCH();
    stop.record(s.get());
    s.sync();
    if (rep >= 0) ms.push_back(stop.since(start));
  }
  const double m = median(ms);
  if (ms_out) *ms_out = m;
  return accesses / (m * 1e-3);
}

}  // namespace tandem::gpu
