#include "apps/echo/echo_app.h"

#include "core/byte_order.h"

namespace tandem::echo {

DropReason echo_value(const uint8_t* frame, uint32_t len, ParsedPacket* pp, uint32_t* x) {
  const DropReason r = parse_packet(frame, len, pp);
  if (r != DropReason::kNone) return r;
  uint32_t off = 0, n = 0;
  if (!transport_payload(frame, *pp, &off, &n)) return DropReason::kBadL4;
  if (n < 4) return kNoPayload;
  *x = load_be32(frame + off);
  return DropReason::kNone;
}

DropReason EchoTraits::classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off, uint32_t* flow) const {
  ParsedPacket pp;
  const DropReason r = echo_value(frame, len, &pp, key);
  if (r == DropReason::kNone) {
    *l3_off = pp.l3_off;
    *flow = flow_hash(pp.tuple);
  }
  return r;
}

uint32_t EchoTraits::reference_verdict(const uint8_t* frame, uint32_t len, uint16_t) const {
  // Written apart from the fast path on purpose: the value's bytes, then the remainder by 4.
  ParsedPacket pp;
  uint32_t x = 0;
  if (echo_value(frame, len, &pp, &x) != DropReason::kNone) return Verdict::kUnset;
  return Verdict::port(static_cast<uint32_t>(uint64_t{x} - uint64_t{x} / 4 * 4));
}

}  // namespace tandem::echo
