#include "io/flow_traffic.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "core/byte_order.h"
#include "io/gen_frames.h"

namespace tandem {

namespace {

enum Stream : uint64_t { kFlowStream = 11, kPickStream = 12, kSizeStream = 13 };

uint32_t ip_len(const GenFlow& f) { return f.ip_version == 6 ? gen::kIpv6Len : gen::kIpv4Len; }

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
    store_be32(f.src, (10u << 24) | static_cast<uint32_t>(rng.below(1u << 24)));
  }
  f.sport = static_cast<uint16_t>(1024 + rng.below(65536 - 1024));
  f.dport = static_cast<uint16_t>(1024 + rng.below(65536 - 1024));
  make(rng, f);
}

}  // namespace

uint32_t min_frame_len(const GenFlow& f, uint8_t proto) {
  return kEthHeaderLen + ip_len(f) + gen::l4_header_len(proto) + static_cast<uint32_t>(f.payload.size());
}

void write_flow_frame(uint8_t* p, uint32_t len, const GenFlow& f, uint8_t proto, uint64_t index) {
  gen::write_eth(p, f.dst_mac, f.src_mac, f.ip_version == 6 ? kEthTypeIpv6 : kEthTypeIpv4);
  const uint32_t l4_hdr = gen::l4_header_len(proto);
  const uint32_t l3_len =
      f.exact_payload ? ip_len(f) + l4_hdr + static_cast<uint32_t>(f.payload.size()) : len - kEthHeaderLen;
  const uint32_t l4_len = l3_len - ip_len(f);
  uint8_t* ip = p + kEthHeaderLen;
  const uint32_t pseudo = f.ip_version == 6 ? gen::write_ipv6(ip, l4_len, proto, f.src, f.dst)
                                            : gen::write_ipv4(ip, l3_len, static_cast<uint32_t>(index), proto,
                                                              load_be32(f.src), load_be32(f.dst));
  uint8_t* l4 = ip + ip_len(f);
  gen::write_l4_header(l4, proto, l4_len, f.sport, f.dport, static_cast<uint32_t>(index), 0);
  uint8_t* payload = l4 + l4_hdr;
  const uint32_t payload_len = l4_len - l4_hdr;
  const uint32_t fixed = std::min<uint32_t>(payload_len, static_cast<uint32_t>(f.payload.size()));
  if (fixed) std::memcpy(payload, f.payload.data(), fixed);
  gen::fill_pattern(payload, fixed, payload_len, index);
  std::memset(p + kEthHeaderLen + l3_len, 0, len - kEthHeaderLen - l3_len);  // Ethernet padding (exact payloads)
  gen::write_l4_checksum(l4, proto, l4_len, pseudo);
}

PacketStore generate_flows(const GenSpec& spec, int ip_version, const FlowMaker& make) {
  validate_gen_spec(spec);
  if (ip_version != 4 && ip_version != 6) throw std::invalid_argument("traffic: IP version must be 4 or 6");
  Rng flow_rng(spec.seed, kFlowStream);
  Rng pick_rng(spec.seed, kPickStream);
  std::vector<GenFlow> flows(spec.flows);
  for (GenFlow& f : flows) random_flow(flow_rng, ip_version, make, f);
  const gen::FlowChooser chooser(flows.size(), spec.zipf);
  PacketStore store;
  const uint64_t n = spec.count;
  store.offset.resize(n);
  store.caplen.resize(n);
  store.wire_len.resize(n);
  store.ts_ns.resize(n);
  store.bytes.reserve(n * (spec.size_mode == GenSpec::Size::kFixed ? spec.frame_size : 400));
  FrameSizes sizes(spec, kSizeStream);  // before the flow's minimum
  GenFlow fresh;
  gen::LinkClock clock;
  // seq: the trailer after each datagram (io/traffic_gen.h), each flow's next sequence number.
  const uint32_t trailer = spec.seq ? kSeqTrailerLen : 0;
  std::vector<uint32_t> next_seq(spec.seq ? flows.size() : 0);
  for (uint64_t i = 0; i < n; ++i) {
    const GenFlow* f = &fresh;
    size_t k = 0;
    if (flows.empty()) {
      random_flow(flow_rng, ip_version, make, fresh);
    } else {
      k = chooser.next(pick_rng);
      f = &flows[k];
    }
    const uint32_t len = std::max(sizes.next(), min_frame_len(*f, spec.proto) + trailer);
    if (len > 0xFFFF) throw std::invalid_argument("traffic: a flow's payload does not fit in a frame");
    const size_t off = store.bytes.size();
    store.bytes.resize(off + len);
    write_flow_frame(store.bytes.data() + off, len - trailer, *f, spec.proto, i);
    if (trailer) {
      uint8_t* t = store.bytes.data() + off + len - trailer;
      if (flows.empty()) {
        write_seq_trailer(t, static_cast<uint32_t>(i), 0);
      } else {
        write_seq_trailer(t, static_cast<uint32_t>(k), next_seq[k]++);
      }
    }
    store.offset[i] = off;
    store.caplen[i] = store.wire_len[i] = len;
    store.ts_ns[i] = clock.next(len);
  }
  return store;
}

}  // namespace tandem
