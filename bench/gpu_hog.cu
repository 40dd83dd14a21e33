// The GPU hog of the scenarios (scenario_hog.h): every SM spinning, kernel after kernel.
#include <csignal>

#include <chrono>

#include "bench/scenario_hog.h"
#include "gpu/cuda_util.cuh"
#include "gpu/gpu_runtime.h"

namespace tandem::bench {

namespace {

volatile std::sig_atomic_t g_stop = 0;

__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin(unsigned long long ns, unsigned* sink) {
  const unsigned long long t0 = now_ns();
  unsigned x = threadIdx.x;
  while (now_ns() - t0 < ns) {
    for (int i = 0; i < 64; ++i) x = x * 1664525u + 1013904223u;
  }
  if (x == 0xFFFFFFFFu) *sink = x;  // keeps the loop
}

}  // namespace

void run_gpu_hog(double seconds, double kernel_ms) {
  gpu::require_available();
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  const gpu::DeviceInfo info = gpu::device_info();
  const auto ns = static_cast<unsigned long long>(kernel_ms * 1e6);
  gpu::DeviceBuffer<unsigned> sink;
  sink.resize(1);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!g_stop && std::chrono::steady_clock::now() < end) {
    spin<<<info.sm_count * 4, 256>>>(ns, sink.get());
    TANDEM_CUDA_CHECK(cudaDeviceSynchronize());
  }
}

}  // namespace tandem::bench
