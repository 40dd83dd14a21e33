#include "io/af_xdp.h"

#include "core/clock.h"
#include "io/io_error.h"
#include "io/tx_split.h"

#ifdef TANDEM_HAVE_XDP

#include <linux/if_xdp.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#include <cstdarg>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tandem {

namespace {

constexpr uint32_t kFrames = 4096;     // UMEM frames per socket
constexpr uint32_t kFrameSize = 4096;  // bytes per UMEM frame (aligned mode: 2048 or 4096)
constexpr uint32_t kRing = 2048;       // RX, TX and completion ring entries
constexpr uint32_t kMaxLen = 0xFFFF;

std::string xsk_error(const std::string& what, int err) {
  std::string s = what + ": " + std::strerror(err < 0 ? -err : err);
  if (err == -EPERM || err == EPERM) s += " (needs CAP_NET_ADMIN, CAP_BPF and CAP_NET_RAW: run as root)";
  if (err == -ENOENT || err == ENOENT) {
    s += " (libxdp's BPF object xsk_def_xdp_prog.o not found: set LIBXDP_OBJECT_PATH to the folder that holds it)";
  }
  return s;
}

// The UMEM area: page-aligned anonymous memory, as the kernel wants it.
struct Area {
  void* p = nullptr;
  size_t bytes = 0;
  explicit Area(size_t n) : bytes(n) {
    p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) throw IoError(std::string("af_xdp: UMEM of ") + std::to_string(n >> 20) + " MiB: mmap failed");
  }
  ~Area() {
    if (p && p != MAP_FAILED) munmap(p, bytes);
  }
};

bool zero_copy(xsk_socket* xsk) {
  xdp_options o{};
  socklen_t len = sizeof o;
  return getsockopt(xsk_socket__fd(xsk), SOL_XDP, XDP_OPTIONS, &o, &len) == 0 && (o.flags & XDP_OPTIONS_ZEROCOPY);
}

}  // namespace

// libbpf and libxdp print warnings of their own (BTF sections they skip, no bpffs for the
// dispatcher); failures reach the user as our errors, with errno, so their prints stay quiet.
int quiet_libbpf(enum libbpf_print_level, const char*, va_list) { return 0; }
int quiet_libxdp(enum libxdp_print_level, const char*, va_list) { return 0; }

void quiet_libraries() {
  static const bool once = [] {
    libbpf_set_print(quiet_libbpf);
    libxdp_set_print(quiet_libxdp);
    return true;
  }();
  (void)once;
}

bool af_xdp_available() { return true; }

// ---- receive ----

// A UMEM and the socket on it, as the receive and the transmit end each hold one per interface.
struct UmemSocket {
  Area area{size_t{kFrames} * kFrameSize};
  xsk_umem* umem = nullptr;
  xsk_ring_prod fq{};
  xsk_ring_cons cq{};
  xsk_socket* xsk = nullptr;
  UmemSocket() = default;
  UmemSocket(const UmemSocket&) = delete;
  UmemSocket& operator=(const UmemSocket&) = delete;
  ~UmemSocket() {
    if (xsk) xsk_socket__delete(xsk);
    if (umem) xsk_umem__delete(umem);
  }
  void create_umem(const std::string& ifname, uint32_t fill_size) {
    xsk_umem_config uc{};
    uc.fill_size = fill_size;
    uc.comp_size = kRing;
    uc.frame_size = kFrameSize;
    uc.frame_headroom = 0;
    const int err = xsk_umem__create(&umem, area.p, area.bytes, &fq, &cq, &uc);
    if (err) throw IoError(xsk_error("af_xdp:" + ifname + ": UMEM", err));
  }
};

struct AfXdpRx::Port : UmemSocket {
  std::string ifname;
  uint32_t queue = 0;
  xsk_ring_cons rx{};
  bool zc = false;
};

