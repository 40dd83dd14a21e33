#include "io/dpdk_port.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "core/clock.h"
#include "io/af_packet.h"
#include "io/io_error.h"
#include "io/tx_split.h"

#ifdef TANDEM_HAVE_DPDK_ETHDEV

#include <rte_alarm.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
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
// mbufs a worker may hold beyond the ports' rings: the bursts it is processing (eight full ones).
constexpr unsigned kCellsInFlight = 8 * PacketBatch::kCapacity;
// How long the start waits for the ports' links to come up.
constexpr uint64_t kLinkWaitNs = 5000000000;
// How long the close waits for a memif peer to read what is left in the rings (see the close).
constexpr uint64_t kPeerLingerNs = 2000000000;

std::string dpdk_error(const std::string& what) { return "dpdk: " + what + ": " + rte_strerror(rte_errno); }

// ethdev calls return a negative errno.
void check(int rc, const std::string& what) {
  if (rc < 0) throw IoError("dpdk:" + what + ": " + rte_strerror(-rc));
}

// A memif client in zero-copy mode hands its peer the EAL's memory as one file per memseg list; on
// 4 KiB pages, or hugepages in a file per page, the driver would offer the peer a region that the
// file does not hold, and the peer would fault on its first frame.
void check_memif_zero_copy(const std::vector<std::string>& words) {
  bool zero_copy = false, no_huge = false, single_files = false;
  for (const std::string& w : words) {
    zero_copy |= w.find("net_memif") != std::string::npos && w.find("zero-copy=yes") != std::string::npos;
    no_huge |= w == "--no-huge";
    single_files |= w == "--single-file-segments";
  }
  if (zero_copy && (no_huge || !single_files)) {
    throw IoError("dpdk: a net_memif port with zero-copy=yes shares the EAL's memory with its peer by file: it needs "
                  "hugepages and --single-file-segments in --dpdk (e.g. --in-memory --single-file-segments), " +
                  std::string(no_huge ? "not --no-huge" : "and --single-file-segments is missing"));
  }
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
  check_memif_zero_copy(words);
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

// An mbuf pool as rte_pktmbuf_pool_create makes one, but where addresses are IOVAs (IOVA as VA:
// an IOMMU, or no device DMA at all) with its objects allowed to cross page boundaries: the pool
// is then reserved in one piece, its objects at one stride, which lets them be cells (MbufCells).
// With physical addresses an object must stay within a page, and pages leave gaps.
rte_mempool* make_pool_on(const std::string& name, unsigned mbufs, uint16_t data_room, int socket) {
  const unsigned flags = rte_eal_iova_mode() == RTE_IOVA_VA ? RTE_MEMPOOL_F_NO_IOVA_CONTIG : 0;
  rte_mempool* mp = rte_mempool_create_empty(name.c_str(), mbufs, sizeof(rte_mbuf) + data_room, kPoolCache,
                                             sizeof(rte_pktmbuf_pool_private), socket, flags);
  if (!mp) return nullptr;
  rte_pktmbuf_pool_private priv{};
  priv.mbuf_data_room_size = data_room;
  priv.mbuf_priv_size = 0;
  if (rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), nullptr) != 0) {
    rte_mempool_free(mp);
    return nullptr;
  }
  rte_pktmbuf_pool_init(mp, &priv);
  if (rte_mempool_populate_default(mp) < 0) {
    rte_mempool_free(mp);
    return nullptr;
  }
  rte_mempool_obj_iter(mp, rte_pktmbuf_init, nullptr);
  return mp;
}

rte_mempool* make_pool(int worker, unsigned mbufs, uint16_t data_room, int socket) {
  const std::string name = "tandem_rx" + std::to_string(worker);
  rte_mempool* mp = make_pool_on(name, mbufs, data_room, socket);
  // Memory may exist on another node only (--no-huge): any node rather than none.
  if (!mp && socket != SOCKET_ID_ANY) mp = make_pool_on(name, mbufs, data_room, SOCKET_ID_ANY);
  if (!mp) {
    throw IoError(dpdk_error("worker " + std::to_string(worker) + ": a pool of " + std::to_string(mbufs) +
                             " mbufs (give the EAL more memory: -m MiB)"));
  }
  return mp;
}

