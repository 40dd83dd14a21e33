#include "io/dpdk_port.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "core/clock.h"
#include "io/af_packet.h"
#include "io/io_error.h"
#include "io/tx_split.h"

#ifdef TANDEM_HAVE_DPDK_ETHDEV

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <net/if.h>
#include <sched.h>
#include <unistd.h>

#include <cctype>
#include <mutex>
#include <sstream>

namespace tandem {

namespace {

constexpr uint16_t kRxDescriptors = 1024;
constexpr uint16_t kTxDescriptors = 1024;
constexpr unsigned kPoolCache = 256;
// How long the start waits for the ports' links to come up.
constexpr uint64_t kLinkWaitNs = 5000000000;

std::string dpdk_error(const std::string& what) { return "dpdk: " + what + ": " + rte_strerror(rte_errno); }

// ethdev calls return a negative errno.
void check(int rc, const std::string& what) {
  if (rc < 0) throw IoError("dpdk:" + what + ": " + rte_strerror(-rc));
}

// The EAL starts once per process; later callers must ask for the same arguments.
void start_eal(const std::string& args) {
  static std::mutex mutex;
  static bool started = false;
  static std::string started_with;
  // The EAL keeps pointers into argv: the strings live as long as the process.
  static std::vector<std::string> words;
  static std::vector<char*> argv;
  std::lock_guard<std::mutex> lock(mutex);
  if (started) {
    if (args != started_with) throw IoError("dpdk: the EAL runs already, with other arguments (--dpdk \"" + started_with + "\")");
    return;
  }
  // Quiet by default (the EAL's start-up notices); the user's --log-level, later, wins.
  words = {"tandem", "--log-level", "error"};
  std::istringstream in(args);
  for (std::string w; in >> w;) words.push_back(w);
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  // The EAL pins the calling thread to its main lcore; the workers, started from this thread
  // later, must not inherit that.
  cpu_set_t saved;
  const bool have_saved = sched_getaffinity(0, sizeof saved, &saved) == 0;
  // The EAL prints its usage on standard output when it dislikes an argument; standard output is
  // the run's (reports, --stats-json -): the EAL's words go to standard error.
  std::fflush(stdout);
  const int out = dup(STDOUT_FILENO);
  if (out >= 0) dup2(STDERR_FILENO, STDOUT_FILENO);
  const int r = rte_eal_init(static_cast<int>(words.size()), argv.data());
  std::fflush(stdout);
  if (out >= 0) {
    dup2(out, STDOUT_FILENO);
    close(out);
  }
  if (have_saved) sched_setaffinity(0, sizeof saved, &saved);
  if (r < 0) {
    throw IoError(dpdk_error("the EAL did not start with --dpdk \"" + args +
                             "\" (without hugepages and PCI devices: --no-huge --no-pci -m 512 --no-shconf)"));
  }
  started = true;
  started_with = args;
}

// Non-EAL threads get an lcore id of their own, so that mempool caches work for them (without
// one, every mbuf allocated or freed is an atomic operation on the pool's ring). Once per thread.
void register_thread() {
  thread_local bool tried = false;
  if (tried) return;
  tried = true;
  if (rte_lcore_id() == LCORE_ID_ANY && rte_thread_register() != 0) {
    std::fprintf(stderr, "dpdk: this worker thread could not register with the EAL (%s): mbuf pools work without "
                 "their per-thread caches, more slowly\n", rte_strerror(rte_errno));
  }
}

std::string port_list() {
  std::string s;
  uint16_t id;
  RTE_ETH_FOREACH_DEV(id) {
    char name[RTE_ETH_NAME_MAX_LEN];
    if (rte_eth_dev_get_name_by_port(id, name) != 0) continue;
    s += (s.empty() ? "" : ", ") + std::to_string(id) + " (" + name + ")";
  }
  return s.empty() ? "none (give the EAL devices: --vdev net_memif0, a PCI address with -a, ...)" : s;
}

uint16_t resolve(const std::string& name) {
  uint16_t id = 0;
  const bool number = !name.empty() && name.size() < 6 &&
                      std::all_of(name.begin(), name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (number) {
    const unsigned long v = std::stoul(name);
    if (v < RTE_MAX_ETHPORTS && rte_eth_dev_is_valid_port(static_cast<uint16_t>(v))) return static_cast<uint16_t>(v);
  } else if (rte_eth_dev_get_port_by_name(name.c_str(), &id) == 0) {
    return id;
  }
  throw IoError("dpdk:" + name + ": no such port; the EAL has " + port_list());
}

rte_mempool* make_pool(int worker, unsigned mbufs, uint16_t data_room, int socket) {
  const std::string name = "tandem_rx" + std::to_string(worker);
  rte_mempool* mp = rte_pktmbuf_pool_create(name.c_str(), mbufs, kPoolCache, 0, data_room, socket);
  // Memory may exist on another node only (--no-huge): any node rather than none.
  if (!mp && socket != SOCKET_ID_ANY) mp = rte_pktmbuf_pool_create(name.c_str(), mbufs, kPoolCache, 0, data_room, SOCKET_ID_ANY);
  if (!mp) {
    throw IoError(dpdk_error("worker " + std::to_string(worker) + ": a pool of " + std::to_string(mbufs) +
                             " mbufs (give the EAL more memory: -m MiB)"));
  }
  return mp;
}

}  // namespace

bool dpdk_ports_available() { return true; }

DpdkPorts::DpdkPorts(const std::string& eal_args, const std::vector<std::string>& names, int workers) : workers_(workers) {
  start_eal(eal_args);
  for (const std::string& n : names) {
    Port p;
    p.name = n;
    p.id = resolve(n);
    if (std::any_of(ports_.begin(), ports_.end(), [&](const Port& q) { return q.id == p.id; })) continue;
    char dev[RTE_ETH_NAME_MAX_LEN];
    if (rte_eth_dev_get_name_by_port(p.id, dev) == 0) p.device = dev;
    rte_eth_dev_info info{};
    check(rte_eth_dev_info_get(p.id, &info), n + ": device info");
    p.driver = info.driver_name ? info.driver_name : "?";
    if (info.max_rx_queues < workers || info.max_tx_queues < workers) {
      throw IoError("dpdk:" + n + " (" + p.driver + "): " + std::to_string(info.max_rx_queues) + " receive and " +
                    std::to_string(info.max_tx_queues) + " transmit queues, and each of the " + std::to_string(workers) +
                    " workers needs one of each (net_af_packet: qpairs=N; net_memif: queues are the peer's; or fewer "
                    "--workers)");
    }
    rte_ether_addr mac{};
    if (rte_eth_macaddr_get(p.id, &mac) == 0) std::memcpy(p.mac.data(), mac.addr_bytes, 6);
    uint16_t mtu = 0;
    if (rte_eth_dev_get_mtu(p.id, &mtu) == 0 && mtu) p.mtu = mtu;
    // A driver over a kernel interface (net_af_packet, net_tap) sends through it: frames over the
    // interface's MTU, which DPDK does not know, would be refused there without a word.
    char ifname[IF_NAMESIZE];
    if (info.if_index && if_indextoname(info.if_index, ifname)) {
      try {
        const InterfaceInfo k = interface_info(ifname);
        if (k.mtu) p.mtu = std::min(p.mtu, k.mtu);
      } catch (const IoError&) {
      }
    }
    ports_.push_back(p);
  }
  // One pool per worker, holding every descriptor of its queues with room to spare; mbufs as large
  // as the ports' largest frame, so that no frame needs chaining.
  uint32_t mtu = 1500;
  for (const Port& p : ports_) mtu = std::max(mtu, p.mtu);
  const uint32_t room = RTE_PKTMBUF_HEADROOM + std::max<uint32_t>(RTE_MBUF_DEFAULT_DATAROOM, mtu + 22);
  if (room > UINT16_MAX) throw IoError("dpdk: an MTU of " + std::to_string(mtu) + " needs mbufs larger than DPDK has");
  unsigned mbufs = 1;
  while (mbufs < ports_.size() * (kRxDescriptors + kTxDescriptors) + 2 * kPoolCache + 2 * PacketBatch::kCapacity) mbufs <<= 1;
  const int socket = rte_eth_dev_socket_id(ports_.front().id);
  try {
    for (int w = 0; w < workers; ++w) {
      pools_.push_back(make_pool(w, mbufs - 1, static_cast<uint16_t>(room), socket < 0 ? SOCKET_ID_ANY : socket));
    }
    for (Port& p : ports_) {
      rte_eth_dev_info info{};
      rte_eth_dev_info_get(p.id, &info);
      rte_eth_conf conf{};
      // Flows spread over the workers' queues by the NIC's hash, where it has one.
      const uint64_t rss = info.flow_type_rss_offloads & (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP);
      if (workers > 1 && rss) {
        conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
        conf.rx_adv_conf.rss_conf.rss_hf = rss;
      }
      const uint16_t q = static_cast<uint16_t>(workers);
      check(rte_eth_dev_configure(p.id, q, q, &conf), p.name + ": configure");
      uint16_t nrx = kRxDescriptors, ntx = kTxDescriptors;
      rte_eth_dev_adjust_nb_rx_tx_desc(p.id, &nrx, &ntx);
      const int s = rte_eth_dev_socket_id(p.id);
      for (uint16_t i = 0; i < q; ++i) {
        check(rte_eth_rx_queue_setup(p.id, i, nrx, static_cast<unsigned>(s), nullptr, static_cast<rte_mempool*>(pools_[i])),
              p.name + ": receive queue " + std::to_string(i));
        check(rte_eth_tx_queue_setup(p.id, i, ntx, static_cast<unsigned>(s), nullptr),
              p.name + ": transmit queue " + std::to_string(i));
      }
      check(rte_eth_dev_start(p.id), p.name + ": start (" + p.driver + ": is its peer or device there?)");
      // A router takes frames for any address (virtual devices may not have the mode: no matter).
      rte_eth_promiscuous_enable(p.id);
    }
    // Links come up after the start (a NIC's autonegotiation, a memif peer connecting): wait for
    // them a while, as DPDK's examples do, so that the first frames sent are not refused.
    const uint64_t until = now_ns() + kLinkWaitNs;
    for (Port& p : ports_) {
      rte_eth_link link{};
      while (rte_eth_link_get_nowait(p.id, &link) == 0 && !link.link_status && now_ns() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      p.link_up = link.link_status != 0;
    }
  } catch (...) {
    for (const Port& p : ports_) rte_eth_dev_stop(p.id);
    for (void* mp : pools_) rte_mempool_free(static_cast<rte_mempool*>(mp));
    throw;
  }
}

DpdkPorts::~DpdkPorts() {
  for (const Port& p : ports_) {
    rte_eth_dev_stop(p.id);
    rte_eth_dev_close(p.id);
  }
  for (void* mp : pools_) rte_mempool_free(static_cast<rte_mempool*>(mp));
}

const DpdkPorts::Port& DpdkPorts::port(const std::string& name) const {
  const uint16_t id = resolve(name);
  for (const Port& p : ports_) {
    if (p.id == id) return p;
  }
  throw IoError("dpdk:" + name + ": not a port of this run");
}

DpdkPorts::Stats DpdkPorts::stats(const std::vector<std::string>& names) const {
  Stats s;
  for (const std::string& n : names) {
    rte_eth_stats st{};
    if (rte_eth_stats_get(port(n).id, &st) != 0) continue;
    s.missed += st.imissed;
    s.no_mbuf += st.rx_nombuf;
    s.errors += st.ierrors;
  }
  return s;
}

// ---- receive ----

DpdkRx::DpdkRx(std::shared_ptr<DpdkPorts> ports, const std::vector<std::string>& names, int queue)
    : ports_(std::move(ports)), queue_(static_cast<uint16_t>(queue)) {
  for (const std::string& n : names) ids_.push_back(ports_->port(n).id);
}

uint32_t DpdkRx::rx_burst(PacketPool& pool, PacketBatch& batch) {
  register_thread();
  const uint32_t room = std::min<uint32_t>(PacketBatch::kCapacity - batch.size, burst_);
  const uint32_t max_len = std::min<uint32_t>(pool.max_frame(), 0xFFFF);
  uint32_t got = 0;
  for (size_t k = 0; k < ids_.size() && got < room; ++k) {
    const uint16_t id = ids_[turn_];
    turn_ = (turn_ + 1) % ids_.size();
    // No more frames from the driver than there are cells for: each must have somewhere to go.
    const uint32_t want = std::min(room - got, pool.available());
    if (want == 0) break;
    rte_mbuf* m[PacketBatch::kCapacity];
    const uint16_t n = rte_eth_rx_burst(id, queue_, m, static_cast<uint16_t>(want));
    if (n == 0) continue;
    uint32_t* cells = &batch.cell[batch.size];
    pool.alloc_bulk(cells, n);
    for (uint16_t i = 0; i < n; ++i) {
      uint8_t* dst = pool.data(cells[i]);
      uint32_t len = 0;
      for (const rte_mbuf* seg = m[i]; seg && len < max_len; seg = seg->next) {
        const uint32_t take = std::min<uint32_t>(seg->data_len, max_len - len);
        std::memcpy(dst + len, rte_pktmbuf_mtod(seg, const uint8_t*), take);
        len += take;
      }
      uint32_t wire = m[i]->pkt_len;
      if ((m[i]->ol_flags & RTE_MBUF_F_RX_VLAN_STRIPPED) && len >= 12) {
        // The driver took the 802.1Q tag out of the frame: put it back after the MACs.
        const uint32_t rest = std::min(len, max_len - 4) - 12;
        std::memmove(dst + 16, dst + 12, rest);
        const uint16_t tci = m[i]->vlan_tci;
        const uint8_t tag[4] = {0x81, 0x00, uint8_t(tci >> 8), uint8_t(tci)};
        std::memcpy(dst + 12, tag, 4);
        len = 16 + rest;
        wire += 4;
      }
      const uint32_t j = batch.size + i;
      batch.len[j] = static_cast<uint16_t>(len);
      batch.wire_len[j] = len < wire ? kOversizeMark : wire;
      batch.ts_ns[j] = 0;
      batch.verdict[j] = Verdict::kUnset;
    }
    rte_pktmbuf_free_bulk(m, n);
    batch.size += n;
    got += n;
  }
  return got;
}

void DpdkRx::wait_for_packets(int) {}

std::string DpdkRx::describe() const {
  std::string s = "dpdk:";
  for (size_t i = 0; i < ids_.size(); ++i) {
    const DpdkPorts::Port& p = ports_->port(std::to_string(ids_[i]));
    s += (i ? "," : "") + p.device + " (" + p.driver + (p.link_up ? "" : ", link down") + ")";
  }
  return s;
}

// ---- transmit ----

DpdkTx::DpdkTx(std::shared_ptr<DpdkPorts> ports, const std::vector<std::string>& names, int queue, const L2Rewrite& rewrite)
    : ports_(std::move(ports)), queue_(static_cast<uint16_t>(queue)), rewrite_(rewrite.enabled), dst_mac_(rewrite.dst) {
  for (const std::string& n : names) out_.push_back(&ports_->port(n));
}

uint32_t DpdkTx::send(const DpdkPorts::Port& port, const PacketPool& pool, const PacketBatch& batch, const uint32_t* idx,
                      uint32_t n, Counters& c) {
  auto* mp = static_cast<rte_mempool*>(ports_->pool(queue_));
  // Ethernet header and up to two VLAN tags over the MTU's IP datagram.
  const uint32_t max_len = port.mtu + 22;
  uint32_t take[PacketBatch::kCapacity];
  uint32_t count = 0, failed = 0;
  for (uint32_t k = 0; k < n; ++k) {
    if (batch.len[idx[k]] > max_len) {
      c.tx_failed(batch.verdict[idx[k]], batch.len[idx[k]]);
      ++failed;
    } else {
      take[count++] = idx[k];
    }
  }
  if (count == 0) return 0;
  rte_mbuf* m[PacketBatch::kCapacity];
  // mbufs come back as the driver finishes sending: wait for them, for a while.
  const uint64_t t0 = now_ns();
  while (rte_pktmbuf_alloc_bulk(mp, m, count) != 0) {
    if (now_ns() - t0 > kTxStallNs) {
      for (uint32_t k = 0; k < count; ++k) c.tx_failed(batch.verdict[take[k]], batch.len[take[k]]);
      return 0;
    }
    rte_eth_tx_done_cleanup(port.id, queue_, 0);
  }
  for (uint32_t k = 0; k < count; ++k) {
    const uint32_t i = take[k];
    const uint8_t* frame = pool.data(batch.cell[i]);
    auto* dst = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m[k], batch.len[i]));
    std::memcpy(dst, frame, batch.len[i]);
    if (rewrite_ && batch.len[i] >= 12) {
      std::memcpy(dst, dst_mac_.data(), 6);
      std::memcpy(dst + 6, port.mac.data(), 6);
    }
  }
  uint32_t done = 0;
  uint64_t stuck_since = 0;
  while (done < count) {
    const uint16_t r = rte_eth_tx_burst(port.id, queue_, m + done, static_cast<uint16_t>(count - done));
    done += r;
    if (r) {
      stuck_since = 0;
      continue;
    }
    // The queue is full: wait for room rather than drop, but not for ever (a link that is down).
    const uint64_t t = now_ns();
    if (!stuck_since) stuck_since = t;
    if (t - stuck_since > kTxStallNs) break;
  }
  for (uint32_t k = done; k < count; ++k) {
    c.tx_failed(batch.verdict[take[k]], batch.len[take[k]]);
    rte_pktmbuf_free(m[k]);
  }
  return done;
}

void DpdkTx::tx_burst(const PacketPool& pool, const PacketBatch& batch, Counters& c) {
  register_thread();
  const uint64_t sent = send_split(batch, static_cast<uint32_t>(out_.size()), c,
                                   [&](uint32_t p, const uint32_t* idx, uint32_t n, Counters& cs) {
                                     return send(*out_[p], pool, batch, idx, n, cs);
                                   });
  sent_.store(sent_.load(std::memory_order_relaxed) + sent, std::memory_order_relaxed);
}

}  // namespace tandem

