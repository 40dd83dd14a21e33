// Live ports through Linux AF_PACKET sockets: the kernel's own packet I/O, on any interface,
// without drivers or hugepages (the backend for veth pairs, lab hosts, and NICs without a DPDK or
// AF_XDP driver).
//
// Receive: one socket per worker and interface, each with a TPACKET_V3 ring (blocks of frames the
// kernel fills and hands over whole, so a burst costs no system call), joined in one PACKET_FANOUT
// group per interface. The group spreads packets over the workers by the kernel's flow hash
// (PACKET_FANOUT_HASH), so one flow always reaches one worker and keeps its order, as RSS does.
// Frames are copied from the ring into the worker's pool cells (as a NIC's DMA fills them) and the
// ring block is handed back as soon as its last frame is copied. A VLAN tag the kernel took out of
// the frame is put back. Packets the socket sends itself are not received (PACKET_IGNORE_OUTGOING).
//
// Transmit: one socket per worker and interface, sendmmsg() of a burst. A frame the kernel refuses
// (larger than the interface's MTU, interface down) is counted as dropped (DropReason::kTxError),
// never lost silently; a full device queue makes the worker wait (back-pressure), not drop.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "io/packet_source.h"

namespace tandem {

// An interface's index, MAC address and MTU; throws IoError naming the interface when it does not exist.
struct InterfaceInfo {
  std::string name;
  int index = 0;
  std::array<uint8_t, 6> mac{};
  uint32_t mtu = 0;
};
InterfaceInfo interface_info(const std::string& name);

struct AfPacketRxOptions {
  uint32_t block_size = 1u << 20;  // bytes per ring block (a multiple of the page size)
  uint32_t blocks = 32;            // blocks per socket
  uint32_t block_timeout_ms = 1;   // the kernel hands over a part-filled block after this long
  int fanout_group = 0;            // PACKET_FANOUT group id (one per interface: group + interface number)
};

// Kernel-side figures of a receive socket (PACKET_STATISTICS; reading them resets them).
struct AfPacketRxStats {
  uint64_t packets = 0;  // seen by the socket (received + dropped)
  uint64_t drops = 0;    // dropped by the kernel: the ring was full
};

// One worker's receive queue: its socket on each of `interfaces`, polled in turn.
class AfPacketRx final : public PacketSource {
 public:
  AfPacketRx(const std::vector<InterfaceInfo>& interfaces, const AfPacketRxOptions& opt);
  ~AfPacketRx() override;
  AfPacketRx(const AfPacketRx&) = delete;
  AfPacketRx& operator=(const AfPacketRx&) = delete;

  uint32_t rx_burst(PacketPool& pool, PacketBatch& batch) override;
  std::string describe() const override;
  bool live() const override { return true; }
  void wait_for_packets(int timeout_ms) override;
  // The kernel's counts since the socket opened (one thread at a time).
  AfPacketRxStats kernel_stats();

 private:
  struct Ring {
    int fd = -1;
    uint8_t* map = nullptr;
    size_t map_bytes = 0;
    uint32_t block = 0;       // the block being read
    uint32_t left = 0;        // frames of it not read yet (0: not taken from the kernel yet)
    const uint8_t* next = nullptr;  // its next frame's header
    std::string ifname;
  };
  uint32_t rx_ring(Ring& r, PacketPool& pool, PacketBatch& batch, uint32_t want);
  std::vector<Ring> rings_;
  AfPacketRxOptions opt_;
  size_t turn_ = 0;
  AfPacketRxStats total_{};  // PACKET_STATISTICS resets on reading: the sum of the readings
};

// Rewrites a forwarded frame's Ethernet addresses on the way out (a router's next hop): the source
// becomes the output interface's MAC, the destination `dst`.
struct L2Rewrite {
  bool enabled = false;
  std::array<uint8_t, 6> dst{};
};

// One worker's transmit queue: port p of the app leaves through interfaces[p % interfaces.size()]
// (flooded frames through every one).
class AfPacketTx final : public PacketSink {
 public:
  AfPacketTx(const std::vector<InterfaceInfo>& interfaces, const L2Rewrite& rewrite);
  ~AfPacketTx() override;
  AfPacketTx(const AfPacketTx&) = delete;
  AfPacketTx& operator=(const AfPacketTx&) = delete;

  void tx_burst(const PacketPool& pool, const PacketBatch& batch, Counters& c) override;
  // Frames sent so far (any thread may read it).
  uint64_t sent() const { return sent_.load(std::memory_order_relaxed); }

 private:
  struct Port {
    int fd = -1;
    InterfaceInfo info;
  };
  // Sends n frames on one port; returns how many it sent (the ones the kernel refused are counted in c).
  uint32_t send(Port& port, const PacketPool& pool, const PacketBatch& batch, const uint32_t* idx, uint32_t n, Counters& c);
  std::vector<Port> ports_;
  L2Rewrite rewrite_;
  std::atomic<uint64_t> sent_{0};
};

// Parses a MAC address "aa:bb:cc:dd:ee:ff"; throws std::invalid_argument.
std::array<uint8_t, 6> parse_mac(const std::string& s);

}  // namespace tandem
