// Does a fault on one GPU end the work of another GPU in the same process? A probe for the
// multi-GPU design (docs/DESIGN.md, "Several GPUs"), built and run by the device suite `multigpu`,
// not part of the product: `nvcc -arch=sm_90 -o probe gpu_fault_isolation.cu && ./probe VARIANT`.
// GPU 1 runs a kernel that spins until told to stop, counting its rounds; GPU 0 then traps. The
// probe says whether GPU 1's kernel kept counting and stopped cleanly. Variants: where GPU 1's
// kernel keeps its words (device memory; host memory registered for GPU 1 only; registered
// portable, i.e. mapped into GPU 0's context too, as the resident rings are).
// One variant per process: a trap breaks the process's context on GPU 0 for good.
#include <cuda_runtime.h>

#include "probe_check.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

__global__ void spin(volatile unsigned long long* rounds, volatile unsigned* stop) {
  while (*stop == 0) {
    *rounds = *rounds + 1;
    __nanosleep(1000);
  }
}

__global__ void trap_now() { __trap(); }


int main(int argc, char** argv) {
  const char* variant = argc > 1 ? argv[1] : "device";
  int n = 0;
  CHECK(cudaGetDeviceCount(&n));
  if (n < 2) {
    std::printf("fault isolation: %d GPU(s); needs 2\n", n);
    return 77;
  }
  // GPU 1: its words and its spinning kernel.
  CHECK(cudaSetDevice(1));
  volatile unsigned long long* rounds = nullptr;
  volatile unsigned* stop = nullptr;
  void* host = nullptr;
  if (std::strcmp(variant, "device") == 0) {
    // Rounds and the stop word in GPU 1's memory; the host reads and writes them by cudaMemcpy on
    // another stream.
    void* d = nullptr;
    CHECK(cudaMalloc(&d, 256));
    CHECK(cudaMemset(d, 0, 256));
    rounds = static_cast<volatile unsigned long long*>(d);
    stop = reinterpret_cast<volatile unsigned*>(static_cast<char*>(d) + 128);
  } else {
    host = std::aligned_alloc(4096, 4096);
    std::memset(host, 0, 4096);
    const unsigned flags = cudaHostRegisterMapped | (std::strcmp(variant, "portable") == 0 ? cudaHostRegisterPortable : 0);
    CHECK(cudaHostRegister(host, 4096, flags));
    void* d = nullptr;
    CHECK(cudaHostGetDevicePointer(&d, host, 0));
    rounds = static_cast<volatile unsigned long long*>(d);
    stop = reinterpret_cast<volatile unsigned*>(static_cast<char*>(d) + 128);
  }
  cudaStream_t s1, s1b;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s1b, cudaStreamNonBlocking));
  spin<<<1, 1, 0, s1>>>(rounds, stop);
  CHECK(cudaGetLastError());
  auto read_rounds = [&]() -> unsigned long long {
    unsigned long long r = 0;
    if (host) return *static_cast<volatile unsigned long long*>(host);
    if (cudaMemcpyAsync(&r, const_cast<unsigned long long*>(rounds), 8, cudaMemcpyDeviceToHost, s1b) != cudaSuccess) return 0;
    if (cudaStreamSynchronize(s1b) != cudaSuccess) return 0;
    return r;
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const unsigned long long before = read_rounds();

  // GPU 0 traps, from another thread (as each runner has its own).
  std::thread([] {
    cudaSetDevice(0);
    trap_now<<<1, 1>>>();
    const cudaError_t e = cudaDeviceSynchronize();
    std::printf("GPU 0 after its trap: %s\n", cudaGetErrorString(e));
  }).join();

  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(cudaSetDevice(1));
  const cudaError_t q = cudaStreamQuery(s1);
  const unsigned long long after = read_rounds();
  std::printf("GPU 1 (%s words): rounds %llu before GPU 0's trap, %llu 500 ms after; its kernel: %s\n", variant, before,
              after, q == cudaErrorNotReady ? "still running" : cudaGetErrorString(q));
  // Stop it and see it end cleanly.
  if (host) {
    static_cast<volatile unsigned*>(host)[32] = 1;
  } else {
    const unsigned one = 1;
    cudaMemcpyAsync(const_cast<unsigned*>(stop), &one, 4, cudaMemcpyHostToDevice, s1b);
    cudaStreamSynchronize(s1b);
  }
  const cudaError_t end = cudaStreamSynchronize(s1);
  const bool isolated = q == cudaErrorNotReady && after > before && end == cudaSuccess;
  std::printf("fault isolation (%s): GPU 1 %s (its stream ended with: %s)\n", variant,
              isolated ? "went on and stopped cleanly" : "did NOT survive GPU 0's fault", cudaGetErrorString(end));
  return isolated ? 0 : 1;
}
