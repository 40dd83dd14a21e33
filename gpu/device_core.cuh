// A copy of an app's frame core (apps/frame_core.h) whose table arrays live in device memory:
// what the whole-frame and resident runners give their kernels.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "gpu/cuda_util.cuh"

namespace tandem::gpu {

// A copy of a frame core whose table arrays (Core::for_each_array) live in device memory.
template <class Core>
class DeviceCore {
 public:
  explicit DeviceCore(const Core& host) : core_(host) {
    core_.for_each_array([this](auto& ptr, uint64_t n) {
      using T = std::remove_const_t<std::remove_pointer_t<std::remove_reference_t<decltype(ptr)>>>;
      auto& buf = arrays_.emplace_back();
      buf.upload(reinterpret_cast<const uint8_t*>(ptr), n * sizeof(T));
      ptr = reinterpret_cast<const T*>(buf.get());
    });
    // The copies from pageable memory may still be in flight when cudaMemcpy returns, and the
    // runner's streams do not wait for the default stream. The default stream alone: a copy made
    // while a run goes on (a live update's) must not synchronize the device, which would break a
    // CUDA graph the engine's thread may be recording.
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(0));
  }
  const Core& core() const { return core_; }
  size_t device_bytes() const {
    size_t b = 0;
    for (const auto& a : arrays_) b += a.size();
    return b;
  }

 private:
  Core core_;
  std::vector<DeviceBuffer<uint8_t>> arrays_;
};

}  // namespace tandem::gpu
