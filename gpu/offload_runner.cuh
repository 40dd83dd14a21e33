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

// The launch policy of every batch kernel (items or frames): blocks of kOffloadThreads threads, one
// thread per item, at most 8 blocks per multiprocessor (a grid-stride loop covers the rest).
constexpr int kOffloadThreads = 256;
inline int launch_blocks(size_t n, int sm_count) {
  const size_t blocks = (n + kOffloadThreads - 1) / kOffloadThreads;
  return static_cast<int>(std::clamp<size_t>(blocks, 1, size_t(sm_count) * 8));
}
// Each input buffer starts with this header (the item count), so a single copy moves count and
// items, and a graph captured for a batch-size bucket still knows the batch's real size. It takes
// a whole 128-byte line so that the items start on one: with a 16-byte header, every warp's
// 512-byte read of mapped memory straddled an extra line, and the persistent round trip of 1,024
// items grew by ~1 us (scratch probe on the H200: 4.9 us aligned, 6.0 us at a 16-byte offset).
constexpr size_t kHeaderBytes = 128;

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

// Host-mapped control block of the persistent kernel. The host starts a batch with one 64-bit
// store to `bell`: (sequence number << 32) | item count, with kStopBit set to stop the kernel. One
// word, so that block 0 learns everything with a single read across PCIe (each read costs about a
// microsecond; three separate fields cost three). It waits for `done` to equal the sequence number.
// What the host writes and what the GPU writes sit on separate 128-byte lines: with `done` on the
// doorbell's line, block 0 was seen polling a stale doorbell forever after the GPU had written
// `done` (20 of 25 test runs hung at stop).
struct PersistentControl {
  volatile uint64_t bell;
  alignas(128) volatile uint32_t done;
};
constexpr uint64_t kStopBit = uint64_t{1} << 31;
constexpr uint64_t kFaultBit = uint64_t{1} << 30;  // fault injection: the kernel traps
constexpr uint64_t kSlotBit = uint64_t{1} << 29;   // which of the two slots the batch is in
constexpr uint64_t kMaxPersistentBatch = kSlotBit - 1;

// The persistent kernel's two slots: the host gathers the next batch into one while the kernel
// works on the other.
template <class In, class Out>
struct PersistentSlots {
  const In* in[2];
  Out* out[2];
};

// Batches up to this many items are done by block 0 alone, with no hand-off to the other blocks:
// the hand-off (republishing the doorbell, the other blocks noticing it, counting them back in)
// cost about 3 us of the round trip. Block 0 moves a small batch between host memory and shared
// memory in 16-byte words, so that a batch of 1024 4-byte items crosses PCIe in 8 warp-wide
// requests of 512 bytes each way rather than 32 of 128 bytes.
constexpr size_t kSmallStageBytes = 8192;
template <class In, class Out>
constexpr size_t small_batch() {
  constexpr size_t item = sizeof(In) > sizeof(Out) ? sizeof(In) : sizeof(Out);
  return kSmallStageBytes / item / 16 * 16;  // whole 16-byte words for any chunk's start
}
// Host buffers are allocated to a multiple of 16 bytes past their items, so that the word-wise
// copies of a batch's tail never leave the allocation.
inline size_t padded_bytes(size_t bytes) { return (bytes + 15) / 16 * 16; }

