// The GPU side of a resident ring (gpu/resident.h) for an app's frame core (apps/frame_core.h).
// Registered for every app by TANDEM_REGISTER_FRAME_CORE (gpu/frame_runner.cuh).
//
// kPersistent: one resident kernel. Block 0 is the dispatcher: one lane per producer polls that
// producer's published index in host memory (one read across PCIe per producer per round) and
// turns each new batch into an entry of a work queue in device memory; the other blocks take
// entries from the queue (polling in L2, not across PCIe) and run whole batches:
//   1. copy the batch's frames from host memory into a scratch area in device memory (uncached
//      loads: the host rewrites the slot for every batch, and no cached copy of the previous
//      batch may be used; four lanes per 64 bytes, so that PCIe carries 64-byte reads),
//   2. run forward_frame() on the scratch copy, counting verdicts in shared memory,
//   3. mark the slot claimed, then write back only the 16-byte words the app changed (a router
//      changes two of a 64-byte frame's four),
//   4. the verdicts, L3 offsets and the batch's summary, then, after a system fence, the slot's
//      done word.
// A batch's frames can be half-rewritten in host memory only if the GPU fails between 3 and the
// done word; the CPU fallback drops the frames of such a batch with kGpuFault, and redoes whole
// any batch not yet claimed. Each step is a round trip across PCIe at least (1-2 us): the count
// and the first offsets are read together, and one fence orders everything before `done`.
//
// kAsync (DMA): a housekeeping thread copies each published batch's used bytes and arrays to
// device memory on one of `streams` streams, launches the frame kernel, and copies the frames into
// the slot's out_bytes() and the verdicts and summary back; when the stream's event completes it
// marks the slot done. The frames in bytes() are never written, so a failed batch is redone whole.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "apps/frame_core.h"
#include "gpu/cuda_util.cuh"
#include "gpu/device_core.cuh"
#include "gpu/offload_runner.cuh"
#include "gpu/resident.h"

