// What must hold for any parse_packet result, whatever the input. Shared by the libFuzzer target
// (fuzz/parse_fuzz.cc) and the deterministic mutation test (tests/parse_fuzz_test.cc).
#pragma once

#include <cstring>
#include <vector>

#include "core/parse.h"
#include "core/parse_impl.h"

namespace tandem::fuzz {

inline bool same(const ParsedPacket& a, const ParsedPacket& b) {
  return a.l3_off == b.l3_off && a.l4_off == b.l4_off && a.l3_len == b.l3_len &&
         a.vlan_tci == b.vlan_tci && a.ip_version == b.ip_version &&
         a.vlan_count == b.vlan_count && a.flags == b.flags && a.ttl == b.ttl &&
         std::memcmp(a.tuple.src, b.tuple.src, 16) == 0 &&
         std::memcmp(a.tuple.dst, b.tuple.dst, 16) == 0 && a.tuple.src_port == b.tuple.src_port &&
         a.tuple.dst_port == b.tuple.dst_port && a.tuple.proto == b.tuple.proto &&
         a.tuple.ip_version == b.tuple.ip_version;
}

// Parses a copy of exactly n bytes, so that ASan bounds the read at n, not at the input's size.
inline DropReason parse_exact(const uint8_t* data, size_t n, ParsedPacket* p) {
  std::vector<uint8_t> exact(data, data + n);
  return parse_packet(exact.data(), static_cast<uint32_t>(n), p);
}

// nullptr when the result `r`, `p` of parsing data[0, size) is consistent, else what is wrong.
inline const char* check_parse_invariants(const uint8_t* data, size_t size, DropReason r,
                                          const ParsedPacket& p) {
  {
    // The host's path for common frames (core/parse.cc) decides every frame as the full parser
    // (the one device code runs) does.
    std::vector<uint8_t> exact(data, data + size);
    ParsedPacket full;
    const DropReason rf = parse_detail::parse_packet_hd(exact.data(), static_cast<uint32_t>(size), &full);
    if (rf != r || (r == DropReason::kNone && !same(full, p))) return "the host's parse differs from the full parser";
  }
  switch (r) {
    case DropReason::kNone: break;
    case DropReason::kTruncated: case DropReason::kNotIp: case DropReason::kBadVersion:
    case DropReason::kBadIhl: case DropReason::kBadTotalLength: case DropReason::kBadChecksum:
    case DropReason::kBadIpOptions: case DropReason::kIpv6Rh0:
      return nullptr;
    default: return "a reason the parser never gives";
  }
  if (p.ip_version != 4 && p.ip_version != 6) return "ip_version";
  if (p.tuple.ip_version != p.ip_version) return "tuple.ip_version";
  if (p.vlan_count > 2 || p.l3_off != kEthHeaderLen + 4u * p.vlan_count) return "l3_off/vlan_count";
  if (bool(p.flags & kFlagVlan) != (p.vlan_count > 0)) return "vlan flag";
  if ((p.flags & kFlagL4Truncated) && !(p.flags & kFlagL4Malformed)) return "L4Truncated without L4Malformed";
  if (p.vlan_count == 0 && p.vlan_tci != 0) return "vlan_tci without a tag";
  if (size_t(p.l3_off) + p.l3_len > size) return "l3_off + l3_len > caplen";
  if (p.l3_len < (p.ip_version == 4 ? 20 : 41)) return "l3_len too small";
  if (p.flags & kFlagL4Missing) {
    if (p.l4_off != 0) return "l4_off with L4Missing";
  } else {
    if (p.l4_off >= size) return "l4_off >= caplen";
    if (p.l4_off < p.l3_off + (p.ip_version == 4 ? 20 : 40) || p.l4_off >= p.l3_off + p.l3_len)
      return "l4_off outside the L3 payload";
  }
  const bool may_have_ports = (p.tuple.proto == kProtoTcp || p.tuple.proto == kProtoUdp) &&
                              !(p.flags & (kFlagL4Missing | kFlagL4Malformed));
  if (!may_have_ports && (p.tuple.src_port | p.tuple.dst_port)) return "ports without TCP/UDP";
  if (p.ip_version == 4) {
    for (int i = 4; i < 16; ++i)
      if (p.tuple.src[i] | p.tuple.dst[i]) return "IPv4 tuple not zero-filled";
  } else if (p.flags & kFlagIpv4Options) {
    return "IPv6 with kFlagIpv4Options";
  }
  // Bytes after the datagram are padding: cutting them off must not change anything.
  ParsedPacket q;
  std::memset(static_cast<void*>(&q), 0xA5, sizeof(q));  // the parser must zero it
  if (parse_exact(data, size_t(p.l3_off) + p.l3_len, &q) != DropReason::kNone || !same(p, q))
    return "result changed when cut at the datagram's end";
  return nullptr;
}

}  // namespace tandem::fuzz
