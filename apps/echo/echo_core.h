// Echo's per-packet logic, written once for the CPU paths and the GPU (apps/frame_core.h): the
// value is the first 32-bit word (big-endian) after the transport header, its port the value mod 4.
#pragma once

#include "core/batch.h"
#include "core/byte_order.h"
#include "core/drop_reason.h"
#include "core/flow_hash.h"
#include "core/parse_impl.h"

namespace tandem::echo {

inline constexpr uint32_t kPorts = 4;

// Echo's own drop reason: no 4-byte value after the transport header.
inline constexpr DropReason kNoPayload = app_drop_reason(0);

TANDEM_HD_INLINE uint32_t echo_port(uint32_t x) { return x % kPorts; }

// The echo value of a frame; kNone with *x set, or why there is none.
TANDEM_HD_INLINE DropReason echo_value(const uint8_t* frame, uint32_t len, ParsedPacket* pp, uint32_t* x) {
  const DropReason r = parse_frame(frame, len, pp);
  if (r != DropReason::kNone) return r;
  uint32_t off = 0, n = 0;
  if (!transport_payload(frame, *pp, &off, &n)) return DropReason::kBadL4;
  if (n < 4) return kNoPayload;
  *x = load_be32(frame + off);
  return DropReason::kNone;
}

// The frame core (apps/frame_core.h): no table.
struct EchoCore {
  using Key = uint32_t;
  using Result = uint32_t;
  TANDEM_HD_INLINE DropReason classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off,
                                       uint32_t* flow) const {
    ParsedPacket pp;
    const DropReason r = echo_value(frame, len, &pp, key);
    if (r == DropReason::kNone) {
      *l3_off = pp.l3_off;
      if (flow) *flow = flow_hash(pp.tuple);
    }
    return r;
  }
  TANDEM_HD_INLINE Result lookup(Key x) const { return echo_port(x); }
  TANDEM_HD_INLINE uint32_t apply(uint8_t*, uint32_t, uint16_t, Result port) const { return Verdict::port(port); }
  template <class F>
  void for_each_array(F&&) {}
};

}  // namespace tandem::echo