namespace tandem::gpu {

namespace resident {

constexpr int kThreads = 256;
constexpr uint32_t kMaxPersistentBatch = 2048;  // frames per slot in the persistent mode (shared memory)
constexpr int kMaxProducers = 32;               // one dispatcher lane each

// The ring as the GPU sees it (device pointers into the registered region).
struct DeviceRing {
  uint8_t* bytes;
  uint8_t* out;
  uint32_t* offsets;
  uint32_t* lengths;
  uint32_t* out_lengths;  // whole-batch cores: each frame's new length
  uint32_t* verdicts;
  uint16_t* l3;
  BatchSummary* summary;
  ResidentRing::SlotFill* fill;
  ResidentRing::SlotStatus* status;
  ResidentRing::ProducerIndex* index;
  volatile uint32_t* stop;
  uint32_t producers, per_producer, batch;
  uint32_t summary_ports;  // ports counted in a summary; higher ones in high_ports
  size_t slot_bytes;
  uint32_t max_frame;  // the largest a frame may become
  bool want_l3;
};

// A core that processes a whole batch at once (its frames depend on state that outlives the
// batch, such as IPsec's sequence numbers and replay windows) instead of frame by frame.
template <class Core>
concept WholeBatchCore = Core::kWholeBatch;

// What a whole-batch core is given. Every thread of the block calls Core::process_batch(b), which
// fills in each frame's verdict and new length.
struct WholeBatch {
  uint8_t* work;             // the staged frames in device memory, at their slot offsets, with room behind
  const uint32_t* offsets;   // shared memory
  const uint16_t* lengths;   // as received
  uint16_t* new_lengths;     // out
  uint32_t* verdicts;        // out
  uint32_t n;
  uint64_t ticket;           // the batch's place in the order batches were dispatched (0, 1, 2, ...)
  uint32_t max_frame;
  volatile uint32_t* claimed;  // the slot's claimed word in host memory
  uint32_t gen;
  // Every thread calls it before the core first changes state that outlives the batch: the CPU
  // fallback then drops the batch (kGpuFault) instead of processing it again after a failure.
  __device__ void claim() const {
    if (threadIdx.x == 0) {
      *claimed = gen;
      __threadfence_system();
    }
    __syncthreads();
  }
};

// The work queue of the persistent kernel, in device memory. Entry k (of `capacity`) carries the
// slot and its generation; tag[k] is the entry's index + 1 once written, 0 once taken.
struct WorkQueue {
  unsigned long long head;                  // next index a worker takes
  alignas(128) volatile uint32_t stop;      // the dispatcher saw the host's stop
  alignas(128) unsigned long long dispatched;
};

__device__ __forceinline__ uint64_t load_acquire_sys_u64(const volatile uint64_t* p) { return detail::load_acquire_sys(p); }
__device__ __forceinline__ uint32_t load_volatile_u32(const volatile uint32_t* p) { return *p; }

// Shared counters of one batch.
struct SharedSummary {
  unsigned long long tx_bytes;
  uint32_t tx_packets, flooded, high_ports;
  uint32_t drops[kDropReasonCount];
  uint32_t ports[kSummaryPorts];
};

__device__ __forceinline__ void shared_clear(SharedSummary& s, uint32_t ports) {
  for (int i = threadIdx.x; i < kDropReasonCount; i += blockDim.x) s.drops[i] = 0;
  for (int i = threadIdx.x; i < static_cast<int>(ports); i += blockDim.x) s.ports[i] = 0;
  if (threadIdx.x == 0) {
    s.tx_bytes = 0;
    s.tx_packets = s.flooded = s.high_ports = 0;
  }
}

__device__ __forceinline__ void shared_add(SharedSummary& s, uint32_t v, uint32_t len, uint32_t ports) {
  if (Verdict::is_drop(v)) {
    atomicAdd(&s.drops[static_cast<int>(Verdict::reason(v))], 1u);
    return;
  }
  atomicAdd(&s.tx_packets, 1u);
  atomicAdd(&s.tx_bytes, static_cast<unsigned long long>(len));
  const uint32_t port = Verdict::port(v);
  if (port == Verdict::kFloodPort) {
    atomicAdd(&s.flooded, 1u);
  } else if (port < ports) {
    atomicAdd(&s.ports[port], 1u);
  } else {
    atomicAdd(&s.high_ports, 1u);
  }
}

// Writes the block's counters to `out` (host or device memory), every thread of the block.
__device__ __forceinline__ void shared_store(const SharedSummary& s, BatchSummary* out, uint32_t ports) {
  for (int i = threadIdx.x; i < kDropReasonCount; i += blockDim.x) out->drops[i] = s.drops[i];
  for (int i = threadIdx.x; i < static_cast<int>(ports); i += blockDim.x) out->ports[i] = s.ports[i];
  if (threadIdx.x == 0) {
    out->tx_bytes = s.tx_bytes;
    out->tx_packets = s.tx_packets;
    out->flooded = s.flooded;
    out->high_ports = s.high_ports;
  }
}

// Adds the block's counters to a device summary (several blocks per batch in the DMA kernel).
__device__ __forceinline__ void shared_accumulate(const SharedSummary& s, BatchSummary* out, uint32_t ports) {
  for (int i = threadIdx.x; i < kDropReasonCount; i += blockDim.x) {
    if (s.drops[i]) atomicAdd(&out->drops[i], s.drops[i]);
  }
  for (int i = threadIdx.x; i < static_cast<int>(ports); i += blockDim.x) {
    if (s.ports[i]) atomicAdd(&out->ports[i], s.ports[i]);
  }
  if (threadIdx.x == 0) {
    atomicAdd(reinterpret_cast<unsigned long long*>(&out->tx_bytes), s.tx_bytes);
    atomicAdd(&out->tx_packets, s.tx_packets);
    atomicAdd(&out->flooded, s.flooded);
    atomicAdd(&out->high_ports, s.high_ports);
  }
}

// The dispatcher: warp 0 of block 0. Lane t follows producer t: each round, every lane reads its
// producer's published index (the reads cross PCIe together), a prefix sum over the lanes gives
// each lane its place in the queue, the lanes write their entries, and after one fence, the tags
// that let workers take them.
__device__ inline void dispatch(const DeviceRing& r, WorkQueue* q, uint64_t* entries, volatile uint64_t* tags,
                                uint32_t capacity, uint64_t fault_at) {
  constexpr unsigned kAll = 0xffffffffu;
  const uint32_t lane = threadIdx.x;
  uint64_t seen = 0;  // batches of producer `lane` dispatched
  uint64_t next = 0;  // queue index of the next entry (the same in every lane)
  for (;;) {
    const uint32_t stop = load_volatile_u32(r.stop);
    uint64_t published = seen;
    if (lane < r.producers) published = load_acquire_sys_u64(&r.index[lane].published);
    const uint32_t mine = static_cast<uint32_t>(published - seen);
    uint32_t incl = mine;
    for (int d = 1; d < 32; d <<= 1) {
      const uint32_t v = __shfl_up_sync(kAll, incl, d);
      if (lane >= static_cast<uint32_t>(d)) incl += v;
    }
    const uint32_t total = __shfl_sync(kAll, incl, 31);
    if (fault_at != 0 && fault_at > next && fault_at <= next + total) __trap();
    const uint64_t base = next + incl - mine;
    for (uint32_t k = 0; k < mine; ++k) {
      const uint32_t e = static_cast<uint32_t>((base + k) % capacity);
      // The entry capacity batches ago must have been taken before this one overwrites it.
      while (tags[e] != 0) __nanosleep(64);
      const uint64_t j = seen + k;
      const uint32_t slot = lane + static_cast<uint32_t>(j % r.per_producer) * r.producers;
      const uint32_t gen = static_cast<uint32_t>(j / r.per_producer + 1);
      entries[e] = (uint64_t{gen} << 32) | slot;
    }
    __threadfence();
    for (uint32_t k = 0; k < mine; ++k) tags[(base + k) % capacity] = base + k + 1;
    seen = published;
    next += total;
    if (total && lane == 0) atomicExch(&q->dispatched, next);
    if (stop) {
      if (lane == 0) {
        __threadfence();
        q->stop = 1;
      }
      return;
    }
    if (!total) __nanosleep(256);
  }
}

// Calls f(off, w) for every 16-byte word w of the `count` frames of a warp (frame f's offset and
// length in lane f's my_off and my_len): the first 64 bytes of 8 frames per step with 4 lanes a
// frame, so that PCIe carries 64-byte pieces; then the rest of longer frames, the whole warp a
// frame. Every lane of the warp calls it.
template <class F>
__device__ __forceinline__ void for_each_word(uint32_t count, uint32_t my_off, uint32_t my_len, uint32_t lane, F&& f) {
  for (uint32_t f0 = 0; f0 < count; f0 += 8) {
    const uint32_t fr = f0 + lane / 4;
    const uint32_t off = __shfl_sync(0xffffffffu, my_off, fr & 31);
    const uint32_t len = __shfl_sync(0xffffffffu, my_len, fr & 31);
    if (fr < count && lane % 4 < min((len + 15) / 16, 4u)) f(off, lane % 4);
  }
  for (uint32_t fr = 0; fr < count; ++fr) {
    const uint32_t off = __shfl_sync(0xffffffffu, my_off, fr);
    const uint32_t len = __shfl_sync(0xffffffffu, my_len, fr);
    for (uint32_t w = 4 + lane; w < (len + 15) / 16; w += 32) f(off, w);
  }
}

__device__ __forceinline__ bool differs(const uint4& a, const uint4& b) {
  return a.x != b.x || a.y != b.y || a.z != b.z || a.w != b.w;
}

// Steps 3 (after the frames) and 4 of a batch: verdicts, L3 offsets, new lengths (when they
// change), the summary and, after one system fence, the done word.
__device__ __forceinline__ void publish_batch(const DeviceRing& r, uint32_t slot, uint32_t gen, uint32_t n,
                                              const SharedSummary& sum, const uint32_t* s_verdict, const uint16_t* s_l3,
                                              const uint16_t* s_new_len) {
  // Fences being cumulative, one thread's system fence after the barrier orders every write of the
  // block before `done`.
  uint32_t* const verdicts = r.verdicts + size_t{slot} * r.batch;
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) verdicts[i] = s_verdict[i];
  if (r.want_l3) {
    uint16_t* const l3 = r.l3 + size_t{slot} * r.batch;
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) l3[i] = s_l3[i];
  }
  if (s_new_len) {
    uint32_t* const lens = r.out_lengths + size_t{slot} * r.batch;
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) lens[i] = s_new_len[i];
  }
  shared_store(sum, r.summary + slot, r.summary_ports);
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    detail::store_release_sys(&r.status[slot].done, gen);
  }
}

