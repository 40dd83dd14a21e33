// The receive and transmit ends of the data path, as seen by a worker.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/batch.h"
#include "core/counters.h"
#include "core/packet_pool.h"
#include "io/packet_store.h"

namespace tandem {

// Live sources: the wire length given to a frame that did not fit its cell (a GRO or TSO aggregate
// longer than the MTU the cells are sized for): over the data path's 65,535 bytes, so that the
// workers drop it as oversize rather than forward its first bytes as if they were the frame.
constexpr uint32_t kOversizeMark = 0x10000;
// Live sinks: how long a send may wait for room (a full device queue or ring) before the frames
// left count as refused (DropReason::kTxError): a link without carrier keeps its queue full.
constexpr uint64_t kTxStallNs = 1000000000;

class PacketSource {
 public:
  virtual ~PacketSource() = default;
  // Appends up to PacketBatch::kCapacity - batch.size packets to `batch`, copying each frame into
  // a fresh cell of `pool` (as a NIC's DMA would) and filling cell, len, wire_len and ts_ns;
  // verdict is set to Verdict::kUnset. Frames longer than pool.max_frame() are truncated to it
  // and keep their wire_len. Returns the number appended; 0 means the source is exhausted
  // (or the pool is dry: callers check pool.available()). Errors throw tandem::IoError.
  //
  // A live source (a network port) returns 0 when nothing has arrived yet; it never runs dry, and
  // the caller decides when to stop.
  virtual uint32_t rx_burst(PacketPool& pool, PacketBatch& batch) = 0;
  virtual std::string describe() const = 0;
  virtual bool live() const { return false; }
  // Live sources: blocks until packets may have arrived, or `timeout_ms` has passed.
  virtual void wait_for_packets(int /*timeout_ms*/) {}
  // At most this many frames per rx_burst (a NIC's receive burst; 1..PacketBatch::kCapacity).
  void set_burst(uint32_t burst) { burst_ = burst; }
  // A source whose driver receives into buffers of its own (DPDK mbufs) offers them as the
  // worker's pool: rx_burst then hands over the cells the frames arrived in, copying nothing, and
  // must be given this pool. nullptr: the source copies into any pool it is given.
  virtual PacketPool* own_cells() { return nullptr; }
  // Of own_cells, how many a caller may hold at once beyond a burst it is processing (frames kept
  // in flight on a GPU where they arrived); the rest keep the driver's rings filled. 0: none. A
  // source that offers some keeps its cells in one range without gaps (PacketPool::region), which
  // the holder may register for a device.
  virtual uint32_t own_cells_to_hold() const { return 0; }

 protected:
  uint32_t burst_ = PacketBatch::kCapacity;
};

class PacketSink {
 public:
  virtual ~PacketSink() = default;
  // Writes the frames of `batch` whose verdict is a port (drops are not written). A frame the sink
  // could not send moves in `c` from forwarded to dropped (Counters::tx_failed), so that every
  // packet stays accounted for.
  virtual void tx_burst(const PacketPool& pool, const PacketBatch& batch, Counters& c) = 0;
  virtual void flush() {}
  // Whether tx_burst takes the cells of `pool` it sends (a driver that transmits the buffer the
  // frame arrived in): it then owns every cell of the batch whose verdict is a port, sent or
  // refused, and the caller frees only the others.
  virtual bool takes_cells(const PacketPool& /*pool*/) const { return false; }
};

// Serves the frames of a PacketStore in order, `loops` times over (loops = 0: forever). With
// `order`, only the frames it lists, in its order (one receive queue's share: see io/rss.h).
class ReplaySource final : public PacketSource {
 public:
  ReplaySource(const PacketStore& store, uint64_t loops, const std::vector<uint32_t>* order = nullptr)
      : store_(store), loops_(loops), order_(order) {}
  ReplaySource(PacketStore&&, uint64_t, const std::vector<uint32_t>* = nullptr) = delete;  // the store must outlive the source
  // Frames one loop serves.
  size_t frames_per_loop() const { return order_ ? order_->size() : store_.size(); }
  uint32_t rx_burst(PacketPool& pool, PacketBatch& batch) override;
  std::string describe() const override;
  uint64_t served() const { return served_; }

 private:
  const PacketStore& store_;
  uint64_t loops_;
  const std::vector<uint32_t>* order_;
  uint64_t loop_ = 0;
  size_t next_ = 0;
  uint64_t served_ = 0;
};

}  // namespace tandem
