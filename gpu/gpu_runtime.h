// What the host side needs to know about GPUs, without including CUDA headers. Builds without
// CUDA link gpu_runtime_none.cc, which reports that no GPU is available and why.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace tandem::gpu {

// A failed CUDA call or kernel. The message names the call, the CUDA error and the source line.
class GpuError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// True when this build has CUDA and device 0 can be used. Otherwise false, with the reason
// ("built without CUDA", "no CUDA device", the driver's error text) in *why.
bool available(std::string* why = nullptr);

// Throws GpuError("no GPU: " + the reason) unless available(): what every GPU table's
// constructor checks first.
inline void require_available() {
  std::string why;
  if (!available(&why)) throw GpuError("no GPU: " + why);
}

struct DeviceInfo {
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  size_t global_mem_bytes = 0;
  size_t l2_bytes = 0;
  int driver_version = 0;   // e.g. 13000
  int runtime_version = 0;  // e.g. 13000
  std::string pci_bus_id;
};

// Properties of device `gpu` (CUDA's numbering). Throws GpuError when no GPU is available or
// `gpu` is not one of them.
DeviceInfo device_info(int gpu = 0);

// CUDA devices this process can use (0 without a GPU or without CUDA).
int device_count();

// Throws GpuError unless `gpu` names a usable device: what every multi-GPU entry point checks.
void require_device(int gpu);

// The NUMA node the device's PCIe slot hangs off, from sysfs (-1 when the kernel does not say,
// as on a host with one node or in a VM that hides it).
int numa_node(int gpu);

// Makes `gpu` the calling thread's current device (cudaSetDevice): the thread's later
// allocations, streams and launches go to it.
void set_device(int gpu);

// Pinned host <-> device copy bandwidth, measured with plain cudaMemcpyAsync of `bytes` per copy:
// each direction alone, and both at once on two streams (PCIe is full duplex, but the two
// directions share the host's memory and the GPU's copy engines). Medians of `reps` runs, in
// GB/s (1e9 bytes per second). This is the bound an offload's transfers are judged against.
struct PcieBandwidth {
  double h2d_gbs = 0, d2h_gbs = 0;
  double both_h2d_gbs = 0, both_d2h_gbs = 0;  // each direction while the other runs
  size_t bytes = 0;
};
PcieBandwidth measure_pcie_bandwidth(size_t bytes, int reps);

// Waits until the calling thread's current device has finished all its work (cudaDeviceSynchronize).
// Throws GpuError.
void synchronize_device();

// True when the device has failed for good: a sticky error (a kernel that trapped or faulted),
// which every later call returns too. A failed allocation or copy is not a failure of the device.
bool device_failed();
// Copies `bytes` from host memory (pageable or pinned) to device memory (cudaMemcpy): the source
// may be reused on return, but from pageable memory the data may not be in place yet;
// synchronize_device() waits for that. Throws GpuError.
void copy_to_device(void* device_dst, const void* host_src, size_t bytes);

// Page-locked host memory, so GPU copies can DMA straight from/to it. Throws GpuError when there
// is no GPU. Plain C++ code uses PinnedArray below rather than these.
void* pinned_alloc(size_t bytes);
void pinned_free(void* p);

template <typename T>
class PinnedArray {
 public:
  PinnedArray() = default;
  explicit PinnedArray(size_t n) : p_(static_cast<T*>(pinned_alloc(n * sizeof(T)))), n_(n) {}
  ~PinnedArray() { pinned_free(p_); }
  PinnedArray(const PinnedArray&) = delete;
  PinnedArray& operator=(const PinnedArray&) = delete;
  T* data() const { return p_; }
  T& operator[](size_t i) const { return p_[i]; }
  size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace tandem::gpu