// One batch of a whole-batch core, by one block: stage every frame, let the core process the
// batch, write back every 16-byte word of each frame's old and new extent, publish.
template <WholeBatchCore Core>
__device__ void run_whole_batch(const Core& core, const DeviceRing& r, uint32_t slot, uint32_t gen, uint64_t ticket,
                                uint8_t* work, SharedSummary& sum, uint32_t* s_verdict, uint16_t* s_l3,
                                uint32_t* s_off, uint16_t* s_len, uint16_t* s_new_len) {
  const uint32_t lane = threadIdx.x & 31;
  const uint32_t warps = blockDim.x >> 5;
  __shared__ uint32_t n_shared;
  uint8_t* const host = r.bytes + size_t{slot} * r.slot_bytes;
  const uint32_t* const offs = r.offsets + size_t{slot} * r.batch;
  const uint32_t* const lens = r.lengths + size_t{slot} * r.batch;
  if (threadIdx.x == 0) n_shared = __ldcv(&r.fill[slot].count);
  shared_clear(sum, r.summary_ports);
  __syncthreads();
  const uint32_t n = min(n_shared, r.batch);
  for (uint32_t base = (threadIdx.x >> 5) * 32; base < n; base += warps * 32) {
    const uint32_t i = base + lane;
    const uint32_t my_off = i < n ? __ldcv(offs + i) : 0;
    const uint32_t my_len = i < n ? __ldcv(lens + i) : 0;
    for_each_word(min(32u, n - base), my_off, my_len, lane, [&](uint32_t off, uint32_t w) {
      reinterpret_cast<uint4*>(work + off)[w] = __ldcv(reinterpret_cast<const uint4*>(host + off) + w);
    });
    if (i < n) {
      s_off[i] = my_off;
      s_len[i] = static_cast<uint16_t>(my_len);
    }
  }
  __syncthreads();
  const WholeBatch b{work, s_off, s_len, s_new_len, s_verdict, n, ticket, r.max_frame, &r.status[slot].claimed, gen};
  core.process_batch(b);
  __syncthreads();
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
    s_l3[i] = 0;
    shared_add(sum, s_verdict[i], s_new_len[i], r.summary_ports);
  }
  b.claim();
  for (uint32_t base = (threadIdx.x >> 5) * 32; base < n; base += warps * 32) {
    const uint32_t i = base + lane;
    const uint32_t my_off = i < n ? s_off[i] : 0;
    const uint32_t my_len = i < n ? max(s_len[i], s_new_len[i]) : 0;
    for_each_word(min(32u, n - base), my_off, my_len, lane, [&](uint32_t off, uint32_t w) {
      reinterpret_cast<uint4*>(host + off)[w] = reinterpret_cast<const uint4*>(work + off)[w];
    });
  }
  publish_batch(r, slot, gen, n, sum, s_verdict, s_l3, s_new_len);
}

