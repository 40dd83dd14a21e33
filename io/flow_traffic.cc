#include "io/flow_traffic.h"

#include "core/byte_order.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "core/checksum.h"

namespace tandem {

namespace {

enum Stream : uint64_t { kFlowStream = 11, kPickStream = 12, kSizeStream = 13 };

constexpr uint32_t kEth = 14, kIp4 = 20, kIp6 = 40, kUdp = 8, kTcp = 20;

constexpr auto put16 = store_be16;
constexpr auto put32 = store_be32;

uint32_t ip_len(const GenFlow& f) { return f.ip_version == 6 ? kIp6 : kIp4; }

void random_flow(Rng& rng, int ip_version, const FlowMaker& make, GenFlow& f) {
  f = GenFlow{};
  f.ip_version = ip_version;
  if (ip_version == 6) {
    f.src[0] = 0xFD;  // unique local
    for (int i = 1; i < 16; i += 8) {
      const uint64_t r = rng.next();
      std::memcpy(f.src + i, &r, std::min(8, 16 - i));
    }
  } else {
    put32(f.src, (10u << 24) | static_cast<uint32_t>(rng.below(1u << 24)));
  }
  f.sport = static_cast<uint16_t>(1024 + rng.below(65536 - 1024));
  f.dport = static_cast<uint16_t>(1024 + rng.below(65536 - 1024));
  make(rng, f);
}

}  // namespace

uint32_t min_frame_len(const GenFlow& f, uint8_t proto) {
  return kEth + ip_len(f) + (proto == 6 ? kTcp : kUdp) + static_cast<uint32_t>(f.payload.size());
}

void write_flow_frame(uint8_t* p, uint32_t len, const GenFlow& f, uint8_t proto, uint64_t index) {
  std::memcpy(p, f.dst_mac, 6);
  std::memcpy(p + 6, f.src_mac, 6);
  put16(p + 12, f.ip_version == 6 ? 0x86DD : 0x0800);
  const uint32_t l4_hdr = proto == 6 ? kTcp : kUdp;
  const uint32_t l3_len = f.exact_payload ? ip_len(f) + l4_hdr + static_cast<uint32_t>(f.payload.size()) : len - kEth;
  const uint32_t l4_len = l3_len - ip_len(f);
  uint8_t* ip = p + kEth;
  uint32_t pseudo = proto + l4_len;
  if (f.ip_version == 6) {
    put32(ip, 6u << 28);
    put16(ip + 4, l4_len);
    ip[6] = proto;
    ip[7] = 64;  // hop limit
    std::memcpy(ip + 8, f.src, 16);
    std::memcpy(ip + 24, f.dst, 16);
    pseudo = csum_partial(ip + 8, 32, pseudo);
  } else {
    ip[0] = 0x45;
    ip[1] = 0;
    put16(ip + 2, l3_len);
    put16(ip + 4, static_cast<uint32_t>(index & 0xFFFF));
    put16(ip + 6, 0x4000);  // DF
    ip[8] = 64;
    ip[9] = proto;
    put16(ip + 10, 0);
    std::memcpy(ip + 12, f.src, 4);
    std::memcpy(ip + 16, f.dst, 4);
    put16(ip + 10, ipv4_header_checksum(ip, kIp4));
    pseudo = csum_partial(ip + 12, 8, pseudo);
  }
  uint8_t* l4 = ip + ip_len(f);
  put16(l4, f.sport);
  put16(l4 + 2, f.dport);
  uint32_t csum_off;
  if (proto == 6) {
    put32(l4 + 4, static_cast<uint32_t>(index));
    put32(l4 + 8, 0);
    l4[12] = 0x50;  // data offset 5 words
    l4[13] = 0x10;  // ACK
    put16(l4 + 14, 0xFFFF);
    put16(l4 + 16, 0);
    put16(l4 + 18, 0);
    csum_off = 16;
  } else {
    put16(l4 + 4, l4_len);
    put16(l4 + 6, 0);
    csum_off = 6;
  }
  uint8_t* payload = l4 + l4_hdr;
  const uint32_t payload_len = l4_len - l4_hdr;
  const uint32_t fixed = std::min<uint32_t>(payload_len, static_cast<uint32_t>(f.payload.size()));
  if (fixed) std::memcpy(payload, f.payload.data(), fixed);
  for (uint32_t j = fixed; j < payload_len; ++j) payload[j] = static_cast<uint8_t>(index + j);
  std::memset(p + kEth + l3_len, 0, len - kEth - l3_len);  // Ethernet padding (exact payloads)
  uint16_t csum = static_cast<uint16_t>(~csum_fold(csum_partial(l4, l4_len, pseudo)));
  if (proto == 17 && csum == 0) csum = 0xFFFF;  // 0 would mean "no checksum" for UDP
  put16(l4 + csum_off, csum);
}

PacketStore generate_flows(const GenSpec& spec, int ip_version, const FlowMaker& make) {
  validate_gen_spec(spec);
  if (ip_version != 4 && ip_version != 6) throw std::invalid_argument("traffic: IP version must be 4 or 6");
  Rng flow_rng(spec.seed, kFlowStream);
  Rng pick_rng(spec.seed, kPickStream);
  std::vector<GenFlow> flows(spec.flows);
  for (GenFlow& f : flows) random_flow(flow_rng, ip_version, make, f);
  std::vector<double> cdf;  // Zipf: cumulative weights over ranks 1..F, sampled by binary search
  if (spec.zipf > 0) {
    cdf.resize(flows.size());
    double acc = 0;
    for (size_t k = 0; k < cdf.size(); ++k) cdf[k] = acc += std::pow(static_cast<double>(k + 1), -spec.zipf);
  }
  PacketStore store;
  const uint64_t n = spec.count;
  store.offset.resize(n);
  store.caplen.resize(n);
  store.wire_len.resize(n);
  store.ts_ns.resize(n);
  store.bytes.reserve(n * (spec.size_mode == GenSpec::Size::kFixed ? spec.frame_size : 400));
  FrameSizes sizes(spec, kSizeStream);  // before the flow's minimum
  GenFlow fresh;
  constexpr uint64_t kStartNs = 1700000000ull * 1000000000ull;
  uint64_t bits = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const GenFlow* f;
    if (flows.empty()) {
      random_flow(flow_rng, ip_version, make, fresh);
      f = &fresh;
    } else if (cdf.empty()) {
      f = &flows[pick_rng.below(flows.size())];
    } else {
      const double u = pick_rng.unit() * cdf.back();
      const size_t k = std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
      f = &flows[std::min(k, flows.size() - 1)];
    }
    const uint32_t len = std::max(sizes.next(), min_frame_len(*f, spec.proto));
    if (len > 0xFFFF) throw std::invalid_argument("traffic: a flow's payload does not fit in a frame");
    const size_t off = store.bytes.size();
    store.bytes.resize(off + len);
    write_flow_frame(store.bytes.data() + off, len, *f, spec.proto, i);
    store.offset[i] = off;
    store.caplen[i] = store.wire_len[i] = len;
    store.ts_ns[i] = kStartNs + (bits + 50) / 100;
    bits += (uint64_t{len} + 4 + 20) * 8;  // + FCS, preamble, gap
  }
  return store;
}

}  // namespace tandem
