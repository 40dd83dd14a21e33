// Tests for the packet parser (core/parse.h), the Internet checksum helpers (core/checksum.h) and
// the flow hash (core/flow_hash.h). Frames are built byte by byte here, independently of the
// parser, and the real captures in data/pcap are cross-checked against a separate decoding.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "core/checksum.h"
#include "core/drop_reason.h"
#include "core/flow_hash.h"
#include "core/parse.h"
#include "tests/bytes.h"
#include "tests/test_util.h"

namespace tandem {
namespace {

// ---- frame builder ----

using test::Bytes;
using test::cat;
using test::put16;

Bytes filler(size_t n) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(0xA0 + i);
  return b;
}

struct Tag {
  uint16_t tpid, tci;
};
Bytes eth(uint16_t type, std::vector<Tag> tags = {}) {
  Bytes b = {0x02, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x02};
  for (const Tag& t : tags) put16(b, t.tpid), put16(b, t.tci);
  put16(b, type);
  return b;
}

// Independent checksum: RFC 1071 straight from the definition (wide accumulator, fold at end).
uint16_t ref_checksum(const uint8_t* p, size_t len) {
  uint64_t sum = 0;
  for (size_t i = 0; i + 1 < len; i += 2) sum += (p[i] << 8) | p[i + 1];
  if (len & 1) sum += p[len - 1] << 8;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

struct V4 {
  uint8_t proto = kProtoUdp;
  int ihl = 5;
  uint16_t frag = 0;   // flags + fragment offset word
  int total_len = -1;  // -1: header + payload
  uint8_t version = 4;
};
// 10.0.0.1 -> 192.168.1.2, TTL 64, valid checksum; options are NOPs and an end-of-list.
Bytes ipv4(const V4& o, const Bytes& payload) {
  const int hdr = o.ihl * 4;
  Bytes b = {uint8_t(o.version << 4 | o.ihl), 0};
  put16(b, uint16_t(o.total_len >= 0 ? o.total_len : std::max(hdr, 20) + int(payload.size())));
  put16(b, 0x1234);
  put16(b, o.frag);
  b.insert(b.end(), {64, o.proto, 0, 0, 10, 0, 0, 1, 192, 168, 1, 2});
  for (int i = 20; i < hdr; ++i) b.push_back(i + 1 == hdr ? 0 : 1);
  const uint16_t c = ref_checksum(b.data(), b.size());
  b[10] = uint8_t(c >> 8);
  b[11] = uint8_t(c);
  return cat(b, payload);
}
Bytes udp(uint16_t sport, uint16_t dport, size_t payload_len, int udp_len = -1) {
  Bytes b;
  for (uint16_t v : {sport, dport, uint16_t(udp_len >= 0 ? udp_len : int(8 + payload_len)),
                     uint16_t(0)})
    put16(b, v);
  return cat(b, filler(payload_len));
}
Bytes tcp(uint16_t sport, uint16_t dport, int data_off_words = 5, size_t payload_len = 0) {
  Bytes b;
  put16(b, sport);
  put16(b, dport);
  b.resize(12, 0);  // seq, ack
  b.insert(b.end(), {uint8_t(data_off_words << 4), 0x18, 0xFF, 0xFF, 0, 0, 0, 0});
  b.resize(b.size() + std::max(0, data_off_words * 4 - 20), 1);  // NOP options
  return cat(b, filler(payload_len));
}
Bytes icmp_echo() { return {8, 0, 0, 0, 0, 1, 0, 1, 0xAA, 0xBB}; }

const uint8_t kV6Src[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
const uint8_t kV6Dst[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0xca, 0xfe, 0, 2};

// Hop limit 33. payload_len -1: the payload's size.
Bytes ipv6(uint8_t next, const Bytes& payload, int payload_len = -1, uint8_t version = 6) {
  Bytes b = {uint8_t(version << 4), 0, 0, 0};
  put16(b, uint16_t(payload_len >= 0 ? payload_len : int(payload.size())));
  b.insert(b.end(), {next, 33});
  b.insert(b.end(), kV6Src, kV6Src + 16);
  b.insert(b.end(), kV6Dst, kV6Dst + 16);
  return cat(b, payload);
}
// Hop-by-hop / routing / destination options header: (len_units + 1) * 8 bytes.
Bytes v6opts(uint8_t next, uint8_t len_units) {
  return cat({next, len_units}, Bytes(len_units * 8 + 6));
}
// Authentication header: (len_field + 2) * 4 bytes.
Bytes v6ah(uint8_t next, uint8_t len_field) {
  return cat({next, len_field}, Bytes(len_field * 4 + 6));
}
// Routing header of (len_units + 1) * 8 bytes: routing type and segments left, then zeros.
Bytes v6rh(uint8_t next, uint8_t type, uint8_t segments_left, uint8_t len_units = 2) {
  return cat({next, len_units, type, segments_left}, Bytes(len_units * 8 + 4));
}
Bytes v6frag(uint8_t next, uint16_t offset_units, bool more) {
  const uint16_t w = uint16_t(offset_units << 3 | (more ? 1 : 0));
  return {next, 0, uint8_t(w >> 8), uint8_t(w), 0xBE, 0xEF, 0, 1};
}
Bytes v4f(const V4& o, const Bytes& l4) { return cat(eth(kEthTypeIpv4), ipv4(o, l4)); }
// An IPv4 UDP frame whose options are `opts` (a multiple of 4 bytes), checksum right.
Bytes v4opts(const Bytes& opts) {
  Bytes f = v4f({.ihl = 5 + int(opts.size() / 4)}, udp(1, 2, 0));
  std::copy(opts.begin(), opts.end(), f.begin() + 14 + 20);
  f[14 + 10] = f[14 + 11] = 0;
  const uint16_t c = ref_checksum(f.data() + 14, 20 + opts.size());
  f[14 + 10] = uint8_t(c >> 8);
  f[14 + 11] = uint8_t(c);
  return f;
}
Bytes v6f(uint8_t next, const Bytes& payload, int payload_len = -1) {
  return cat(eth(kEthTypeIpv6), ipv6(next, payload, payload_len));
}

// Parses from a buffer of exactly the (possibly cut) frame's size, so ASan sees any over-read.
DropReason parse(const Bytes& frame, ParsedPacket* p, size_t caplen = SIZE_MAX) {
  const size_t n = std::min(caplen, frame.size());
  std::vector<uint8_t> exact(frame.begin(), frame.begin() + n);
  return parse_packet(exact.data(), static_cast<uint32_t>(n), p);
}

// What a forwarded packet's ParsedPacket should hold (besides addresses, checked separately).
struct Want {
  int l3_off, l4_off, l3_len, flags, proto, sport, dport;
};
ParsedPacket expect_ok(const Bytes& frame, const Want& w, const char* what = "") {
  ParsedPacket p;
  EXPECT_EQ(parse(frame, &p), DropReason::kNone) << what;
  EXPECT_EQ(p.l3_off, w.l3_off) << what;
  EXPECT_EQ(p.l4_off, w.l4_off) << what;
  EXPECT_EQ(p.l3_len, w.l3_len) << what;
  EXPECT_EQ(p.flags, w.flags) << what;
  EXPECT_EQ(p.tuple.proto, w.proto) << what;
  EXPECT_EQ(p.tuple.src_port, w.sport) << what;
  EXPECT_EQ(p.tuple.dst_port, w.dport) << what;
  EXPECT_EQ(p.tuple.ip_version, p.ip_version) << what;
  return p;
}

const Bytes kV4Udp = v4f({}, udp(1234, 53, 10));
constexpr int kMissing = kFlagL4Missing, kBadL4 = kFlagL4Malformed, kFrag = kFlagFragment;
constexpr int kCutL4 = kFlagL4Malformed | kFlagL4Truncated;  // malformed: the header is cut short

// ---- accepted packets ----

TEST(Parse, Ipv4Udp) {
  const ParsedPacket p = expect_ok(kV4Udp, {14, 34, 38, 0, kProtoUdp, 1234, 53});
  EXPECT_EQ(p.ip_version, 4);
  EXPECT_EQ(p.ttl, 64);
  EXPECT_EQ(p.vlan_count, 0);
  EXPECT_EQ(p.vlan_tci, 0);
  const uint8_t src[16] = {10, 0, 0, 1}, dst[16] = {192, 168, 1, 2};
  EXPECT_EQ(0, std::memcmp(p.tuple.src, src, 16));  // bytes 4..15 are zero
  EXPECT_EQ(0, std::memcmp(p.tuple.dst, dst, 16));
}

TEST(Parse, ZeroesOutputFirst) {
  ParsedPacket p;
  std::memset(static_cast<void*>(&p), 0xEE, sizeof(p));
  ASSERT_EQ(parse(kV4Udp, &p), DropReason::kNone);
  EXPECT_EQ(p.tuple.src[4] | p.tuple.dst[15] | p.vlan_tci | p.flags, 0);
  std::memset(static_cast<void*>(&p), 0xEE, sizeof(p));
  ASSERT_EQ(parse(eth(0x0806), &p), DropReason::kNotIp);
  EXPECT_EQ(p.flags | p.tuple.src_port | p.ip_version, 0);
}

TEST(Parse, Ipv4TcpIcmpOptions) {
  expect_ok(v4f({.proto = kProtoTcp, .ihl = 8}, tcp(40000, 443, 8, 5)),
            {14, 46, 32 + 32 + 5, kFlagIpv4Options, kProtoTcp, 40000, 443});
  expect_ok(v4f({.proto = kProtoIcmp}, icmp_echo()), {14, 34, 30, 0, kProtoIcmp, 0, 0});
  // Three bytes cannot hold type, code and checksum: flagged, still forwarded.
  expect_ok(v4f({.proto = kProtoIcmp}, {8, 0, 0}), {14, 34, 23, kCutL4, kProtoIcmp, 0, 0});
  // IHL 15 with a capture that holds it all.
  expect_ok(v4f({.ihl = 15}, udp(1, 2, 0)), {14, 74, 68, kFlagIpv4Options, kProtoUdp, 1, 2});
  // An unknown transport protocol is not checked; l4_off still points at it.
  expect_ok(v4f({.proto = 47}, {0, 0}), {14, 34, 22, 0, 47, 0, 0});
}

TEST(Parse, Vlan) {
  const Bytes q = cat(eth(kEthTypeIpv4, {{kEthTypeVlan, 0xA064}}), ipv4({}, udp(1, 2, 0)));
  ParsedPacket p = expect_ok(q, {18, 38, 28, kFlagVlan, kProtoUdp, 1, 2});
  EXPECT_EQ(p.vlan_count, 1);
  EXPECT_EQ(p.vlan_tci, 0xA064);  // PCP 5, VID 100: the whole TCI is kept
  for (auto [outer, inner] : {std::pair{kEthTypeQinQ, kEthTypeVlan},
                              std::pair{kEthTypeVlan, kEthTypeQinQ},
                              std::pair{kEthTypeVlan, kEthTypeVlan}}) {
    const Bytes f = cat(eth(kEthTypeIpv6, {{outer, 0x0123}, {inner, 0x0456}}),
                        ipv6(kProtoUdp, udp(7, 8, 3)));
    p = expect_ok(f, {22, 62, 51, kFlagVlan, kProtoUdp, 7, 8});
    EXPECT_EQ(p.vlan_count, 2);
    EXPECT_EQ(p.vlan_tci, 0x0123);
  }
}

TEST(Parse, EthernetPaddingAccepted) {
  // 14 + 20 + 20 = 54 bytes, padded to the 60-byte minimum, plus a 4-byte FCS-like trailer.
  Bytes f = v4f({.proto = kProtoTcp}, tcp(1, 2));
  f.resize(64, 0x77);
  expect_ok(f, {14, 34, 40, 0, kProtoTcp, 1, 2});
  // UDP lengths are checked against the datagram, not against the padded frame.
  Bytes u = v4f({}, udp(5, 6, 2, 12));
  u.resize(60, 0);
  expect_ok(u, {14, 34, 30, kBadL4, kProtoUdp, 0, 0});
  Bytes v6 = v6f(kProtoUdp, udp(5, 6, 0));
  v6.resize(v6.size() + 10, 0);
  expect_ok(v6, {14, 54, 48, 0, kProtoUdp, 5, 6});
}

TEST(Parse, Ipv4Fragments) {
  // First fragment: MF set, offset 0. Its UDP length (3008) describes the whole datagram.
  expect_ok(v4f({.frag = 0x2000}, udp(1000, 2000, 1472, 3008)),
            {14, 34, 1500, kFrag, kProtoUdp, 1000, 2000});
  // A middle and a last fragment carry no transport header.
  const Want later = {14, 0, 84, kFrag | kMissing, kProtoUdp, 0, 0};
  expect_ok(v4f({.frag = 0x2000 | 185}, filler(64)), later);
  expect_ok(v4f({.frag = 370}, filler(64)), later);
  // DF alone is not a fragment.
  expect_ok(v4f({.frag = 0x4000}, udp(1, 2, 0)), {14, 34, 28, 0, kProtoUdp, 1, 2});
}

TEST(Parse, Ipv6Udp) {
  const ParsedPacket p = expect_ok(v6f(kProtoUdp, udp(5353, 5353, 30)),
                                   {14, 54, 78, 0, kProtoUdp, 5353, 5353});
  EXPECT_EQ(p.ip_version, 6);
  EXPECT_EQ(p.ttl, 33);
  EXPECT_EQ(0, std::memcmp(p.tuple.src, kV6Src, 16));
  EXPECT_EQ(0, std::memcmp(p.tuple.dst, kV6Dst, 16));
  expect_ok(v6f(kProtoIcmpv6, {128, 0, 0, 0, 0, 1}), {14, 54, 46, 0, kProtoIcmpv6, 0, 0});
}

TEST(Parse, Ipv6HopByHopAndFragment) {
  const Bytes hbh_frag = cat(v6opts(44, 0), v6frag(kProtoUdp, 0, true));
  expect_ok(v6f(0, cat(hbh_frag, udp(1, 2, 100, 4000))), {14, 70, 164, kFrag, kProtoUdp, 1, 2});
  // Non-first fragment: the walk stops, proto is the fragment header's next header.
  expect_ok(v6f(0, cat(cat(v6opts(44, 1), v6frag(kProtoTcp, 100, false)), filler(80))),
            {14, 0, 144, kFrag | kMissing, kProtoTcp, 0, 0});
  // An atomic fragment (offset 0, M clear) is a whole datagram: UDP length fully checked.
  expect_ok(v6f(44, cat(v6frag(kProtoUdp, 0, false), udp(1, 2, 10, 4000))),
            {14, 62, 66, kFrag | kBadL4, kProtoUdp, 0, 0});
}

TEST(Parse, Ipv6ExtensionChain) {
  // Routing (24 bytes) -> destination options (8) -> AH (16) -> TCP.
  const Bytes chain = cat(cat(v6opts(60, 2), v6opts(51, 0)), v6ah(kProtoTcp, 2));
  expect_ok(v6f(43, cat(chain, tcp(22, 2222))), {14, 102, 108, 0, kProtoTcp, 22, 2222});
  // ESP ends the walk: what follows is encrypted.
  expect_ok(v6f(0, cat(v6opts(50, 0), filler(40))), {14, 62, 88, 0, 50, 0, 0});
  expect_ok(v6f(60, cat(v6opts(59, 0), filler(8))), {14, 0, 56, kMissing, 59, 0, 0});
  auto chain_of = [](int n) {
    Bytes ext;
    for (int i = 0; i < n; ++i) ext = cat(ext, v6opts(i + 1 == n ? kProtoUdp : 60, 0));
    return v6f(60, cat(ext, udp(9, 10, 0)));
  };
  expect_ok(chain_of(16), {14, 54 + 128, 176, 0, kProtoUdp, 9, 10});
  // Past 16 extension headers the transport header is not looked for; the packet still goes.
  expect_ok(chain_of(17), {14, 0, 184, kMissing | kBadL4, 60, 0, 0});
  expect_ok(v6f(59, Bytes(65535 - 54, 0)), {14, 0, 65535 - 14, kMissing, 59, 0, 0});  // largest
}

TEST(Parse, MalformedL4FlagsOnly) {
  const auto with_doff = [](Bytes t, int words) {
    t[12] = uint8_t(words << 4);
    return t;
  };
  const struct {
    const char* what;
    Bytes frame;
    int flags;
  } cases[] = {
      {"tcp data offset 4", v4f({.proto = kProtoTcp}, tcp(1, 2, 4, 10)), kBadL4},
      {"tcp data offset 0", v4f({.proto = kProtoTcp}, tcp(1, 2, 0, 10)), kBadL4},
      {"tcp header past segment", v4f({.proto = kProtoTcp}, with_doff(tcp(1, 2, 5, 10), 15)), kCutL4},
      {"tcp 19 bytes", v4f({.proto = kProtoTcp}, Bytes(19, 0x50)), kCutL4},
      {"udp length 7", v4f({}, udp(1, 2, 4, 7)), kBadL4},
      {"udp length > payload", v4f({}, udp(1, 2, 4, 13)), kBadL4},
      {"udp 7 bytes", v4f({}, {0, 1, 0, 2, 0, 8, 0}), kCutL4},
      {"v6 tcp data offset 3", v6f(kProtoTcp, tcp(1, 2, 3, 8)), kBadL4},
      {"v6 icmpv6 2 bytes", v6f(kProtoIcmpv6, {1, 2}), kCutL4},
      // First fragments (MF set, offset 0) too short for their transport header (RFC 1858).
      {"tcp first fragment, 8 bytes", v4f({.proto = kProtoTcp, .frag = 0x2000}, Bytes(8, 0)), kFrag | kCutL4},
      {"tcp first fragment, 16 bytes", v4f({.proto = kProtoTcp, .frag = 0x2000}, Bytes(16, 0)), kFrag | kCutL4},
      {"tcp first fragment, header past it", v4f({.proto = kProtoTcp, .frag = 0x2000}, with_doff(tcp(1, 2, 5, 8), 8)),
       kFrag | kCutL4},
      {"tcp first fragment, data offset 4", v4f({.proto = kProtoTcp, .frag = 0x2000}, tcp(1, 2, 4, 8)), kFrag | kBadL4},
      {"udp first fragment, 4 bytes", v4f({.frag = 0x2000}, {0, 1, 0, 2}), kFrag | kCutL4},
      {"udp first fragment, length 7", v4f({.frag = 0x2000}, udp(1, 2, 8, 7)), kFrag | kBadL4},
  };
  for (const auto& c : cases) {
    const uint8_t v = c.frame[13] == 0x00 ? 4 : 6;
    const int l3_len = int(c.frame.size()) - 14;
    const int proto = v == 4 ? c.frame[14 + 9] : c.frame[14 + 6];
    expect_ok(c.frame, {14, v == 4 ? 34 : 54, l3_len, c.flags, proto, 0, 0}, c.what);
  }
  // Boundaries that are fine: TCP header filling the segment exactly, UDP length == payload.
  expect_ok(v4f({.proto = kProtoTcp}, tcp(3, 4, 15)), {14, 34, 80, 0, kProtoTcp, 3, 4});
  expect_ok(v4f({}, udp(3, 4, 0)), {14, 34, 28, 0, kProtoUdp, 3, 4});
  // Nothing after the IP header at all: no transport header to point at, and it is malformed.
  expect_ok(v4f({}, {}), {14, 0, 20, kMissing | kCutL4, kProtoUdp, 0, 0});
  expect_ok(v6f(0, v6opts(kProtoTcp, 0)), {14, 0, 48, kMissing | kCutL4, kProtoTcp, 0, 0});
  expect_ok(v4f({.proto = kProtoTcp, .frag = 0x2000}, {}), {14, 0, 20, kFrag | kMissing | kCutL4, kProtoTcp, 0, 0});
}

TEST(Parse, Ipv4OptionsWellFramed) {
  const struct {
    const char* what;
    Bytes opts;
  } cases[] = {
      {"NOPs and end of list", {1, 1, 1, 0}},
      {"router alert", {148, 4, 0, 0}},
      {"record route, then end of list", {7, 7, 4, 0, 0, 0, 0, 0}},
      {"bytes after end of list are padding", {0, 0xFF, 0x00, 0x33}},
      {"an option ending at the header's end", {1, 1, 1, 1, 68, 8, 5, 0, 0, 0, 0, 0}},
      {"one option of 40 bytes", cat({7, 40, 4}, Bytes(37, 0))},
  };
  for (const auto& c : cases) {
    const int hdr = 20 + int(c.opts.size());
    expect_ok(v4opts(c.opts), {14, 14 + hdr, hdr + 8, kFlagIpv4Options, kProtoUdp, 1, 2}, c.what);
  }
}

TEST(Parse, Ipv6RoutingHeaders) {
  // Type 0 with no segments left is ignored (RFC 5095 3), as is another type with segments left.
  expect_ok(v6f(43, cat(v6rh(kProtoUdp, 0, 0), udp(1, 2, 0))), {14, 78, 72, 0, kProtoUdp, 1, 2});
  expect_ok(v6f(43, cat(v6rh(kProtoUdp, 2, 1), udp(1, 2, 0))), {14, 78, 72, 0, kProtoUdp, 1, 2});
  // A routing header in a later fragment's bytes is payload, not a header: never read.
  expect_ok(v6f(44, cat(v6frag(43, 10, false), v6rh(kProtoUdp, 0, 1))), {14, 0, 72, kFrag | kMissing, 43, 0, 0});
}

// ---- every drop reason ----

struct DropCase {
  const char* what;
  Bytes frame;
  size_t caplen;  // SIZE_MAX: the whole frame
  DropReason want;
};
constexpr size_t kAll = SIZE_MAX;
constexpr DropReason kTrunc = DropReason::kTruncated;

void check_drops(const std::vector<DropCase>& cases) {
  for (const DropCase& c : cases) {
    ParsedPacket p;
    EXPECT_EQ(parse(c.frame, &p, c.caplen), c.want)
        << c.what << " (caplen " << std::min(c.caplen, c.frame.size()) << ")";
  }
}

TEST(ParseDrop, EthernetAndVlan) {
  ParsedPacket p;
  EXPECT_EQ(parse_packet(nullptr, 0, &p), kTrunc);
  std::vector<DropCase> cases;
  for (size_t cap = 0; cap < 14; ++cap) cases.push_back({"short ethernet", kV4Udp, cap, kTrunc});
  const Bytes one = cat(eth(kEthTypeIpv4, {{kEthTypeVlan, 5}}), ipv4({}, udp(1, 2, 0)));
  const Bytes two = cat(eth(kEthTypeIpv4, {{kEthTypeQinQ, 1}, {kEthTypeVlan, 2}}), ipv4({}, {}));
  for (size_t cap = 14; cap < 18; ++cap) cases.push_back({"cut 802.1Q tag", one, cap, kTrunc});
  for (size_t cap = 18; cap < 22; ++cap) cases.push_back({"cut inner tag", two, cap, kTrunc});
  cases.push_back({"tag then no IPv4 header", one, 18, kTrunc});
  const DropReason kNotIp = DropReason::kNotIp;
  cases.push_back({"ARP", cat(eth(0x0806), filler(28)), kAll, kNotIp});
  cases.push_back({"ARP, header only", eth(0x0806), kAll, kNotIp});
  cases.push_back({"LLDP", cat(eth(0x88CC), filler(40)), kAll, kNotIp});
  cases.push_back({"tagged ARP", cat(eth(0x0806, {{kEthTypeVlan, 5}}), filler(28)), kAll, kNotIp});
  // 802.3: the type field is a length, even when an IPv4 header follows.
  cases.push_back({"802.3", cat(eth(0x05DC), ipv4({}, udp(1, 2, 0))), kAll, kNotIp});
  cases.push_back({"three tags", cat(eth(kEthTypeIpv4, {{kEthTypeQinQ, 1}, {kEthTypeVlan, 2},
                                                        {kEthTypeVlan, 3}}), ipv4({}, {})),
                   kAll, kNotIp});
  check_drops(cases);
}

TEST(ParseDrop, Ipv4) {
  std::vector<DropCase> cases;
  for (size_t cap = 14; cap < 34; ++cap) cases.push_back({"cut IPv4 header", kV4Udp, cap, kTrunc});
  const DropReason kVer = DropReason::kBadVersion, kLen = DropReason::kBadTotalLength;
  cases.push_back({"IPv6 in 0x0800", cat(eth(kEthTypeIpv4), ipv6(17, udp(1, 2, 0))), kAll, kVer});
  cases.push_back({"version 5", v4f({.version = 5}, udp(1, 2, 0)), kAll, kVer});
  for (int ihl = 0; ihl < 5; ++ihl)
    cases.push_back({"IHL < 5", v4f({.ihl = ihl}, udp(1, 2, 20)), kAll, DropReason::kBadIhl});
  // IHL 15 (60 bytes) but only 40 or 59 bytes of IP captured.
  const Bytes long_hdr = v4f({.ihl = 15}, udp(1, 2, 0));
  cases.push_back({"IHL beyond caplen", long_hdr, 14 + 40, kTrunc});
  cases.push_back({"IHL beyond caplen", long_hdr, 14 + 59, kTrunc});
  cases.push_back({"total length 19", v4f({.total_len = 19}, udp(1, 2, 0)), kAll, kLen});
  cases.push_back({"total length 0", v4f({.total_len = 0}, udp(1, 2, 0)), kAll, kLen});
  cases.push_back({"total 20 < IHL 6", v4f({.ihl = 6, .total_len = 20}, {}), kAll, kLen});
  cases.push_back({"total length > caplen", v4f({.total_len = 29}, udp(1, 2, 0)), kAll, kTrunc});
  cases.push_back({"datagram cut short", kV4Udp, kV4Udp.size() - 1, kTrunc});
  // Corrupt the checksum itself, TOS, TTL, the last address byte, and (covered too) an option.
  for (int byte : {10, 11, 1, 8, 19}) {
    Bytes f = kV4Udp;
    f[14 + byte] ^= 0x04;
    cases.push_back({"bad checksum", f, kAll, DropReason::kBadChecksum});
  }
  Bytes opt = v4f({.ihl = 7}, udp(1, 2, 0));
  opt[14 + 22] ^= 0x80;
  cases.push_back({"bad checksum in options", opt, kAll, DropReason::kBadChecksum});
  // Option lists that cannot be read to their end (RFC 791): every app drops them.
  const DropReason kOpt = DropReason::kBadIpOptions;
  cases.push_back({"option length 0", v4opts({148, 0, 0, 0}), kAll, kOpt});
  cases.push_back({"option length 1", v4opts({148, 1, 0, 0}), kAll, kOpt});
  cases.push_back({"option past the header", v4opts({148, 5, 0, 0}), kAll, kOpt});
  cases.push_back({"option past the header after NOPs", v4opts({1, 1, 7, 3}), kAll, kOpt});
  cases.push_back({"no length byte at the header's end", v4opts({1, 1, 1, 148}), kAll, kOpt});
  cases.push_back({"second option past the header", v4opts({148, 4, 0, 0, 7, 9, 0, 0}), kAll, kOpt});
  cases.push_back({"40-byte header, option of 41", v4opts(cat({7, 41, 4}, Bytes(37, 0))), kAll, kOpt});
  check_drops(cases);
}

TEST(ParseDrop, Ipv6) {
  std::vector<DropCase> cases;
  const Bytes v6 = v6f(kProtoUdp, udp(1, 2, 0));
  for (size_t cap = 14; cap < 54; ++cap) cases.push_back({"cut IPv6 header", v6, cap, kTrunc});
  cases.push_back({"IPv4 in 0x86DD", cat(eth(kEthTypeIpv6), ipv4({}, udp(1, 2, 20))), kAll,
                   DropReason::kBadVersion});
  cases.push_back({"version 4", cat(eth(kEthTypeIpv6), ipv6(17, udp(1, 2, 0), -1, 4)), kAll,
                   DropReason::kBadVersion});
  cases.push_back({"payload > caplen", v6f(kProtoUdp, udp(1, 2, 0), 9), kAll, kTrunc});
  cases.push_back({"jumbogram", v6f(17, udp(1, 2, 0), 0), kAll, DropReason::kBadTotalLength});
  // A datagram ending past byte 65535 of the frame does not fit ParsedPacket's 16-bit fields.
  cases.push_back({"ends past 64 KiB", v6f(59, Bytes(65535 - 53, 0)), kAll,
                   DropReason::kBadTotalLength});
  // Extension headers that run past the payload, even when the frame has more (padding) bytes.
  cases.push_back({"hop-by-hop overrun", v6f(0, v6opts(kProtoUdp, 2), 16), kAll, kTrunc});
  cases.push_back({"hop-by-hop overrun", v6f(0, v6opts(kProtoUdp, 2), 16), 14 + 56, kTrunc});
  cases.push_back({"fragment header cut", v6f(44, v6frag(6, 0, true), 6), kAll, kTrunc});
  cases.push_back({"AH overrun", v6f(51, v6ah(6, 4), 20), kAll, kTrunc});
  cases.push_back({"1-byte ext header", v6f(60, {17}), kAll, kTrunc});
  cases.push_back({"second ext header overrun", v6f(0, cat(v6opts(43, 0), v6opts(6, 1)), 16),
                   kAll, kTrunc});
  // A type 0 routing header with segments left (RFC 5095), alone or after another header.
  const DropReason kRh0 = DropReason::kIpv6Rh0;
  cases.push_back({"RH0, 1 segment left", v6f(43, cat(v6rh(kProtoUdp, 0, 1), udp(1, 2, 0))), kAll, kRh0});
  cases.push_back({"RH0 after hop-by-hop", v6f(0, cat(v6opts(43, 0), cat(v6rh(kProtoTcp, 0, 255), tcp(1, 2)))),
                   kAll, kRh0});
  cases.push_back({"RH0 before a first fragment", v6f(43, cat(v6rh(44, 0, 1), cat(v6frag(17, 0, true), udp(1, 2, 0)))),
                   kAll, kRh0});
  check_drops(cases);
}

// ---- checksum ----

uint16_t load16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
void store16(uint8_t* p, uint16_t v) { p[0] = uint8_t(v >> 8), p[1] = uint8_t(v); }
// Reference checksum of an IPv4 header with its checksum field taken as zero.
uint16_t ref_header_checksum(const uint8_t* h, size_t len) {
  uint8_t copy[60];
  std::memcpy(copy, h, len);
  copy[10] = copy[11] = 0;
  return ref_checksum(copy, len);
}

TEST(Checksum, KnownHeader) {
  uint8_t h[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                   0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
  EXPECT_TRUE(ipv4_checksum_ok(h, 20));
  EXPECT_EQ(ipv4_header_checksum(h, 20), 0xb861);
  h[10] = h[11] = 0;
  EXPECT_FALSE(ipv4_checksum_ok(h, 20));
  EXPECT_EQ(ipv4_header_checksum(h, 20), 0xb861);
  EXPECT_EQ(csum_fold(0x0001FFFEu), 0xFFFF);
  EXPECT_EQ(csum_fold(0xFFFFFFFFu), 0xFFFF);
  EXPECT_EQ(csum_partial(h, 3), 0x4500u + 0x0000u);  // odd length: last byte is the high half
}

// ipv4_decrement_ttl on random valid headers must give exactly the checksum a full recompute
// gives. A quarter of the headers are plain; the others are steered (through the identification
// word) onto RFC 1624's edge cases: a checksum of 0x0000 after the update, 0x0000 before it, and
// 0xFFFF before it (the other one's-complement zero, which some senders produce).
TEST(Checksum, DecrementTtlMatchesRecompute) {
  std::mt19937_64 rng(0x7A4D3C);
  int zero_after = 0;
  for (int i = 0; i < 100000; ++i) {
    uint8_t h[60];
    const int ihl = 5 + static_cast<int>(rng() % 11), len = ihl * 4;
    for (int j = 0; j < len; ++j) h[j] = static_cast<uint8_t>(rng());
    h[0] = static_cast<uint8_t>(0x40 | ihl);
    h[8] = static_cast<uint8_t>(2 + rng() % 254);
    const int mode = i % 4;
    if (mode != 0) {
      // Choose the identification word so that the other words sum to 0xFFFF (checksum 0).
      store16(h + 4, 0);
      if (mode == 1) --h[8];
      const uint16_t rest = static_cast<uint16_t>(~ref_header_checksum(h, len));
      store16(h + 4, static_cast<uint16_t>(0xFFFF - rest));
      if (mode == 1) ++h[8];
    }
    store16(h + 10, mode == 3 ? 0xFFFF : ref_header_checksum(h, len));
    if (mode == 2) {
      ASSERT_EQ(load16(h + 10), 0x0000);
    }
    ASSERT_TRUE(ipv4_checksum_ok(h, len));
    ASSERT_EQ(ipv4_header_checksum(h, len), ref_header_checksum(h, len));

    uint8_t before[60];
    std::memcpy(before, h, len);
    ipv4_decrement_ttl(h);
    ASSERT_EQ(h[8], before[8] - 1);
    ASSERT_TRUE(ipv4_checksum_ok(h, len)) << "header " << i << " mode " << mode;
    ASSERT_EQ(load16(h + 10), ref_header_checksum(h, len)) << "header " << i << " mode " << mode;
    for (int j = 0; j < len; ++j)
      if (j != 8 && j != 10 && j != 11) {
        ASSERT_EQ(h[j], before[j]) << j;
      }
    zero_after += load16(h + 10) == 0;
  }
  EXPECT_GE(zero_after, 25000);  // every mode-1 header
}

// ---- flow hash ----

FiveTuple make_tuple(uint8_t version, const uint8_t* src, const uint8_t* dst, uint16_t sp,
                     uint16_t dp, uint8_t proto) {
  FiveTuple t{{}, {}, sp, dp, proto, version};
  std::memcpy(t.src, src, version == 4 ? 4 : 16);
  std::memcpy(t.dst, dst, version == 4 ? 4 : 16);
  return t;
}

TEST(FlowHash, DeterministicKnownValues) {
  const uint8_t a4[4] = {10, 0, 0, 1}, b4[4] = {192, 168, 1, 2};
  const FiveTuple v4 = make_tuple(4, a4, b4, 1234, 53, kProtoUdp);
  const FiveTuple v6 = make_tuple(6, kV6Src, kV6Dst, 5353, 5353, kProtoUdp);
  FiveTuple copy;
  std::memcpy(&copy, &v4, sizeof(copy));
  EXPECT_EQ(flow_hash(v4), flow_hash(copy));
  // Pinned values: the hash places flows on queues and device shards, so a change is visible.
  EXPECT_EQ(flow_hash(v4), 0x791705b0u);
  EXPECT_EQ(flow_hash(v6), 0xe7dab1cbu);
  // The parser's tuple is the same flow as the hand-built one.
  ParsedPacket p;
  ASSERT_EQ(parse(kV4Udp, &p), DropReason::kNone);
  EXPECT_EQ(flow_hash(p.tuple), flow_hash(v4));
  ASSERT_EQ(parse(cat(eth(kEthTypeIpv6, {{kEthTypeVlan, 9}}), ipv6(kProtoUdp, udp(5353, 5353, 1))),
                  &p), DropReason::kNone);
  EXPECT_EQ(flow_hash(p.tuple), flow_hash(v6));
}

TEST(FlowHash, EveryFieldMatters) {
  std::mt19937_64 rng(42);
  constexpr int kN = 200000;
  std::vector<uint32_t> hashes;
  hashes.reserve(kN);
  int unchanged = 0;
  for (int i = 0; i < kN; ++i) {
    uint8_t s[16], d[16];
    for (int j = 0; j < 16; ++j) s[j] = uint8_t(rng()), d[j] = uint8_t(rng());
    const uint8_t ver = (i & 1) ? 6 : 4;
    const FiveTuple t = make_tuple(ver, s, d, static_cast<uint16_t>(rng()),
                                   static_cast<uint16_t>(rng()), static_cast<uint8_t>(rng()));
    const uint32_t h = flow_hash(t);
    hashes.push_back(h);
    FiveTuple m = t;
    const int addr_len = ver == 4 ? 4 : 16;
    const uint8_t flip = static_cast<uint8_t>(1 + rng() % 255);
    switch (rng() % 6) {
      case 0: m.src[rng() % addr_len] ^= flip; break;
      case 1: m.dst[rng() % addr_len] ^= flip; break;
      case 2: m.src_port ^= flip; break;
      case 3: m.dst_port = static_cast<uint16_t>(m.dst_port ^ (flip << 8)); break;
      case 4: m.proto ^= flip; break;
      default: m.ip_version = ver == 4 ? 6 : 4; break;
    }
    unchanged += flow_hash(m) == h;
  }
  std::sort(hashes.begin(), hashes.end());
  const auto collisions = hashes.end() - std::unique(hashes.begin(), hashes.end());
  std::printf("flow_hash: %d of %d single-field changes kept the hash; %ld collisions\n",
              unchanged, kN, static_cast<long>(collisions));
  EXPECT_LT(unchanged, kN / 1000);
  EXPECT_LT(collisions, kN / 1000);
}

// ---- real captures ----

uint32_t le32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | uint32_t(p[3]) << 24; }

// Minimal classic-pcap reader (little-endian, microsecond or nanosecond magic, Ethernet).
std::vector<Bytes> read_pcap(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const Bytes d((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<Bytes> frames;
  if (d.size() < 24) return frames;
  const uint32_t magic = le32(d.data());
  EXPECT_TRUE(magic == 0xA1B2C3D4u || magic == 0xA1B23C4Du) << path << ": magic " << magic;
  EXPECT_EQ(le32(d.data() + 20), 1u) << path << ": link type is not Ethernet";
  size_t off = 24;
  while (off + 16 <= d.size() && le32(d.data() + off + 8) <= d.size() - off - 16) {
    const uint32_t incl = le32(d.data() + off + 8);
    frames.emplace_back(d.begin() + off + 16, d.begin() + off + 16 + incl);
    off += 16 + incl;
  }
  EXPECT_EQ(off, d.size()) << path << ": trailing or cut-off record";
  return frames;
}

// Independent verdict on the L2/L3 checks, written from the RFCs rather than from parse.cc.
// Sets *ext when an IPv6 extension header follows (whose walk it leaves to the parser).
DropReason ref_verdict(const Bytes& f, size_t* l3, bool* ext) {
  *ext = false;
  if (f.size() < 14) return kTrunc;
  size_t type_at = 12;
  for (int tags = 0; tags < 2 && (load16(&f[type_at]) == 0x8100 || load16(&f[type_at]) == 0x88A8);
       ++tags) {
    if (f.size() < type_at + 6) return kTrunc;
    type_at += 4;
  }
  const uint16_t type = load16(&f[type_at]);
  *l3 = type_at + 2;
  const uint8_t* ip = f.data() + *l3;
  const size_t cap = f.size() - *l3;
  if (type == 0x0800) {
    if (cap < 20) return kTrunc;
    if (ip[0] >> 4 != 4) return DropReason::kBadVersion;
    const size_t hl = (ip[0] & 15) * 4u, tot = load16(ip + 2);
    if (hl < 20) return DropReason::kBadIhl;
    if (hl > cap) return kTrunc;
    if (tot < hl) return DropReason::kBadTotalLength;
    if (tot > cap) return kTrunc;
    if (ref_checksum(ip, hl) != 0) return DropReason::kBadChecksum;
    // RFC 791 options: 0 ends the list, 1 is one byte, any other has a length >= 2 inside it.
    for (size_t i = 20; i < hl && ip[i] != 0; i += ip[i] == 1 ? 1 : ip[i + 1]) {
      if (ip[i] != 1 && (i + 1 == hl || ip[i + 1] < 2 || i + ip[i + 1] > hl)) return DropReason::kBadIpOptions;
    }
    return DropReason::kNone;
  }
  if (type != 0x86DD) return DropReason::kNotIp;
  if (cap < 40) return kTrunc;
  if (ip[0] >> 4 != 6) return DropReason::kBadVersion;
  if (load16(ip + 4) == 0) return DropReason::kBadTotalLength;
  if (40u + load16(ip + 4) > cap) return kTrunc;
  *ext = ip[6] == 0 || ip[6] == 43 || ip[6] == 44 || ip[6] == 50 || ip[6] == 51 || ip[6] == 60;
  return DropReason::kNone;
}

// Checks one real frame against ref_verdict and a direct reading of its header fields.
void check_real_frame(const Bytes& f, DropReason r, const ParsedPacket& p) {
  size_t l3 = 0;
  bool ext = false;
  const DropReason want = ref_verdict(f, &l3, &ext);
  if (want == DropReason::kNone && ext) {
    ASSERT_TRUE(r == DropReason::kNone || r == kTrunc || r == DropReason::kIpv6Rh0);
  } else {
    ASSERT_EQ(r, want);
  }
  if (r != DropReason::kNone) return;
  ASSERT_EQ(p.l3_off, l3);
  ASSERT_LE(p.l3_off + p.l3_len, f.size());
  const uint8_t* ip = f.data() + l3;
  if (p.ip_version == 4) {
    ASSERT_EQ(ref_checksum(ip, (ip[0] & 15) * 4u), 0);  // the header sums to 0xFFFF
    ASSERT_EQ(p.l3_len, load16(ip + 2));
    ASSERT_EQ(p.ttl, ip[8]);
    ASSERT_EQ(p.tuple.proto, ip[9]);
    ASSERT_EQ(0, std::memcmp(p.tuple.src, ip + 12, 4));
    ASSERT_EQ(0, std::memcmp(p.tuple.dst, ip + 16, 4));
  } else {
    ASSERT_EQ(p.ip_version, 6);
    ASSERT_EQ(p.l3_len, 40 + load16(ip + 4));
    ASSERT_EQ(p.ttl, ip[7]);
    if (!ext) {
      ASSERT_EQ(p.tuple.proto, ip[6]);
    }
    ASSERT_EQ(0, std::memcmp(p.tuple.src, ip + 8, 16));
    ASSERT_EQ(0, std::memcmp(p.tuple.dst, ip + 24, 16));
  }
  if ((p.tuple.proto == kProtoTcp || p.tuple.proto == kProtoUdp) &&
      !(p.flags & (kFlagL4Missing | kFlagL4Malformed))) {
    ASSERT_GT(p.l4_off, p.l3_off);
    ASSERT_EQ(p.tuple.src_port, load16(f.data() + p.l4_off));
    ASSERT_EQ(p.tuple.dst_port, load16(f.data() + p.l4_off + 2));
  } else {
    ASSERT_EQ(p.tuple.src_port | p.tuple.dst_port, 0);
  }
}

TEST(ParsePcap, RealCaptures) {
  for (const char* name : {"example.pcap", "many-protocols.pcap", "tls2.pcap"}) {
    SCOPED_TRACE(name);
    const auto frames = read_pcap(test::source_path(std::string("data/pcap/") + name));
    ASSERT_FALSE(frames.empty());
    std::array<size_t, kDropReasonCount> count{};
    size_t flag_count[6] = {}, v6 = 0;
    for (size_t i = 0; i < frames.size(); ++i) {
      ParsedPacket p;
      const DropReason r = parse(frames[i], &p);
      ++count[static_cast<size_t>(r)];
      for (int b = 0; b < 6 && r == DropReason::kNone; ++b) flag_count[b] += (p.flags >> b) & 1;
      v6 += p.ip_version == 6;
      check_real_frame(frames[i], r, p);
      ASSERT_FALSE(HasFatalFailure()) << "packet " << i;
    }
    size_t total = 0;
    std::printf("%s: %zu packets, %zu accepted as IPv6\n", name, frames.size(), v6);
    for (int r = 0; r < kDropReasonCount; ++r) {
      total += count[r];
      if (count[r]) std::printf("  %-17s %zu\n", drop_reason_name(DropReason(r)), count[r]);
    }
    std::printf("  flags: options %zu, fragment %zu, l4_missing %zu, l4_malformed %zu, vlan %zu, l4_truncated %zu\n",
                flag_count[0], flag_count[1], flag_count[2], flag_count[3], flag_count[4], flag_count[5]);
    EXPECT_EQ(total, frames.size());
    EXPECT_GT(count[0], frames.size() / 2);  // real traffic: most of it is forwardable IP
  }
}

}  // namespace
}  // namespace tandem
