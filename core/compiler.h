// Portability macros shared by host C++ and CUDA translation units.
#pragma once

#include <cstddef>
#include <cstdint>

// Code that must run identically on the CPU and the GPU (per-key lookups, header math) is written
// once and marked TANDEM_HD. Under nvcc it becomes __host__ __device__; under a host compiler it is
// plain inline C++.
#if defined(__CUDACC__)
#define TANDEM_HD __host__ __device__
#define TANDEM_HD_INLINE __host__ __device__ __forceinline__
#else
#define TANDEM_HD
#define TANDEM_HD_INLINE inline __attribute__((always_inline))
#endif

// Full unrolling of a short loop with a fixed trip count (block bytes and shifts stay constants,
// arrays stay in registers on the GPU). nvcc and GCC spell the pragma differently and each warns
// on the other's; nvcc's host pass gets none.
#if defined(__CUDA_ARCH__)
#define TANDEM_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__)
#define TANDEM_UNROLL
#else
#define TANDEM_UNROLL _Pragma("GCC unroll 64")
#endif

#define TANDEM_LIKELY(x) __builtin_expect(!!(x), 1)
#define TANDEM_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace tandem {

inline constexpr std::size_t kCacheLine = 64;

// Software prefetch into all cache levels (read). A no-op where the compiler lacks the builtin.
// Always inlined: a plain inline helper called from an always_inline lookup was seen dropped.
TANDEM_HD_INLINE void prefetch_read(const void* p) {
#if defined(__GNUC__) && !defined(__CUDA_ARCH__)
  __builtin_prefetch(p, 0, 3);
#else
  (void)p;
#endif
}

}  // namespace tandem
