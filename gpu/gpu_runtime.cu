#include "gpu/gpu_runtime.h"

#include "gpu/cuda_util.cuh"

namespace tandem::gpu {

bool available(std::string* why) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    if (why) *why = std::string("CUDA reports: ") + cudaGetErrorString(err);
    cudaGetLastError();  // clear the sticky-free error so later calls are not confused
    return false;
  }
  if (n == 0) {
    if (why) *why = "no CUDA device found";
    return false;
  }
  return true;
}

DeviceInfo device_info() {
  std::string why;
  if (!available(&why)) throw GpuError("no GPU: " + why);
  cudaDeviceProp p{};
  TANDEM_CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
  DeviceInfo d;
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.global_mem_bytes = p.totalGlobalMem;
  d.l2_bytes = static_cast<size_t>(p.l2CacheSize);
  TANDEM_CUDA_CHECK(cudaDriverGetVersion(&d.driver_version));
  TANDEM_CUDA_CHECK(cudaRuntimeGetVersion(&d.runtime_version));
  char bus[32] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, 0) == cudaSuccess) d.pci_bus_id = bus;
  return d;
}

void* pinned_alloc(size_t bytes) {
  void* p = nullptr;
  TANDEM_CUDA_CHECK(cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault));
  return p;
}

void pinned_free(void* p) {
  if (p) cudaFreeHost(p);
}

}  // namespace tandem::gpu
