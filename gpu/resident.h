// The resident GPU path (ARCHITECTURE.md, "The GPU engine and the resident path"): packets stay
// where the receive side put them, the GPU runs the app's whole per-packet logic on them, and the
// CPU touches only batches and ring indices.
//
// A ResidentRing is one region of host memory, registered with CUDA (as DPDK gpudev registers mbuf
// memory), that holds every batch in flight. It has `slots()` batch slots; each producer (a
// receive thread standing in for a NIC queue) owns every producers()-th slot and fills its slots
// round robin: its j-th batch goes to slot_of(t, j), as generation gen_of(j) of that slot. A slot
// holds up to batch() frames in one of two layouts:
//   kCells:  frame i at the start of its own cell_size-byte cell (a packet pool's cells; what a
//            NIC writes into per-packet buffers);
//   kPacked: frames back to back, each on a 16-byte boundary (what a NIC with multi-packet
//            receive queues writes).
// or, with external frames, in memory of the producer's own (its port's buffers: DPDK mbufs
// registered with CUDA as DPDK's gpudev registers them), where the frames arrived;
// with per frame its offset and length (written by the producer), its verdict, its new length for
// apps whose frames change length, and, for verification, its L3 offset (written by the GPU), and
// per batch a BatchSummary: the batch's counters, summed on the GPU so that no CPU thread reads
// every verdict.
//
// Hand-offs, one word each, so that each side reads what it needs with one load:
//   producer: fills the slot, sets count/used, then publishes by storing j + 1 to published(t);
//   GPU:      stores the slot's generation to claimed() before it writes any frame, and to done()
//             after the frames, verdicts and summary are in host memory;
//   producer: reads done() == generation, takes the summary, reuses the slot.
//
// A ResidentRunner is the GPU side of a ring: a persistent kernel that polls the producers'
// indices (kPersistent), or a housekeeping thread that copies each batch to the GPU, runs it and
// copies it back on overlapping streams (kAsync, the DMA variant: frames come back into a slot's
// out_bytes(), so a batch that was on the GPU when it failed is still intact in bytes()).
// Host-only header: no CUDA types.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/counters.h"
#include "core/drop_reason.h"
#include "core/huge_memory.h"
#include "gpu/gpu_factory.h"
#include "gpu/offload.h"

namespace tandem::gpu {

enum class FrameLayout { kCells, kPacked };
const char* frame_layout_name(FrameLayout l);
// "cells" or "packed"; throws std::invalid_argument otherwise.
FrameLayout parse_frame_layout(const std::string& s);

// Ports whose counts a BatchSummary can carry. A ring carries min(ResidentOptions::ports, this)
// (ResidentRing::summary_ports()); a verdict for a higher port is counted in high_ports and its
// port read from the verdicts by the consumer.
inline constexpr uint32_t kSummaryPorts = 256;

struct BatchSummary {
  uint64_t tx_bytes;
  uint32_t tx_packets;
  uint32_t flooded;
  uint32_t high_ports;
  uint32_t pad[3];
  uint32_t drops[kDropReasonCount];
  uint32_t ports[kSummaryPorts];
};

struct ResidentOptions {
  GpuMode mode = GpuMode::kPersistent;  // kPersistent (mapped ring, resident kernel) or kAsync (DMA)
  FrameLayout layout = FrameLayout::kCells;
  uint32_t batch = 1024;       // frames per slot
  uint32_t cell_size = 2048;   // kCells: bytes per cell; both layouts: a slot's bytes are batch x this
  uint32_t producers = 1;
  uint32_t slots_per_producer = 16;
  int blocks = 0;              // kPersistent: worker blocks (0: one per multiprocessor)
  int streams = 4;             // kAsync: batches on the GPU at once
  bool want_l3 = false;        // write each frame's L3 offset (verification)
  // Bytes a frame may grow by (ForwardApp::frame_growth(): ESP encapsulation). When not 0, packed
  // frames get this much room behind them, and each frame's new length goes to out_lengths().
  uint32_t frame_room = 0;
  uint32_t ports = kSummaryPorts;  // the app's ports (what a batch summary counts)
  int gpu = 0;                     // the CUDA device that runs this ring (its tables, kernel and thread)
  // Fault injection (tests, `tandem run --inject-gpu-fault K`): the GPU traps when it reaches the
  // K-th batch (1-based; 0 = never), a real fault that breaks the CUDA context.
  uint64_t fault_at_batch = 0;
  // The frames stay in memory each producer names (set_frame_region) instead of being copied into
  // the slots, which then hold no bytes: a frame's offset is from its producer's region, and the
  // GPU stages frame i at i x cell_size. Persistent mode and the cells layout only.
  bool external_frames = false;
};

class ResidentRing {
 public:
  // Per slot, what the GPU writes; each on its own 128-byte line (host polls, GPU writes).
  struct alignas(128) SlotStatus {
    volatile uint32_t claimed;  // generation whose frames the GPU may be rewriting
    volatile uint32_t done;     // generation that is finished
  };
  // Per slot, what the producer writes before publishing.
  struct alignas(16) SlotFill {
    uint32_t count;  // frames
    uint32_t used;   // bytes of the slot's frame area in use
    uint32_t pad[2];
  };
  struct alignas(128) ProducerIndex {
    volatile uint64_t published;  // batches published so far
  };