// One batch, by one block: stage, process, write back, publish.
template <class Core>
__device__ void run_batch(const Core& core, const DeviceRing& r, uint32_t slot, uint32_t gen, uint8_t* orig,
                          uint8_t* work, SharedSummary& sum, uint32_t* s_verdict, uint16_t* s_l3, uint32_t* s_off,
                          uint16_t* s_len) {
  const uint32_t lane = threadIdx.x & 31;
  const uint32_t warp = threadIdx.x >> 5;
  const uint32_t warps = blockDim.x >> 5;
  __shared__ uint32_t n_shared;
  uint8_t* const host = r.bytes + size_t{slot} * r.slot_bytes;
  const uint32_t* const offs = r.offsets + size_t{slot} * r.batch;
  const uint32_t* const lens = r.lengths + size_t{slot} * r.batch;
  // The count and each warp's first 32 offsets and lengths cross PCIe together: the values past
  // the count are not used.
  const uint32_t first = warp * 32 + lane;
  const uint32_t first_off = first < r.batch ? __ldcv(offs + first) : 0;
  const uint32_t first_len = first < r.batch ? __ldcv(lens + first) : 0;
  if (threadIdx.x == 0) n_shared = __ldcv(&r.fill[slot].count);
  shared_clear(sum, r.summary_ports);
  __syncthreads();
  const uint32_t n = min(n_shared, r.batch);
  // 1 and 2: each warp takes 32 frames at a time.
  for (uint32_t base = warp * 32; base < n; base += warps * 32) {
    const uint32_t i = base + lane;
    const bool first_round = base == warp * 32;
    const uint32_t my_off = i < n ? (first_round ? first_off : __ldcv(offs + i)) : 0;
    const uint32_t my_len = i < n ? (first_round ? first_len : __ldcv(lens + i)) : 0;
    const uint32_t count = min(32u, n - base);
    for_each_word(count, my_off, my_len, lane, [&](uint32_t off, uint32_t w) {
      const uint4 v = __ldcv(reinterpret_cast<const uint4*>(host + off) + w);
      reinterpret_cast<uint4*>(orig + off)[w] = v;
      reinterpret_cast<uint4*>(work + off)[w] = v;
    });
    __syncwarp();
    if (i < n) {
      s_off[i] = my_off;
      s_len[i] = static_cast<uint16_t>(my_len);
      uint16_t l3 = 0;
      const uint32_t v = forward_frame(core, work + my_off, my_len, &l3);
      s_verdict[i] = v;
      s_l3[i] = l3;
      shared_add(sum, v, my_len, r.summary_ports);
    }
  }
  __syncthreads();
  // 3. Claimed before the first frame write reaches host memory.
  if (threadIdx.x == 0) {
    r.status[slot].claimed = gen;
    __threadfence_system();
  }
  __syncthreads();
  for (uint32_t base = warp * 32; base < n; base += warps * 32) {
    const uint32_t i = base + lane;
    const uint32_t my_off = i < n ? s_off[i] : 0;
    const uint32_t my_len = i < n ? s_len[i] : 0;
    const uint32_t count = min(32u, n - base);
    for_each_word(count, my_off, my_len, lane, [&](uint32_t off, uint32_t w) {
      const uint4 b = reinterpret_cast<const uint4*>(work + off)[w];
      if (differs(reinterpret_cast<const uint4*>(orig + off)[w], b)) reinterpret_cast<uint4*>(host + off)[w] = b;
    });
  }
  // 4. The verdicts, L3 offsets and summary, then `done`.
  publish_batch(r, slot, gen, n, sum, s_verdict, s_l3, nullptr);
}

