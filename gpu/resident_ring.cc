#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/batch.h"
#include "gpu/resident.h"

namespace tandem::gpu {

const char* frame_layout_name(FrameLayout l) { return l == FrameLayout::kCells ? "cells" : "packed"; }

FrameLayout parse_frame_layout(const std::string& s) {
  if (s == "cells") return FrameLayout::kCells;
  if (s == "packed") return FrameLayout::kPacked;
  throw std::invalid_argument("frame layout '" + s + "': expected cells or packed");
}

namespace {
size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }
}  // namespace

ResidentRing::ResidentRing(const ResidentOptions& o) : o_(o) {
  if (o_.ports == 0) o_.ports = 1;
  if (o_.producers == 0 || o_.slots_per_producer == 0) throw std::invalid_argument("resident ring: no slots");
  if (o_.batch == 0 || o_.batch > (1u << 20)) throw std::invalid_argument("resident ring: a batch holds 1..1,048,576 frames");
  if (o_.cell_size < 256 || o_.cell_size % 64 != 0 || o_.cell_size > (1u << 16) + 128) {
    throw std::invalid_argument("resident ring: the cell size must be a multiple of 64 from 256 to 65,664 bytes");
  }
  if (o_.frame_room > o_.cell_size / 2) throw std::invalid_argument("resident ring: frame room over half a cell");
  if (o_.external_frames && (o_.mode != GpuMode::kPersistent || o_.layout != FrameLayout::kCells)) {
    throw std::invalid_argument("resident ring: external frames need the persistent mode and the cells layout");
  }
  const uint64_t slots = uint64_t{o_.producers} * o_.slots_per_producer;
  if (slots > 65536) throw std::invalid_argument("resident ring: at most 65,536 slots");
  slots_ = static_cast<uint32_t>(slots);
  slot_bytes_ = size_t{o_.batch} * o_.cell_size;
  const bool out = o_.mode == GpuMode::kAsync;
  size_t off = 0;
  const auto take = [&](size_t bytes, size_t align) {
    off = align_up(off, align);
    const size_t at = off;
    off += bytes;
    return at;
  };
  const size_t per_frames = size_t{slots_} * o_.batch;
  index_off_ = take(sizeof(ProducerIndex) * o_.producers, 128);
  stop_off_ = take(128, 128);
  exited_off_ = take(128, 128);
  status_off_ = take(sizeof(SlotStatus) * slots_, 128);
  fill_off_ = take(sizeof(SlotFill) * slots_, 128);
  summary_off_ = take(sizeof(BatchSummary) * slots_, 128);
  offsets_off_ = take(per_frames * 4, 128);
  lengths_off_ = take(per_frames * 4, 128);
  out_lengths_off_ = o_.frame_room ? take(per_frames * 4, 128) : lengths_off_;
  verdicts_off_ = take(per_frames * 4, 128);
  l3_off_ = take(per_frames * 2, 128);
  bytes_off_ = take(o_.external_frames ? 0 : slot_bytes_ * slots_, 4096);
  if (o_.external_frames) regions_.resize(o_.producers);
  out_off_ = out ? take(slot_bytes_ * slots_, 4096) : bytes_off_;
  mem_ = HugeRegion(off);
}

void ResidentRing::set_frame_region(uint32_t producer, uint8_t* base, size_t size) {
  if (!o_.external_frames || producer >= o_.producers) throw std::invalid_argument("resident ring: no such frame region");
  if (size > UINT32_MAX) throw std::invalid_argument("resident ring: a frame region over 4 GiB (offsets are 32-bit)");
  regions_[producer] = FrameRegion{base, size};
}

void summary_clear(BatchSummary& s) { std::memset(&s, 0, sizeof s); }

void summary_add(BatchSummary& s, uint32_t v, uint32_t len, uint32_t summary_ports) {
  if (Verdict::is_drop(v)) {
    ++s.drops[static_cast<int>(Verdict::reason(v))];
    return;
  }
  ++s.tx_packets;
  s.tx_bytes += len;
  const uint32_t port = Verdict::port(v);
  if (port == Verdict::kFloodPort) {
    ++s.flooded;
  } else if (port < summary_ports) {
    ++s.ports[port];
  } else {
    ++s.high_ports;
  }
}

void summary_to_counters(const BatchSummary& s, const uint32_t* verdicts, uint32_t n, uint32_t summary_ports,
                         Counters& c) {
  c.tx_packets += s.tx_packets;
  c.tx_bytes += s.tx_bytes;
  c.tx_flooded += s.flooded;
  for (int r = 0; r < kDropReasonCount; ++r) c.drops[r] += s.drops[r];
  const size_t ports = std::min<size_t>(c.tx_per_port.size(), summary_ports);
  for (size_t p = 0; p < ports; ++p) c.tx_per_port[p] += s.ports[p];
  if (s.high_ports == 0) return;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t v = verdicts[i];
    if (Verdict::is_drop(v)) continue;
    const uint32_t port = Verdict::port(v);
    if (port != Verdict::kFloodPort && port >= summary_ports && port < c.tx_per_port.size()) ++c.tx_per_port[port];
  }
}

}  // namespace tandem::gpu