  explicit ResidentRing(const ResidentOptions& o);
  ResidentRing(const ResidentRing&) = delete;
  ResidentRing& operator=(const ResidentRing&) = delete;

  const ResidentOptions& options() const { return o_; }
  uint32_t slots() const { return slots_; }
  uint32_t producers() const { return o_.producers; }
  uint32_t batch() const { return o_.batch; }
  uint32_t per_producer() const { return o_.slots_per_producer; }
  uint32_t summary_ports() const { return std::min(o_.ports, kSummaryPorts); }
  size_t slot_bytes() const { return slot_bytes_; }
  // The largest frame a slot takes (as a packet pool cell after its headroom, so that both paths
  // truncate the same frames).
  uint32_t max_frame() const { return o_.cell_size - 128; }

  uint32_t slot_of(uint32_t producer, uint64_t j) const {
    return producer + static_cast<uint32_t>(j % o_.slots_per_producer) * o_.producers;
  }
  uint32_t gen_of(uint64_t j) const { return static_cast<uint32_t>(j / o_.slots_per_producer + 1); }

  uint8_t* bytes(uint32_t s) { return at<uint8_t>(bytes_off_ + s * slot_bytes_); }  // not with external frames
  // Producer t's frames lie in [base, base + size) (external frames; before a runner is made):
  // offsets of its slots' frames are from base. Throws std::invalid_argument past 4 GiB.
  void set_frame_region(uint32_t producer, uint8_t* base, size_t size);
  struct FrameRegion {
    uint8_t* base = nullptr;
    size_t size = 0;
  };
  const FrameRegion& frame_region(uint32_t producer) const { return regions_[producer]; }
  bool external_frames() const { return o_.external_frames; }
  // What slot s's offsets are from: its own bytes, or its producer's region.
  uint8_t* frames(uint32_t s) { return o_.external_frames ? regions_[s % o_.producers].base : bytes(s); }
  uint8_t* out_bytes(uint32_t s) { return at<uint8_t>(out_off_ + s * slot_bytes_); }  // kAsync only
  uint32_t* offsets(uint32_t s) { return at<uint32_t>(offsets_off_) + size_t{s} * o_.batch; }
  uint32_t* lengths(uint32_t s) { return at<uint32_t>(lengths_off_) + size_t{s} * o_.batch; }
  uint32_t* verdicts(uint32_t s) { return at<uint32_t>(verdicts_off_) + size_t{s} * o_.batch; }
  // Frames that change length (frame_room > 0): each frame's length after processing; otherwise
  // the same array as lengths().
  bool lengths_change() const { return o_.frame_room > 0; }
  uint32_t* out_lengths(uint32_t s) { return at<uint32_t>(out_lengths_off_) + size_t{s} * o_.batch; }
  uint16_t* l3(uint32_t s) { return at<uint16_t>(l3_off_) + size_t{s} * o_.batch; }
  BatchSummary* summary(uint32_t s) { return at<BatchSummary>(summary_off_) + s; }
  SlotFill* fill(uint32_t s) { return at<SlotFill>(fill_off_) + s; }
  SlotStatus* status(uint32_t s) { return at<SlotStatus>(status_off_) + s; }
  ProducerIndex* index(uint32_t t) { return at<ProducerIndex>(index_off_) + t; }
  volatile uint32_t* stop_word() { return at<uint32_t>(stop_off_); }
  // Set to 1 by the persistent kernel's last block as it ends, after every write of the kernel
  // to the ring: the proof that nothing on the GPU writes it any more.
  volatile uint32_t* exited_word() { return at<uint32_t>(exited_off_); }