// The frames of an mbuf: where the cells put them, kHeadroom bytes into the data room.
static_assert(RTE_PKTMBUF_HEADROOM == PacketPool::kHeadroom, "mbuf frames start where cell frames do");

}  // namespace

// A worker's mbuf pool seen as pool cells: object i of the pool (in address order) is cell i, its
// frame at buf_addr + RTE_PKTMBUF_HEADROOM. Exists only where every object lies at one stride
// from the first, which one memory chunk gives (the usual case: the pool is reserved in one go).
class DpdkPorts::MbufCells final : public PacketPool::Owner {
 public:
  static std::unique_ptr<MbufCells> of(rte_mempool* mp) {
    struct Span {
      uintptr_t lo = UINTPTR_MAX, hi = 0;
      std::vector<uintptr_t> all;
    } span;
    rte_mempool_obj_iter(
        mp,
        [](rte_mempool*, void* arg, void* obj, unsigned) {
          auto* sp = static_cast<Span*>(arg);
          const auto a = reinterpret_cast<uintptr_t>(obj);
          sp->lo = std::min(sp->lo, a);
          sp->hi = std::max(sp->hi, a);
          sp->all.push_back(a);
        },
        &span);
    const size_t stride = size_t{mp->header_size} + mp->elt_size + mp->trailer_size;
    if (span.all.empty() || stride % 64 != 0) return nullptr;
    const size_t cells = (span.hi - span.lo) / stride + 1;
    // Chunks far apart would make a sparse index; their objects off the stride, none at all.
    if (cells > 2 * span.all.size() || cells > UINT32_MAX / 2) return nullptr;
    for (const uintptr_t a : span.all) {
      if ((a - span.lo) % stride != 0) return nullptr;
    }
    const uint32_t room = rte_pktmbuf_data_room_size(mp);
    if (room < RTE_PKTMBUF_HEADROOM + 64) return nullptr;
    return std::unique_ptr<MbufCells>(new MbufCells(mp, span.lo, static_cast<uint32_t>(stride),
                                                    static_cast<uint32_t>(cells), room - RTE_PKTMBUF_HEADROOM));
  }

  PacketPool& pool() { return pool_; }
  rte_mbuf* mbuf(uint32_t cell) const { return reinterpret_cast<rte_mbuf*>(first_ + uintptr_t{cell} * stride_); }
  // An mbuf's offset from the first is a multiple of the stride (2^shift x odd): the quotient is
  // the offset without its low zero bits times the odd part's inverse modulo 2^32, no division.
  uint32_t cell(const rte_mbuf* m) const {
    return static_cast<uint32_t>((reinterpret_cast<uintptr_t>(m) - first_) >> shift_) * inverse_;
  }
  void release(const uint32_t* cells, uint32_t n) override {
    rte_mbuf* m[PacketBatch::kCapacity];
    while (n) {
      const uint32_t k = std::min<uint32_t>(n, PacketBatch::kCapacity);
      for (uint32_t i = 0; i < k; ++i) m[i] = mbuf(cells[i]);
      rte_pktmbuf_free_bulk(m, k);
      cells += k;
      n -= k;
    }
  }

