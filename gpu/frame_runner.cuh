// The whole-frame runner (gpu/frame_runner.h) for an app's frame core (apps/frame_core.h), and the
// device copy of a core's tables. An app's .cu file registers its core with
//   TANDEM_REGISTER_FRAME_CORE(its::FrameCore)
// and nothing else: the kernel, the buffers and the uploads are the same for every app.
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "apps/frame_core.h"
#include "gpu/cuda_util.cuh"
#include "gpu/frame_runner.h"
#include "gpu/device_core.cuh"
#include "gpu/offload_runner.cuh"
#include "gpu/resident_runner.cuh"

namespace tandem::gpu {

namespace detail {

template <class Core>
__global__ void __launch_bounds__(kOffloadThreads)
forward_frames_kernel(Core core, uint8_t* bytes, const uint32_t* offsets, const uint32_t* lengths,
                      uint32_t* verdicts, uint32_t n) {
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    verdicts[i] = forward_frame(core, bytes + offsets[i], lengths[i]);
  }
}

}  // namespace detail

template <class Core>
class FrameRunnerImpl final : public FrameRunner {
 public:
  FrameRunnerImpl(const Core& host, const FrameOptions& opts) : dev_(host), opts_(opts) {
    if (opts_.mode != GpuMode::kAsync && opts_.mode != GpuMode::kMapped) {
      throw GpuError(std::string("whole frames: mode ") + gpu_mode_name(opts_.mode) + " is not offered (async, mapped)");
    }
    if (opts_.max_frames == 0 || opts_.max_bytes == 0) throw GpuError("whole frames: empty batches");
    if (opts_.max_bytes > UINT32_MAX || opts_.max_frames > UINT32_MAX) {
      throw GpuError("whole frames: a batch holds at most 4 GiB and 2^32 - 1 frames");
    }
    opts_.slots = std::clamp(opts_.slots, 1, 8);
    TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, 0));
    const bool mapped = opts_.mode == GpuMode::kMapped;
    const unsigned flags = mapped ? cudaHostAllocMapped : cudaHostAllocDefault;
    for (int i = 0; i < opts_.slots; ++i) {
      auto& s = *slots_.emplace_back(std::make_unique<Slot>());
      s.bytes.resize(opts_.max_bytes, flags);
      s.offsets.resize(opts_.max_frames, flags);
      s.lengths.resize(opts_.max_frames, flags);
      s.verdicts.resize(opts_.max_frames, flags);
      if (mapped) {
        s.d_bytes = device_pointer(s.bytes.get());
        s.d_offsets = device_pointer(s.offsets.get());
        s.d_lengths = device_pointer(s.lengths.get());
        s.d_verdicts = device_pointer(s.verdicts.get());
      } else {
        s.dev_bytes.resize(opts_.max_bytes);
        s.dev_offsets.resize(opts_.max_frames);
        s.dev_lengths.resize(opts_.max_frames);
        s.dev_verdicts.resize(opts_.max_frames);
        s.d_bytes = s.dev_bytes.get();
        s.d_offsets = s.dev_offsets.get();
        s.d_lengths = s.dev_lengths.get();
        s.d_verdicts = s.dev_verdicts.get();
      }
    }
  }

  static std::unique_ptr<FrameRunner> make(const Core& core, const FrameOptions& opts) {
    return std::make_unique<FrameRunnerImpl>(core, opts);
  }

  const FrameOptions& options() const override { return opts_; }
  uint8_t* bytes(int slot) override { return slots_[slot]->bytes.get(); }
  uint32_t* offsets(int slot) override { return slots_[slot]->offsets.get(); }
  uint32_t* lengths(int slot) override { return slots_[slot]->lengths.get(); }
  const uint32_t* verdicts(int slot) const override { return slots_[slot]->verdicts.get(); }

  void submit(int slot, size_t n, size_t used) override {
    if (n > opts_.max_frames || used > opts_.max_bytes) {
      throw GpuError("whole frames: batch of " + std::to_string(n) + " frames, " + std::to_string(used) +
                     " bytes is over the runner's limits");
    }
    Slot& s = *slots_[slot];
    s.n = n;
    if (n == 0) return;
    cudaStream_t st = s.stream.get();
    const bool copies = opts_.mode == GpuMode::kAsync;
    if (copies) {
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.d_offsets, s.offsets.get(), n * 4, cudaMemcpyHostToDevice, st));
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.d_lengths, s.lengths.get(), n * 4, cudaMemcpyHostToDevice, st));
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.d_bytes, s.bytes.get(), used, cudaMemcpyHostToDevice, st));
    }
    detail::forward_frames_kernel<Core><<<detail::launch_blocks(n, sm_count_), detail::kOffloadThreads, 0, st>>>(
        dev_.core(), s.d_bytes, s.d_offsets, s.d_lengths, s.d_verdicts, static_cast<uint32_t>(n));
    TANDEM_CUDA_CHECK_LAUNCH();
    if (copies) {
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.bytes.get(), s.d_bytes, used, cudaMemcpyDeviceToHost, st));
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.verdicts.get(), s.d_verdicts, n * 4, cudaMemcpyDeviceToHost, st));
    }
  }

  void wait(int slot) override {
    Slot& s = *slots_[slot];
    if (s.n == 0) return;
    s.stream.sync();
    TANDEM_CUDA_CHECK(cudaGetLastError());
  }

  bool ready(int slot) override {
    Slot& s = *slots_[slot];
    if (s.n == 0) return true;
    const cudaError_t e = cudaStreamQuery(s.stream.get());
    if (e == cudaErrorNotReady) return false;
    TANDEM_CUDA_CHECK(e);
    return true;
  }

 private:
  struct Slot {
    Stream stream;
    PinnedBuffer<uint8_t> bytes;
    PinnedBuffer<uint32_t> offsets, lengths, verdicts;
    DeviceBuffer<uint8_t> dev_bytes;
    DeviceBuffer<uint32_t> dev_offsets, dev_lengths, dev_verdicts;
    uint8_t* d_bytes = nullptr;
    uint32_t* d_offsets = nullptr;
    uint32_t* d_lengths = nullptr;
    uint32_t* d_verdicts = nullptr;
    size_t n = 0;
  };

  template <class T>
  static T* device_pointer(T* host) {
    T* d = nullptr;
    TANDEM_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d), host, 0));
    return d;
  }

  DeviceCore<Core> dev_;
  FrameOptions opts_;
  int sm_count_ = 0;
  std::vector<std::unique_ptr<Slot>> slots_;
};

}  // namespace tandem::gpu

// Makes `Core`'s whole-frame runner and resident runner available to gpu::make_frame_runner and
// gpu::make_resident_runner (at static initialization; the app's library is linked whole).
#define TANDEM_REGISTER_FRAME_CORE(...)                                                      \
  namespace {                                                                               \
  const ::tandem::gpu::FrameRunnerFactory<__VA_ARGS__>::Registrar tandem_frame_core_registered_{ \
      &::tandem::gpu::FrameRunnerImpl<__VA_ARGS__>::make};                                  \
  const ::tandem::gpu::ResidentRunnerFactory<__VA_ARGS__>::Registrar tandem_resident_core_registered_{ \
      &::tandem::gpu::ResidentRunnerFactory<__VA_ARGS__>::make<::tandem::gpu::ResidentRunnerImpl<__VA_ARGS__>>}; \
  }
