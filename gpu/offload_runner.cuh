// The four offload modes, as one template over an app's per-item operation. An app's .cu file
// instantiates OffloadRunnerImpl<ItsOp>; everything else sees the OffloadRunner interface.
//
// An Op is a small copyable struct (device pointers to the app's tables) with
//   using In = ...; using Out = ...;             (4-byte types for now)
//   __device__ Out operator()(In item) const;
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "gpu/cuda_util.cuh"
#include "gpu/offload.h"

namespace tandem::gpu {

namespace detail {

constexpr int kOffloadThreads = 256;
// Each input buffer starts with this header (the item count), so a single copy moves count and
// items, and a graph captured for a batch-size bucket still knows the batch's real size.
constexpr size_t kHeaderBytes = 16;

template <class Op>
__global__ void __launch_bounds__(kOffloadThreads)
offload_batch_kernel(Op op, const uint8_t* in_with_header, typename Op::Out* out) {
  __shared__ uint64_t n;
  if (threadIdx.x == 0) n = *reinterpret_cast<const volatile uint64_t*>(in_with_header);
  __syncthreads();
  const auto* in = reinterpret_cast<const typename Op::In*>(in_with_header + kHeaderBytes);
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = op(in[i]);
}

// Host-mapped control block of the persistent kernel. The host bumps `seq` to start a batch and
// waits for `done` to equal it. What the host writes and what the GPU writes sit on separate
// 128-byte lines: with `done` on the doorbell's line, block 0 was seen polling a stale doorbell
// forever after the GPU had written `done` (20 of 25 test runs hung at stop).
struct PersistentControl {
  volatile uint32_t seq;
  volatile uint32_t stop;
  volatile uint64_t n;
  alignas(128) volatile uint32_t done;
};

// System-scope acquire load / release store: every poll of host memory must see the host's
// latest write, and a flag must never become visible before the data it announces.
__device__ __forceinline__ uint32_t load_acquire_sys(const volatile uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint64_t load_relaxed_sys(const volatile uint64_t* p) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_release_sys(volatile uint32_t* p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ uint32_t load_acquire_gpu(const volatile uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_release_gpu(volatile uint32_t* p, uint32_t v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
}

// Device-memory copy of the doorbell, for the blocks other than block 0, and the count of blocks
// that finished (cumulative over batches).
struct PersistentDeviceSync {
  volatile uint32_t seq;
  volatile uint32_t stop;
  volatile uint64_t n;
  // On its own 128-byte line: the blocks' atomics must not contend with the pollers' reads.
  alignas(128) unsigned long long arrived;
};

// A resident kernel. Only block 0 polls the host-mapped doorbell: every poll is a read across
// PCIe, and with one poller per block the round trip grew by ~4.8 us per block (measured:
// bench/results/2026-11-21-h200/offload/v2-all-blocks-poll-host). Block 0 republishes the doorbell in device memory, where the other blocks poll
// it in L2. Each block releases its results with a system-scope fence and counts itself in; the
// last block of the batch writes the host's done flag, once.
template <class Op>
__global__ void __launch_bounds__(kOffloadThreads)
offload_persistent_kernel(Op op, PersistentControl* ctl, PersistentDeviceSync* dsync,
                          const typename Op::In* in, typename Op::Out* out) {
  static_assert(sizeof(typename Op::In) == 4, "persistent mode loads 4-byte items");
  __shared__ uint32_t seq;
  __shared__ uint64_t n;
  __shared__ uint32_t stop;
  uint32_t seen = 0;
  for (;;) {
    if (threadIdx.x == 0) {
      uint32_t s;
      if (blockIdx.x == 0) {
        while ((s = load_acquire_sys(&ctl->seq)) == seen) {
        }
        n = load_relaxed_sys(&ctl->n);
        stop = load_acquire_sys(&ctl->stop);
        dsync->n = n;
        dsync->stop = stop;
        store_release_gpu(&dsync->seq, s);  // n and stop before seq, for the other blocks
      } else {
        while ((s = load_acquire_gpu(&dsync->seq)) == seen) {
          __nanosleep(32);  // many blocks polling one L2 line: leave room for the writer
        }
        n = dsync->n;
        stop = dsync->stop;
      }
      seq = s;
    }
    __syncthreads();
    if (stop) return;
    seen = seq;
    const size_t stride = size_t{gridDim.x} * blockDim.x;
    for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
      // __ldcv: fetch again every batch; never reuse a cached copy of the previous batch's input.
      const unsigned int raw = __ldcv(reinterpret_cast<const unsigned int*>(in) + i);
      typename Op::In item;
      memcpy(&item, &raw, sizeof item);
      out[i] = op(item);
    }
    // After the barrier, one system-scope fence by the reporting thread orders every result the
    // block wrote before its count (fences are cumulative; NCCL's flag protocol relies on this).
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence_system();
      const unsigned long long before = atomicAdd(&dsync->arrived, 1ull);
      if (before + 1 == static_cast<unsigned long long>(gridDim.x) * seen) {
        __threadfence_system();
        store_release_sys(&ctl->done, seen);
      }
    }
  }
}

inline size_t bucket_for(size_t n, size_t capacity) {
  size_t b = 64;
  while (b < n) b <<= 1;
  return std::min(b, capacity);
}

}  // namespace detail

template <class Op>
class OffloadRunnerImpl final : public OffloadRunner {
  using In = typename Op::In;
  using Out = typename Op::Out;

