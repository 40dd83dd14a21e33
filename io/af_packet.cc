#include "io/af_packet.h"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "core/clock.h"
#include "io/io_error.h"
#include "io/tx_split.h"

namespace tandem {

namespace {

std::string sys_error(const std::string& what) { return what + ": " + std::strerror(errno); }

// The data path's frame length is 16 bits (core/batch.h); longer frames are cut to it and keep
// their wire length, so the workers drop them as oversize.
constexpr uint32_t kMaxLen = 0xFFFF;



}  // namespace

InterfaceInfo interface_info(const std::string& name) {
  if (name.empty() || name.size() >= IFNAMSIZ) throw IoError("interface '" + name + "': not a valid interface name");
  InterfaceInfo info;
  info.name = name;
  info.index = static_cast<int>(if_nametoindex(name.c_str()));
  if (info.index == 0) throw IoError("interface " + name + ": no such interface (ip link shows the ones there are)");
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) throw IoError(sys_error("interface " + name + ": socket"));
  ifreq req{};
  std::memcpy(req.ifr_name, name.c_str(), name.size());
  if (ioctl(fd, SIOCGIFHWADDR, &req) == 0) std::memcpy(info.mac.data(), req.ifr_hwaddr.sa_data, 6);
  if (ioctl(fd, SIOCGIFMTU, &req) == 0) info.mtu = static_cast<uint32_t>(req.ifr_mtu);
  close(fd);
  return info;
}

