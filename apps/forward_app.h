// The one interface through which the workers, the GPU engine and the CLI see a forwarding app
// (ARCHITECTURE.md, "An app"): a burst of packets in, a verdict per packet out, on any of three
// paths that must give the same verdicts:
//
//   scalar:  one packet at a time through parse, lookup and apply (the plain CPU baseline);
//   batched: classify the whole burst into a dense key array (prefetching each key's first table
//            line as soon as it is known), look the keys up with the app's latency-hiding batch
//            code, then apply;
//   GPU:     classify into fixed-size items that the offload engine ships, the app's kernel looks
//            them up, and the results (of the size the app declares) come back to apply() on the
//            worker that owns the packets.
//
// Apps are built from a small traits class through apps/forward_app_impl.h, so the per-packet
// counting, key packing and verification are written once for all of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>

#include "core/batch.h"
#include "core/counters.h"
#include "core/stage_times.h"
#include "core/packet_pool.h"
#include "gpu/frame_runner.h"
#include "gpu/offload.h"
#include "gpu/resident.h"

namespace tandem {

class TableControl;

// The data blocks of a burst on the GPU path (as NBA's datablocks): per packet, a fixed-size item
// the device reads (a key, a 5-tuple) and a fixed-size result it writes back (a next hop, a
// verdict and a rewrite, a digest), as the app declares them (item_bytes(), result_bytes()). Both
// arrays are packed and 64-byte aligned (what is copied into a runner slot); `position` is the
// packet each item came from.
class KeyBatch {
 public:
  KeyBatch() = default;
  explicit KeyBatch(size_t item_bytes, size_t result_bytes = sizeof(uint32_t)) { reset(item_bytes, result_bytes); }
  void reset(size_t item_bytes, size_t result_bytes = sizeof(uint32_t)) {
    item_bytes_ = item_bytes;
    result_bytes_ = result_bytes;
    data_.reset(aligned_bytes(item_bytes));
    results_.reset(aligned_bytes(result_bytes));
    count = 0;
  }
  size_t item_bytes() const { return item_bytes_; }
  size_t result_bytes() const { return result_bytes_; }
  void* item(uint32_t k) { return data_.get() + size_t{k} * item_bytes_; }
  const void* data() const { return data_.get(); }
  size_t bytes() const { return size_t{count} * item_bytes_; }
  // Where the results of this burst's items go when they are not read in place from the engine.
  void* results() { return results_.get(); }
  const void* results() const { return results_.get(); }

  uint32_t count = 0;
  uint16_t position[PacketBatch::kCapacity];

 private:
  struct Free {
    void operator()(uint8_t* p) const { ::operator delete(p, std::align_val_t{64}); }
  };
  static uint8_t* aligned_bytes(size_t per_item) {
    const size_t bytes = (per_item * PacketBatch::kCapacity + 63) / 64 * 64;
    return static_cast<uint8_t*>(::operator new(bytes, std::align_val_t{64}));
  }
  size_t item_bytes_ = 0;
  size_t result_bytes_ = 0;
  std::unique_ptr<uint8_t, Free> data_;
  std::unique_ptr<uint8_t, Free> results_;
};

class ForwardApp {
 public:
  virtual ~ForwardApp() = default;
  virtual const char* name() const = 0;
  // The name of a drop reason, the app's own (core/drop_reason.h app_drop_reason) included.
  virtual const char* drop_reason_name(DropReason r) const = 0;
  // Ports the app forwards to are 0..ports()-1 (per-port counters); floods are counted apart.
  virtual size_t ports() const = 0;
  // The data blocks: what one GPU item holds (the engine's in_item_bytes) and what one result
  // holds (its out_item_bytes).
  virtual size_t item_bytes() const = 0;
  virtual size_t result_bytes() const = 0;

  // The CPU paths: every packet of the burst gets its verdict and is counted in `c`.
  virtual void forward_scalar(PacketPool& pool, PacketBatch& b, Counters& c) const = 0;
  virtual void forward_batched(PacketPool& pool, PacketBatch& b, Counters& c) const = 0;
  // forward_batched with its stages timed into `st` (core/stage_times.h): parse, lookup, apply and
  // counters where the app is built from those pieces, else the whole of it as one stage (kApp).
  virtual void forward_batched_staged(PacketPool& pool, PacketBatch& b, Counters& c, StageTimes& st) const {
    const uint64_t t = stage_ticks();
    forward_batched(pool, b, c);
    st.lap(Stage::kApp, t);
  }

