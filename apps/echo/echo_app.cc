#include "apps/echo/echo_app.h"

namespace tandem::echo {

DropReason EchoTraits::classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off, uint32_t* flow) const {
  return EchoCore{}.classify(frame, len, key, l3_off, flow);
}

uint32_t EchoTraits::reference_verdict(const uint8_t* frame, uint32_t len, uint16_t) const {
  // Written apart from the fast path on purpose: the value's bytes, then the remainder by 4.
  ParsedPacket pp;
  uint32_t x = 0;
  if (echo_value(frame, len, &pp, &x) != DropReason::kNone) return Verdict::kUnset;
  return Verdict::port(static_cast<uint32_t>(uint64_t{x} - uint64_t{x} / 4 * 4));
}

}  // namespace tandem::echo