AfXdpRx::AfXdpRx(const std::vector<InterfaceInfo>& interfaces, uint32_t queue) {
  quiet_libraries();
  for (const InterfaceInfo& ifc : interfaces) {
    auto p = std::make_unique<Port>();
    p->ifname = ifc.name;
    p->queue = queue;
    p->create_umem(ifc.name, kFrames);
    xsk_socket_config sc{};
    sc.rx_size = kRing;
    sc.tx_size = kRing;
    const int err = xsk_socket__create(&p->xsk, ifc.name.c_str(), queue, p->umem, &p->rx, nullptr, &sc);
    if (err) {
      throw IoError(xsk_error("af_xdp:" + ifc.name + ": socket on queue " + std::to_string(queue) +
                              (queue ? " (one receive queue per worker: does the interface have that many?)" : ""),
                              err));
    }
    p->zc = zero_copy(p->xsk);
    // Every frame of the UMEM waits in the fill ring for the kernel to write into.
    uint32_t idx = 0;
    if (xsk_ring_prod__reserve(&p->fq, kFrames, &idx) != kFrames) throw IoError("af_xdp:" + ifc.name + ": fill ring");
    for (uint32_t i = 0; i < kFrames; ++i) *xsk_ring_prod__fill_addr(&p->fq, idx + i) = uint64_t{i} * kFrameSize;
    xsk_ring_prod__submit(&p->fq, kFrames);
    ports_.push_back(std::move(p));
  }
}

AfXdpRx::~AfXdpRx() = default;

uint32_t AfXdpRx::rx_burst(PacketPool& pool, PacketBatch& batch) {
  if (batch.size >= PacketBatch::kCapacity) return 0;
  uint32_t want = std::min<uint32_t>({PacketBatch::kCapacity - batch.size, burst_, pool.available()});
  const uint32_t max_len = std::min(pool.max_frame(), kMaxLen);
  uint32_t got = 0;
  for (size_t k = 0; k < ports_.size() && got < want; ++k) {
    Port& p = *ports_[(turn_ + k) % ports_.size()];
    uint32_t idx = 0;
    const uint32_t n = xsk_ring_cons__peek(&p.rx, want - got, &idx);
    if (n == 0) continue;
    const uint32_t cells = pool.alloc_bulk(&batch.cell[batch.size], n);
    uint32_t fill_idx = 0;
    // The fill ring has room for every frame of the UMEM, so this never comes up short.
    xsk_ring_prod__reserve(&p.fq, cells, &fill_idx);
    for (uint32_t i = 0; i < cells; ++i) {
      const xdp_desc* d = xsk_ring_cons__rx_desc(&p.rx, idx + i);
      const uint8_t* data = static_cast<const uint8_t*>(xsk_umem__get_data(p.area.p, d->addr));
      const uint32_t len = std::min(d->len, max_len);
      const uint32_t j = batch.size + i;
      std::memcpy(pool.data(batch.cell[j]), data, len);
      batch.len[j] = static_cast<uint16_t>(len);
      // A frame the cell cut is marked oversize for the workers to drop (as io/af_packet.cc does).
      batch.wire_len[j] = len < d->len ? kOversizeMark : d->len;
      batch.ts_ns[j] = 0;
      batch.verdict[j] = Verdict::kUnset;
      *xsk_ring_prod__fill_addr(&p.fq, fill_idx + i) = xsk_umem__extract_addr(d->addr);
    }
    if (cells < n) xsk_ring_cons__cancel(&p.rx, n - cells);  // no cells left: the rest wait in the ring
    xsk_ring_cons__release(&p.rx, cells);
    xsk_ring_prod__submit(&p.fq, cells);
    batch.size += cells;
    got += cells;
    if (cells < n) break;
  }
  turn_ = (turn_ + 1) % std::max<size_t>(ports_.size(), 1);
  return got;
}

void AfXdpRx::wait_for_packets(int timeout_ms) {
  std::vector<pollfd> fds;
  for (auto& p : ports_) fds.push_back({xsk_socket__fd(p->xsk), POLLIN, 0});
  poll(fds.data(), fds.size(), timeout_ms);
}

