// The IPv6 router's per-packet logic, written once for the CPU paths (ipv6_app.cc) and the GPU
// (apps/frame_core.h): parse and validate, drop what a router must not forward (ipv6_app.h), look
// the destination up in the Lpm6 arrays, decrement the hop limit.
#pragma once

#include <cstring>

#include "apps/ipv6/lpm6_core.h"
#include "core/batch.h"
#include "core/flow_hash.h"
#include "core/parse_impl.h"

namespace tandem::ipv6 {

TANDEM_HD_INLINE bool unspecified_or_loopback(const uint8_t* a) {
  for (int i = 0; i < 15; ++i) {
    if (a[i]) return false;
  }
  return a[15] <= 1;
}
TANDEM_HD_INLINE bool multicast(const uint8_t* a) { return a[0] == 0xFF; }
TANDEM_HD_INLINE bool link_local(const uint8_t* a) { return a[0] == 0xFE && (a[1] & 0xC0) == 0x80; }

// Frame-level checks: kNone when the frame goes on to the lookup, with its parse in *pp.
TANDEM_HD_INLINE DropReason ipv6_classify_frame(const uint8_t* frame, uint32_t len, ParsedPacket* pp) {
  const DropReason r = parse_frame(frame, len, pp);
  if (r != DropReason::kNone) return r;
  if (pp->ip_version != 6) return DropReason::kNotHandled;
  const uint8_t* ip = frame + pp->l3_off;
  const uint8_t* src = ip + 8;
  const uint8_t* dst = ip + 24;
  if (multicast(dst)) return DropReason::kNotHandled;
  if (unspecified_or_loopback(src) || unspecified_or_loopback(dst) || multicast(src) || link_local(src) ||
      link_local(dst)) {
    return DropReason::kMartian;
  }
  if (pp->ttl <= 1) return DropReason::kTtlExceeded;
  return DropReason::kNone;
}

// classify() of the frame core: the destination's 16 bytes into dst.
TANDEM_HD_INLINE DropReason ipv6_classify(const uint8_t* frame, uint32_t len, uint8_t* dst, uint16_t* l3_off,
                                          uint32_t* flow) {
  ParsedPacket pp;
  const DropReason r = ipv6_classify_frame(frame, len, &pp);
  if (r == DropReason::kNone) {
    memcpy(dst, frame + pp.l3_off + 24, 16);
    *l3_off = pp.l3_off;
    if (flow) *flow = flow_hash(pp.tuple);
  }
  return r;
}

// A lookup's result applied to a classified frame: no route drops it; otherwise the hop limit
// (> 1, checked by classify) is decremented and the next hop's port returned. IPv6 has no header
// checksum to patch.
TANDEM_HD_INLINE uint32_t ipv6_apply_route(uint8_t* frame, uint16_t l3_off, uint32_t next_hop) {
  if (next_hop == kNoRoute) return Verdict::drop(DropReason::kNoRoute);
  --frame[l3_off + 7];
  return Verdict::port(next_hop);
}

// The frame core (apps/frame_core.h) over an Lpm6 table's arrays.
struct Ipv6FrameCore {
  struct Key {
    uint8_t bytes[16];  // destination, network order
  };
  using Result = uint32_t;

  const uint32_t* tbl24;
  uint64_t tbl24_entries;
  const uint32_t* tbl8;
  uint64_t tbl8_entries;  // the groups in use so far (high water), 256 entries each

  TANDEM_HD_INLINE DropReason classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off,
                                       uint32_t* flow) const {
    return ipv6_classify(frame, len, key->bytes, l3_off, flow);
  }
  TANDEM_HD_INLINE Result lookup(const Key& k) const { return lpm6_lookup(tbl24, tbl8, k.bytes); }
  TANDEM_HD_INLINE uint32_t apply(uint8_t* frame, uint32_t, uint16_t l3_off, Result next_hop) const {
    return ipv6_apply_route(frame, l3_off, next_hop);
  }
  template <class F>
  void for_each_array(F&& f) {
    f(tbl24, tbl24_entries);
    f(tbl8, tbl8_entries);
  }
};

}  // namespace tandem::ipv6
