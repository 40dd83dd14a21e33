// The IPv4 router's per-packet logic, written once for the CPU paths (ipv4_app.cc) and the GPU
// (apps/frame_core.h), so that both drop the same frames for the same reasons and write the same
// bytes. Counting stays with the callers: device code has no counters to bump.
#pragma once

#include "apps/ipv4/dir24_8_core.h"
#include "core/batch.h"
#include "core/byte_order.h"
#include "core/checksum.h"
#include "core/flow_hash.h"
#include "core/parse_impl.h"

namespace tandem::ipv4 {

// True for addresses a router must not forward as destination (RFC 1812 5.3.7 / 5.3.5):
// 0.0.0.0/8, 127.0.0.0/8, multicast 224.0.0.0/4, class E 240.0.0.0/4 and broadcast.
TANDEM_HD constexpr bool martian_destination(uint32_t a) {
  const uint32_t top = a >> 24;
  return top == 0 || top == 127 || top >= 224;
}
// True for source addresses a router must not forward from (RFC 1812 5.3.7): 0.0.0.0/8,
// 127.0.0.0/8, multicast and class E.
TANDEM_HD constexpr bool martian_source(uint32_t a) {
  const uint32_t top = a >> 24;
  return top == 0 || top == 127 || top >= 224;
}

// Parses and validates a frame of `len` bytes (core/parse.h) and applies the router's own rules:
// a valid packet that is not IPv4 is kNotHandled, a martian source or destination kMartian, a
// TTL <= 1 kTtlExceeded. Returns kNone when the frame goes on to the lookup, with its destination
// (host order) in *dst; *pp holds the parse (its l3_off locates the header to rewrite).
TANDEM_HD_INLINE DropReason ipv4_classify_frame(const uint8_t* frame, uint32_t len,
                                                ParsedPacket* pp, uint32_t* dst) {
  const DropReason r = parse_frame(frame, len, pp);
  if (r != DropReason::kNone) return r;
  if (pp->ip_version != 4) return DropReason::kNotHandled;
  const uint8_t* ip = frame + pp->l3_off;
  *dst = load_be32(ip + 16);
  if (martian_destination(*dst) || martian_source(load_be32(ip + 12))) {
    return DropReason::kMartian;
  }
  if (pp->ttl <= 1) return DropReason::kTtlExceeded;
  return DropReason::kNone;
}

// Applies a lookup's result to the classified IPv4 header at `ip`: no route drops the packet;
// otherwise the TTL is decremented, the checksum patched incrementally (RFC 1624) and the next
// hop's port returned. Returns the Verdict encoding.
TANDEM_HD_INLINE uint32_t ipv4_apply_route(uint8_t* ip, uint32_t next_hop) {
  if (next_hop == kNoRoute) return Verdict::drop(DropReason::kNoRoute);
  ipv4_decrement_ttl(ip);
  return Verdict::port(next_hop);
}

// One frame through every stage: classify, DIR-24-8 lookup, apply. Rewrites the frame in place
// when it is forwarded (a dropped frame is left as it was) and returns the Verdict encoding.
TANDEM_HD_INLINE uint32_t ipv4_forward_frame(uint8_t* frame, uint32_t len, const uint32_t* tbl24,
                                             const uint32_t* tbl8) {
  ParsedPacket pp;
  uint32_t dst = 0;
  const DropReason r = ipv4_classify_frame(frame, len, &pp, &dst);
  if (r != DropReason::kNone) return Verdict::drop(r);
  return ipv4_apply_route(frame + pp.l3_off, dir24_8_lookup(tbl24, tbl8, dst));
}

// classify() of the frame core, apart from the table: both IPv4 tables' apps use it.
TANDEM_HD_INLINE DropReason ipv4_classify(const uint8_t* frame, uint32_t len, uint32_t* dst, uint16_t* l3_off,
                                          uint32_t* flow) {
  ParsedPacket pp;
  const DropReason r = ipv4_classify_frame(frame, len, &pp, dst);
  if (r == DropReason::kNone) {
    *l3_off = pp.l3_off;
    if (flow) *flow = flow_hash(pp.tuple);
  }
  return r;
}

// The frame core (apps/frame_core.h) over a DIR-24-8 table.
struct Ipv4FrameCore {
  using Key = uint32_t;  // destination, host order
  using Result = uint32_t;

  const uint32_t* tbl24;
  uint64_t tbl24_entries;
  const uint32_t* tbl8;
  uint64_t tbl8_entries;  // the groups in use so far (high water), 256 entries each

  TANDEM_HD_INLINE DropReason classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off,
                                       uint32_t* flow) const {
    return ipv4_classify(frame, len, key, l3_off, flow);
  }
  TANDEM_HD_INLINE Result lookup(Key dst) const { return dir24_8_lookup(tbl24, tbl8, dst); }
  TANDEM_HD_INLINE uint32_t apply(uint8_t* frame, uint32_t, uint16_t l3_off, Result next_hop) const {
    return ipv4_apply_route(frame + l3_off, next_hop);
  }
  template <class F>
  void for_each_array(F&& f) {
    f(tbl24, tbl24_entries);
    f(tbl8, tbl8_entries);
  }
};

}  // namespace tandem::ipv4
