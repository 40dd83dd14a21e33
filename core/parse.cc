// The parser lives in core/parse_impl.h so that device code can use it; this is the host's
// out-of-line entry point, so that callers do not each inline the whole parser.
#include "core/parse.h"

#include "core/parse_impl.h"

namespace tandem {

DropReason parse_packet(const uint8_t* frame, uint32_t caplen, ParsedPacket* out) {
  return parse_detail::parse_packet_hd(frame, caplen, out);
}

}  // namespace tandem