 private:
  MbufCells(rte_mempool* mp, uintptr_t first, uint32_t stride, uint32_t cells, uint32_t max_frame)
      : first_(first),
        stride_(stride),
        shift_(static_cast<uint32_t>(__builtin_ctz(stride))),
        inverse_(odd_inverse(stride >> __builtin_ctz(stride))),
        pool_(PacketPool::View{},
              reinterpret_cast<uint8_t*>(first + sizeof(rte_mbuf) + rte_pktmbuf_priv_size(mp)), cells, stride,
              max_frame, this) {}
  // x with x * odd = 1 modulo 2^32 (Newton's iteration: each step doubles the correct low bits).
  static uint32_t odd_inverse(uint32_t odd) {
    uint32_t x = odd;  // correct to 3 bits: odd * odd = 1 modulo 8
    for (int i = 0; i < 4; ++i) x *= 2 - odd * x;
    return x;
  }
  uintptr_t first_;
  uint32_t stride_;
  uint32_t shift_;
  uint32_t inverse_;
  PacketPool pool_;
};

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
  // The worker holds mbufs too: the bursts it processes (cells), a GPU path's bursts in flight.
  unsigned mbufs = 1;
  while (mbufs < ports_.size() * (kRxDescriptors + kTxDescriptors) + 2 * kPoolCache + kCellsInFlight) mbufs <<= 1;
  const int socket = rte_eth_dev_socket_id(ports_.front().id);
  try {
    for (int w = 0; w < workers; ++w) {
      pools_.push_back(make_pool(w, mbufs - 1, static_cast<uint16_t>(room), socket < 0 ? SOCKET_ID_ANY : socket));
      cells_.push_back(MbufCells::of(static_cast<rte_mempool*>(pools_.back())));
      if (!cells_.back() && w == 0) {
        std::fprintf(stderr, "dpdk: the mbuf pools are not one piece at one stride (%s): frames are copied between mbufs "
                     "and cells on the CPU paths, and the resident path works without zero copy\n",
                     rte_eal_iova_mode() == RTE_IOVA_PA ? "IOVA as physical addresses: give the EAL --iova-mode=va"
                                                        : "the EAL's memory is in pieces");
      }
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

namespace {

// The memif driver takes a disconnecting peer down on EAL's interrupt thread: it lowers the link
// first and unmaps the shared regions after. Stopping the port from here while that handler still
// runs frees the regions twice. Alarms run on the same thread as interrupt handlers, one at a time,
// so once an alarm set now has run, the handler that lowered the link has returned.
void drain_interrupt_thread() {
  std::atomic<bool> ran{false};
  auto mark = [](void* flag) { static_cast<std::atomic<bool>*>(flag)->store(true, std::memory_order_release); };
  if (rte_eal_alarm_set(1, mark, &ran) != 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return;
  }
  const uint64_t until = now_ns() + 1000000000;
  while (!ran.load(std::memory_order_acquire) && now_ns() < until) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  // Waits for a callback that has started; `ran` must outlive it.
  rte_eal_alarm_cancel(mark, &ran);
}

}  // namespace

DpdkPorts::~DpdkPorts() {
  // A memif port's transmit ring lies in memory shared with the peer, which reads it on its own
  // time; stopping the port unmaps it, and what the peer has not read yet is gone. The driver cannot
  // say how far the peer has read, so a port that sent frames stays up until the peer disconnects
  // (a sink that got all it wanted) or kPeerLingerNs has passed. Drivers over the kernel hand
  // frames over inside rte_eth_tx_burst, and a NIC's ring empties at line rate within microseconds.
  const uint64_t until = now_ns() + kPeerLingerNs;
  for (const Port& p : ports_) {
    rte_eth_stats st{};
    if (p.driver != "net_memif" || rte_eth_stats_get(p.id, &st) != 0 || st.opackets == 0) continue;
    rte_eth_link link{};
    while (now_ns() < until && rte_eth_link_get_nowait(p.id, &link) == 0 && link.link_status) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (!link.link_status) drain_interrupt_thread();
  }
  for (const Port& p : ports_) {
    rte_eth_dev_stop(p.id);
    rte_eth_dev_close(p.id);
  }
  cells_.clear();
  for (void* mp : pools_) rte_mempool_free(static_cast<rte_mempool*>(mp));
}

PacketPool* DpdkPorts::cells(int w) const {
  MbufCells* c = cells_[static_cast<size_t>(w)].get();
  return c ? &c->pool() : nullptr;
}

uint32_t DpdkPorts::free_mbufs(int w) const { return rte_mempool_avail_count(static_cast<rte_mempool*>(pool(w))); }
uint32_t DpdkPorts::all_mbufs(int w) const { return static_cast<rte_mempool*>(pool(w))->size; }

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
  const bool in_place = &pool == own_cells();
  uint32_t got = 0;
  for (size_t k = 0; k < ids_.size() && got < room; ++k) {
    const uint16_t id = ids_[turn_];
    turn_ = (turn_ + 1) % ids_.size();
    // No more frames from the driver than there are cells for: each must have somewhere to go.
    const uint32_t want = in_place ? room - got : std::min(room - got, pool.available());
    if (want == 0) break;
    rte_mbuf* m[PacketBatch::kCapacity];
    const uint16_t n = rte_eth_rx_burst(id, queue_, m, static_cast<uint16_t>(want));
    if (n == 0) continue;
    got += in_place ? take_in_place(reinterpret_cast<void* const*>(m), n, batch)
                    : copy_out(reinterpret_cast<void* const*>(m), n, pool, batch);
  }
  return got;
}

namespace {

// The driver took the 802.1Q tag out of the frame (`len` bytes at `frame`, room for `max_len`):
// puts it back after the MACs. Returns the new length; the frame's last bytes are cut where the
// room ends.
uint32_t reinsert_vlan(uint8_t* frame, uint32_t len, uint32_t max_len, uint16_t tci) {
  const uint32_t rest = std::min(len, max_len - 4) - 12;
  std::memmove(frame + 16, frame + 12, rest);
  const uint8_t tag[4] = {0x81, 0x00, uint8_t(tci >> 8), uint8_t(tci)};
  std::memcpy(frame + 12, tag, 4);
  return 16 + rest;
}

}  // namespace

uint32_t DpdkRx::take_in_place(void* const* mbufs, uint32_t n, PacketBatch& batch) {
  const DpdkPorts::MbufCells& cells = *ports_->cells_of(queue_);
  const uint32_t max_len = std::min<uint32_t>(own_cells()->max_frame(), 0xFFFF);
  // A driver that lets its peer write into the mbufs (memif in zero-copy mode, a NIC's DMA) leaves
  // the frames out of this core's caches: the burst's first lines are fetched together here, rather
  // than one miss after another when each frame is parsed.
  for (uint32_t i = 0; i < n; ++i) {
    const auto* m = static_cast<const rte_mbuf*>(mbufs[i]);
    prefetch_read(static_cast<const uint8_t*>(m->buf_addr) + m->data_off);
  }
  for (uint32_t i = 0; i < n; ++i) {
    auto* m = static_cast<rte_mbuf*>(mbufs[i]);
    const uint32_t j = batch.size + i;
    batch.cell[j] = cells.cell(m);
    uint32_t len = m->data_len, wire = m->pkt_len;
    // Frames are processed at the cell's frame offset: one a driver put elsewhere moves there.
    if (TANDEM_UNLIKELY(m->data_off != RTE_PKTMBUF_HEADROOM)) {
      len = std::min(len, max_len);
      std::memmove(static_cast<uint8_t*>(m->buf_addr) + RTE_PKTMBUF_HEADROOM, rte_pktmbuf_mtod(m, uint8_t*), len);
      m->data_off = RTE_PKTMBUF_HEADROOM;
    }
    if (TANDEM_UNLIKELY((m->ol_flags & RTE_MBUF_F_RX_VLAN_STRIPPED) && len >= 12)) {
      len = reinsert_vlan(rte_pktmbuf_mtod(m, uint8_t*), len, max_len, m->vlan_tci);
      wire += 4;
      m->ol_flags &= ~RTE_MBUF_F_RX_VLAN_STRIPPED;
    }
    // A chained frame (longer than an mbuf) is cut at its first segment: dropped as oversize.
    batch.len[j] = static_cast<uint16_t>(len);
    batch.wire_len[j] = len < wire ? kOversizeMark : wire;
    batch.ts_ns[j] = 0;
    batch.verdict[j] = Verdict::kUnset;
  }
  batch.size += n;
  return n;
}

uint32_t DpdkRx::copy_out(void* const* mbufs, uint32_t n, PacketPool& pool, PacketBatch& batch) {
  const uint32_t max_len = std::min<uint32_t>(pool.max_frame(), 0xFFFF);
  uint32_t* cells = &batch.cell[batch.size];
  pool.alloc_bulk(cells, n);
  for (uint32_t i = 0; i < n; ++i) {
    const auto* m = static_cast<const rte_mbuf*>(mbufs[i]);
    uint8_t* dst = pool.data(cells[i]);
    uint32_t len = 0;
    for (const rte_mbuf* seg = m; seg && len < max_len; seg = seg->next) {
      const uint32_t take = std::min<uint32_t>(seg->data_len, max_len - len);
      std::memcpy(dst + len, rte_pktmbuf_mtod(seg, const uint8_t*), take);
      len += take;
    }
    uint32_t wire = m->pkt_len;
    if ((m->ol_flags & RTE_MBUF_F_RX_VLAN_STRIPPED) && len >= 12) {
      len = reinsert_vlan(dst, len, max_len, m->vlan_tci);
      wire += 4;
    }
    const uint32_t j = batch.size + i;
    batch.len[j] = static_cast<uint16_t>(len);
    batch.wire_len[j] = len < wire ? kOversizeMark : wire;
    batch.ts_ns[j] = 0;
    batch.verdict[j] = Verdict::kUnset;
  }
  rte_pktmbuf_free_bulk(reinterpret_cast<rte_mbuf**>(const_cast<void**>(mbufs)), n);
  batch.size += n;
  return n;
}

void DpdkRx::wait_for_packets(int) {}

// The pool was sized for the ports' descriptors and caches plus this many. Only a pool without
// gaps between its objects (one chunk of memory, as it is made) is offered to be held in flight:
// those who hold cells may register the whole range for a device.
uint32_t DpdkRx::own_cells_to_hold() const {
  const PacketPool* cells = ports_->cells(queue_);
  return cells && cells->num_cells() == ports_->all_mbufs(queue_) ? kCellsInFlight : 0;
}

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

uint32_t DpdkTx::send_copies(const DpdkPorts::Port& port, const PacketPool& pool, const PacketBatch& batch,
                             const uint32_t* idx, uint32_t n, Counters& c) {
  auto* mp = static_cast<rte_mempool*>(ports_->pool(queue_));
  // Ethernet header and up to two VLAN tags over the MTU's IP datagram.
  const uint32_t max_len = port.mtu + 22;
  uint32_t take[PacketBatch::kCapacity];
  uint32_t count = 0;
  for (uint32_t k = 0; k < n; ++k) {
    if (batch.len[idx[k]] > max_len) {
      c.tx_failed(batch.verdict[idx[k]], batch.len[idx[k]]);
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
    auto* dst = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m[k], batch.len[i]));
    std::memcpy(dst, pool.data(batch.cell[i]), batch.len[i]);
    if (rewrite_ && batch.len[i] >= 12) {
      std::memcpy(dst, dst_mac_.data(), 6);
      std::memcpy(dst + 6, port.mac.data(), 6);
    }
  }
  return transmit(port, reinterpret_cast<void**>(m), take, count, batch, c);
}