AfXdpRxStats AfXdpRx::kernel_stats() const {
  AfXdpRxStats s;
  for (const auto& p : ports_) {
    xdp_statistics st{};
    socklen_t len = sizeof st;
    if (getsockopt(xsk_socket__fd(p->xsk), SOL_XDP, XDP_STATISTICS, &st, &len) == 0) {
      // rx_fill_ring_empty_descs counts failed reads of the fill ring, not frames lost.
      s.dropped += st.rx_dropped + st.rx_ring_full;
      s.invalid += st.rx_invalid_descs;
    }
  }
  return s;
}

std::string AfXdpRx::describe() const {
  std::string s = "af_xdp";
  for (size_t k = 0; k < ports_.size(); ++k) s += (k ? "," : ":") + ports_[k]->ifname;
  const bool zc = !ports_.empty() && ports_.front()->zc;
  return s + " (XDP socket on queue " + std::to_string(ports_.empty() ? 0 : ports_.front()->queue) + ", " +
         (zc ? "zero-copy" : "copy mode") + ", UMEM of " + std::to_string(kFrames) + " x " + std::to_string(kFrameSize) +
         " B)";
}

// ---- transmit ----

struct AfXdpTx::Port : UmemSocket {
  InterfaceInfo info;
  xsk_ring_prod tx{};
  std::vector<uint64_t> free;  // UMEM frames not on the TX ring
  uint32_t outstanding = 0;    // submitted, not completed
  void reclaim() {
    uint32_t idx = 0;
    const uint32_t n = xsk_ring_cons__peek(&cq, kRing, &idx);
    for (uint32_t i = 0; i < n; ++i) free.push_back(*xsk_ring_cons__comp_addr(&cq, idx + i));
    xsk_ring_cons__release(&cq, n);
    // Frames given up on (see send) may still complete later.
    outstanding -= std::min(n, outstanding);
  }
  // False when the kernel refuses to send at all (the interface down or gone).
  bool kick() {
    if (sendto(xsk_socket__fd(xsk), nullptr, 0, MSG_DONTWAIT, nullptr, 0) >= 0) return true;
    return errno == EAGAIN || errno == EBUSY || errno == ENOBUFS || errno == EINTR;
  }
};

AfXdpTx::AfXdpTx(const std::vector<InterfaceInfo>& interfaces, uint32_t queue, const L2Rewrite& rewrite)
    : rewrite_(rewrite) {
  quiet_libraries();
  for (const InterfaceInfo& ifc : interfaces) {
    auto p = std::make_unique<Port>();
    p->info = ifc;
    p->create_umem(ifc.name, kRing);
    xsk_socket_config sc{};
    sc.rx_size = kRing;
    sc.tx_size = kRing;
    sc.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;  // sends only: no program on the interface
    const int err = xsk_socket__create(&p->xsk, ifc.name.c_str(), queue, p->umem, nullptr, &p->tx, &sc);
    if (err) throw IoError(xsk_error("af_xdp:" + ifc.name + ": transmit socket on queue " + std::to_string(queue), err));
    p->free.reserve(kFrames);
    for (uint32_t i = 0; i < kFrames; ++i) p->free.push_back(uint64_t{i} * kFrameSize);
    ports_.push_back(std::move(p));
  }
}

AfXdpTx::~AfXdpTx() = default;

