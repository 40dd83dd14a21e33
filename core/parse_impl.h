// The packet parser's implementation, written once for the host (core/parse.cc wraps it as
// parse_packet) and for device code (the GPU forwarding kernels call parse_packet_hd directly).
//
// Every read is preceded by a bounds check against the end of the capture (or, for L4 and IPv6
// extension headers, against the end of the IP datagram, which has already been checked to lie
// within the capture). Offsets are kept in uint32_t so that no sum of header fields can wrap.
// Nothing here may call into the C++ library: it must compile as device code.
#pragma once

#include "core/byte_order.h"
#include "core/checksum.h"
#include "core/compiler.h"
#include "core/parse.h"

namespace tandem::parse_detail {

TANDEM_HD_INLINE void copy_bytes(uint8_t* dst, const uint8_t* src, uint32_t n) {
#if defined(__CUDA_ARCH__)
  for (uint32_t i = 0; i < n; ++i) dst[i] = src[i];
#else
  // One store of the address (4 or 16 bytes), which a later load of it is forwarded from.
  __builtin_memcpy(dst, src, n);
#endif
}

TANDEM_HD_INLINE bool is_vlan_type(uint16_t t) { return t == kEthTypeVlan || t == kEthTypeQinQ; }

inline constexpr uint8_t kV6HopByHop = 0;
inline constexpr uint8_t kV6Routing = 43;
inline constexpr uint8_t kV6Fragment = 44;
inline constexpr uint8_t kV6Ah = 51;
inline constexpr uint8_t kV6NoNext = 59;
inline constexpr uint8_t kV6DestOpts = 60;
inline constexpr int kMaxV6ExtHeaders = 16;

// Reads the transport header at frame[l4_off, l3_end). `frag_head` is true for the first fragment
// of a fragmented datagram: its UDP length describes the reassembled datagram, so it may exceed
// what this fragment carries and is then only checked for its lower bound.
TANDEM_HD_INLINE void parse_l4(const uint8_t* frame, uint32_t l4_off, uint32_t l3_end,
                               bool frag_head, ParsedPacket* out) {
  const uint32_t avail = l3_end - l4_off;
  const uint8_t proto = out->tuple.proto;
  if (avail == 0) {
    // Nothing after the IP headers: there is no transport header to point at. For protocols
    // whose header is mandatory this is also malformed, and cut short.
    out->flags |= kFlagL4Missing;
    if (proto == kProtoTcp || proto == kProtoUdp || proto == kProtoIcmp || proto == kProtoIcmpv6)
      out->flags |= kFlagL4Malformed | kFlagL4Truncated;
    return;
  }
  out->l4_off = static_cast<uint16_t>(l4_off);
  const uint8_t* l4 = frame + l4_off;
  switch (proto) {
    case kProtoTcp: {
      if (avail < 20) {
        out->flags |= kFlagL4Malformed | kFlagL4Truncated;
        return;
      }
      const uint32_t data_off = static_cast<uint32_t>(l4[12] >> 4) * 4;
      if (data_off < 20) {
        out->flags |= kFlagL4Malformed;
        return;
      }
      if (data_off > avail) {
        out->flags |= kFlagL4Malformed | kFlagL4Truncated;
        return;
      }
      out->tuple.src_port = load_be16(l4);
      out->tuple.dst_port = load_be16(l4 + 2);
      return;
    }
    case kProtoUdp: {
      if (avail < 8) {
        out->flags |= kFlagL4Malformed | kFlagL4Truncated;
        return;
      }
      const uint32_t udp_len = load_be16(l4 + 4);
      if (udp_len < 8 || (!frag_head && udp_len > avail)) {
        out->flags |= kFlagL4Malformed;
        return;
      }
      out->tuple.src_port = load_be16(l4);
      out->tuple.dst_port = load_be16(l4 + 2);
      return;
    }
    case kProtoIcmp:
    case kProtoIcmpv6:
      if (avail < 4) out->flags |= kFlagL4Malformed | kFlagL4Truncated;
      return;
    default:
      return;  // a protocol we do not decode (GRE, SCTP, ESP, ...): l4_off points at it
  }
}

// Whether the IPv4 options in hdr[20, hdr_len) are well framed (RFC 791): end of list (0) ends
// them, a no-operation (1) is one byte, every other option has a length byte that counts its type
// and length bytes (>= 2) and ends within the header. A bad length makes the rest of the list
// unreadable, and routers and hosts read options differently then: such packets are dropped.
TANDEM_HD_INLINE bool ipv4_options_ok(const uint8_t* hdr, uint32_t hdr_len) {
  uint32_t i = 20;
  while (i < hdr_len) {
    const uint8_t type = hdr[i];
    if (type == 0) return true;
    if (type == 1) {
      ++i;
      continue;
    }
    if (hdr_len - i < 2) return false;
    const uint32_t len = hdr[i + 1];
    if (len < 2 || len > hdr_len - i) return false;
    i += len;
  }
  return true;
}

TANDEM_HD_INLINE DropReason parse_ipv4(const uint8_t* frame, uint32_t caplen, uint32_t l3_off,
                                       ParsedPacket* out) {
  const uint32_t cap = caplen - l3_off;
  if (cap < 20) return DropReason::kTruncated;
  const uint8_t* ip = frame + l3_off;
  if ((ip[0] >> 4) != 4) return DropReason::kBadVersion;
  const uint32_t hdr_len = static_cast<uint32_t>(ip[0] & 0x0F) * 4;
  if (hdr_len < 20) return DropReason::kBadIhl;
  if (hdr_len > cap) return DropReason::kTruncated;
  const uint32_t total_len = load_be16(ip + 2);
  if (total_len < hdr_len) return DropReason::kBadTotalLength;
  // Bytes after the datagram are Ethernet padding (or trailers) and are ignored.
  if (total_len > cap) return DropReason::kTruncated;
  if (!ipv4_checksum_ok(ip, hdr_len)) return DropReason::kBadChecksum;
  if (!ipv4_options_ok(ip, hdr_len)) return DropReason::kBadIpOptions;

  out->ip_version = 4;
  out->l3_len = static_cast<uint16_t>(total_len);
  out->ttl = ip[8];
  out->tuple.ip_version = 4;
  out->tuple.proto = ip[9];
  copy_bytes(out->tuple.src, ip + 12, 4);
  copy_bytes(out->tuple.dst, ip + 16, 4);
  if (hdr_len > 20) out->flags |= kFlagIpv4Options;

  const uint16_t frag = load_be16(ip + 6);
  const bool more_frags = (frag & 0x2000) != 0;
  const uint16_t frag_off = frag & 0x1FFF;
  if (more_frags || frag_off != 0) out->flags |= kFlagFragment;
  if (frag_off != 0) {
    // Later fragments carry payload bytes, not a transport header.
    out->flags |= kFlagL4Missing;
    return DropReason::kNone;
  }
  parse_l4(frame, l3_off + hdr_len, l3_off + total_len, more_frags, out);
  return DropReason::kNone;
}

TANDEM_HD_INLINE DropReason parse_ipv6(const uint8_t* frame, uint32_t caplen, uint32_t l3_off,
                                       ParsedPacket* out) {
  const uint32_t cap = caplen - l3_off;
  if (cap < 40) return DropReason::kTruncated;
  const uint8_t* ip = frame + l3_off;
  if ((ip[0] >> 4) != 6) return DropReason::kBadVersion;
  const uint32_t payload_len = load_be16(ip + 4);
  // Payload length 0 announces a jumbogram (RFC 2675), which Ethernet cannot carry.
  if (payload_len == 0) return DropReason::kBadTotalLength;
  const uint32_t total_len = 40 + payload_len;
  if (total_len > cap) return DropReason::kTruncated;
  // l3_len and l4_off are 16 bits, so the datagram must end within 64 KiB of the frame start.
  // Only a capture far larger than any Ethernet frame can hold one that does not.
  if (l3_off + total_len > 0xFFFF) return DropReason::kBadTotalLength;

  out->ip_version = 6;
  out->l3_len = static_cast<uint16_t>(total_len);
  out->ttl = ip[7];
  out->tuple.ip_version = 6;
  copy_bytes(out->tuple.src, ip + 8, 16);
  copy_bytes(out->tuple.dst, ip + 24, 16);

  const uint32_t l3_end = l3_off + total_len;
  uint32_t off = l3_off + 40;
  uint8_t next = ip[6];
  bool frag_head = false;
  for (int n = 0;; ++n) {
    if (next != kV6HopByHop && next != kV6Routing && next != kV6DestOpts &&
        next != kV6Fragment && next != kV6Ah) {
      break;  // a transport header, ESP (opaque: nothing after it is readable) or "no next"
    }
    if (n == kMaxV6ExtHeaders) {
      // A chain this long is abuse, not traffic: stop looking for the transport header.
      out->tuple.proto = next;
      out->flags |= kFlagL4Missing | kFlagL4Malformed;
      return DropReason::kNone;
    }
    const uint32_t left = l3_end - off;
    if (left < 2) return DropReason::kTruncated;
    const uint8_t* h = frame + off;
    uint32_t len;
    if (next == kV6Fragment) {
      len = 8;
      if (left < len) return DropReason::kTruncated;
      out->flags |= kFlagFragment;
      const uint16_t fo = load_be16(h + 2);
      if ((fo >> 3) != 0) {
        // Non-first fragment: the bytes after this header continue some earlier fragment.
        out->tuple.proto = h[0];
        out->flags |= kFlagL4Missing;
        return DropReason::kNone;
      }
      frag_head = (fo & 1) != 0;
    } else if (next == kV6Ah) {
      len = (static_cast<uint32_t>(h[1]) + 2) * 4;
    } else {
      len = (static_cast<uint32_t>(h[1]) + 1) * 8;
    }
    if (len > left) return DropReason::kTruncated;
    // A type 0 routing header (deprecated by RFC 5095: traffic amplification, filter evasion)
    // that still has segments left is dropped, as a destination must drop an unknown routing
    // type (RFC 8200 4.4) and as routers filter it; with none left it is ignored (RFC 5095 3).
    if (next == kV6Routing && h[2] == 0 && h[3] != 0) return DropReason::kIpv6Rh0;
    next = h[0];
    off += len;
  }

  out->tuple.proto = next;
  if (next == kV6NoNext) {
    out->flags |= kFlagL4Missing;
    return DropReason::kNone;
  }
  parse_l4(frame, off, l3_end, frag_head, out);
  return DropReason::kNone;
}

// parse_packet (core/parse.h), callable from device code; parse_packet is this, out of line.
TANDEM_HD_INLINE DropReason parse_packet_hd(const uint8_t* frame, uint32_t caplen,
                                           ParsedPacket* out) {
  *out = ParsedPacket{};
  if (caplen < kEthHeaderLen) return DropReason::kTruncated;
  uint16_t type = load_be16(frame + 12);
  uint32_t off = kEthHeaderLen;
  // Tags: 4 bytes each, TCI then the inner Ethernet type. 802.1ad (0x88A8) is normally the outer
  // one, but both orders occur in practice, so either is accepted in either position.
  while (is_vlan_type(type) && out->vlan_count < 2) {
    if (caplen - off < 4) return DropReason::kTruncated;
    if (out->vlan_count == 0) out->vlan_tci = load_be16(frame + off);
    ++out->vlan_count;
    type = load_be16(frame + off + 2);
    off += 4;
  }
  if (out->vlan_count) out->flags |= kFlagVlan;
  out->l3_off = static_cast<uint16_t>(off);
  // Also rejects a third tag and 802.3 frames, whose type field is a length (< 0x0600).
  if (type == kEthTypeIpv4) return parse_ipv4(frame, caplen, off, out);
  if (type == kEthTypeIpv6) return parse_ipv6(frame, caplen, off, out);
  return DropReason::kNotIp;
}

}  // namespace tandem::parse_detail

namespace tandem {

// parse_packet for code written once for the host and the GPU (an app's per-packet core): device
// code runs the parser inline; the host calls it out of line, because the parser inlined whole
// into the scalar forwarding loop made that loop slower.
TANDEM_HD_INLINE DropReason parse_frame(const uint8_t* frame, uint32_t len, ParsedPacket* pp) {
#if defined(__CUDA_ARCH__)
  return parse_detail::parse_packet_hd(frame, len, pp);
#else
  return parse_packet(frame, len, pp);
#endif
}

}  // namespace tandem