  // Offsets of the arrays in the region, for the device's view of it.
  struct Layout {
    size_t bytes, out, offsets, lengths, out_lengths, verdicts, l3, summary, fill, status, index, stop, exited;
  };
  Layout layout() const {
    return {bytes_off_, out_off_, offsets_off_, lengths_off_, out_lengths_off_, verdicts_off_, l3_off_, summary_off_,
            fill_off_, status_off_, index_off_, stop_off_, exited_off_};
  }
  void* region() const { return mem_.data(); }
  size_t region_bytes() const { return mem_.size(); }

 private:
  template <class T>
  T* at(size_t off) const {
    return reinterpret_cast<T*>(static_cast<uint8_t*>(mem_.data()) + off);
  }
  ResidentOptions o_;
  uint32_t slots_ = 0;
  size_t slot_bytes_ = 0;
  size_t bytes_off_ = 0, out_off_ = 0, offsets_off_ = 0, lengths_off_ = 0, out_lengths_off_ = 0, verdicts_off_ = 0;
  size_t l3_off_ = 0;
  size_t summary_off_ = 0, fill_off_ = 0, status_off_ = 0, index_off_ = 0, stop_off_ = 0, exited_off_ = 0;
  std::vector<FrameRegion> regions_;  // per producer, with external frames
  HugeRegion mem_;
};

// The GPU side of a ring. Made once per run, started, and stopped after every published batch is
// done. Its housekeeping thread watches the GPU; on a failure it makes sure nothing on the GPU can
// write the ring any more, then sets failed(): the producers finish what is left on the CPU.
class ResidentRunner {
 public:
  virtual ~ResidentRunner() = default;
  virtual void start() = 0;
  // Every published batch is done (or the runner failed): stop the kernel and the thread.
  virtual void stop() = 0;
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  const std::string& error() const { return error_; }  // valid once failed()
  // Batches the GPU finished.
  virtual uint64_t batches() const = 0;
  virtual std::string describe() const = 0;

  // Per-key state that changes per packet (ForwardApp::state_keys: IPsec's sequence numbers and
  // replay windows), for a runner that keeps its own copy of it apart from the app's table (a GPU
  // keeps it in device memory). release_state writes the keys' state back to the app's table and
  // stops using it; adopt_state takes the keys' state from the table, or returns false when it
  // cannot (a GPU whose context broke, before it counts as failed): frames using those keys must
  // not be given to it until it has failed, after which its batches are finished on the CPU from
  // the table. The scheduler calls them only for keys with no frame in flight on this runner, from
  // any thread. A runner that works on the app's table itself (a CPU group) has nothing to do.
  virtual void release_state(const uint32_t* keys, size_t n) {
    (void)keys;
    (void)n;
  }
  virtual bool adopt_state(const uint32_t* keys, size_t n) {
    (void)keys;
    (void)n;
    return true;
  }

 protected:
  void set_failed(const std::string& why) {
    error_ = why;
    failed_.store(true, std::memory_order_release);
  }

 private:
  std::atomic<bool> failed_{false};
  std::string error_;
};

// The host's side of a BatchSummary: counting one verdict (the CPU fallback), and adding a
// finished batch to a worker's counters (ports past kSummaryPorts read from the verdicts).
void summary_clear(BatchSummary& s);
void summary_add(BatchSummary& s, uint32_t verdict, uint32_t len, uint32_t summary_ports);
void summary_to_counters(const BatchSummary& s, const uint32_t* verdicts, uint32_t n, uint32_t summary_ports,
                         Counters& c);

template <class Core>
using ResidentRunnerFactory =
    GpuFactory<std::unique_ptr<ResidentRunner>(const Core&, ResidentRing&, const ResidentOptions&)>;

// A runner for `ring` over a device copy of `core`'s tables. Throws GpuError without a usable GPU.
template <class Core>
std::unique_ptr<ResidentRunner> make_resident_runner(const Core& core, ResidentRing& ring, const ResidentOptions& o) {
  require_available();
  return ResidentRunnerFactory<Core>::create(core, ring, o);
}

}  // namespace tandem::gpu