uint32_t AfXdpTx::send(Port& port, const PacketPool& pool, const PacketBatch& batch, const uint32_t* idx, uint32_t n,
                       Counters& c) {
  // Ethernet header and up to two VLAN tags over the MTU's IP datagram.
  const uint32_t max_len = std::min<uint32_t>(port.info.mtu ? port.info.mtu + 22 : kFrameSize, kFrameSize);
  uint32_t queued = 0, sent = 0;
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t i = idx[k];
    const uint32_t len = batch.len[i];
    if (len > max_len || len < 14) {
      c.tx_failed(batch.verdict[i], len);
      continue;
    }
    uint32_t slot = 0;
    uint64_t stuck_since = 0;
    bool refused = false;
    while (port.free.empty() || xsk_ring_prod__reserve(&port.tx, 1, &slot) != 1) {
      // The ring or the UMEM is full: let the kernel send and give frames back, for at most
      // kTxStallNs without progress (an interface that went down sends nothing).
      if (queued) {
        xsk_ring_prod__submit(&port.tx, queued);
        queued = 0;
      }
      const uint32_t before = port.outstanding;
      const bool ok = port.kick();
      port.reclaim();
      const uint64_t t = now_ns();
      if (port.outstanding < before || !stuck_since) stuck_since = t;
      if (!ok || t - stuck_since > kTxStallNs) {
        refused = true;
        break;
      }
    }
    if (refused) {
      c.tx_failed(batch.verdict[i], len);
      continue;
    }
    const uint64_t addr = port.free.back();
    port.free.pop_back();
    uint8_t* dst = static_cast<uint8_t*>(xsk_umem__get_data(port.area.p, addr));
    std::memcpy(dst, pool.data(batch.cell[i]), len);
    if (rewrite_.enabled) {
      std::memcpy(dst, rewrite_.dst.data(), 6);
      std::memcpy(dst + 6, port.info.mac.data(), 6);
    }
    xdp_desc* d = xsk_ring_prod__tx_desc(&port.tx, slot);
    d->addr = addr;
    d->len = len;
    d->options = 0;
    ++queued;
    ++sent;
    ++port.outstanding;
  }
  if (queued) xsk_ring_prod__submit(&port.tx, queued);
  // The kernel sends a few dozen frames per kick in copy mode: kick until all of them are out, so
  // that nothing waits in the ring for the next burst; but not for ever. Frames given up on were
  // handed to the kernel, which may still send them: they stay counted as sent.
  uint64_t stuck_since = now_ns();
  while (port.outstanding) {
    const uint32_t before = port.outstanding;
    const bool ok = port.kick();
    port.reclaim();
    if (port.outstanding < before) stuck_since = now_ns();
    if (!ok || now_ns() - stuck_since > kTxStallNs) {
      port.outstanding = 0;
      break;
    }
    if (port.outstanding) {
      pollfd p{xsk_socket__fd(port.xsk), POLLOUT, 0};
      poll(&p, 1, 0);
    }
  }
  return sent;
}

void AfXdpTx::tx_burst(const PacketPool& pool, const PacketBatch& batch, Counters& c) {
  const uint64_t sent = send_split(batch, static_cast<uint32_t>(ports_.size()), c,
                                   [&](uint32_t p, const uint32_t* idx, uint32_t n, Counters& cs) {
                                     return send(*ports_[p], pool, batch, idx, n, cs);
                                   });
  sent_.store(sent_.load(std::memory_order_relaxed) + sent, std::memory_order_relaxed);
}

}  // namespace tandem

#else  // no libxdp

namespace tandem {

namespace {
[[noreturn]] void no_xdp() {
  throw IoError("af_xdp: this build has no AF_XDP (install libxdp-dev and libbpf-dev, then rebuild)");
}
}  // namespace

bool af_xdp_available() { return false; }

struct AfXdpRx::Port {};
AfXdpRx::AfXdpRx(const std::vector<InterfaceInfo>&, uint32_t) { no_xdp(); }
AfXdpRx::~AfXdpRx() = default;
uint32_t AfXdpRx::rx_burst(PacketPool&, PacketBatch&) { return 0; }
void AfXdpRx::wait_for_packets(int) {}
AfXdpRxStats AfXdpRx::kernel_stats() const { return {}; }
std::string AfXdpRx::describe() const { return "af_xdp"; }

struct AfXdpTx::Port {};
AfXdpTx::AfXdpTx(const std::vector<InterfaceInfo>&, uint32_t, const L2Rewrite&) { no_xdp(); }
AfXdpTx::~AfXdpTx() = default;
void AfXdpTx::tx_burst(const PacketPool&, const PacketBatch&, Counters&) {}

}  // namespace tandem

#endif
