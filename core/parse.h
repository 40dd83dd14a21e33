// Header parsing and validation for Ethernet (+802.1Q/802.1ad), IPv4 (+options), IPv6 (+extension
// headers), TCP, UDP, ICMP and ICMPv6. The parser only reads; it never writes the packet.
#pragma once

#include "core/compiler.h"
#include "core/drop_reason.h"
#include "core/flow_hash.h"

namespace tandem {

inline constexpr uint16_t kEthTypeIpv4 = 0x0800;
inline constexpr uint16_t kEthTypeIpv6 = 0x86DD;
inline constexpr uint16_t kEthTypeVlan = 0x8100;
inline constexpr uint16_t kEthTypeQinQ = 0x88A8;
inline constexpr uint32_t kEthHeaderLen = 14;

inline constexpr uint8_t kProtoIcmp = 1;
inline constexpr uint8_t kProtoTcp = 6;
inline constexpr uint8_t kProtoUdp = 17;
inline constexpr uint8_t kProtoIcmpv6 = 58;

enum ParseFlags : uint8_t {
  kFlagIpv4Options = 1 << 0,  // IPv4 IHL > 5
  kFlagFragment = 1 << 1,     // IPv4 MF or offset != 0, or an IPv6 fragment header
  kFlagL4Missing = 1 << 2,    // non-first fragment or IPv6 "no next header": no L4 header to read
  kFlagL4Malformed = 1 << 3,  // L4 header present but malformed (a router still forwards it)
  kFlagVlan = 1 << 4,         // at least one 802.1Q/802.1ad tag
  kFlagL4Truncated = 1 << 5,  // with kFlagL4Malformed: the transport header runs past the datagram
                              // (in a first fragment: a tiny fragment, RFC 1858)
};

struct ParsedPacket {
  uint16_t l3_off = 0;     // offset of the IP header from the start of the frame
  uint16_t l4_off = 0;     // offset of the transport header; 0 when flags has kFlagL4Missing
  uint16_t l3_len = 0;     // IPv4 total length, or 40 + IPv6 payload length
  uint16_t vlan_tci = 0;   // TCI of the outermost tag, 0 when untagged
  uint8_t ip_version = 0;  // 4 or 6
  uint8_t vlan_count = 0;  // 0, 1 or 2 tags
  uint8_t flags = 0;       // ParseFlags
  uint8_t ttl = 0;         // IPv4 TTL or IPv6 hop limit (checked by the router, not the parser)
  FiveTuple tuple{};       // proto is the transport protocol after any IPv6 extension headers
};

// Parses and validates one Ethernet frame of `caplen` captured bytes. Returns DropReason::kNone
// and fills `out` when the frame is a well-formed IPv4 or IPv6 packet; otherwise returns why it
// must be dropped (kTruncated, kNotIp, kBadVersion, kBadIhl, kBadTotalLength, kBadChecksum,
// kBadIpOptions, kIpv6Rh0).
// IPv4 checks: version, IHL >= 5, header within the capture, total length >= IHL*4, the whole
// datagram within the capture (trailing Ethernet padding is allowed), header checksum, the
// options' framing (each length >= 2 and within the header; their contents are not checked).
// IPv6 checks: version, 40-byte header and payload within the capture, extension-header chain
// within the payload, no type 0 routing header with segments left (RFC 5095).
// Those two are drops for every app, not flags: a router is expected to drop them, and hosts and
// middleboxes disagree about what such packets mean. L4 problems set flags but do not drop:
// routers forward such packets; filtering apps drop them before their rules (docs/DESIGN.md,
// "Filtering malformed and fragmented packets").
// Details of the implementation (core/parse_impl.h; tests/parse_test.cc checks each one):
//  - On a drop, *out holds only what was decoded before the failing check; do not use it.
//  - Empty IP payload: kFlagL4Missing (l4_off 0), plus kFlagL4Malformed and kFlagL4Truncated
//    for TCP/UDP/ICMP/ICMPv6.
//  - kFlagL4Truncated: fewer bytes than the header needs (TCP 20 or its data offset, UDP 8,
//    ICMP 4). A TCP data offset below 5 or a UDP length below 8 (or, outside a first fragment,
//    past the datagram) is malformed without it.
//  - First fragments: the UDP length covers the whole datagram, so only >= 8 is checked.
//  - IPv6: a non-first fragment's proto is the fragment header's next header. ESP (50) and
//    undecoded protocols get l4_off but no ports. Past 16 extension headers the walk stops:
//    proto is the unresolved next header, flags kFlagL4Missing | kFlagL4Malformed. A datagram
//    ending past byte 0xFFFF of the frame does not fit the 16-bit fields: kBadTotalLength.
DropReason parse_packet(const uint8_t* frame, uint32_t caplen, ParsedPacket* out);

namespace parse_detail {
// The host's path for the common frame (core/parse.cc): true, with *out as the full parser fills
// it, for an untagged IPv4 frame without options or fragmentation whose UDP or TCP header is well
// formed; false (*out unspecified) for any other, which parse_packet hands to the full parser.
// Declared here for its test.
bool parse_common_ipv4(const uint8_t* frame, uint32_t caplen, ParsedPacket* out);
}  // namespace parse_detail

// Where a parsed packet's transport payload is: after the UDP or TCP header (TCP's data offset
// included); for other protocols, right after the IP header chain (l4_off). The payload ends at
// the UDP length or the end of the IP datagram (l3_off + l3_len), whichever comes first, never
// past the capture (parse_packet checked that). False when
// there is no transport header to skip (non-first fragment, kFlagL4Missing) or it is malformed.
TANDEM_HD_INLINE bool transport_payload(const uint8_t* frame, const ParsedPacket& p, uint32_t* off, uint32_t* len) {
  if (p.flags & (kFlagL4Missing | kFlagL4Malformed)) return false;
  uint32_t start = p.l4_off;
  uint32_t end = uint32_t{p.l3_off} + p.l3_len;
  if (p.tuple.proto == kProtoUdp) {
    start += 8;
    // The UDP length may end the payload before the datagram does (a first fragment's may claim
    // more than the fragment holds: the datagram's end bounds it).
    const uint32_t udp_end = p.l4_off + ((uint32_t{frame[p.l4_off + 4]} << 8) | frame[p.l4_off + 5]);
    if (udp_end < end) end = udp_end;
  } else if (p.tuple.proto == kProtoTcp) {
    start += uint32_t{static_cast<uint8_t>(frame[p.l4_off + 12] >> 4)} * 4;
  }
  if (start > end) return false;
  *off = start;
  *len = end - start;
  return true;
}

}  // namespace tandem
