// Generated traffic for the apps beyond IPv4 forwarding (io/traffic_gen.h makes the IPv4 router's):
// the app says what a flow is (Ethernet addresses, IPv4 or IPv6 addresses, ports, the first bytes
// of its payload), and this writes the frames, with the same GenSpec semantics: `count` packets,
// `flows` = 0 a fresh flow per packet, else that many flows drawn up front and picked uniformly or
// by Zipf rank, `size` the Ethernet frame size with FCS (or imix), `proto` udp or tcp, `seed`.
// `dst` is the app's to read (from its table, or uniform).
//
// A frame is at least as long as its headers and the flow's payload bytes need (an IPv6/UDP frame
// needs 66 bytes with FCS, more than size=64 gives: such frames come out at their minimum). The
// rest of a payload is a byte pattern, except with `exact_payload` (an NDN Interest must fill its
// UDP payload exactly): then the IP datagram ends with those bytes and the frame is padded to its
// size after it, as Ethernet pads short frames. Checksums (IPv4 header, UDP, TCP) are valid;
// timestamps follow each other as on a saturated 100 Gb/s link, as traffic_gen.h's.
//
// seq=1 appends traffic_gen.h's sequence trailer to every frame, after the datagram (and after an
// exact payload's padding): the frame keeps its size and the datagram loses 8 bytes, except that
// a frame is then at least its minimum plus the 8 trailer bytes (IPv6/UDP: 70 bytes, 74 with FCS).
// write_flow_frame() writes no trailer: generate_flows() writes a frame of len - 8 bytes, then
// the trailer after it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/rng.h"
#include "io/packet_store.h"
#include "io/traffic_gen.h"

namespace tandem {

struct GenFlow {
  uint8_t dst_mac[6] = {0x02, 0, 0, 0, 0, 0x01};
  uint8_t src_mac[6] = {0x02, 0, 0, 0, 0, 0x02};
  int ip_version = 4;
  uint8_t src[16] = {};  // IPv4: the first 4 bytes, network order
  uint8_t dst[16] = {};
  uint16_t sport = 0;
  uint16_t dport = 0;
  std::vector<uint8_t> payload;  // the payload's first bytes
  bool exact_payload = false;
};

// Fills a flow: the app's part (addresses, payload). `f` arrives with random ports, a random source
// (10.0.0.0/8, or fd00::/8 for IPv6) and the default MACs, which the maker may keep or replace.
using FlowMaker = std::function<void(Rng& rng, GenFlow& f)>;

PacketStore generate_flows(const GenSpec& spec, int ip_version, const FlowMaker& make);

// The smallest frame (FCS excluded) that holds the flow's headers and payload bytes.
uint32_t min_frame_len(const GenFlow& f, uint8_t proto);

// Writes flow f's frame of `len` >= min_frame_len bytes (FCS excluded); `index` varies the IPv4 id,
// the TCP sequence number and the pattern.
void write_flow_frame(uint8_t* p, uint32_t len, const GenFlow& f, uint8_t proto, uint64_t index);

}  // namespace tandem
