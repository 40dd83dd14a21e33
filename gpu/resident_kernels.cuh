// The resident path's device code (gpu/resident_runner.cuh runs it): the ring as the GPU sees it,
// the dispatcher, the per-batch steps for frame cores and whole-batch cores, the persistent kernel
// and the DMA variant's kernel. See gpu/resident_runner.cuh for what each step does and why.
#pragma once

#include <cstdint>

#include "apps/frame_core.h"
#include "gpu/cuda_util.cuh"
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
  volatile uint32_t* exited;  // set to 1 by the last block to end
  uint32_t producers, per_producer, batch;
  uint32_t summary_ports;  // ports counted in a summary; higher ones in high_ports
  size_t slot_bytes;
  uint32_t max_frame;  // the largest a frame may become
  bool want_l3;
  // External frames (ResidentOptions::external_frames): producer t's frames at region[t] +
  // offset, staged at i x cell.
  bool external;
  uint32_t cell;
  uint8_t* region[kMaxProducers];
};

// Where slot `slot`'s offsets are from in host memory.
__device__ __forceinline__ uint8_t* slot_frames(const DeviceRing& r, uint32_t slot) {
  return r.external ? r.region[slot % r.producers] : r.bytes + size_t{slot} * r.slot_bytes;
}

// Frame i's place in a block's staging buffers: where it lies in the slot, or its cell.
__device__ __forceinline__ uint32_t staging_offset(const DeviceRing& r, uint32_t i, uint32_t host_off) {
  return r.external ? i * r.cell : host_off;
}

