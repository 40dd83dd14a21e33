// Live ports through AF_XDP sockets (libxdp's xsk API): the kernel hands frames to user space
// from the driver's XDP hook, before the network stack, through rings shared with it (UMEM).
//
// Receive: worker w binds queue w of each receive interface (an interface needs as many receive
// queues as there are workers; the NIC's RSS spreads flows over them). libxdp loads its default
// program, which redirects the queue's frames to the socket. The kernel uses zero-copy where the
// driver offers it and copy mode otherwise (veth, generic XDP); describe() says which it got.
// Frames are copied from the UMEM into the worker's pool cells and their UMEM frames go straight
// back to the fill ring.
//
// Transmit: one socket per worker and interface, on a UMEM of its own, with no program loaded.
// A frame is copied into a free UMEM frame, put on the TX ring, and the kernel is kicked once a
// burst; finished frames come back on the completion ring. A frame longer than the interface's
// MTU is counted as dropped (DropReason::kTxError) rather than handed to the kernel.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/af_packet.h"
#include "io/packet_source.h"

namespace tandem {

// Whether this build has AF_XDP (libxdp).
bool af_xdp_available();

// Kernel-side figures of a receive socket (XDP_STATISTICS).
struct AfXdpRxStats {
  uint64_t dropped = 0;        // dropped for lack of room (rx ring full, no fill buffer)
  uint64_t invalid = 0;        // invalid descriptors
};

class AfXdpRx final : public PacketSource {
 public:
  AfXdpRx(const std::vector<InterfaceInfo>& interfaces, uint32_t queue);
  ~AfXdpRx() override;
  AfXdpRx(const AfXdpRx&) = delete;
  AfXdpRx& operator=(const AfXdpRx&) = delete;

  uint32_t rx_burst(PacketPool& pool, PacketBatch& batch) override;
  std::string describe() const override;
  bool live() const override { return true; }
  void wait_for_packets(int timeout_ms) override;
  AfXdpRxStats kernel_stats() const;

 private:
  struct Port;
  std::vector<std::unique_ptr<Port>> ports_;
  size_t turn_ = 0;
};

class AfXdpTx final : public PacketSink {
 public:
  AfXdpTx(const std::vector<InterfaceInfo>& interfaces, uint32_t queue, const L2Rewrite& rewrite);
  ~AfXdpTx() override;
  AfXdpTx(const AfXdpTx&) = delete;
  AfXdpTx& operator=(const AfXdpTx&) = delete;

  void tx_burst(const PacketPool& pool, const PacketBatch& batch, Counters& c) override;
  uint64_t sent() const { return sent_.load(std::memory_order_relaxed); }

 private:
  struct Port;
  // Sends n frames through one interface; returns how many it sent (the others counted in c).
  uint32_t send(Port& port, const PacketPool& pool, const PacketBatch& batch, const uint32_t* idx, uint32_t n,
                Counters& c);
  std::vector<std::unique_ptr<Port>> ports_;
  L2Rewrite rewrite_;
  std::atomic<uint64_t> sent_{0};
};

}  // namespace tandem
