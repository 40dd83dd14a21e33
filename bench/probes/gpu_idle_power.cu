// What does an idle persistent kernel cost in GPU power, and how much of it does a longer sleep
// between polls save? A probe for parking the GPU under the scheduler's energy policy (issue 18),
// run by hand on the device machine, not part of the product:
//   nvcc -arch=sm_90 -O2 -o probe gpu_idle_power.cu -ldl && ./probe [seconds per phase]
// Phases: no kernel; then a kernel shaped like the resident path's when it has no work (gpu/
// resident_kernels.cuh: one warp polling a word in mapped host memory, as the dispatcher reads the
// receive threads' published indices over PCIe, and one thread per worker block polling a word in
// device memory, the rest of the block waiting at a barrier), with a fixed sleep between polls of
// 128 ns (today's) and longer ones. Power from NVML's total-energy counter (loaded at run time).
#include <cuda_runtime.h>

#include "probe_check.h"
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace {

typedef int (*NvmlInit)();
typedef int (*NvmlHandle)(unsigned, void**);
typedef int (*NvmlEnergy)(void*, unsigned long long*);

struct Nvml {
  NvmlEnergy energy = nullptr;
  void* dev = nullptr;
  bool open() {
    void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!h) return false;
    auto init = reinterpret_cast<NvmlInit>(dlsym(h, "nvmlInit_v2"));
    auto handle = reinterpret_cast<NvmlHandle>(dlsym(h, "nvmlDeviceGetHandleByIndex_v2"));
    energy = reinterpret_cast<NvmlEnergy>(dlsym(h, "nvmlDeviceGetTotalEnergyConsumption"));
    return init && handle && energy && init() == 0 && handle(0, &dev) == 0;
  }
  unsigned long long mj() const {
    unsigned long long v = 0;
    energy(dev, &v);
    return v;
  }
};

__global__ void idle_resident(volatile unsigned* host_word, volatile unsigned* dev_words, volatile unsigned* stop,
                              unsigned sleep_ns) {
  if (blockIdx.x == 0) {
    if (threadIdx.x < 32) {
      while (*stop == 0 && host_word[threadIdx.x % 8] == 0) __nanosleep(sleep_ns * 2);
    }
    return;
  }
  if (threadIdx.x == 0) {
    while (*stop == 0 && dev_words[blockIdx.x] == 0) __nanosleep(sleep_ns);
  }
  __syncthreads();
}


}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 3.0;
  Nvml nvml;
  if (!nvml.open()) {
    std::printf("gpu idle power: NVML's energy counter is not readable here\n");
    return 77;
  }
  cudaDeviceProp p{};
  CHECK(cudaGetDeviceProperties(&p, 0));
  unsigned *host_word = nullptr, *dev_host_word = nullptr, *stop = nullptr, *dev_stop = nullptr, *dev_words = nullptr;
  CHECK(cudaHostAlloc(&host_word, 64, cudaHostAllocMapped));
  CHECK(cudaHostAlloc(&stop, 64, cudaHostAllocMapped));
  CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev_host_word), host_word, 0));
  CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev_stop), stop, 0));
  CHECK(cudaMalloc(&dev_words, 4096 * sizeof(unsigned)));
  CHECK(cudaMemset(dev_words, 0, 4096 * sizeof(unsigned)));
  for (int i = 0; i < 16; ++i) host_word[i] = 0;
  const auto phase = [&](const char* what, auto&& during) {
    const unsigned long long e0 = nvml.mj();
    const auto t0 = std::chrono::steady_clock::now();
    during();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double w = double(nvml.mj() - e0) / 1000.0 / s;
    std::printf("%-46s %7.1f W over %.1f s\n", what, w, s);
  };
  std::printf("gpu idle power: %s, %d SMs; NVML total-energy counter\n", p.name, p.multiProcessorCount);
  const auto sleep = [&] { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); };
  phase("no kernel", sleep);
  const unsigned blocks = 2 * p.multiProcessorCount + 1;
  for (const unsigned ns : {128u, 1024u, 8192u, 65536u, 1000000u}) {
    *stop = 0;
    cudaStream_t st;
    CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    idle_resident<<<blocks, 256, 0, st>>>(dev_host_word, dev_words, dev_stop, ns);
    CHECK(cudaGetLastError());
    char what[96];
    std::snprintf(what, sizeof what, "idle resident kernel, %u ns between polls", ns);
    phase(what, sleep);
    *stop = 1;
    CHECK(cudaStreamSynchronize(st));
    CHECK(cudaStreamDestroy(st));
  }
  phase("no kernel, again", sleep);
  return 0;
}