// System-scope acquire load / release store: every poll of host memory must see the host's
// latest write, and a flag must never become visible before the data it announces.
__device__ __forceinline__ uint64_t load_acquire_sys(const volatile uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_release_sys(volatile uint32_t* p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ uint64_t load_acquire_gpu(const volatile uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_release_gpu(volatile uint64_t* p, uint64_t v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
}

// Reads an item from host-mapped memory, bypassing the caches (__ldcv): the host rewrites the
// buffer for every batch, and a cached copy of the previous batch's item must never be used.
template <class T>
__device__ __forceinline__ T load_uncached(const T* p) {
  T v;
  if constexpr (sizeof(T) % 16 == 0 && alignof(T) >= 16) {
    auto* src = reinterpret_cast<const uint4*>(p);
    auto* dst = reinterpret_cast<uint4*>(&v);
#pragma unroll
    for (size_t k = 0; k < sizeof(T) / 16; ++k) dst[k] = __ldcv(src + k);
  } else {
    static_assert(sizeof(T) % 4 == 0, "offload items are whole 4-byte words");
    auto* src = reinterpret_cast<const unsigned int*>(p);
    unsigned int w[sizeof(T) / 4];
#pragma unroll
    for (size_t k = 0; k < sizeof(T) / 4; ++k) w[k] = __ldcv(src + k);
    memcpy(&v, w, sizeof v);
  }
  return v;
}

// Device-memory copy of the doorbell (large batches only), for the blocks other than block 0,
// and the count of blocks that finished a large batch (cumulative).
struct PersistentDeviceSync {
  volatile uint64_t bell;
  // On its own 128-byte line: the blocks' atomics must not contend with the pollers' reads.
  alignas(128) unsigned long long arrived;
};

// A resident kernel. Only block 0 polls the host-mapped doorbell: every poll is a read across
// PCIe, and with one poller per block the round trip grew by ~4.8 us per block (measured:
// bench/results/2026-11-21-h200/offload/v2-all-blocks-poll-host). A small batch block 0 does
// alone; a large one it republishes in device memory, where the other blocks poll it in L2. Each
// block releases its results with a system-scope fence and counts itself in; the last block of
// the batch writes the host's done flag, once.
template <class Op>
__global__ void __launch_bounds__(kOffloadThreads)
offload_persistent_kernel(Op op, PersistentControl* ctl, PersistentDeviceSync* dsync,
                          PersistentSlots<typename Op::In, typename Op::Out> slots) {
  using In = typename Op::In;
  using Out = typename Op::Out;
  constexpr size_t kSmall = small_batch<In, Out>();
  static_assert(kSmall >= 16, "offload items too large for the small-batch path");
  __shared__ uint64_t bell;
  __shared__ uint4 stage_in[kSmallStageBytes / 16];
  __shared__ uint4 stage_out[kSmallStageBytes / 16];
  uint64_t seen = 0;             // the last doorbell this block acted on
  unsigned long long large = 0;  // large batches this block has done
  for (;;) {
    if (threadIdx.x == 0) {
      uint64_t b;
      if (blockIdx.x == 0) {
        while ((b = load_acquire_sys(&ctl->bell)) == seen) {
        }
        if (b & kFaultBit) __trap();
        const uint64_t n = b & kMaxPersistentBatch;
        // Stop and large batches go to the other blocks too.
        if ((b & kStopBit) || (n > kSmall && gridDim.x > 1)) store_release_gpu(&dsync->bell, b);
      } else {
        while ((b = load_acquire_gpu(&dsync->bell)) == seen) {
          __nanosleep(32);  // many blocks polling one L2 line: leave room for the writer
        }
      }
      bell = b;
    }
    __syncthreads();
    const uint64_t b = bell;
    if (b & kStopBit) return;
    seen = b;
    const uint32_t seq = static_cast<uint32_t>(b >> 32);
    const size_t n = b & kMaxPersistentBatch;
    const int slot = (b & kSlotBit) ? 1 : 0;
    const In* in = slots.in[slot];
    Out* out = slots.out[slot];
    if (n <= kSmall || gridDim.x == 1) {
      // Block 0 alone, chunk by chunk through shared memory. __ldcv: fetch again every batch;
      // never reuse a cached copy of the previous batch's input.
      for (size_t base = 0; base < n; base += kSmall) {
        const size_t m = n - base < kSmall ? n - base : kSmall;
        const auto* src = reinterpret_cast<const uint4*>(in + base);
        const size_t in_words = (m * sizeof(In) + 15) / 16;
        for (size_t w = threadIdx.x; w < in_words; w += kOffloadThreads) stage_in[w] = __ldcv(src + w);
        __syncthreads();
        const auto* items = reinterpret_cast<const In*>(stage_in);
        auto* results = reinterpret_cast<Out*>(stage_out);
        // All of a thread's items first, then all the operations: their table reads (for IPv4,
        // up to 8 random reads of device memory) are in flight together instead of one by one.
        constexpr int kPer = static_cast<int>((kSmall + kOffloadThreads - 1) / kOffloadThreads);
        In item[kPer];
#pragma unroll
        for (int k = 0; k < kPer; ++k) {
          const size_t i = size_t(k) * kOffloadThreads + threadIdx.x;
          if (i < m) item[k] = items[i];
        }
#pragma unroll
        for (int k = 0; k < kPer; ++k) {
          const size_t i = size_t(k) * kOffloadThreads + threadIdx.x;
          if (i < m) results[i] = op(item[k]);
        }
        __syncthreads();
        auto* dst = reinterpret_cast<uint4*>(out + base);
        const size_t out_words = (m * sizeof(Out) + 15) / 16;
        for (size_t w = threadIdx.x; w < out_words; w += kOffloadThreads) dst[w] = stage_out[w];
        __syncthreads();  // the stage is reused by the next chunk
      }
      if (threadIdx.x == 0) {
        __threadfence_system();
        store_release_sys(&ctl->done, seq);
      }
      continue;
    }
    ++large;
    const size_t stride = size_t{gridDim.x} * blockDim.x;
    for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
      out[i] = op(load_uncached(in + i));
    }
    // After the barrier, one system-scope fence by the reporting thread orders every result the
    // block wrote before its count (fences are cumulative; NCCL's flag protocol relies on this).
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence_system();
      const unsigned long long before = atomicAdd(&dsync->arrived, 1ull);
      if (before + 1 == static_cast<unsigned long long>(gridDim.x) * large) {
        __threadfence_system();
        store_release_sys(&ctl->done, seq);
      }
    }
  }
}

// The fault injector's kernel: a device-side trap, which breaks the context like a real fault.
template <int = 0>
__global__ void offload_trap_kernel() { __trap(); }

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
    if (opts_.mode == GpuMode::kPersistent && opts_.capacity > detail::kMaxPersistentBatch) {
      throw GpuError("offload: persistent batches hold at most 2^29 - 1 items");
    }
    if (opts_.mode == GpuMode::kPersistent) opts_.slots = 2;
    opts_.slots = std::clamp(opts_.slots, 1, 8);
    const bool mapped = opts_.mode == GpuMode::kMapped || opts_.mode == GpuMode::kPersistent;
    const unsigned flags = mapped ? cudaHostAllocMapped : cudaHostAllocDefault;
    for (int i = 0; i < opts_.slots; ++i) slot_.push_back(std::make_unique<Slot>());
    for (auto& sp : slot_) {
      Slot& s = *sp;
      s.stream = std::make_unique<Stream>();
      s.h_in.resize(detail::kHeaderBytes + detail::padded_bytes(opts_.capacity * sizeof(In)), flags);
      s.h_out.resize(detail::padded_bytes(opts_.capacity * sizeof(Out)), flags);
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
    if (ctl_.size() && !stopped_) stop_persistent();
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
    if (++submitted_ == opts_.fault_at_batch) inject_fault(s);
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
        // One batch at a time: the kernel reads the doorbell only between batches, so a second
        // ring before it has taken the first would overwrite it. The slot the caller filled
        // meanwhile is what the two slots are for.
        if (seq_ != 0) {
          Slot& prev = *slot_[last_slot_];
          while (!persistent_done(prev)) {
          }
        }
        s.started = std::chrono::steady_clock::now();
        s.spins = 0;
        ring(n | (slot ? detail::kSlotBit : 0) | (fault_next_ ? detail::kFaultBit : 0));
        s.seq = seq_;
        last_slot_ = slot;
        fault_next_ = false;
        break;
      }
    }
  }

  // The persistent kernel finishes the batch it is on (writing the same results the CPU computes
  // from the same input), reads the stop doorbell and returns; a batch it had not taken yet is
  // dropped with the overwritten doorbell. A kernel that does not return within the timeout is
  // reported; it is hung, and a hung kernel writes nothing.
  void quiesce() noexcept override {
    if (!ctl_.size() || stopped_) return;
    stopped_ = true;
    ring(detail::kStopBit);
    const auto start = std::chrono::steady_clock::now();
    while (cudaStreamQuery(slot_[0]->stream->get()) == cudaErrorNotReady) {
      if (std::chrono::steady_clock::now() - start > kPersistentTimeout) {
        std::fprintf(stderr, "offload: the persistent kernel did not stop after the failure\n");
        return;
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
    while (!persistent_done(s)) {
    }
  }

  bool ready(int slot) override {
    Slot& s = *slot_[slot];
    if (s.n == 0) return true;
    if (opts_.mode == GpuMode::kPersistent) return persistent_done(s);
    const cudaError_t e = cudaStreamQuery(s.stream->get());
    if (e == cudaErrorNotReady) return false;
    TANDEM_CUDA_CHECK(e);
    return true;
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
    std::chrono::steady_clock::time_point started;  // persistent mode: the watchdog's clock
    uint64_t spins = 0;
    uint32_t seq = 0;  // persistent mode: the doorbell number of the slot's batch
  };

  // Rings the persistent kernel's doorbell: the items are in place before the one store that
  // announces them (x86 keeps stores in order; the fence keeps the compiler from moving them).
  void ring(uint64_t n_and_flags) {
    std::atomic_thread_fence(std::memory_order_release);
    ctl_[0].bell = (uint64_t{++seq_} << 32) | n_and_flags;
  }

  // One look at the done flag. Every few thousand looks, make sure that the kernel is still
  // running and the batch is not overdue: a kernel that died or stopped answering is an error,
  // not a hang.
  bool persistent_done(Slot& s) {
    // Batches finish in doorbell order: the slot's batch is done once `done` has reached its
    // number (compared as a difference, so that the 32-bit counter may wrap).
    if (static_cast<int32_t>(ctl_[0].done - s.seq) >= 0) {
      std::atomic_thread_fence(std::memory_order_acquire);
      return true;
    }
    if ((++s.spins & 4095) == 0) {
      const cudaError_t e = cudaStreamQuery(slot_[0]->stream->get());  // the kernel's stream
      if (e != cudaErrorNotReady) {
        throw GpuError(std::string("persistent kernel stopped: ") + cudaGetErrorString(e));
      }
      if (std::chrono::steady_clock::now() - s.started > kPersistentTimeout) {
        report_persistent_state();
        throw GpuError("persistent kernel did not finish batch " + std::to_string(seq_) + " of " +
                       std::to_string(s.n) + " items within " +
                       std::to_string(kPersistentTimeout.count()) + " ms");
      }
    }
    return false;
  }

  // A trapping kernel on the slot's stream, before the batch; in persistent mode, the resident
  // kernel traps on reading the batch's doorbell (a kernel beside a resident cooperative kernel
  // was never scheduled). Either way the context breaks and the batch's wait() or ready()
  // reports it.
  void inject_fault(Slot& s) {
    std::fprintf(stderr, "offload: injecting a GPU fault (trap kernel) with batch %llu, as asked\n",
                 static_cast<unsigned long long>(submitted_));
    if (opts_.mode == GpuMode::kPersistent) {
      fault_next_ = true;  // the resident kernel itself traps when it reads this doorbell
    } else {
      detail::offload_trap_kernel<><<<1, 1, 0, s.stream->get()>>>();
    }
  }

  int grid_for(size_t n) const { return detail::launch_blocks(n, sm_count_); }

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
    detail::PersistentSlots<In, Out> slots{};
    for (int k = 0; k < 2; ++k) {
      slots.in[k] = reinterpret_cast<const In*>(slot_[k]->d_in_ptr + detail::kHeaderBytes);
      slots.out[k] = reinterpret_cast<Out*>(slot_[k]->d_out_ptr);
    }
    void* args[] = {&op_, &d_ctl, &d_sync, &slots};
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
                 "offload: persistent state: host seq %u, ctl.bell %#llx, ctl.done %u; "
                 "device bell %#llx, arrived %llu (blocks %d)\n",
                 seq_, static_cast<unsigned long long>(ctl_[0].bell), ctl_[0].done,
                 static_cast<unsigned long long>(d.bell), d.arrived, blocks_);
  }

  void stop_persistent() {
    ring(detail::kStopBit);
    // The kernel returns once it sees stop. One that does not may still write into the mapped
    // buffers this destructor is about to free, and cannot be killed from here: end the process
    // (which ends the kernel) rather than hang the caller or let it corrupt freed memory.
    const auto start = std::chrono::steady_clock::now();
    while (cudaStreamQuery(slot_[0]->stream->get()) == cudaErrorNotReady) {
      if (std::chrono::steady_clock::now() - start > kPersistentTimeout) {
        std::fprintf(stderr, "offload: the persistent kernel did not stop within %lld ms; aborting\n",
                     static_cast<long long>(kPersistentTimeout.count()));
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
  uint64_t submitted_ = 0;
  bool fault_next_ = false;
  bool stopped_ = false;
  int last_slot_ = 0;
};

}  // namespace tandem::gpu