template <class Core>
__global__ void __launch_bounds__(kThreads)
persistent_kernel(Core core, DeviceRing r, WorkQueue* q, uint64_t* entries, volatile uint64_t* tags, uint32_t capacity,
                  uint8_t* scratch, uint64_t fault_at) {
  if (blockIdx.x == 0) {
    if (threadIdx.x < 32) dispatch(r, q, entries, tags, capacity, fault_at);
    return;
  }
  __shared__ SharedSummary sum;
  __shared__ uint32_t s_verdict[kMaxPersistentBatch];
  __shared__ uint16_t s_l3[kMaxPersistentBatch];
  __shared__ uint32_t s_off[kMaxPersistentBatch];  // the batch's offsets and lengths, read once
  __shared__ uint16_t s_len[kMaxPersistentBatch];
  __shared__ uint64_t entry, ticket;
  uint8_t* const orig = scratch + size_t{blockIdx.x - 1} * 2 * r.slot_bytes;
  uint8_t* const work = orig + r.slot_bytes;
  for (;;) {
    if (threadIdx.x == 0) {
      const unsigned long long h = atomicAdd(&q->head, 1ull);
      const uint32_t k = static_cast<uint32_t>(h % capacity);
      uint64_t e = ~uint64_t{0};
      for (;;) {
        if (tags[k] == h + 1) {
          __threadfence();
          e = entries[k];
          tags[k] = 0;
          break;
        }
        if (q->stop) break;
        __nanosleep(128);
      }
      entry = e;
      ticket = h;
    }
    __syncthreads();
    const uint64_t e = entry;
    if (e == ~uint64_t{0}) return;
    if constexpr (WholeBatchCore<Core>) {
      __shared__ uint16_t s_new_len[kMaxPersistentBatch];
      run_whole_batch(core, r, static_cast<uint32_t>(e), static_cast<uint32_t>(e >> 32), ticket, work, sum, s_verdict,
                      s_l3, s_off, s_len, s_new_len);
    } else {
      run_batch(core, r, static_cast<uint32_t>(e), static_cast<uint32_t>(e >> 32), orig, work, sum, s_verdict, s_l3,
                s_off, s_len);
    }
    __syncthreads();
  }
}

// The DMA variant's kernel: one batch in device memory, frames in place, one thread per frame.
template <class Core>
__global__ void __launch_bounds__(kThreads)
dma_kernel(Core core, uint8_t* bytes, const uint32_t* offsets, const uint32_t* lengths, uint32_t* verdicts,
           uint16_t* l3, BatchSummary* summary, uint32_t n, uint32_t ports) {
  __shared__ SharedSummary sum;
  shared_clear(sum, ports);
  __syncthreads();
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint32_t len = lengths[i];
    uint16_t off3 = 0;
    const uint32_t v = forward_frame(core, bytes + offsets[i], len, &off3);
    verdicts[i] = v;
    l3[i] = off3;
    shared_add(sum, v, len, ports);
  }
  __syncthreads();
  shared_accumulate(sum, summary, ports);
}

}  // namespace resident