uint32_t DpdkTx::send_in_place(const DpdkPorts::Port& port, const PacketPool& pool, const PacketBatch& batch,
                               const uint32_t* idx, uint32_t n, Counters& c) {
  const DpdkPorts::MbufCells& cells = *ports_->cells_of(queue_);
  const uint32_t max_len = port.mtu + 22;
  rte_mbuf* m[PacketBatch::kCapacity];
  uint32_t take[PacketBatch::kCapacity];
  uint32_t count = 0;
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t i = idx[k];
    rte_mbuf* mb = cells.mbuf(batch.cell[i]);
    if (batch.len[i] > max_len) {
      c.tx_failed(batch.verdict[i], batch.len[i]);
      rte_pktmbuf_free(mb);
      continue;
    }
    // The app may have changed the frame's length (an ESP tunnel's header and trailer).
    mb->data_len = batch.len[i];
    mb->pkt_len = batch.len[i];
    if (rewrite_ && batch.len[i] >= 12) {
      uint8_t* d = const_cast<uint8_t*>(pool.data(batch.cell[i]));
      std::memcpy(d, dst_mac_.data(), 6);
      std::memcpy(d + 6, port.mac.data(), 6);
    }
    m[count] = mb;
    take[count++] = i;
  }
  return count ? transmit(port, reinterpret_cast<void**>(m), take, count, batch, c) : 0;
}

