// The DIR-24-8 lookup as a kernel over device arrays of addresses: the IPv4 GPU table's
// host-array lookup (ipv4_gpu.cu) launches it, and the benchmarks time it alone
// (bench/variants/ipv4_gpu_variants.cu). Only .cu files include this.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "apps/ipv4/dir24_8_core.h"
#include "gpu/cuda_util.cuh"

namespace tandem::ipv4 {

namespace detail {

constexpr int kLookupThreads = 256;

// Each thread takes four consecutive addresses with one 16-byte load, so four independent table
// reads are in flight per thread; the grid strides over the array. (A template, so that every .cu
// file that includes this may instantiate it.)
template <int = 0>
__global__ void __launch_bounds__(kLookupThreads)
dir24_8_lookup_kernel(const uint32_t* __restrict__ tbl24, const uint32_t* __restrict__ tbl8,
                      const uint32_t* __restrict__ ips, uint32_t* __restrict__ out, size_t n) {
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  const size_t tid = size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const size_t n4 = n / 4;
  const uint4* ips4 = reinterpret_cast<const uint4*>(ips);
  uint4* out4 = reinterpret_cast<uint4*>(out);
  for (size_t i = tid; i < n4; i += stride) {
    const uint4 a = __ldcs(ips4 + i);  // streamed once: keep it out of the cache the table uses
    uint4 r;
    r.x = dir24_8_lookup(tbl24, tbl8, a.x);
    r.y = dir24_8_lookup(tbl24, tbl8, a.y);
    r.z = dir24_8_lookup(tbl24, tbl8, a.z);
    r.w = dir24_8_lookup(tbl24, tbl8, a.w);
    __stcs(out4 + i, r);
  }
  for (size_t i = n4 * 4 + tid; i < n; i += stride) out[i] = dir24_8_lookup(tbl24, tbl8, ips[i]);
}

}  // namespace detail

// Looks up n addresses at d_ips into d_res on stream s, at most 16 blocks per multiprocessor.
// d_ips and d_res are device buffers from cudaMalloc (256-byte aligned), as the kernel's 16-byte
// loads need. Throws GpuError when the launch fails.
inline void launch_dir24_8_lookup(const uint32_t* tbl24, const uint32_t* tbl8, const uint32_t* d_ips,
                                  uint32_t* d_res, size_t n, int sm_count, cudaStream_t s) {
  if (n == 0) return;
  constexpr int kThreads = detail::kLookupThreads;
  const size_t blocks_needed = ((n + 3) / 4 + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(std::min<size_t>(blocks_needed, size_t(sm_count) * 16));
  detail::dir24_8_lookup_kernel<<<blocks, kThreads, 0, s>>>(tbl24, tbl8, d_ips, d_res, n);
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::ipv4
