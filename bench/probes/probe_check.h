// The probes' CUDA check (standalone programs, built by hand with nvcc): the failing call, its
// error and its line, then main() returns 2.
#pragma once

#include <cstdio>

#define CHECK(x)                                                                \
  do {                                                                          \
    cudaError_t e_ = (x);                                                       \
    if (e_ != cudaSuccess) {                                                    \
      std::printf("%s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__);  \
      return 2;                                                                 \
    }                                                                           \
  } while (0)
