// NDN forwarding's per-packet logic, written once for the CPU paths (ndn_app.cc) and the GPU
// (apps/frame_core.h): find the Interest in a UDP datagram to port 6363, validate its TLVs, look
// its name up by longest prefix in the FIB's arrays (ndn_fib_core.h), relay it unchanged.
#pragma once

#include "apps/ndn/ndn_fib_core.h"
#include "apps/ndn/ndn_tlv.h"
#include "core/batch.h"
#include "core/drop_reason.h"
#include "core/flow_hash.h"
#include "core/parse_impl.h"

namespace tandem::ndn {

// NDN's own drop reasons: a TLV that runs past its packet or parent, a bad TLV-TYPE or no Name
// first; a well-formed TLV packet that is not an Interest (Data, Nack, ...); more name components
// than the FIB can take (kMaxComponents).
inline constexpr DropReason kBadNdnTlv = app_drop_reason(0);
inline constexpr DropReason kNdnNotInterest = app_drop_reason(1);
inline constexpr DropReason kNdnNameTooLong = app_drop_reason(2);

// The drop reason of an Interest parse status.
TANDEM_HD_INLINE DropReason ndn_drop_reason(NdnStatus s) {
  switch (s) {
    case NdnStatus::kOk: return DropReason::kNone;
    case NdnStatus::kNotInterest: return kNdnNotInterest;
    case NdnStatus::kTooManyComponents: return kNdnNameTooLong;
    case NdnStatus::kTruncated:
    case NdnStatus::kBadLength:
    case NdnStatus::kBadType:
    case NdnStatus::kNoName: break;
  }
  return kBadNdnTlv;
}

// Finds the Interest in a frame: kNone with its parsed name (offsets from *payload).
TANDEM_HD_INLINE DropReason ndn_classify_frame(const uint8_t* frame, uint32_t len, ParsedPacket* pp,
                                               const uint8_t** payload, NdnName* name) {
  const DropReason r = parse_frame(frame, len, pp);
  if (r != DropReason::kNone) return r;
  if (pp->tuple.proto != kProtoUdp || (pp->flags & kFlagFragment)) return DropReason::kNotHandled;
  uint32_t off = 0, n = 0;
  if (!transport_payload(frame, *pp, &off, &n)) return DropReason::kBadL4;
  if (pp->tuple.dst_port != kNdnUdpPort) return DropReason::kNotHandled;
  *payload = frame + off;
  return ndn_drop_reason(ndn_parse_interest(*payload, n, name));
}

// A name to look up: its Name TLV's value, where it sits in the frame.
struct NdnKey {
  const uint8_t* name;
  uint32_t len;
};

// classify() of the frame core.
TANDEM_HD_INLINE DropReason ndn_classify(const uint8_t* frame, uint32_t len, NdnKey* key, uint16_t* l3_off,
                                         uint32_t* flow) {
  ParsedPacket pp;
  const uint8_t* payload = nullptr;
  NdnName name;
  const DropReason r = ndn_classify_frame(frame, len, &pp, &payload, &name);
  if (r == DropReason::kNone) {
    key->name = payload + name.name_offset;
    key->len = name.name_length;
    *l3_off = pp.l3_off;
    if (flow) *flow = flow_hash(pp.tuple);
  }
  return r;
}

// The verdict of a next hop: the forwarder relays the datagram as it is.
TANDEM_HD_INLINE uint32_t ndn_verdict(uint32_t next_hop) {
  return next_hop == kNoRoute ? Verdict::drop(DropReason::kNoRoute) : Verdict::port(next_hop);
}

// The frame core (apps/frame_core.h) over an NdnFib's arrays.
struct NdnFrameCore {
  using Key = NdnKey;
  using Result = uint32_t;

  NdnFibView fib;
  uint64_t bucket_count;
  uint64_t entry_count;
  uint64_t byte_count;

  TANDEM_HD_INLINE DropReason classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off,
                                       uint32_t* flow) const {
    return ndn_classify(frame, len, key, l3_off, flow);
  }
  TANDEM_HD_INLINE Result lookup(const Key& k) const { return ndn_fib_lookup(fib, k.name, k.len); }
  TANDEM_HD_INLINE uint32_t apply(uint8_t*, uint32_t, uint16_t, Result next_hop) const { return ndn_verdict(next_hop); }
  template <class F>
  void for_each_array(F&& f) {
    f(fib.buckets, bucket_count);
    f(fib.entries, entry_count);
    f(fib.bytes, byte_count);
  }
};

}  // namespace tandem::ndn
