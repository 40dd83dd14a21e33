// A deterministic mutation fuzzer for parse_packet, run as an ordinary test so that it also runs
// under gcc and in every sanitizer build (fuzz/parse_fuzz.cc is the coverage-guided libFuzzer
// version of the same checks). Seeds are the frames of the real captures plus hand-made frames
// exercising the rarer paths (options, fragments, tags, IPv6 extension headers).
//
// Every mutated frame is parsed from a heap buffer of exactly `caplen` bytes, so an ASan build
// reports any read past the capture.
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
#include "core/parse.h"
#include "fuzz/parse_invariants.h"
#include "tests/bytes.h"
#include "tests/test_util.h"

namespace tandem {
namespace {

using test::Bytes;
using test::cat;
using test::put16;

// ---- seeds ----

uint32_t le32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | uint32_t(p[3]) << 24; }

// Minimal classic-pcap reader (little-endian, microsecond or nanosecond magic).
void read_pcap_frames(const std::string& path, std::vector<Bytes>* out) {
  std::ifstream in(path, std::ios::binary);
  const Bytes d((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GE(d.size(), 24u) << path;
  const uint32_t magic = le32(d.data());
  ASSERT_TRUE(magic == 0xA1B2C3D4u || magic == 0xA1B23C4Du) << path;
  size_t off = 24;
  while (off + 16 <= d.size() && le32(d.data() + off + 8) <= d.size() - off - 16) {
    const uint32_t incl = le32(d.data() + off + 8);
    out->emplace_back(d.begin() + off + 16, d.begin() + off + 16 + incl);
    off += 16 + incl;
  }
}

void set_ipv4_checksum(uint8_t* ip, uint32_t hdr_len) {
  const uint16_t c = ipv4_header_checksum(ip, hdr_len);
  ip[10] = uint8_t(c >> 8);
  ip[11] = uint8_t(c);
}

Bytes eth(uint16_t type, std::initializer_list<uint16_t> tpids = {}) {
  Bytes b(12, 0x02);
  for (uint16_t t : tpids) put16(b, t), put16(b, 0x0064);
  put16(b, type);
  return b;
}
Bytes ipv4(uint8_t proto, int ihl, uint16_t frag, const Bytes& l4) {
  const uint16_t tot = uint16_t(ihl * 4 + l4.size());
  const uint8_t hdr[20] = {uint8_t(0x40 | ihl), 0, uint8_t(tot >> 8), uint8_t(tot), 0x12, 0x34,
                           uint8_t(frag >> 8), uint8_t(frag), 64, proto, 0, 0, 10, 1, 2, 3,
                           172, 16, 0, 9};
  Bytes b(ihl * 4u, 1);  // NOP options after the fixed header
  std::copy(hdr, hdr + 20, b.begin());
  set_ipv4_checksum(b.data(), ihl * 4);
  return cat(b, l4);
}
Bytes ipv6(uint8_t next, const Bytes& payload) {
  Bytes b = {0x60, 0, 0, 0};
  put16(b, uint16_t(payload.size()));
  b.push_back(next);
  b.push_back(64);
  for (int i = 0; i < 32; ++i) b.push_back(uint8_t(i * 7));
  return cat(b, payload);
}
Bytes udp(size_t payload) {
  Bytes b(8 + payload, 0x55);
  const uint16_t len = uint16_t(8 + payload);
  const uint8_t hdr[8] = {0x30, 0x39, 0x00, 0x35, uint8_t(len >> 8), uint8_t(len)};
  std::copy(hdr, hdr + 8, b.begin());
  return b;
}
Bytes tcp(int words, size_t payload) {  // words >= 5
  Bytes b(words * 4u + payload, 1);
  const uint8_t hdr[20] = {0xC3, 0x50, 0x01, 0xBB, 0, 0, 0, 1, 0, 0, 0, 0, uint8_t(words << 4),
                           0x10, 0xFF, 0xFF};
  std::copy(hdr, hdr + 20, b.begin());
  return b;
}
// IPv4 with the given options (a multiple of 4 bytes) in place of the NOPs.
Bytes ipv4_opts(uint8_t proto, const Bytes& opts, const Bytes& l4) {
  Bytes b = ipv4(proto, 5 + int(opts.size() / 4), 0, l4);
  std::copy(opts.begin(), opts.end(), b.begin() + 20);
  set_ipv4_checksum(b.data(), uint32_t(20 + opts.size()));
  return b;
}
Bytes ext(uint8_t next, uint8_t len_units) {  // hop-by-hop, routing or destination options
  Bytes b((len_units + 1) * 8u, 0);
  b[0] = next;
  b[1] = len_units;
  return b;
}

std::vector<Bytes> hand_made_seeds() {
  const Bytes frag_hdr = {17, 0, 0x00, 0x01, 0, 0, 0, 7};   // offset 0, M set
  const Bytes frag_late = {6, 0, 0x01, 0x00, 0, 0, 0, 7};   // offset 32
  const Bytes ah = {6, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2};    // (1 + 2) * 4 bytes
  return {
      cat(eth(kEthTypeIpv4), ipv4(kProtoUdp, 5, 0, udp(12))),
      cat(eth(kEthTypeIpv4), ipv4(kProtoTcp, 9, 0x4000, tcp(8, 20))),
      cat(eth(kEthTypeIpv4), ipv4(kProtoIcmp, 5, 0, Bytes{8, 0, 0xF7, 0xFF, 0, 0, 0, 0})),
      cat(eth(kEthTypeIpv4, {kEthTypeVlan}), ipv4(kProtoTcp, 5, 0, tcp(5, 0))),
      cat(eth(kEthTypeIpv4, {kEthTypeQinQ, kEthTypeVlan}), ipv4(kProtoUdp, 6, 0, udp(3))),
      cat(eth(kEthTypeIpv4), ipv4(kProtoUdp, 5, 0x2000, udp(40))),        // first fragment
      cat(eth(kEthTypeIpv4), ipv4(kProtoUdp, 5, 0x00B9, Bytes(40, 0xAB))), // last fragment
      cat(eth(kEthTypeIpv6), ipv6(kProtoUdp, udp(10))),
      cat(eth(kEthTypeIpv6, {kEthTypeVlan, kEthTypeQinQ}), ipv6(kProtoTcp, tcp(6, 4))),
      cat(eth(kEthTypeIpv6), ipv6(kProtoIcmpv6, Bytes{128, 0, 0, 0, 0, 1, 0, 1})),
      cat(eth(kEthTypeIpv6), ipv6(0, cat(cat(ext(44, 0), frag_hdr), udp(16)))),
      cat(eth(kEthTypeIpv6), ipv6(43, cat(cat(ext(60, 1), ext(51, 0)), cat(ah, tcp(5, 8))))),
      cat(eth(kEthTypeIpv6), ipv6(44, cat(frag_late, Bytes(24, 0xCD)))),
      cat(eth(kEthTypeIpv6), ipv6(60, cat(ext(59, 0), Bytes(8, 0)))),
      cat(eth(kEthTypeIpv6), ipv6(50, Bytes(32, 0xEE))),
      cat(eth(0x0806), Bytes(28, 0x01)),
      // Options with lengths (router alert, record route), and a type 0 routing header with no
      // segments left: the mutations reach the option walk and RH0's check from both sides.
      cat(eth(kEthTypeIpv4), ipv4_opts(kProtoUdp, {148, 4, 0, 0, 7, 7, 4, 0, 0, 0, 0, 0}, udp(4))),
      cat(eth(kEthTypeIpv6), ipv6(43, cat(ext(kProtoUdp, 2), udp(8)))),
      cat(eth(kEthTypeIpv6, {kEthTypeVlan}), ipv6(43, cat(ext(kProtoTcp, 0), tcp(5, 0)))),
  };
}

// ---- invariants ----

// Returns an empty string when the result is consistent, else what is wrong.
std::string check(const Bytes& frame, DropReason r, const ParsedPacket& p, std::mt19937_64& rng) {
  if (const char* what = fuzz::check_parse_invariants(frame.data(), frame.size(), r, p)) return what;
  if (r != DropReason::kNone) return "";
  // Appending junk after the datagram must not change anything either.
  ParsedPacket q;
  Bytes longer = frame;
  for (size_t i = 0, n = 1 + rng() % 40; i < n; ++i) longer.push_back(uint8_t(rng()));
  std::memset(static_cast<void*>(&q), 0xA5, sizeof(q));  // the parser must zero it
  if (fuzz::parse_exact(longer.data(), longer.size(), &q) != DropReason::kNone || !fuzz::same(p, q))
    return "result changed by trailing bytes";
  return "";
}

// ---- mutations ----

constexpr uint16_t kWords[] = {0x0000, 0xFFFF, 0x0800, 0x86DD, 0x8100, 0x88A8, 0x0806, 0x05FF,
                               0x0600, 0x0014, 0x0013, 0x0028, 0x0001, 0x2000, 0x4000, 0x1FFF};
constexpr uint8_t kBytes[] = {0x00, 0xFF, 0x45, 0x46, 0x4F, 0x44, 0x60, 0x50, 0x06, 0x11, 0x01,
                              0x3A, 0x00, 0x2B, 0x2C, 0x32, 0x33, 0x3B, 0x3C, 0x80, 0x7F, 0x08};

// Positions near the front (the headers) are picked far more often than payload positions.
size_t pick_pos(std::mt19937_64& rng, size_t size) {
  return (rng() % 4 != 0) ? rng() % std::min<size_t>(size, 96) : rng() % size;
}

// Recomputes the IPv4 header checksum when the frame still looks like IPv4, so that mutations
// reach the checks behind the checksum instead of all stopping there.
void fix_ipv4_checksum(Bytes& f) {
  size_t type_at = 12;
  for (int i = 0; i < 2 && f.size() >= type_at + 6; ++i) {
    const uint16_t t = uint16_t(f[type_at] << 8 | f[type_at + 1]);
    if (t != kEthTypeVlan && t != kEthTypeQinQ) break;
    type_at += 4;
  }
  if (f.size() < type_at + 2 || (f[type_at] << 8 | f[type_at + 1]) != kEthTypeIpv4) return;
  const size_t l3 = type_at + 2, hl = (f.size() > l3 ? f[l3] & 15 : 0) * 4u;
  if (hl >= 20 && f.size() >= l3 + hl) set_ipv4_checksum(f.data() + l3, uint32_t(hl));
}

void mutate(Bytes& f, std::mt19937_64& rng) {
  for (int n = 1 + int(rng() % 4); n > 0; --n) {
    if (f.empty()) f.push_back(uint8_t(rng()));
    const size_t pos = pick_pos(rng, f.size());
    switch (rng() % 9) {
      case 0: case 1: f[pos] ^= uint8_t(1u << (rng() % 8)); break;
      case 2: f[pos] = uint8_t(rng()); break;
      case 3: f[pos] = kBytes[rng() % std::size(kBytes)]; break;
      case 4:
        if (pos + 1 < f.size()) {
          uint16_t w = kWords[rng() % std::size(kWords)];
          if (rng() % 3 == 0) w = uint16_t(f.size() - pos + rng() % 9 - 4);  // a near-miss length
          f[pos] = uint8_t(w >> 8), f[pos + 1] = uint8_t(w);
        }
        break;
      case 5: f.resize(rng() % 3 ? pick_pos(rng, f.size()) : rng() % (f.size() + 1)); break;
      case 6: for (size_t i = 0, k = 1 + rng() % 64; i < k; ++i) f.push_back(uint8_t(rng())); break;
      case 7: f.insert(f.begin() + long(pos), size_t(1 + rng() % 8), uint8_t(rng())); break;
      default: {
        const size_t stop = std::min(f.size(), pos + 1 + size_t(rng() % 8));
        f.erase(f.begin() + long(pos), f.begin() + long(stop));
      }
    }
  }
  if (rng() % 4 != 0) fix_ipv4_checksum(f);
}

TEST(ParseFuzz, TruncationsOfSeeds) {
  std::mt19937_64 rng(1);
  for (const Bytes& seed : hand_made_seeds()) {
    for (size_t cap = 0; cap <= seed.size(); ++cap) {
      const Bytes f(seed.begin(), seed.begin() + long(cap));
      ParsedPacket p;
      const DropReason r = fuzz::parse_exact(f.data(), f.size(), &p);
      ASSERT_EQ(check(f, r, p, rng), "") << "caplen " << cap;
      if (cap == seed.size()) {
        EXPECT_TRUE(r == DropReason::kNone || r == DropReason::kNotIp);
      }
    }
  }
}

TEST(ParseFuzz, RandomMutations) {
  std::vector<Bytes> hand = hand_made_seeds(), real;
  for (const char* name : {"example.pcap", "many-protocols.pcap", "tls2.pcap"})
    read_pcap_frames(test::source_path(std::string("data/pcap/") + name), &real);
  ASSERT_FALSE(real.empty());

  std::mt19937_64 rng(0x5EED);
  std::array<size_t, kDropReasonCount> reasons{};
  std::array<size_t, 6> flags{};
  size_t common_path = 0, full_only = 0;  // accepted on the host's common-frame path; accepted by the full parser alone
  constexpr int kIterations = 200000;
  for (int i = 0; i < kIterations; ++i) {
    // Half the inputs start from hand-made seeds: they hold the rare structures.
    Bytes f = (i & 1) ? hand[rng() % hand.size()] : real[rng() % real.size()];
    mutate(f, rng);
    ParsedPacket p;
    const DropReason r = fuzz::parse_exact(f.data(), f.size(), &p);
    ++reasons[size_t(r)];
    {
      const Bytes exact = f;
      ParsedPacket q;
      const bool common = parse_detail::parse_common_ipv4(exact.data(), uint32_t(exact.size()), &q);
      common_path += common;
      full_only += !common && r == DropReason::kNone;
    }
    for (int b = 0; b < 6 && r == DropReason::kNone; ++b) flags[b] += (p.flags >> b) & 1;
    const std::string bad = check(f, r, p, rng);
    if (!bad.empty()) {
      std::string hex;
      for (uint8_t c : f) hex += "0123456789abcdef"[c >> 4], hex += "0123456789abcdef"[c & 15];
      FAIL() << "iteration " << i << ": " << bad << "\nframe (" << f.size() << " bytes): " << hex;
    }
  }
  std::printf("%d mutated frames:\n", kIterations);
  for (int r = 0; r < kDropReasonCount; ++r)
    if (reasons[r]) std::printf("  %-17s %zu\n", drop_reason_name(DropReason(r)), reasons[r]);
  std::printf("  accepted with: options %zu, fragment %zu, l4_missing %zu, l4_malformed %zu, "
              "vlan %zu, l4_truncated %zu\n", flags[0], flags[1], flags[2], flags[3], flags[4], flags[5]);
  // The mutations must reach every outcome, or the fuzzer is not testing what it claims to.
  for (DropReason r : {DropReason::kNone, DropReason::kTruncated, DropReason::kNotIp,
                       DropReason::kBadVersion, DropReason::kBadIhl, DropReason::kBadTotalLength,
                       DropReason::kBadChecksum, DropReason::kBadIpOptions, DropReason::kIpv6Rh0})
    EXPECT_GT(reasons[size_t(r)], 100u) << drop_reason_name(r);
  for (size_t b = 0; b < flags.size(); ++b) EXPECT_GT(flags[b], 100u) << "flag bit " << b;
  // Both of the host's paths are reached (check() compares every frame's result with the full
  // parser's).
  std::printf("  accepted on the common-frame path %zu, by the full parser only %zu\n", common_path, full_only);
  EXPECT_GT(common_path, 1000u);
  EXPECT_GT(full_only, 1000u);
}

}  // namespace
}  // namespace tandem