std::array<uint8_t, 6> parse_mac(const std::string& s) {
  std::array<uint8_t, 6> mac{};
  unsigned v[6];
  char tail = 0;
  if (std::sscanf(s.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6 ||
      s.size() != 17) {
    throw std::invalid_argument("'" + s + "': expected a MAC address such as 02:00:00:00:00:01");
  }
  for (int i = 0; i < 6; ++i) mac[i] = static_cast<uint8_t>(v[i]);
  return mac;
}

// ---- receive ----

AfPacketRx::AfPacketRx(const std::vector<InterfaceInfo>& interfaces, const AfPacketRxOptions& opt) : opt_(opt) {
  const long page = sysconf(_SC_PAGESIZE);
  if (opt.block_size == 0 || opt.block_size % page != 0 || opt.blocks == 0) {
    throw std::invalid_argument("af_packet: the ring's block size must be a multiple of the page size");
  }
  try {
    for (size_t k = 0; k < interfaces.size(); ++k) {
      const InterfaceInfo& ifc = interfaces[k];
      Ring r;
      r.ifname = ifc.name;
      // Protocol 0: the socket receives nothing until bind() names the interface, so no packet of
      // another interface slips into the ring while it is being set up.
      r.fd = socket(AF_PACKET, SOCK_RAW, 0);
      if (r.fd < 0) {
        throw IoError(sys_error("af_packet:" + ifc.name + ": socket (needs CAP_NET_RAW: run as root or grant it)"));
      }
      rings_.push_back(r);
      Ring& ring = rings_.back();
      const int version = TPACKET_V3;
      if (setsockopt(ring.fd, SOL_PACKET, PACKET_VERSION, &version, sizeof version) != 0) {
        throw IoError(sys_error("af_packet:" + ifc.name + ": TPACKET_V3"));
      }
      tpacket_req3 req{};
      req.tp_block_size = opt.block_size;
      req.tp_block_nr = opt.blocks;
      req.tp_frame_size = 2048;  // V3 packs frames of any size into blocks; this only sizes the count
      req.tp_frame_nr = opt.block_size / req.tp_frame_size * opt.blocks;
      req.tp_retire_blk_tov = opt.block_timeout_ms;
      if (setsockopt(ring.fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) != 0) {
        throw IoError(sys_error("af_packet:" + ifc.name + ": receive ring of " + std::to_string(opt.blocks) + " x " +
                                std::to_string(opt.block_size) + " bytes"));
      }
      ring.map_bytes = size_t{opt.block_size} * opt.blocks;
      void* m = mmap(nullptr, ring.map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring.fd, 0);
      if (m == MAP_FAILED) throw IoError(sys_error("af_packet:" + ifc.name + ": mmap of the receive ring"));
      ring.map = static_cast<uint8_t*>(m);
      const int one = 1;
      // Best effort (Linux 4.20+): frames this process sends on the same interface are not received back.
      setsockopt(ring.fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
      // Until it is in the fanout group, a bound socket would receive every packet of the
      // interface, as would the other workers' sockets: packets arriving during start-up would be
      // forwarded twice. A filter that takes nothing keeps the ring empty until then.
      sock_filter drop_all{BPF_RET | BPF_K, 0, 0, 0};
      sock_fprog prog{1, &drop_all};
      if (setsockopt(ring.fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) != 0) {
        throw IoError(sys_error("af_packet:" + ifc.name + ": attaching the start-up filter"));
      }
      sockaddr_ll addr{};
      addr.sll_family = AF_PACKET;
      addr.sll_protocol = htons(ETH_P_ALL);
      addr.sll_ifindex = ifc.index;
      if (bind(ring.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        throw IoError(sys_error("af_packet:" + ifc.name + ": bind"));
      }
      // One fanout group per interface; the flow hash keeps each flow on one socket (one worker).
      const int group = (opt.fanout_group + static_cast<int>(k)) & 0xFFFF;
      const int fanout = group | (PACKET_FANOUT_HASH << 16);
      if (setsockopt(ring.fd, SOL_PACKET, PACKET_FANOUT, &fanout, sizeof fanout) != 0) {
        throw IoError(sys_error("af_packet:" + ifc.name + ": joining fanout group " + std::to_string(group)));
      }
      const int zero = 0;
      if (setsockopt(ring.fd, SOL_SOCKET, SO_DETACH_FILTER, &zero, sizeof zero) != 0) {
        throw IoError(sys_error("af_packet:" + ifc.name + ": removing the start-up filter"));
      }
    }
  } catch (...) {
    for (Ring& r : rings_) {
      if (r.map) munmap(r.map, r.map_bytes);
      if (r.fd >= 0) close(r.fd);
    }
    throw;
  }
}

AfPacketRx::~AfPacketRx() {
  for (Ring& r : rings_) {
    if (r.map) munmap(r.map, r.map_bytes);
    close(r.fd);
  }
}

uint32_t AfPacketRx::rx_ring(Ring& r, PacketPool& pool, PacketBatch& batch, uint32_t want) {
  uint32_t got = 0;
  const uint32_t max_len = std::min(pool.max_frame(), kMaxLen);
  while (got < want) {
    auto* bd = reinterpret_cast<tpacket_block_desc*>(r.map + size_t{r.block} * opt_.block_size);
    if (r.left == 0) {
      // The kernel owns the block until it sets TP_STATUS_USER; the frames' bytes are visible once
      // that store is (acquire).
      const uint32_t status = __atomic_load_n(&bd->hdr.bh1.block_status, __ATOMIC_ACQUIRE);
      if (!(status & TP_STATUS_USER)) break;
      r.left = bd->hdr.bh1.num_pkts;
      r.next = reinterpret_cast<const uint8_t*>(bd) + bd->hdr.bh1.offset_to_first_pkt;
      if (r.left == 0) {  // an empty block (timed out with nothing in it): hand it back
        __atomic_store_n(&bd->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        r.block = (r.block + 1) % opt_.blocks;
        continue;
      }
    }
    uint32_t cell;
    if (pool.alloc_bulk(&cell, 1) == 0) break;
    const auto* h = reinterpret_cast<const tpacket3_hdr*>(r.next);
    const uint8_t* data = r.next + h->tp_mac;
    uint32_t snap = h->tp_snaplen;
    uint32_t wire = h->tp_len;
    uint8_t* dst = pool.data(cell);
    // The kernel took the frame's 802.1Q tag out (VLAN acceleration): put it back after the MACs,
    // so the app sees the frame as it was on the wire.
    const bool vlan = (h->tp_status & TP_STATUS_VLAN_VALID) && snap >= 12;
    uint32_t len;
    if (vlan) {
      const uint16_t tpid = (h->tp_status & TP_STATUS_VLAN_TPID_VALID) ? h->hv1.tp_vlan_tpid : ETH_P_8021Q;
      len = std::min(snap + 4, max_len);
      std::memcpy(dst, data, 12);
      const uint8_t tag[4] = {uint8_t(tpid >> 8), uint8_t(tpid), uint8_t(h->hv1.tp_vlan_tci >> 8),
                              uint8_t(h->hv1.tp_vlan_tci)};
      std::memcpy(dst + 12, tag, std::min<uint32_t>(4, len - 12));
      if (len > 16) std::memcpy(dst + 16, data + 12, len - 16);
      wire += 4;
    } else {
      len = std::min(snap, max_len);
      std::memcpy(dst, data, len);
    }
    const uint32_t i = batch.size++;
    batch.cell[i] = cell;
    batch.len[i] = static_cast<uint16_t>(len);
    // A frame the cell cut (a GRO or TSO aggregate longer than the MTU the cells are sized for) is
    // marked oversize, for the workers to drop: forwarding its first bytes would send a broken frame.
    batch.wire_len[i] = len < snap + (vlan ? 4 : 0) ? kOversizeMark : std::max(wire, len);
    batch.ts_ns[i] = uint64_t{h->tp_sec} * 1000000000ull + h->tp_nsec;
    batch.verdict[i] = Verdict::kUnset;
    ++got;
    if (--r.left == 0) {
      __atomic_store_n(&bd->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
      r.block = (r.block + 1) % opt_.blocks;
      r.next = nullptr;
    } else {
      r.next += h->tp_next_offset;
    }
  }
  return got;
}

uint32_t AfPacketRx::rx_burst(PacketPool& pool, PacketBatch& batch) {
  if (batch.size >= PacketBatch::kCapacity) return 0;
  const uint32_t want = std::min<uint32_t>(PacketBatch::kCapacity - batch.size, burst_);
  uint32_t got = 0;
  // Interfaces in turn, starting from a different one each burst, so a busy one does not starve the others.
  for (size_t k = 0; k < rings_.size() && got < want; ++k) {
    Ring& r = rings_[(turn_ + k) % rings_.size()];
    got += rx_ring(r, pool, batch, want - got);
  }
  turn_ = (turn_ + 1) % std::max<size_t>(rings_.size(), 1);
  return got;
}

void AfPacketRx::wait_for_packets(int timeout_ms) {
  std::vector<pollfd> fds(rings_.size());
  for (size_t k = 0; k < rings_.size(); ++k) {
    // A block already handed over (being read) needs no wait.
    if (rings_[k].left) return;
    fds[k] = {rings_[k].fd, POLLIN | POLLERR, 0};
  }
  poll(fds.data(), fds.size(), timeout_ms);
}

AfPacketRxStats AfPacketRx::kernel_stats() {
  for (Ring& r : rings_) {
    tpacket_stats_v3 st{};
    socklen_t len = sizeof st;
    if (getsockopt(r.fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0) {
      total_.packets += st.tp_packets;
      total_.drops += st.tp_drops;
    }
  }
  return total_;
}

std::string AfPacketRx::describe() const {
  std::string s = "af_packet";
  for (size_t k = 0; k < rings_.size(); ++k) s += (k ? "," : ":") + rings_[k].ifname;
  s += " (TPACKET_V3, " + std::to_string(opt_.blocks) + " x " + std::to_string(opt_.block_size >> 10) +
       " KiB blocks, fanout by flow hash)";
  return s;
}

// ---- transmit ----

AfPacketTx::AfPacketTx(const std::vector<InterfaceInfo>& interfaces, const L2Rewrite& rewrite) : rewrite_(rewrite) {
  if (interfaces.empty()) throw std::invalid_argument("af_packet: no interface to send on");
  try {
    for (const InterfaceInfo& ifc : interfaces) {
      Port p;
      p.info = ifc;
      // Protocol 0 and bound: the socket sends on the interface and receives nothing.
      p.fd = socket(AF_PACKET, SOCK_RAW, 0);
      if (p.fd < 0) {
        throw IoError(sys_error("af_packet:" + ifc.name + ": socket (needs CAP_NET_RAW: run as root or grant it)"));
      }
      ports_.push_back(p);
      sockaddr_ll addr{};
      addr.sll_family = AF_PACKET;
      addr.sll_protocol = 0;
      addr.sll_ifindex = ifc.index;
      if (bind(p.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        throw IoError(sys_error("af_packet:" + ifc.name + ": bind"));
      }
    }
  } catch (...) {
    for (Port& p : ports_) close(p.fd);
    throw;
  }
}

AfPacketTx::~AfPacketTx() {
  for (Port& p : ports_) close(p.fd);
}

uint32_t AfPacketTx::send(Port& port, const PacketPool& pool, const PacketBatch& batch, const uint32_t* idx,
                          uint32_t n, Counters& c) {
  mmsghdr msgs[PacketBatch::kCapacity];
  iovec iov[PacketBatch::kCapacity][2];
  uint8_t macs[PacketBatch::kCapacity][12];
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t i = idx[k];
    const uint8_t* frame = pool.data(batch.cell[i]);
    msgs[k] = {};
    msgs[k].msg_hdr.msg_iov = iov[k];
    if (rewrite_.enabled && batch.len[i] >= 12) {
      // The new addresses go in a header of their own (the frame is not written): dst, then src.
      std::memcpy(macs[k], rewrite_.dst.data(), 6);
      std::memcpy(macs[k] + 6, port.info.mac.data(), 6);
      iov[k][0] = {macs[k], 12};
      iov[k][1] = {const_cast<uint8_t*>(frame) + 12, size_t{batch.len[i]} - 12u};
      msgs[k].msg_hdr.msg_iovlen = 2;
    } else {
      iov[k][0] = {const_cast<uint8_t*>(frame), batch.len[i]};
      msgs[k].msg_hdr.msg_iovlen = 1;
    }
  }
  uint32_t done = 0, failed = 0;
  uint64_t stuck_since = 0;
  while (done < n) {
    const int r = sendmmsg(port.fd, msgs + done, n - done, MSG_DONTWAIT);
    if (r > 0) {
      done += static_cast<uint32_t>(r);
      stuck_since = 0;
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == ENOBUFS || errno == EAGAIN) {
      // The device's queue is full: wait for room rather than drop, but not for ever (a link
      // without carrier keeps its queue full): after kTxStallNs without progress the frames left
      // count as refused.
      const uint64_t t = now_ns();
      if (!stuck_since) stuck_since = t;
      if (t - stuck_since < kTxStallNs) {
        pollfd p{port.fd, POLLOUT, 0};
        poll(&p, 1, 1);
        continue;
      }
    }
    // The frame at `done` is refused (EMSGSIZE: over the MTU; ENETDOWN, ENXIO: the interface is
    // down or gone): count it and go on with the next.
    c.tx_failed(batch.verdict[idx[done]], batch.len[idx[done]]);
    ++done;
    ++failed;
  }
  return n - failed;
}

void AfPacketTx::tx_burst(const PacketPool& pool, const PacketBatch& batch, Counters& c) {
  const uint64_t sent = send_split(batch, static_cast<uint32_t>(ports_.size()), c,
                                   [&](uint32_t p, const uint32_t* idx, uint32_t n, Counters& cs) {
                                     return send(ports_[p], pool, batch, idx, n, cs);
                                   });
  sent_.store(sent_.load(std::memory_order_relaxed) + sent, std::memory_order_relaxed);
}

}  // namespace tandem
