// The L2 switch's per-packet logic, written once for the CPU paths (l2_app.cc) and the GPU
// (apps/frame_core.h): the destination MAC of an Ethernet frame, its port in the cuckoo table,
// flooding for group and unknown destinations. Frames are never rewritten.
#pragma once

#include "apps/l2/cuckoo_core.h"
#include "core/batch.h"
#include "core/byte_order.h"
#include "core/drop_reason.h"
#include "core/flow_hash.h"

namespace tandem::l2 {

// classify() of the frame core: only a frame shorter than an Ethernet header is dropped. The flow
// is the (destination, source) pair.
TANDEM_HD_INLINE DropReason l2_classify(const uint8_t* frame, uint32_t len, uint64_t* dst_mac, uint16_t* l3_off,
                                        uint32_t* flow) {
  if (len < 14) return DropReason::kTruncated;
  *dst_mac = load_be48(frame);
  *l3_off = 14;
  if (flow) *flow = static_cast<uint32_t>(mix64(*dst_mac ^ (load_be48(frame + 6) << 1)));
  return DropReason::kNone;
}

// The verdict of a forwarding decision (a port, or kFlood).
TANDEM_HD_INLINE uint32_t l2_verdict(uint32_t port) { return Verdict::port(port == kFlood ? Verdict::kFloodPort : port); }

// The frame core (apps/frame_core.h) over a MacTable's slots.
struct L2FrameCore {
  using Key = uint64_t;  // destination MAC, first octet most significant
  using Result = uint32_t;

  const uint64_t* slots;
  uint64_t slot_count;  // buckets * 8
  uint64_t mask;        // buckets - 1

  TANDEM_HD_INLINE DropReason classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off,
                                       uint32_t* flow) const {
    return l2_classify(frame, len, key, l3_off, flow);
  }
  // Group addresses are never learned: flooded without a lookup.
  TANDEM_HD_INLINE Result lookup(Key mac) const {
    return mac_is_group(mac) ? kFlood : mac_forward_decision(mac, mac_lookup(slots, mask, mac));
  }
  TANDEM_HD_INLINE uint32_t apply(uint8_t*, uint32_t, uint16_t, Result port) const { return l2_verdict(port); }
  template <class F>
  void for_each_array(F&& f) {
    f(slots, slot_count);
  }
};

}  // namespace tandem::l2
