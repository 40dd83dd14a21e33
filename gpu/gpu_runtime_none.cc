// GPU runtime for builds without CUDA: no device is ever available.
#include "gpu/gpu_runtime.h"
#include "gpu/offload.h"

namespace tandem::gpu {

bool available(std::string* why) {
  if (why) *why = "this build of Tandem has no CUDA support (nvcc not found, or TANDEM_WITH_CUDA=OFF)";
  return false;
}

DeviceInfo device_info(int) { throw GpuError("no GPU: this build of Tandem has no CUDA support"); }

int device_count() { return 0; }

void require_device(int) { throw GpuError("no GPU: this build of Tandem has no CUDA support"); }

int numa_node(int) { return -1; }

void set_device(int) { throw GpuError("no GPU: this build of Tandem has no CUDA support"); }

void* pinned_alloc(size_t) { throw GpuError("no GPU: this build of Tandem has no CUDA support"); }

void pinned_free(void* p) { (void)p; }

void synchronize_device() { throw GpuError("no GPU: this build of Tandem has no CUDA support"); }

bool device_failed() { return false; }

void copy_to_device(void*, const void*, size_t) { throw GpuError("no GPU: this build of Tandem has no CUDA support"); }

PcieBandwidth measure_pcie_bandwidth(size_t, int) { throw GpuError("no GPU: this build of Tandem has no CUDA support"); }

std::unique_ptr<OffloadRunner> make_echo_runner(const OffloadOptions&) {
  throw GpuError("no GPU: this build of Tandem has no CUDA support (nvcc not found, or TANDEM_WITH_CUDA=OFF)");
}

}  // namespace tandem::gpu