// The runner of a core. A whole-batch core's state outside the tables is its runner's: such a
// runner derives from this class, calls stop() in its own destructor, and hears of the two moments
// its host copy of that state must be brought up to date (before_cpu_fallback, after_clean_stop).
template <class Core>
class ResidentRunnerImpl : public ResidentRunner {
 public:
  ResidentRunnerImpl(const Core& host, ResidentRing& ring, const ResidentOptions& o)
      : dev_(host), ring_(ring), o_(ring.options()) {
    (void)o;
    if (o_.mode != GpuMode::kPersistent && o_.mode != GpuMode::kAsync) {
      throw GpuError(std::string("resident path: mode ") + gpu_mode_name(o_.mode) + " is not offered (persistent, async)");
    }
    if (resident::WholeBatchCore<Core> && o_.mode != GpuMode::kPersistent) {
      throw GpuError("resident path: this app runs in the persistent mode only (its batches are ordered on the GPU)");
    }
    if (ring_.producers() > static_cast<uint32_t>(resident::kMaxProducers)) {
      throw GpuError("resident path: at most 32 receive threads per GPU");
    }
    if (o_.mode == GpuMode::kPersistent && ring_.batch() > resident::kMaxPersistentBatch) {
      throw GpuError("resident path: persistent batches hold at most 2,048 frames");
    }
    TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, 0));
    TANDEM_CUDA_CHECK(cudaHostRegister(ring_.region(), ring_.region_bytes(), cudaHostRegisterMapped | cudaHostRegisterPortable));
    registered_ = true;
    uint8_t* base = nullptr;
    TANDEM_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&base), ring_.region(), 0));
    const ResidentRing::Layout l = ring_.layout();
    dr_.bytes = base + l.bytes;
    dr_.out = base + l.out;
    dr_.offsets = reinterpret_cast<uint32_t*>(base + l.offsets);
    dr_.lengths = reinterpret_cast<uint32_t*>(base + l.lengths);
    dr_.out_lengths = reinterpret_cast<uint32_t*>(base + l.out_lengths);
    dr_.max_frame = ring_.max_frame();
    dr_.verdicts = reinterpret_cast<uint32_t*>(base + l.verdicts);
    dr_.l3 = reinterpret_cast<uint16_t*>(base + l.l3);
    dr_.summary = reinterpret_cast<BatchSummary*>(base + l.summary);
    dr_.fill = reinterpret_cast<ResidentRing::SlotFill*>(base + l.fill);
    dr_.status = reinterpret_cast<ResidentRing::SlotStatus*>(base + l.status);
    dr_.index = reinterpret_cast<ResidentRing::ProducerIndex*>(base + l.index);
    dr_.stop = reinterpret_cast<volatile uint32_t*>(base + l.stop);
    dr_.producers = ring_.producers();
    dr_.per_producer = ring_.per_producer();
    dr_.batch = ring_.batch();
    dr_.summary_ports = ring_.summary_ports();
    dr_.slot_bytes = ring_.slot_bytes();
    dr_.want_l3 = o_.want_l3;
    if (o_.mode == GpuMode::kPersistent) {
      int per_sm = 0;
      TANDEM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, resident::persistent_kernel<Core>,
                                                                      resident::kThreads, 0));
      blocks_ = worker_blocks(o_);
      if (blocks_ + 1 > per_sm * sm_count_) {
        throw GpuError("resident path: " + std::to_string(blocks_ + 1) + " resident blocks do not fit on the GPU (" +
                       std::to_string(per_sm * sm_count_) + " do)");
      }
      capacity_ = ring_.slots();
      queue_.resize(1);
      entries_.resize(capacity_);
      tags_.resize(capacity_);
      scratch_.resize(size_t(blocks_) * 2 * ring_.slot_bytes());
      TANDEM_CUDA_CHECK(cudaMemset(queue_.get(), 0, sizeof(resident::WorkQueue)));
      TANDEM_CUDA_CHECK(cudaMemset(tags_.get(), 0, capacity_ * sizeof(uint64_t)));
    } else {
      for (int i = 0; i < std::max(1, o_.streams); ++i) {
        auto& s = *dma_.emplace_back(std::make_unique<DmaSlot>());
        s.bytes.resize(ring_.slot_bytes());
        s.offsets.resize(ring_.batch());
        s.lengths.resize(ring_.batch());
        s.verdicts.resize(ring_.batch());
        s.l3.resize(ring_.batch());
        s.summary.resize(1);
      }
    }
    TANDEM_CUDA_CHECK(cudaDeviceSynchronize());
  }

  // The persistent kernel's worker blocks for options `o`: o.blocks, or by default one per
  // multiprocessor, the dispatcher's block beside them. A whole-batch core's blocks each hold a
  // batch through its compute-heavy part (crypto), so it gets every block that fits instead.
  static int worker_blocks(const ResidentOptions& o) {
    if (o.blocks > 0) return o.blocks;
    int sm = 0, per_sm = 0;
    TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, 0));
    TANDEM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, resident::persistent_kernel<Core>,
                                                                    resident::kThreads, 0));
    const int fit = std::max(1, per_sm * sm - 1);
    return resident::WholeBatchCore<Core> ? fit : std::min(sm, fit);
  }

  ~ResidentRunnerImpl() override {
    stop();
    if (registered_) cudaHostUnregister(ring_.region());
  }

  void start() override {
    *ring_.stop_word() = 0;
    if (o_.mode == GpuMode::kPersistent) {
      resident::persistent_kernel<Core><<<blocks_ + 1, resident::kThreads, 0, stream_.get()>>>(
          dev_.core(), dr_, queue_.get(), entries_.get(), tags_.get(), capacity_, scratch_.get(), o_.fault_at_batch);
      TANDEM_CUDA_CHECK_LAUNCH();
    }
    running_.store(true);
    thread_ = std::thread([this] { o_.mode == GpuMode::kPersistent ? watch() : dma_loop(); });
  }

  void stop() override {
    if (!thread_.joinable()) return;
    stopping_.store(true, std::memory_order_release);
    thread_.join();
  }

  uint64_t batches() const override { return batches_.load(std::memory_order_relaxed); }

  std::string describe() const override {
    if (o_.mode == GpuMode::kPersistent) {
      return "persistent kernel, " + std::to_string(blocks_) + " worker blocks + 1 dispatcher";
    }
    return "DMA, " + std::to_string(dma_.size()) + " batches in flight";
  }

 protected:
  // The GPU failed and nothing on it runs any more; the receive threads are about to finish on the
  // CPU.
  virtual void before_cpu_fallback() {}
  // The kernel ended after a stop, every batch done.
  virtual void after_clean_stop() {}
  int worker_blocks() const { return blocks_; }

 private:
  struct DmaSlot {
    Stream stream;
    Event done;
    DeviceBuffer<uint8_t> bytes;
    DeviceBuffer<uint32_t> offsets, lengths, verdicts;
    DeviceBuffer<uint16_t> l3;
    DeviceBuffer<BatchSummary> summary;
    uint32_t slot = 0, gen = 0;
    bool busy = false;
  };

  // After a failure: wait until nothing on the GPU runs (the context is broken, so nothing will
  // write the ring again), then let the producers finish on the CPU.
  void fail(const std::string& why, bool quiesce = true) {
    if (quiesce) cudaDeviceSynchronize();
    std::fprintf(stderr, "resident path: GPU failed (%s); the receive threads finish on the CPU\n", why.c_str());
    before_cpu_fallback();
    set_failed(why);
  }

  // The persistent kernel runs until the host's stop word; this thread notices a failure.
  void watch() {
    for (;;) {
      const cudaError_t e = cudaStreamQuery(stream_.get());
      if (e != cudaErrorNotReady) {
        if (e != cudaSuccess) {
          fail(std::string("persistent kernel: ") + cudaGetErrorString(e));
        } else if (!stopping_.load()) {
          fail("persistent kernel ended before it was stopped");
        }
        return;
      }
      if (stopping_.load(std::memory_order_acquire)) {
        *ring_.stop_word() = 1;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        cudaError_t s;
        while ((s = cudaStreamQuery(stream_.get())) == cudaErrorNotReady) {
          if (std::chrono::steady_clock::now() > deadline) {
            // Every batch was done before the stop: nothing is left for the CPU.
            fail("persistent kernel did not stop within 5 s", false);
            return;
          }
          std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
        if (s != cudaSuccess) fail(std::string("persistent kernel: ") + cudaGetErrorString(s));
        unsigned long long n = 0;
        if (!failed()) {
          cudaMemcpy(&n, &queue_.get()->dispatched, sizeof n, cudaMemcpyDeviceToHost);
          batches_.store(n);
          after_clean_stop();
        }
        return;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  // The DMA variant: batches in each producer's order, round robin over the producers.
  void dma_loop() {
    const uint32_t producers = ring_.producers();
    std::vector<uint64_t> seen(producers, 0);
    std::deque<DmaSlot*> flight;
    size_t next_stream = 0;
    uint64_t submitted = 0;
    try {
      for (;;) {
        bool progress = false;
        while (!flight.empty()) {
          DmaSlot& d = *flight.front();
          const cudaError_t e = cudaEventQuery(d.done.get());
          if (e == cudaErrorNotReady) break;
          TANDEM_CUDA_CHECK(e);
          __atomic_store_n(&ring_.status(d.slot)->done, d.gen, __ATOMIC_RELEASE);
          d.busy = false;
          flight.pop_front();
          batches_.fetch_add(1, std::memory_order_relaxed);
          progress = true;
        }
        for (uint32_t t = 0; t < producers; ++t) {
          const uint64_t published = __atomic_load_n(&ring_.index(t)->published, __ATOMIC_ACQUIRE);
          while (seen[t] < published) {
            DmaSlot& d = *dma_[next_stream];
            if (d.busy) break;
            const uint64_t j = seen[t]++;
            submit(d, ring_.slot_of(t, j), ring_.gen_of(j), ++submitted);
            flight.push_back(&d);
            next_stream = (next_stream + 1) % dma_.size();
            progress = true;
          }
        }
        if (!progress) {
          if (stopping_.load(std::memory_order_acquire) && flight.empty()) return;
          std::this_thread::yield();
        }
      }
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }

  void submit(DmaSlot& d, uint32_t slot, uint32_t gen, uint64_t number) {
    d.busy = true;
    d.slot = slot;
    d.gen = gen;
    const ResidentRing::SlotFill f = *ring_.fill(slot);
    const uint32_t n = std::min(f.count, ring_.batch());
    cudaStream_t st = d.stream.get();
    if (o_.fault_at_batch != 0 && number == o_.fault_at_batch) {
      detail::offload_trap_kernel<<<1, 1, 0, st>>>();
      TANDEM_CUDA_CHECK_LAUNCH();
    }
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(d.offsets.get(), ring_.offsets(slot), n * 4, cudaMemcpyHostToDevice, st));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(d.lengths.get(), ring_.lengths(slot), n * 4, cudaMemcpyHostToDevice, st));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(d.bytes.get(), ring_.bytes(slot), f.used, cudaMemcpyHostToDevice, st));
    TANDEM_CUDA_CHECK(cudaMemsetAsync(d.summary.get(), 0, sizeof(BatchSummary), st));
    if constexpr (!resident::WholeBatchCore<Core>) {
      if (n) {
        resident::dma_kernel<Core><<<detail::launch_blocks(n, sm_count_), resident::kThreads, 0, st>>>(
            dev_.core(), d.bytes.get(), d.offsets.get(), d.lengths.get(), d.verdicts.get(), d.l3.get(), d.summary.get(), n,
            dr_.summary_ports);
        TANDEM_CUDA_CHECK_LAUNCH();
      }
    }
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(ring_.out_bytes(slot), d.bytes.get(), f.used, cudaMemcpyDeviceToHost, st));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(ring_.verdicts(slot), d.verdicts.get(), n * 4, cudaMemcpyDeviceToHost, st));
    if (o_.want_l3) {
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(ring_.l3(slot), d.l3.get(), n * 2, cudaMemcpyDeviceToHost, st));
    }
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(ring_.summary(slot), d.summary.get(), sizeof(BatchSummary), cudaMemcpyDeviceToHost, st));
    d.done.record(st);
  }

  DeviceCore<Core> dev_;
  ResidentRing& ring_;
  ResidentOptions o_;
  resident::DeviceRing dr_{};
  int sm_count_ = 0;
  bool registered_ = false;
  // kPersistent
  int blocks_ = 0;
  uint32_t capacity_ = 0;
  Stream stream_;
  DeviceBuffer<resident::WorkQueue> queue_;
  DeviceBuffer<uint64_t> entries_;
  DeviceBuffer<uint64_t> tags_;
  DeviceBuffer<uint8_t> scratch_;
  // kAsync
  std::vector<std::unique_ptr<DmaSlot>> dma_;
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> batches_{0};
};

}  // namespace tandem::gpu