uint32_t DpdkTx::transmit(const DpdkPorts::Port& port, void** mv, const uint32_t* idx, uint32_t count,
                          const PacketBatch& batch, Counters& c) {
  auto** m = reinterpret_cast<rte_mbuf**>(mv);
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
  for (uint32_t k = done; k < count; ++k) c.tx_failed(batch.verdict[idx[k]], batch.len[idx[k]]);
  if (done < count) rte_pktmbuf_free_bulk(m + done, count - done);
  return done;
}

void DpdkTx::tx_burst(const PacketPool& pool, const PacketBatch& batch, Counters& c) {
  register_thread();
  const auto interfaces = static_cast<uint32_t>(out_.size());
  uint64_t sent = 0;
  if (!takes_cells(pool)) {
    sent = send_split(batch, interfaces, c, [&](uint32_t p, const uint32_t* idx, uint32_t n, Counters& cs) {
      return send_copies(*out_[p], pool, batch, idx, n, cs);
    });
  } else {
    // A flooded frame's extra copies first (one interface has none): its own mbuf, sent below, is
    // the driver's to free.
    if (interfaces > 1) {
      split_by_interface(batch, interfaces, [&](uint32_t p, const uint32_t* idx, uint32_t n, bool counted) {
        Counters extra(0);
        if (!counted) send_copies(*out_[p], pool, batch, idx, n, extra);
      });
    }
    split_by_interface(batch, interfaces, [&](uint32_t p, const uint32_t* idx, uint32_t n, bool counted) {
      if (counted) sent += send_in_place(*out_[p], pool, batch, idx, n, c);
    });
  }
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
class DpdkPorts::MbufCells {};
PacketPool* DpdkPorts::cells(int) const { return nullptr; }
uint32_t DpdkPorts::free_mbufs(int) const { return 0; }
uint32_t DpdkPorts::all_mbufs(int) const { return 0; }
DpdkRx::DpdkRx(std::shared_ptr<DpdkPorts>, const std::vector<std::string>&, int) { no_dpdk(); }
uint32_t DpdkRx::rx_burst(PacketPool&, PacketBatch&) { return 0; }
uint32_t DpdkRx::take_in_place(void* const*, uint32_t, PacketBatch&) { return 0; }
uint32_t DpdkRx::copy_out(void* const*, uint32_t, PacketPool&, PacketBatch&) { return 0; }
void DpdkRx::wait_for_packets(int) {}
uint32_t DpdkRx::own_cells_to_hold() const { return 0; }
std::string DpdkRx::describe() const { return "dpdk"; }
DpdkTx::DpdkTx(std::shared_ptr<DpdkPorts>, const std::vector<std::string>&, int, const L2Rewrite&) { no_dpdk(); }
uint32_t DpdkTx::send_copies(const DpdkPorts::Port&, const PacketPool&, const PacketBatch&, const uint32_t*, uint32_t,
                             Counters&) {
  return 0;
}
uint32_t DpdkTx::send_in_place(const DpdkPorts::Port&, const PacketPool&, const PacketBatch&, const uint32_t*, uint32_t,
                               Counters&) {
  return 0;
}
uint32_t DpdkTx::transmit(const DpdkPorts::Port&, void**, const uint32_t*, uint32_t, const PacketBatch&, Counters&) {
  return 0;
}
void DpdkTx::tx_burst(const PacketPool&, const PacketBatch&, Counters&) {}

}  // namespace tandem

#endif
