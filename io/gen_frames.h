// What both traffic generators (io/traffic_gen.cc, the IPv4 router's; io/flow_traffic.cc, the
// other apps') do alike: write a frame's headers, pick the flow of each packet and stamp frames as
// on a saturated link. One implementation, so that the two make their frames the same way.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/byte_order.h"
#include "core/checksum.h"
#include "core/parse.h"
#include "core/rng.h"

namespace tandem::gen {

// Header lengths without options (Ethernet: kEthHeaderLen, core/parse.h).
inline constexpr uint32_t kIpv4Len = 20, kIpv6Len = 40, kUdpLen = 8, kTcpLen = 20;

inline uint32_t l4_header_len(uint8_t proto) { return proto == kProtoTcp ? kTcpLen : kUdpLen; }

inline void write_eth(uint8_t* p, const uint8_t dst[6], const uint8_t src[6], uint32_t type) {
  std::memcpy(p, dst, 6);
  std::memcpy(p + 6, src, 6);
  store_be16(p + 12, type);
}

// An IPv4 header without options (TTL 64, DF, identification `id`, checksum set) for a datagram of
// `total_len` bytes; addresses in host order. Returns the pseudo-header's sum for the L4 checksum.
inline uint32_t write_ipv4(uint8_t* ip, uint32_t total_len, uint32_t id, uint8_t proto, uint32_t src, uint32_t dst) {
  ip[0] = 0x45;
  ip[1] = 0;
  store_be16(ip + 2, total_len);
  store_be16(ip + 4, id & 0xFFFF);
  store_be16(ip + 6, 0x4000);  // DF
  ip[8] = 64;
  ip[9] = proto;
  store_be16(ip + 10, 0);
  store_be32(ip + 12, src);
  store_be32(ip + 16, dst);
  store_be16(ip + 10, ipv4_header_checksum(ip, kIpv4Len));
  return csum_partial(ip + 12, 8, proto + total_len - kIpv4Len);
}

// An IPv6 header (hop limit 64) for `payload_len` bytes after it; addresses in network order.
// Returns the pseudo-header's sum for the L4 checksum.
inline uint32_t write_ipv6(uint8_t* ip, uint32_t payload_len, uint8_t proto, const uint8_t src[16],
                           const uint8_t dst[16]) {
  store_be32(ip, 6u << 28);
  store_be16(ip + 4, payload_len);
  ip[6] = proto;
  ip[7] = 64;
  std::memcpy(ip + 8, src, 16);
  std::memcpy(ip + 24, dst, 16);
  return csum_partial(ip + 8, 32, proto + payload_len);
}

// A UDP header for a datagram of `l4_len` bytes, or a TCP header (sequence and acknowledgement
// numbers, ACK, window 65535), checksum 0 for now. Returns the header's length.
inline uint32_t write_l4_header(uint8_t* l4, uint8_t proto, uint32_t l4_len, uint16_t sport, uint16_t dport,
                                uint32_t seq, uint32_t ack) {
  store_be16(l4, sport);
  store_be16(l4 + 2, dport);
  if (proto == kProtoTcp) {
    store_be32(l4 + 4, seq);
    store_be32(l4 + 8, ack);
    l4[12] = 0x50;  // data offset 5 words
    l4[13] = 0x10;  // ACK
    store_be16(l4 + 14, 0xFFFF);
    store_be16(l4 + 16, 0);
    store_be16(l4 + 18, 0);
    return kTcpLen;
  }
  store_be16(l4 + 4, l4_len);
  store_be16(l4 + 6, 0);
  return kUdpLen;
}

// The payload's bytes [from, len) as the generators' pattern, which varies with the packet index.
inline void fill_pattern(uint8_t* payload, uint32_t from, uint32_t len, uint64_t index) {
  for (uint32_t j = from; j < len; ++j) payload[j] = static_cast<uint8_t>(index + j);
}

// Sets the checksum of the UDP or TCP segment l4[0..l4_len), once its payload is written.
inline void write_l4_checksum(uint8_t* l4, uint8_t proto, uint32_t l4_len, uint32_t pseudo) {
  uint16_t csum = static_cast<uint16_t>(~csum_fold(csum_partial(l4, l4_len, pseudo)));
  if (proto == kProtoUdp && csum == 0) csum = 0xFFFF;  // 0 would mean "no checksum" for UDP
  store_be16(l4 + (proto == kProtoTcp ? 16 : 6), csum);
}

// Which of `flows` flows drawn up front a packet belongs to: uniformly, or with zipf > 0 by a Zipf
// law over their ranks (rank k has probability k^-zipf / sum_j j^-zipf).
class FlowChooser {
 public:
  FlowChooser(size_t flows, double zipf) : flows_(flows) {
    if (zipf > 0) {
      cdf_.resize(flows);
      double acc = 0;
      for (size_t k = 0; k < cdf_.size(); ++k) cdf_[k] = acc += std::pow(static_cast<double>(k + 1), -zipf);
    }
  }
  // flows > 0.
  size_t next(Rng& rng) const {
    if (cdf_.empty()) return rng.below(flows_);
    const double u = rng.unit() * cdf_.back();
    const size_t k = std::upper_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin();
    return std::min(k, flows_ - 1);
  }

 private:
  size_t flows_;
  std::vector<double> cdf_;  // Zipf: cumulative weights over ranks 1..F, sampled by binary search
};

// Timestamps of frames back to back on a saturated 100 Gb/s link from 1700000000 s: a frame takes
// its bytes plus FCS, preamble and gap at 0.01 ns per bit. The running bit count is exact and only
// its conversion to ns is rounded, so rounding errors never accumulate.
class LinkClock {
 public:
  uint64_t next(uint32_t caplen) {
    const uint64_t ts = kStartNs + (bits_ + 50) / 100;
    bits_ += (uint64_t{caplen} + 4 + 20) * 8;
    return ts;
  }

 private:
  static constexpr uint64_t kStartNs = 1700000000ull * 1000000000ull;
  uint64_t bits_ = 0;
};

}  // namespace tandem::gen
