// Small RAII wrappers and error checking for CUDA code. Only .cu files include this.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "gpu/gpu_runtime.h"

namespace tandem::gpu {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line) {
  throw GpuError(std::string(what) + " failed: " + cudaGetErrorName(err) + " (" +
                 cudaGetErrorString(err) + ") at " + file + ":" + std::to_string(line));
}

}  // namespace tandem::gpu

// Checks a CUDA runtime call; on failure throws GpuError naming the call and the source line.
#define TANDEM_CUDA_CHECK(call)                                                  \
  do {                                                                           \
    cudaError_t err_ = (call);                                                   \
    if (err_ != cudaSuccess) ::tandem::gpu::throw_cuda_error(err_, #call, __FILE__, __LINE__); \
  } while (0)

// Checks that the last kernel launch was accepted.
#define TANDEM_CUDA_CHECK_LAUNCH() TANDEM_CUDA_CHECK(cudaGetLastError())

namespace tandem::gpu {

// Device memory for `n` elements of T, and the copies an app's tables need.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) { resize(n); }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  void resize(size_t n) {
    reset();
    if (n) TANDEM_CUDA_CHECK(cudaMalloc(&p_, n * sizeof(T)));
    n_ = n;
  }
  void reset() {
    if (p_) cudaFree(p_);
    p_ = nullptr;
    n_ = 0;
  }
  T* get() const { return p_; }
  size_t size() const { return n_; }

  // A device copy of the host array h[0..n): the buffer is reallocated to n elements, at least
  // one, so that a kernel gets a valid pointer even for an empty table.
  void upload(const T* h, size_t n) {
    resize(n ? n : 1);
    copy_from(h, n);
  }
  void upload(const std::vector<T>& h) { upload(h.data(), h.size()); }
  // Overwrites the first n elements with h[0..n), in place: for a table whose device copy keeps
  // its address while the host side changes (runners and kernels in flight hold the pointer).
  void copy_from(const T* h, size_t n) {
    if (n) TANDEM_CUDA_CHECK(cudaMemcpy(p_, h, n * sizeof(T), cudaMemcpyHostToDevice));
  }
  // Copies the first n elements to h[0..n).
  void copy_to(T* h, size_t n) const {
    if (n) TANDEM_CUDA_CHECK(cudaMemcpy(h, p_, n * sizeof(T), cudaMemcpyDeviceToHost));
  }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

// Page-locked host memory for `n` elements of T (DMA-able, needed for asynchronous copies).
template <typename T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t n, unsigned flags = cudaHostAllocDefault) { resize(n, flags); }
  ~PinnedBuffer() { reset(); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void resize(size_t n, unsigned flags = cudaHostAllocDefault) {
    reset();
    if (n) TANDEM_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&p_), n * sizeof(T), flags));
    n_ = n;
  }
  void reset() {
    if (p_) cudaFreeHost(p_);
    p_ = nullptr;
    n_ = 0;
  }
  T* get() const { return p_; }
  T& operator[](size_t i) const { return p_[i]; }
  size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

class Stream {
 public:
  Stream() { TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { if (s_) cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  void sync() const { TANDEM_CUDA_CHECK(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { TANDEM_CUDA_CHECK(cudaEventCreate(&e_)); }
  ~Event() { if (e_) cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s) { TANDEM_CUDA_CHECK(cudaEventRecord(e_, s)); }
  // Milliseconds from `start` to this event (both must have completed).
  float since(const Event& start) const {
    float ms = 0;
    TANDEM_CUDA_CHECK(cudaEventElapsedTime(&ms, start.e_, e_));
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace tandem::gpu
