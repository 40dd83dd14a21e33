// The parser lives in core/parse_impl.h so that device code can use it; this is the host's
// out-of-line entry point, so that callers do not each inline the whole parser. The host first
// tries the frames nearly all traffic is: untagged IPv4 without options or fragmentation, carrying
// a well-formed UDP or TCP header. Their checks are few and fixed there (a 20-byte header, one
// transport header), so they take a straight path, with the checksum summed in 32-bit words. Any
// frame that fails a check goes through the full parser, which decides it as before; the result
// is the same either way (fuzz/parse_invariants.h compares the two on every frame that
// tests/parse_fuzz_test.cc and the libFuzzer target make).
#include "core/parse.h"

#include "core/byte_order.h"
#include "core/checksum.h"
#include "core/parse_impl.h"

namespace tandem {

namespace parse_detail {

namespace {

// The 20-byte IPv4 header sums to 0xFFFF (RFC 1071: 32-bit words in the machine's byte order,
// carries folded back; the folded sum is the byte-swapped 16-bit sum, and 0xFFFF is its own swap).
inline bool ipv4_header20_checksum_ok(const uint8_t* ip) {
  uint64_t sum = 0;
  for (int i = 0; i < 20; i += 4) {
    uint32_t w;
    __builtin_memcpy(&w, ip + i, 4);
    sum += w;
  }
  sum = (sum & 0xFFFFFFFFu) + (sum >> 32);  // five words: at most 2^32 + 3, one more fold fits 32 bits
  sum = (sum & 0xFFFFFFFFu) + (sum >> 32);
  return csum_fold(static_cast<uint32_t>(sum)) == 0xFFFF;
}

}  // namespace

bool parse_common_ipv4(const uint8_t* frame, uint32_t caplen, ParsedPacket* out) {
  constexpr uint32_t kL3 = kEthHeaderLen, kL4 = kEthHeaderLen + 20;
  if (caplen < kL4 || load_be16(frame + 12) != kEthTypeIpv4) return false;
  const uint8_t* ip = frame + kL3;
  const uint32_t total_len = load_be16(ip + 2);
  // Version 4, IHL 5, not a fragment (DF may be set), the datagram within the capture.
  if (ip[0] != 0x45 || total_len < 20 || total_len > caplen - kL3 || (load_be16(ip + 6) & 0x3FFF) != 0) return false;
  const uint32_t avail = total_len - 20;
  const uint8_t* l4 = frame + kL4;
  const uint8_t proto = ip[9];
  if (proto == kProtoUdp) {
    if (avail < 8) return false;
    const uint32_t udp_len = load_be16(l4 + 4);
    if (udp_len < 8 || udp_len > avail) return false;
  } else if (proto == kProtoTcp) {
    if (avail < 20) return false;
    const uint32_t data_off = static_cast<uint32_t>(l4[12] >> 4) * 4;
    if (data_off < 20 || data_off > avail) return false;
  } else {
    return false;
  }
  if (!ipv4_header20_checksum_ok(ip)) return false;
  *out = ParsedPacket{};
  out->l3_off = static_cast<uint16_t>(kL3);
  out->l4_off = static_cast<uint16_t>(kL4);
  out->l3_len = static_cast<uint16_t>(total_len);
  out->ip_version = 4;
  out->ttl = ip[8];
  out->tuple.ip_version = 4;
  out->tuple.proto = proto;
  __builtin_memcpy(out->tuple.src, ip + 12, 4);
  __builtin_memcpy(out->tuple.dst, ip + 16, 4);
  out->tuple.src_port = load_be16(l4);
  out->tuple.dst_port = load_be16(l4 + 2);
  return true;
}

}  // namespace parse_detail

DropReason parse_packet(const uint8_t* frame, uint32_t caplen, ParsedPacket* out) {
  if (parse_detail::parse_common_ipv4(frame, caplen, out)) return DropReason::kNone;
  return parse_detail::parse_packet_hd(frame, caplen, out);
}

}  // namespace tandem
