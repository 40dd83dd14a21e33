// libFuzzer target for parse_packet: the frame is the fuzzer's input, which libFuzzer hands over
// in a heap block of exactly that size, so ASan catches any read past the capture. Any violated
// invariant aborts, and libFuzzer saves the input as a crash-* file.
// tests/parse_fuzz_test.cc runs the same checks as a deterministic test under any compiler.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/parse.h"

namespace {

using tandem::DropReason;
using tandem::ParsedPacket;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "parse_fuzz: invariant violated: %s\n", what);
  std::abort();
}

bool same(const ParsedPacket& a, const ParsedPacket& b) {
  return a.l3_off == b.l3_off && a.l4_off == b.l4_off && a.l3_len == b.l3_len &&
         a.vlan_tci == b.vlan_tci && a.ip_version == b.ip_version &&
         a.vlan_count == b.vlan_count && a.flags == b.flags && a.ttl == b.ttl &&
         std::memcmp(a.tuple.src, b.tuple.src, 16) == 0 &&
         std::memcmp(a.tuple.dst, b.tuple.dst, 16) == 0 && a.tuple.src_port == b.tuple.src_port &&
         a.tuple.dst_port == b.tuple.dst_port && a.tuple.proto == b.tuple.proto &&
         a.tuple.ip_version == b.tuple.ip_version;
}

// Parses a copy of exactly n bytes (so that ASan bounds the read at n, not at the input's size).
DropReason parse_copy(const uint8_t* data, size_t n, ParsedPacket* p) {
  std::vector<uint8_t> exact(data, data + n);
  return tandem::parse_packet(exact.data(), static_cast<uint32_t>(n), p);
}

void check(const uint8_t* data, size_t size, DropReason r, const ParsedPacket& p) {
  switch (r) {
    case DropReason::kNone: break;
    case DropReason::kTruncated: case DropReason::kNotIp: case DropReason::kBadVersion:
    case DropReason::kBadIhl: case DropReason::kBadTotalLength: case DropReason::kBadChecksum:
      return;
    default: fail("a reason the parser never gives");
  }
  if (p.ip_version != 4 && p.ip_version != 6) fail("ip_version");
  if (p.tuple.ip_version != p.ip_version) fail("tuple.ip_version");
  if (p.vlan_count > 2 || p.l3_off != tandem::kEthHeaderLen + 4u * p.vlan_count) fail("l3_off");
  if (bool(p.flags & tandem::kFlagVlan) != (p.vlan_count > 0)) fail("vlan flag");
  if (size_t(p.l3_off) + p.l3_len > size) fail("l3_off + l3_len > caplen");
  if (p.l3_len < (p.ip_version == 4 ? 20 : 41)) fail("l3_len too small");
  if (p.flags & tandem::kFlagL4Missing) {
    if (p.l4_off != 0) fail("l4_off with L4Missing");
  } else {
    if (p.l4_off >= size) fail("l4_off >= caplen");
    if (p.l4_off < p.l3_off + (p.ip_version == 4 ? 20 : 40) || p.l4_off >= p.l3_off + p.l3_len)
      fail("l4_off outside the L3 payload");
  }
  const bool may_have_ports =
      (p.tuple.proto == tandem::kProtoTcp || p.tuple.proto == tandem::kProtoUdp) &&
      !(p.flags & (tandem::kFlagL4Missing | tandem::kFlagL4Malformed));
  if (!may_have_ports && (p.tuple.src_port | p.tuple.dst_port)) fail("ports without TCP/UDP");
  if (p.ip_version == 4) {
    for (int i = 4; i < 16; ++i)
      if (p.tuple.src[i] | p.tuple.dst[i]) fail("IPv4 tuple not zero-filled");
  }
  // Bytes after the datagram are padding: cutting them off must not change anything.
  ParsedPacket q;
  std::memset(static_cast<void*>(&q), 0xA5, sizeof(q));  // the parser must zero it
  if (parse_copy(data, size_t(p.l3_off) + p.l3_len, &q) != DropReason::kNone || !same(p, q))
    fail("result changed when cut at the datagram's end");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 0xFFFFFFFFu) return 0;
  ParsedPacket p;
  const DropReason r = tandem::parse_packet(data, static_cast<uint32_t>(size), &p);
  check(data, size, r, p);
  return 0;
}