// A core that processes a whole batch at once (its frames depend on state that outlives the
// batch, such as IPsec's sequence numbers and replay windows) instead of frame by frame.
// Such a core says so with a member type `WholeBatch` (= gpu::resident::WholeBatch).
template <class Core>
concept WholeBatchCore = requires { typename Core::WholeBatch; };

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
  bool* claimed_once;          // shared memory: the batch is claimed already
  // Every thread calls it before the core first changes state that outlives the batch: the CPU
  // fallback then drops the batch (kGpuFault) instead of processing it again after a failure.
  // The runner calls it again before the write-back; only the first call crosses PCIe.
  __device__ void claim() const {
    if (threadIdx.x == 0 && !*claimed_once) {
      *claimed = gen;
      __threadfence_system();
      *claimed_once = true;
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
  alignas(128) unsigned int exited;         // blocks that have ended
};

// A block ends: once every block has, the last one tells the host, after all the kernel's writes
// to host memory (each block fences its own before counting itself).
__device__ inline void block_exit(const DeviceRing& r, WorkQueue* q) {
  if (threadIdx.x != 0) return;
  __threadfence_system();
  if (atomicAdd(&q->exited, 1u) + 1 == gridDim.x) {
    __threadfence_system();
    *r.exited = 1;
  }
}

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

// Calls f(off, host_off, w) for every 16-byte word w of the `count` frames of a warp (frame f's
// staging offset, host offset and length in lane f's my_off, my_host and my_len): the first 64
// bytes of 8 frames per step with 4 lanes a frame, so that PCIe carries 64-byte pieces; then the
// rest of longer frames, the whole warp a frame. Every lane of the warp calls it.
template <class F>
__device__ __forceinline__ void for_each_word(uint32_t count, uint32_t my_off, uint32_t my_host, uint32_t my_len,
                                              uint32_t lane, F&& f) {
  for (uint32_t f0 = 0; f0 < count; f0 += 8) {
    const uint32_t fr = f0 + lane / 4;
    const uint32_t off = __shfl_sync(0xffffffffu, my_off, fr & 31);
    const uint32_t host = __shfl_sync(0xffffffffu, my_host, fr & 31);
    const uint32_t len = __shfl_sync(0xffffffffu, my_len, fr & 31);
    if (fr < count && lane % 4 < min((len + 15) / 16, 4u)) f(off, host, lane % 4);
  }
  for (uint32_t fr = 0; fr < count; ++fr) {
    const uint32_t off = __shfl_sync(0xffffffffu, my_off, fr);
    const uint32_t host = __shfl_sync(0xffffffffu, my_host, fr);
    const uint32_t len = __shfl_sync(0xffffffffu, my_len, fr);
    for (uint32_t w = 4 + lane; w < (len + 15) / 16; w += 32) f(off, host, w);
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
  __shared__ bool claimed_once;
  uint8_t* const host = slot_frames(r, slot);
  const uint32_t* const offs = r.offsets + size_t{slot} * r.batch;
  const uint32_t* const lens = r.lengths + size_t{slot} * r.batch;
  if (threadIdx.x == 0) {
    n_shared = __ldcv(&r.fill[slot].count);
    claimed_once = false;
  }
  shared_clear(sum, r.summary_ports);
  __syncthreads();
  const uint32_t n = min(n_shared, r.batch);
  for (uint32_t base = (threadIdx.x >> 5) * 32; base < n; base += warps * 32) {
    const uint32_t i = base + lane;
    const uint32_t my_host = i < n ? __ldcv(offs + i) : 0;
    const uint32_t my_off = staging_offset(r, i, my_host);
    const uint32_t my_len = i < n ? __ldcv(lens + i) : 0;
    for_each_word(min(32u, n - base), my_off, my_host, my_len, lane, [&](uint32_t off, uint32_t h, uint32_t w) {
      reinterpret_cast<uint4*>(work + off)[w] = __ldcv(reinterpret_cast<const uint4*>(host + h) + w);
    });
    if (i < n) {
      s_off[i] = my_off;
      s_len[i] = static_cast<uint16_t>(my_len);
    }
  }
  __syncthreads();
  const WholeBatch b{work, s_off, s_len, s_new_len, s_verdict, n, ticket, r.max_frame, &r.status[slot].claimed, gen,
                        &claimed_once};
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
    // External frames' host offsets are read again rather than kept in shared memory, which the
    // core's blocks need for their own state.
    const uint32_t my_host = i < n ? (r.external ? __ldcv(offs + i) : my_off) : 0;
    const uint32_t my_len = i < n ? max(s_len[i], s_new_len[i]) : 0;
    for_each_word(min(32u, n - base), my_off, my_host, my_len, lane, [&](uint32_t off, uint32_t h, uint32_t w) {
      reinterpret_cast<uint4*>(host + h)[w] = reinterpret_cast<const uint4*>(work + off)[w];
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
  uint8_t* const host = slot_frames(r, slot);
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
    const uint32_t my_host = i < n ? (first_round ? first_off : __ldcv(offs + i)) : 0;
    const uint32_t my_off = staging_offset(r, i, my_host);
    const uint32_t my_len = i < n ? (first_round ? first_len : __ldcv(lens + i)) : 0;
    const uint32_t count = min(32u, n - base);
    for_each_word(count, my_off, my_host, my_len, lane, [&](uint32_t off, uint32_t h, uint32_t w) {
      const uint4 v = __ldcv(reinterpret_cast<const uint4*>(host + h) + w);
      reinterpret_cast<uint4*>(orig + off)[w] = v;
      reinterpret_cast<uint4*>(work + off)[w] = v;
    });
    __syncwarp();
    if (i < n) {
      s_off[i] = my_host;  // the staging offset follows from it (staging_offset)
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
    const uint32_t my_host = i < n ? s_off[i] : 0;
    const uint32_t my_off = staging_offset(r, i, my_host);
    const uint32_t my_len = i < n ? s_len[i] : 0;
    const uint32_t count = min(32u, n - base);
    for_each_word(count, my_off, my_host, my_len, lane, [&](uint32_t off, uint32_t h, uint32_t w) {
      const uint4 b = reinterpret_cast<const uint4*>(work + off)[w];
      if (differs(reinterpret_cast<const uint4*>(orig + off)[w], b)) reinterpret_cast<uint4*>(host + h)[w] = b;
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
    __syncwarp();
    block_exit(r, q);
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
    if (e == ~uint64_t{0}) {
      block_exit(r, q);
      return;
    }
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

}  // namespace tandem::gpu
