// Live ports through DPDK's ethdev API (rte_eth_rx_burst / rte_eth_tx_burst), so that the binary
// that forwards between veth pairs through AF_PACKET drives NICs with DPDK drivers, and DPDK's
// virtual devices (net_memif between processes, net_af_packet, net_tap, net_ring, net_pcap), too.
// The drivers are linked in (Debian's static DPDK libraries): the EAL loads no plugin folders.
//
//   tandem run --dpdk "--no-huge --no-pci -m 512 --vdev net_memif0,role=server" --rx dpdk:0 --tx dpdk:0
//
// Ports are named by their DPDK port id or device name (net_memif0, 0000:3b:00.0). Every port gets
// one receive and one transmit queue per worker (worker w polls queue w of each port; RSS spreads
// flows over the queues where the driver has it, so one flow stays on one worker and in order) and
// one mbuf pool per worker, on the port's NUMA node. The worker's mbufs are its cells: frames are
// processed in the mbufs they arrived in and those mbufs are transmitted, as DPDK applications do
// (PacketSource::own_cells; the pool's objects lie at one stride, so an mbuf and its cell index
// convert both ways). Frames that come from elsewhere (another backend's cells) are copied into
// mbufs. A frame the driver does not take within a second (a link that is down) counts as dropped
// (DropReason::kTxError), as does one over the port's MTU.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/packet_source.h"

namespace tandem {

struct L2Rewrite;

// Whether this build has the ethdev backend (DPDK found at build time).
bool dpdk_ports_available();

// The ports of a run, configured and started with one receive and one transmit queue per worker.
// Starts DPDK's EAL on first use with `eal_args` (split at white space; the EAL can start once per
// process). Stops and closes the ports when the last source or sink that holds them goes.
// Throws IoError naming the port and the driver's limit (e.g. net_af_packet's qpairs).
class DpdkPorts {
 public:
  struct Port {
    uint16_t id = 0;
    std::string name;    // as the user gave it
    std::string device;  // the device's name (net_memif0)
    std::string driver;  // net_memif
    std::array<uint8_t, 6> mac{};
    uint32_t mtu = 1500;
    bool link_up = false;  // when the start was done
  };
  // Figures of the named ports taken together since they started (rte_eth_stats_get).
  struct Stats {
    uint64_t missed = 0;   // frames the ports dropped: no room in a receive ring (imissed)
    uint64_t no_mbuf = 0;  // frames the ports dropped: no mbuf to receive into
    uint64_t errors = 0;   // frames the ports dropped as bad (ierrors)
  };

  DpdkPorts(const std::string& eal_args, const std::vector<std::string>& names, int workers);
  ~DpdkPorts();
  DpdkPorts(const DpdkPorts&) = delete;
  DpdkPorts& operator=(const DpdkPorts&) = delete;

  // The port a name (or id) given to the constructor stands for.
  const Port& port(const std::string& name) const;
  int workers() const { return workers_; }
  Stats stats(const std::vector<std::string>& names) const;
  // Worker w's mbuf pool (an rte_mempool).
  void* pool(int w) const { return pools_[static_cast<size_t>(w)]; }
  // Of worker w's mbufs, how many are in its pool and how many it has (none may leak).
  uint32_t free_mbufs(int w) const;
  uint32_t all_mbufs(int w) const;
  // Worker w's mbufs as pool cells; nullptr where the pool's objects do not lie at one stride
  // (its frames are then copied).
  PacketPool* cells(int w) const;

  class MbufCells;
  const MbufCells* cells_of(int w) const { return cells_[static_cast<size_t>(w)].get(); }

 private:
  std::vector<Port> ports_;
  std::vector<void*> pools_;
  std::vector<std::unique_ptr<MbufCells>> cells_;
  int workers_ = 0;
};

// Worker `queue`'s receive end: queue `queue` of each port, polled in turn.
class DpdkRx final : public PacketSource {
 public:
  DpdkRx(std::shared_ptr<DpdkPorts> ports, const std::vector<std::string>& names, int queue);
  uint32_t rx_burst(PacketPool& pool, PacketBatch& batch) override;
  std::string describe() const override;
  bool live() const override { return true; }
  // Polled drivers have nothing to wait on: the worker keeps polling, as DPDK applications do (a
  // sleep, however short, lets a fast sender fill the receive ring meanwhile). A worker on a DPDK
  // port keeps its core busy, traffic or not.
  void wait_for_packets(int timeout_ms) override;
  PacketPool* own_cells() override { return ports_->cells(queue_); }
  uint32_t own_cells_to_hold() const override;

 private:
  uint32_t take_in_place(void* const* mbufs, uint32_t n, PacketBatch& batch);
  uint32_t copy_out(void* const* mbufs, uint32_t n, PacketPool& pool, PacketBatch& batch);
  std::shared_ptr<DpdkPorts> ports_;
  std::vector<uint16_t> ids_;
  uint16_t queue_;
  size_t turn_ = 0;
};

// Worker `queue`'s transmit end: port p of the app leaves through ports[p % n] (io/tx_split.h).
class DpdkTx final : public PacketSink {
 public:
  DpdkTx(std::shared_ptr<DpdkPorts> ports, const std::vector<std::string>& names, int queue, const L2Rewrite& rewrite);
  void tx_burst(const PacketPool& pool, const PacketBatch& batch, Counters& c) override;
  // The mbufs of this worker's pool go out as they are.
  bool takes_cells(const PacketPool& pool) const override { return &pool == ports_->cells(queue_); }
  // Frames the drivers took so far (any thread may read it).
  uint64_t sent() const { return sent_.load(std::memory_order_relaxed); }

 private:
  // Copies the frames into fresh mbufs and sends those.
  uint32_t send_copies(const DpdkPorts::Port& port, const PacketPool& pool, const PacketBatch& batch,
                       const uint32_t* idx, uint32_t n, Counters& c);
  // Sends the mbufs the frames are in (cells of this worker's pool), which the driver frees.
  uint32_t send_in_place(const DpdkPorts::Port& port, const PacketPool& pool, const PacketBatch& batch,
                         const uint32_t* idx, uint32_t n, Counters& c);
  // Hands `m` to the driver, waiting for room a while; frees and counts what it would not take.
  uint32_t transmit(const DpdkPorts::Port& port, void** m, const uint32_t* idx, uint32_t n, const PacketBatch& batch,
                    Counters& c);
  std::shared_ptr<DpdkPorts> ports_;
  std::vector<const DpdkPorts::Port*> out_;
  uint16_t queue_;
  bool rewrite_ = false;
  std::array<uint8_t, 6> dst_mac_{};
  std::atomic<uint64_t> sent_{0};
};

}  // namespace tandem
