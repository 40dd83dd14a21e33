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

// Properties of device 0. Throws GpuError when no GPU is available.
DeviceInfo device_info();

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
