// The peak-rate source: frames already sit in memory, so the cost per packet is one cell index
// from the pool's free stack and one copy. Cells are taken in bulk up front and the copy loop
// carries no virtual calls, allocations or per-packet loop-count checks.
#include <algorithm>
#include <cstring>
#include <string>

#include "io/packet_source.h"

namespace tandem {
namespace {

constexpr uint32_t kCopyLine = 64;

// Copies a frame of `len` bytes as whole 64-byte lines when both sides have room for the last
// line (`src_room`, `dst_room`: bytes readable and writable from the frame's start): fixed-size
// copies the compiler inlines as vector moves, where a call to memcpy with a variable length
// costs more than the copy of a small frame. The bytes past `len` are the store's and land in the
// cell's unused part.
inline void copy_frame(uint8_t* dst, const uint8_t* src, uint32_t len, uint64_t src_room, uint32_t dst_room) {
  const uint32_t lines = (len + kCopyLine - 1) / kCopyLine;  // 0 for an empty frame: lines - 1 wraps
  const uint64_t whole = uint64_t{lines} * kCopyLine;
  if (TANDEM_LIKELY(lines - 1 < 2 && whole <= src_room && whole <= dst_room)) {
    std::memcpy(dst, src, kCopyLine);
    if (lines == 2) std::memcpy(dst + kCopyLine, src + kCopyLine, kCopyLine);
    return;
  }
  std::memcpy(dst, src, len);
}

}  // namespace

uint32_t ReplaySource::rx_burst(PacketPool& pool, PacketBatch& batch) {
  const size_t n_store = frames_per_loop();
  if (TANDEM_UNLIKELY(n_store == 0 || batch.size >= PacketBatch::kCapacity)) return 0;
  uint64_t want = std::min<uint64_t>(PacketBatch::kCapacity - batch.size, burst_);
  if (loops_ != 0) {
    if (loop_ >= loops_) return 0;
    // Frames left over all remaining loops. When more loops remain than a batch holds packets,
    // at least `want` frames are left (n_store >= 1), and the product could overflow: skip it.
    const uint64_t loops_left = loops_ - loop_;
    if (loops_left <= want) want = std::min<uint64_t>(want, loops_left * n_store - next_);
  }

  const uint32_t first = batch.size;
  const uint32_t got = pool.alloc_bulk(&batch.cell[first], static_cast<uint32_t>(want));
  // batch.len is 16 bits wide; cells larger than 64 KiB would otherwise wrap it.
  const uint32_t max_len = std::min<uint32_t>(pool.max_frame(), 0xFFFFu);

  const uint8_t* const base = store_.bytes.data();
  const uint64_t store_bytes = store_.bytes.size();
  const uint64_t* const offset = store_.offset.data();
  const uint32_t* const caplen = store_.caplen.data();
  const uint32_t* const wire_len = store_.wire_len.data();
  const uint64_t* const ts_ns = store_.ts_ns.data();
  const uint32_t* const order = order_ ? order_->data() : nullptr;
  size_t next = next_;
  uint64_t wraps = 0;
  for (uint32_t i = first; i < first + got; ++i) {
    if (order) {
      if (next + PacketStore::kPrefetchMeta < n_store) store_.prefetch_meta(order[next + PacketStore::kPrefetchMeta]);
      if (next + PacketStore::kPrefetchBytes < n_store) store_.prefetch_bytes(order[next + PacketStore::kPrefetchBytes]);
    }
    const size_t f = order ? order[next] : next;
    const uint32_t len = std::min(caplen[f], max_len);
    copy_frame(pool.data(batch.cell[i]), base + offset[f], len, store_bytes - offset[f], max_len);
    batch.len[i] = static_cast<uint16_t>(len);
    batch.wire_len[i] = wire_len[f];
    batch.ts_ns[i] = ts_ns[f];
    batch.verdict[i] = Verdict::kUnset;
    if (TANDEM_UNLIKELY(++next == n_store)) {
      next = 0;
      ++wraps;
    }
  }
  next_ = next;
  loop_ += wraps;
  batch.size = first + got;
  served_ += got;
  return got;
}

std::string ReplaySource::describe() const {
  std::string s = "replay of " + std::to_string(frames_per_loop()) + " frames" +
                  (order_ ? " (one queue's share of " + std::to_string(store_.size()) + ")"
                          : " (" + std::to_string(store_.total_caplen()) + " bytes)") + ", ";
  s += loops_ == 0 ? std::string("looping forever") : std::to_string(loops_) + " loop(s)";
  return s;
}

}  // namespace tandem
