#include "gpu/gpu_runtime.h"

#include <algorithm>
#include <cstdint>
#include <cctype>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

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

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

void require_device(int gpu) {
  require_available();
  const int n = device_count();
  if (gpu < 0 || gpu >= n) {
    throw GpuError("GPU " + std::to_string(gpu) + ": this host has " + std::to_string(n) + " CUDA device" +
                   (n == 1 ? "" : "s") + " (0.." + std::to_string(n - 1) + ")");
  }
}

void set_device(int gpu) {
  require_device(gpu);
  TANDEM_CUDA_CHECK(cudaSetDevice(gpu));
}

int numa_node(int gpu) {
  char bus[32] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, gpu) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  // CUDA writes "0000:3B:00.0"; sysfs names the device in lower case.
  std::string id = bus;
  for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::ifstream f("/sys/bus/pci/devices/" + id + "/numa_node");
  int node = -1;
  if (!(f >> node)) return -1;
  return node;
}

DeviceInfo device_info(int gpu) {
  require_device(gpu);
  cudaDeviceProp p{};
  TANDEM_CUDA_CHECK(cudaGetDeviceProperties(&p, gpu));
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
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, gpu) == cudaSuccess) d.pci_bus_id = bus;
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

void synchronize_device() { TANDEM_CUDA_CHECK(cudaDeviceSynchronize()); }

bool device_failed() {
  if (!available()) return false;  // no device at all: nothing has failed
  // A failed allocation or copy left its error as this thread's last one: cleared (a sticky error
  // stays). Then a query of a stream of our own: a sticky error comes back from it, and unlike a
  // device-wide synchronize it does not break a graph another thread is recording.
  cudaGetLastError();
  cudaStream_t s = nullptr;
  if (const cudaError_t c = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); c != cudaSuccess) {
    cudaGetLastError();
    return c != cudaErrorMemoryAllocation;  // out of memory is not a failed device
  }
  const cudaError_t e = cudaStreamQuery(s);
  cudaStreamDestroy(s);
  cudaGetLastError();
  return e != cudaSuccess && e != cudaErrorNotReady;
}

void copy_to_device(void* device_dst, const void* host_src, size_t bytes) {
  TANDEM_CUDA_CHECK(cudaMemcpy(device_dst, host_src, bytes, cudaMemcpyHostToDevice));
}

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
}  // namespace

PcieBandwidth measure_pcie_bandwidth(size_t bytes, int reps) {
  PinnedBuffer<uint8_t> h_in(bytes), h_out(bytes);
  DeviceBuffer<uint8_t> d_in(bytes), d_out(bytes);
  std::memset(h_in.get(), 1, bytes);
  Stream up, down;
  Event start, up_end, down_end;
  // Both directions start from one event, so that "both at once" really overlaps; each rate is
  // its bytes over the time from that common start to its own end.
  auto time = [&](bool h2d, bool d2h) {
    start.record(up.get());
    TANDEM_CUDA_CHECK(cudaStreamWaitEvent(down.get(), start.get(), 0));
    if (h2d) TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_in.get(), h_in.get(), bytes, cudaMemcpyHostToDevice, up.get()));
    if (d2h) TANDEM_CUDA_CHECK(cudaMemcpyAsync(h_out.get(), d_out.get(), bytes, cudaMemcpyDeviceToHost, down.get()));
    up_end.record(up.get());
    down_end.record(down.get());
    up.sync();
    down.sync();
    return std::pair<double, double>(h2d ? bytes / (up_end.since(start) * 1e6) : 0,
                                     d2h ? bytes / (down_end.since(start) * 1e6) : 0);
  };
  time(true, true);  // warm-up
  std::vector<double> h2d, d2h, both_h2d, both_d2h;
  for (int r = 0; r < reps; ++r) {
    h2d.push_back(time(true, false).first);
    d2h.push_back(time(false, true).second);
    const auto both = time(true, true);
    both_h2d.push_back(both.first);
    both_d2h.push_back(both.second);
  }
  return {median(h2d), median(d2h), median(both_h2d), median(both_d2h), bytes};
}

}  // namespace tandem::gpu