 public:
  OffloadRunnerImpl(Op op, const OffloadOptions& opts) : op_(op), opts_(opts) {
    TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, 0));
    if (opts_.capacity == 0) throw GpuError("offload: capacity must be > 0");
    if (opts_.mode == GpuMode::kPersistent) opts_.slots = 1;
    opts_.slots = std::clamp(opts_.slots, 1, 8);
    const bool mapped = opts_.mode == GpuMode::kMapped || opts_.mode == GpuMode::kPersistent;
    const unsigned flags = mapped ? cudaHostAllocMapped : cudaHostAllocDefault;
    for (int i = 0; i < opts_.slots; ++i) slot_.push_back(std::make_unique<Slot>());
    for (auto& sp : slot_) {
      Slot& s = *sp;
      s.stream = std::make_unique<Stream>();
      s.h_in.resize(detail::kHeaderBytes + opts_.capacity * sizeof(In), flags);
      s.h_out.resize(opts_.capacity * sizeof(Out), flags);
      if (mapped) {
        TANDEM_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&s.d_in_ptr), s.h_in.get(), 0));
        TANDEM_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&s.d_out_ptr), s.h_out.get(), 0));
      } else {
        s.d_in.resize(s.h_in.size());
        s.d_out.resize(s.h_out.size());
        s.d_in_ptr = s.d_in.get();
        s.d_out_ptr = s.d_out.get();
      }
    }
    if (opts_.mode == GpuMode::kPersistent) start_persistent();
  }

  ~OffloadRunnerImpl() override {
    if (ctl_.size()) stop_persistent();
    for (auto& s : slot_) {
      for (auto& [bucket, exec] : s->graphs) cudaGraphExecDestroy(exec);
    }
  }

  GpuMode mode() const override { return opts_.mode; }
  size_t capacity() const override { return opts_.capacity; }
  int slots() const override { return opts_.slots; }
  size_t in_item_bytes() const override { return sizeof(In); }
  size_t out_item_bytes() const override { return sizeof(Out); }
  void* in(int slot) override { return slot_[slot]->h_in.get() + detail::kHeaderBytes; }
  void* out(int slot) override { return slot_[slot]->h_out.get(); }

  void submit(int slot, size_t n) override {
    if (n > opts_.capacity) throw GpuError("offload: batch of " + std::to_string(n) + " > capacity");
    Slot& s = *slot_[slot];
    s.n = n;
    *reinterpret_cast<volatile uint64_t*>(s.h_in.get()) = n;
    if (n == 0) return;
    cudaStream_t st = s.stream->get();
    switch (opts_.mode) {
      case GpuMode::kAsync:
        TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.d_in_ptr, s.h_in.get(), detail::kHeaderBytes + n * sizeof(In),
                                          cudaMemcpyHostToDevice, st));
        launch(s, n, st);
        TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.h_out.get(), s.d_out_ptr, n * sizeof(Out), cudaMemcpyDeviceToHost, st));
        break;
      case GpuMode::kGraph:
        TANDEM_CUDA_CHECK(cudaGraphLaunch(graph_for(s, detail::bucket_for(n, opts_.capacity)), st));
        break;
      case GpuMode::kMapped:
        launch(s, n, st);
        break;
      case GpuMode::kPersistent: {
        std::atomic_thread_fence(std::memory_order_release);
        ctl_[0].n = n;
        std::atomic_thread_fence(std::memory_order_release);
        ctl_[0].seq = ++seq_;
        break;
      }
    }
  }

  void wait(int slot) override {
    Slot& s = *slot_[slot];
    if (s.n == 0) return;
    if (opts_.mode != GpuMode::kPersistent) {
      s.stream->sync();
      TANDEM_CUDA_CHECK(cudaGetLastError());
      return;
    }
    // Spin on the done flag; every few thousand spins make sure the kernel is still running and
    // the batch is not overdue, so a kernel that died or stopped answering is an error, not a hang.
    const auto start = std::chrono::steady_clock::now();
    for (uint64_t spins = 0;; ++spins) {
      if (ctl_[0].done == seq_) break;
      if ((spins & 4095) == 4095) {
        const cudaError_t e = cudaStreamQuery(slot_[0]->stream->get());
        if (e != cudaErrorNotReady) {
          throw GpuError(std::string("persistent kernel stopped: ") + cudaGetErrorString(e));
        }
        if (std::chrono::steady_clock::now() - start > kPersistentTimeout) {
          report_persistent_state();
          throw GpuError("persistent kernel did not finish batch " + std::to_string(seq_) + " of " +
                         std::to_string(s.n) + " items within " +
                         std::to_string(kPersistentTimeout.count()) + " ms");
        }
      }
    }
    std::atomic_thread_fence(std::memory_order_acquire);
  }

 private:
  struct Slot {
    std::unique_ptr<Stream> stream;
    PinnedBuffer<uint8_t> h_in, h_out;
    DeviceBuffer<uint8_t> d_in, d_out;
    uint8_t* d_in_ptr = nullptr;
    uint8_t* d_out_ptr = nullptr;
    size_t n = 0;
    std::map<size_t, cudaGraphExec_t> graphs;  // batch-size bucket -> instantiated graph
  };

  int grid_for(size_t n) const {
    const size_t blocks = (n + detail::kOffloadThreads - 1) / detail::kOffloadThreads;
    return static_cast<int>(std::clamp<size_t>(blocks, 1, size_t(sm_count_) * 8));
  }

  void launch(Slot& s, size_t n, cudaStream_t st) {
    detail::offload_batch_kernel<Op><<<grid_for(n), detail::kOffloadThreads, 0, st>>>(
        op_, s.d_in_ptr, reinterpret_cast<Out*>(s.d_out_ptr));
    TANDEM_CUDA_CHECK_LAUNCH();
  }

  // One graph per bucket: copy in (header + bucket items), kernel, copy out (bucket items). The
  // kernel reads the true count from the header, so padding items are never processed; the extra
  // bytes copied are bounded by the bucket rounding (at most 2x).
  cudaGraphExec_t graph_for(Slot& s, size_t bucket) {
    auto it = s.graphs.find(bucket);
    if (it != s.graphs.end()) return it->second;
    cudaStream_t st = s.stream->get();
    cudaGraph_t graph = nullptr;
    TANDEM_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    cudaMemcpyAsync(s.d_in_ptr, s.h_in.get(), detail::kHeaderBytes + bucket * sizeof(In), cudaMemcpyHostToDevice, st);
    detail::offload_batch_kernel<Op><<<grid_for(bucket), detail::kOffloadThreads, 0, st>>>(
        op_, s.d_in_ptr, reinterpret_cast<Out*>(s.d_out_ptr));
    cudaMemcpyAsync(s.h_out.get(), s.d_out_ptr, bucket * sizeof(Out), cudaMemcpyDeviceToHost, st);
    TANDEM_CUDA_CHECK(cudaStreamEndCapture(st, &graph));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    TANDEM_CUDA_CHECK(err);
    s.graphs.emplace(bucket, exec);
    return exec;
  }

  void start_persistent() {
    blocks_ = opts_.persistent_blocks > 0 ? opts_.persistent_blocks : sm_count_;
    ctl_.resize(1, cudaHostAllocMapped);
    std::memset(static_cast<void*>(ctl_.get()), 0, sizeof(detail::PersistentControl));
    detail::PersistentControl* d_ctl = nullptr;
    TANDEM_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d_ctl), ctl_.get(), 0));
    dsync_.resize(sizeof(detail::PersistentDeviceSync));
    Slot& s = *slot_[0];
    // On the kernel's own stream: a plain cudaMemset goes to the legacy stream, which does not
    // order with this non-blocking one, and could zero the doorbell after block 0 has written it.
    TANDEM_CUDA_CHECK(cudaMemsetAsync(dsync_.get(), 0, dsync_.size(), s.stream->get()));
    auto* d_sync = reinterpret_cast<detail::PersistentDeviceSync*>(dsync_.get());
    auto* d_in = reinterpret_cast<const In*>(s.d_in_ptr + detail::kHeaderBytes);
    auto* d_out = reinterpret_cast<Out*>(s.d_out_ptr);
    void* args[] = {&op_, &d_ctl, &d_sync, &d_in, &d_out};
    // A cooperative launch guarantees that all blocks are resident at once (they wait on block 0),
    // or fails at launch instead of deadlocking.
    TANDEM_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(&detail::offload_persistent_kernel<Op>),
                                                  dim3(blocks_), dim3(detail::kOffloadThreads), args, 0,
                                                  s.stream->get()));
  }

  // What the host and the kernel's device-side state say, for diagnosing a stuck batch.
  void report_persistent_state() {
    detail::PersistentDeviceSync d{};
    Stream side;
    cudaMemcpyAsync(&d, dsync_.get(), sizeof d, cudaMemcpyDeviceToHost, side.get());
    cudaStreamSynchronize(side.get());
    std::fprintf(stderr,
                 "offload: persistent state: host seq %u, ctl.seq %u, ctl.done %u, ctl.stop %u; "
                 "device seq %u, n %llu, arrived %llu (blocks %d)\n",
                 seq_, ctl_[0].seq, ctl_[0].done, ctl_[0].stop, d.seq,
                 static_cast<unsigned long long>(d.n), d.arrived, blocks_);
  }

  void stop_persistent() {
    ctl_[0].stop = 1;
    std::atomic_thread_fence(std::memory_order_release);
    ctl_[0].seq = ++seq_;
    // The kernel returns once it sees stop. A kernel that stopped answering cannot be killed from
    // here; leave it (the process's exit ends it) rather than hang the caller.
    const auto start = std::chrono::steady_clock::now();
    while (cudaStreamQuery(slot_[0]->stream->get()) == cudaErrorNotReady) {
      if (std::chrono::steady_clock::now() - start > kPersistentTimeout) {
        std::fprintf(stderr, "offload: the persistent kernel did not stop; leaving it running\n");
        report_persistent_state();
        std::abort();
      }
    }
  }

  static constexpr std::chrono::milliseconds kPersistentTimeout{5000};

  Op op_;
  OffloadOptions opts_;
  int sm_count_ = 0;
  std::vector<std::unique_ptr<Slot>> slot_;
  PinnedBuffer<detail::PersistentControl> ctl_;
  DeviceBuffer<uint8_t> dsync_;
  int blocks_ = 0;
  uint32_t seq_ = 0;
};

}  // namespace tandem::gpu