#else  // no DPDK

namespace tandem {

namespace {
[[noreturn]] void no_dpdk() {
  throw IoError("dpdk: this build has no DPDK ports (scripts/fetch-dpdk.sh, then rebuild)");
}
}  // namespace

bool dpdk_ports_available() { return false; }
DpdkPorts::DpdkPorts(const std::string&, const std::vector<std::string>&, int) { no_dpdk(); }
DpdkPorts::~DpdkPorts() = default;
const DpdkPorts::Port& DpdkPorts::port(const std::string&) const { no_dpdk(); }
DpdkPorts::Stats DpdkPorts::stats(const std::vector<std::string>&) const { return {}; }
DpdkRx::DpdkRx(std::shared_ptr<DpdkPorts>, const std::vector<std::string>&, int) { no_dpdk(); }
uint32_t DpdkRx::rx_burst(PacketPool&, PacketBatch&) { return 0; }
void DpdkRx::wait_for_packets(int) {}
std::string DpdkRx::describe() const { return "dpdk"; }
DpdkTx::DpdkTx(std::shared_ptr<DpdkPorts>, const std::vector<std::string>&, int, const L2Rewrite&) { no_dpdk(); }
uint32_t DpdkTx::send(const DpdkPorts::Port&, const PacketPool&, const PacketBatch&, const uint32_t*, uint32_t, Counters&) {
  return 0;
}
void DpdkTx::tx_burst(const PacketPool&, const PacketBatch&, Counters&) {}

}  // namespace tandem

#endif
