#include "gpu/frame_runner.h"

#include <cstring>

namespace tandem::gpu {

bool FramePacker::add(const uint8_t* frame, uint32_t len) {
  const FrameOptions& o = r_.options();
  if (n_ >= o.max_frames) return false;
  const size_t start = (used_ + kFrameAlign - 1) / kFrameAlign * kFrameAlign;
  const size_t end = start + len + o.tail_room;
  if (end > o.max_bytes) return false;
  std::memcpy(r_.bytes(slot_) + start, frame, len);
  r_.offsets(slot_)[n_] = static_cast<uint32_t>(start);
  r_.lengths(slot_)[n_] = len;
  ++n_;
  used_ = end;
  return true;
}

}  // namespace tandem::gpu