  // The GPU path, split around the engine. classify() counts every packet as received, drops the
  // ones that never reach the lookup (with their reason) and writes an item for each other one;
  // apply() turns result k (result_bytes() each), the lookup of keys.item(k), into its packet's
  // verdict.
  virtual void classify(PacketPool& pool, PacketBatch& b, KeyBatch& keys, Counters& c) const = 0;
  virtual void apply(PacketPool& pool, PacketBatch& b, const KeyBatch& keys, const void* results,
                     Counters& c) const = 0;
  // The engine's CPU fallback: n items in, n results out, as the GPU kernel computes them, with the
  // app's batched (latency-hiding) lookup.
  virtual void lookup_items(const void* items, void* results, size_t n) const = 0;
  // The same results one item at a time (the scalar lookup): for benchmarks and tests.
  virtual void lookup_items_scalar(const void* items, void* results, size_t n) const = 0;
  // The item of one frame, as classify() makes it; false when the app drops the frame before its
  // lookup. For benchmarks that look up the keys of real traffic without the packet path.
  virtual bool item_of_frame(const uint8_t* frame, uint32_t len, void* item) const = 0;
  // A runner whose per-item operation is the app's lookup, on a device copy of its table. Throws
  // gpu::GpuError without a usable GPU. The runner is valid while the app lives.
  virtual std::unique_ptr<gpu::OffloadRunner> make_gpu_runner(const gpu::OffloadOptions& opts) = 0;

  // The whole per-packet logic on one frame, written once for the host and the GPU
  // (apps/frame_core.h): rewrites the frame as the CPU paths do and returns its verdict, counting
  // nothing. What a GPU given whole frames computes; for tests, the checks of that path and the
  // resident path's CPU fallback. With `l3_off` (may be null), the L3 offset verification needs.
  virtual uint32_t forward_frame(uint8_t* frame, uint32_t len, uint16_t* l3_off) const = 0;
  uint32_t forward_frame(uint8_t* frame, uint32_t len) const { return forward_frame(frame, len, nullptr); }
  // The most bytes the app adds to a frame (0: frames keep their length; the ipsec app's ESP
  // encapsulation adds some).
  virtual uint32_t frame_growth() const { return 0; }
  // Per-key state that changes per packet and is shared by the frames of many flows (IPsec: an
  // SA's outbound sequence numbers and inbound replay window), so that the scheduler keeps each
  // key's frames on one receive queue and one device at a time and hands the state over when it
  // moves them (sched/hetero.h). state_keys() is how many keys there are (0: no such state);
  // state_key() the key a frame uses, or kNoStateKey for a frame that uses none.
  static constexpr uint32_t kNoStateKey = 0xFFFFFFFFu;
  virtual uint32_t state_keys() const { return 0; }
  virtual uint32_t state_key(const uint8_t* frame, uint32_t len) const {
    (void)frame;
    (void)len;
    return kNoStateKey;
  }
  // forward_frame for a frame with room for `cap` bytes whose length may change (*len in and out):
  // the resident path's CPU fallback.
  virtual uint32_t forward_frame_resizable(uint8_t* frame, uint32_t* len, uint32_t cap, uint16_t* l3_off) const {
    (void)cap;
    return forward_frame(frame, *len, l3_off);
  }
  // A whole-frame runner (gpu/frame_runner.h) over a device copy of the app's tables as they are
  // now. Throws gpu::GpuError without a usable GPU, or for a table with no GPU path.
  virtual std::unique_ptr<gpu::FrameRunner> make_frame_runner(const gpu::FrameOptions& opts) const = 0;
  // The resident path's GPU side (gpu/resident.h) for `ring`, over a device copy of the app's
  // tables as they are now. Throws gpu::GpuError without a usable GPU, or for a table with no GPU
  // path.
  virtual std::unique_ptr<gpu::ResidentRunner> make_resident_runner(gpu::ResidentRing& ring,
                                                                    const gpu::ResidentOptions& opts) const = 0;

  // Verification (--verify): builds the app's reference (a trie, a map, ...) from its table.
  virtual void build_reference() = 0;
  // For a packet whose verdict is final: false when the packet never reached the lookup (dropped
  // before it); else true, with the verdict the reference gives in *want.
  virtual bool reference_verdict(const uint8_t* frame, uint32_t len, uint16_t l3_off, uint32_t verdict,
                                 uint32_t* want) const = 0;

  // Live updates of the app's table while it forwards on the CPU (apps/table_control.h); nullptr
  // for an app or table that takes none. The first call may build what updates need (a second
  // copy of the table).
  virtual TableControl* table_control() { return nullptr; }
};

}  // namespace tandem
