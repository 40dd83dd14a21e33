// DPDK ethdev ports (io/dpdk_port.h) over net_ring devices, whose transmit queue feeds their own
// receive queue: the mbufs of a worker are its cells (frames received in place, sent as they are),
// frames from other pools are copied, every mbuf comes back, and a run of the workers that
// forwards frames around the ring, or of the resident path's receive thread, sees each frame
// exactly as often as it should.
#include "io/dpdk_port.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "apps/ipv4/ipv4_app.h"
#include "apps/ipv4/ipv4_table.h"
#include "core/byte_order.h"
#include "core/checksum.h"
#include "io/af_packet.h"
#include "io/gen_frames.h"
#include "sched/resident.h"
#include "sched/workers.h"

namespace tandem {
namespace {

// The EAL starts once per process: every test uses these ports.
const char* kEal = "--no-huge --no-pci -m 256 --no-shconf --no-telemetry --vdev net_ring0 --vdev net_ring1 --vdev net_ring2 --vdev net_ring3 --vdev net_ring4 --vdev net_ring5 --vdev net_ring6";

std::shared_ptr<DpdkPorts> ring_ports(const std::vector<std::string>& names, int workers) {
  if (!dpdk_ports_available()) return nullptr;
  return std::make_shared<DpdkPorts>(kEal, names, workers);
}

// An IPv4/UDP frame to 10.0.0.0/8 of `len` bytes whose payload bytes name frame `n`.
uint16_t write_frame(uint8_t* f, uint32_t len, uint32_t n) {
  const uint8_t mac[6] = {2, 0, 0, 0, 0, 1};
  gen::write_eth(f, mac, mac, 0x0800);
  gen::write_ipv4(f + 14, len - 14, n, kProtoUdp, 0xC0000201u, 0x0A000000u | n);
  gen::write_l4_header(f + 34, kProtoUdp, len - 34, 1, 2, 0, 0);
  for (uint32_t i = 42; i < len; ++i) f[i] = static_cast<uint8_t>(n * 7 + i);
  return static_cast<uint16_t>(len);
}

// Frames 0..n-1 in cells of `pool`, each for port 0.
void fill(PacketPool& pool, PacketBatch& b, uint32_t n, uint32_t first = 0) {
  b.clear();
  ASSERT_EQ(pool.alloc_bulk(b.cell.data(), n), n);
  for (uint32_t i = 0; i < n; ++i) {
    b.len[i] = write_frame(pool.data(b.cell[i]), 60 + (first + i) % 1400, first + i);
    b.wire_len[i] = b.len[i];
    b.verdict[i] = Verdict::port(0);
  }
  b.size = n;
}

// Sends frames first..first+n-1 (each for port 0) through `tx` from an ordinary pool, the copy
// path: the cells stay the caller's and go back to it. Returns the frames as sent.
std::vector<std::vector<uint8_t>> inject(DpdkTx& tx, uint32_t n, Counters& c, uint32_t first = 0) {
  PacketPool plain(256);
  PacketBatch b;
  fill(plain, b, n, first);
  std::vector<std::vector<uint8_t>> sent;
  for (uint32_t i = 0; i < b.size; ++i) sent.emplace_back(plain.data(b.cell[i]), plain.data(b.cell[i]) + b.len[i]);
  for (uint32_t i = 0; i < b.size; ++i) c.received(b.len[i]), c.verdict(b.verdict[i], b.len[i]);
  tx.tx_burst(plain, b, c);
  plain.free_bulk(b.cell.data(), b.size);
  EXPECT_EQ(plain.available(), 256u);
  return sent;
}

uint32_t receive(DpdkRx& rx, PacketPool& pool, PacketBatch& b, uint32_t want) {
  b.clear();
  for (int tries = 0; tries < 1000 && b.size < want; ++tries) rx.rx_burst(pool, b);
  return b.size;
}

TEST(DpdkPorts, MbufsAreCellsSentAsTheyAreAndAllComeBack) {
  auto ports = ring_ports({"net_ring0"}, 1);
  if (!ports) GTEST_SKIP() << "this build has no DPDK ports";
  PacketPool* cells = ports->cells(0);
  ASSERT_NE(cells, nullptr) << "a pool reserved in one chunk lies at one stride";
  EXPECT_NE(cells->owner(), nullptr);
  EXPECT_GE(cells->max_frame(), 1518u);
  const uint32_t all = ports->all_mbufs(0);
  const uint32_t idle = ports->free_mbufs(0);  // the ring's receive queue holds none
  EXPECT_EQ(idle, all);

  DpdkRx rx(ports, {"net_ring0"}, 0);
  DpdkTx tx(ports, {"net_ring0"}, 0, L2Rewrite{});
  EXPECT_EQ(rx.own_cells(), cells);
  PacketPool plain(256);
  EXPECT_FALSE(tx.takes_cells(plain));
  EXPECT_TRUE(tx.takes_cells(*cells));

  // Frames from an ordinary pool are copied into mbufs; the cells stay the caller's.
  Counters c(1);
  const std::vector<std::vector<uint8_t>> sent = inject(tx, 100, c);
  EXPECT_EQ(tx.sent(), 100u);

  // Received in place: the cells are the mbufs, the frames as sent.
  PacketBatch r;
  ASSERT_EQ(receive(rx, *cells, r, 100), 100u);
  EXPECT_EQ(ports->free_mbufs(0), all - 100);
  for (uint32_t i = 0; i < r.size; ++i) {
    ASSERT_LT(r.cell[i], cells->num_cells());
    ASSERT_EQ(r.len[i], sent[i].size()) << i;
    EXPECT_EQ(r.wire_len[i], r.len[i]);
    EXPECT_EQ(std::memcmp(cells->data(r.cell[i]), sent[i].data(), r.len[i]), 0) << "frame " << i;
  }
  // Sent as they are, some cut shorter (as an app may), some dropped: the sink takes the cells it
  // sends, the caller frees the others.
  uint32_t expect_len[PacketBatch::kCapacity];
  std::vector<uint32_t> keep;
  for (uint32_t i = 0; i < r.size; ++i) {
    if (i % 10 == 3) {
      r.verdict[i] = Verdict::drop(DropReason::kNoRoute);
      continue;
    }
    r.verdict[i] = Verdict::port(0);
    if (i % 7 == 1) r.len[i] = static_cast<uint16_t>(r.len[i] - 4);
    expect_len[keep.size()] = r.len[i];
    keep.push_back(i);
  }
  const uint64_t before = tx.sent();
  tx.tx_burst(*cells, r, c);
  EXPECT_EQ(tx.sent() - before, keep.size());
  uint32_t dropped[PacketBatch::kCapacity], nd = 0;
  for (uint32_t i = 0; i < r.size; ++i) {
    if (Verdict::is_drop(r.verdict[i])) dropped[nd++] = r.cell[i];
  }
  cells->free_bulk(dropped, nd);

  PacketBatch back;
  ASSERT_EQ(receive(rx, *cells, back, static_cast<uint32_t>(keep.size())), keep.size());
  for (uint32_t k = 0; k < back.size; ++k) {
    ASSERT_EQ(back.len[k], expect_len[k]) << k;
    EXPECT_EQ(std::memcmp(cells->data(back.cell[k]), sent[keep[k]].data(), back.len[k]), 0) << "frame " << keep[k];
  }
  cells->free_bulk(back.cell.data(), back.size);
  EXPECT_EQ(ports->free_mbufs(0), all) << "every mbuf back in its pool";
}

TEST(DpdkPorts, FramesOverTheMtuAreRefusedAndTheirMbufsFreed) {
  auto ports = ring_ports({"net_ring2"}, 1);
  if (!ports) GTEST_SKIP() << "this build has no DPDK ports";
  PacketPool* cells = ports->cells(0);
  ASSERT_NE(cells, nullptr);
  DpdkRx rx(ports, {"net_ring2"}, 0);
  DpdkTx tx(ports, {"net_ring2"}, 0, L2Rewrite{});
  Counters c(1);
  inject(tx, 20, c);
  PacketBatch r;
  ASSERT_EQ(receive(rx, *cells, r, 20), 20u);
  // Grown over the MTU (as an ESP tunnel's frame might): refused, counted, its mbuf freed.
  for (uint32_t i = 0; i < r.size; ++i) r.verdict[i] = Verdict::port(0);
  const uint32_t mtu = ports->port("net_ring2").mtu;
  r.len[5] = static_cast<uint16_t>(mtu + 23);
  const uint64_t dropped_before = c.dropped();
  tx.tx_burst(*cells, r, c);
  EXPECT_EQ(c.dropped() - dropped_before, 1u);
  EXPECT_EQ(c.drops[static_cast<int>(DropReason::kTxError)], 1u);
  PacketBatch back;
  ASSERT_EQ(receive(rx, *cells, back, 19), 19u);
  cells->free_bulk(back.cell.data(), back.size);
  EXPECT_EQ(ports->free_mbufs(0), ports->all_mbufs(0));
}

// A flooded frame leaves through every interface once: its own mbuf through the first, copies
// (made before the mbuf is handed over) through the others, each with that port's source MAC.
TEST(DpdkPorts, FloodedFramesLeaveEveryInterfaceWithTheirOwnMacs) {
  auto ports = ring_ports({"net_ring3", "net_ring4"}, 1);
  if (!ports) GTEST_SKIP() << "this build has no DPDK ports";
  PacketPool* cells = ports->cells(0);
  ASSERT_NE(cells, nullptr);
  L2Rewrite rw;
  rw.enabled = true;
  rw.dst = {0x02, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE};
  DpdkRx rx3(ports, {"net_ring3"}, 0), rx4(ports, {"net_ring4"}, 0);
  DpdkTx into3(ports, {"net_ring3"}, 0, L2Rewrite{});
  DpdkTx both(ports, {"net_ring3", "net_ring4"}, 0, rw);
  Counters c(2);
  const std::vector<std::vector<uint8_t>> sent = inject(into3, 40, c);
  PacketBatch r;
  ASSERT_EQ(receive(rx3, *cells, r, 40), 40u);
  // Every other frame flooded, the rest to port 1 (interface net_ring4).
  for (uint32_t i = 0; i < r.size; ++i) r.verdict[i] = i % 2 ? Verdict::port(1) : Verdict::port(Verdict::kFloodPort);
  const uint64_t before = both.sent();
  both.tx_burst(*cells, r, c);
  EXPECT_EQ(both.sent() - before, 40u) << "each frame counts once";
  PacketBatch got3, got4;
  ASSERT_EQ(receive(rx3, *cells, got3, 20), 20u);
  ASSERT_EQ(receive(rx4, *cells, got4, 40), 40u);
  const auto check = [&](const PacketBatch& g, uint32_t k, uint32_t frame, const char* port) {
    const uint8_t* f = cells->data(g.cell[k]);
    ASSERT_EQ(g.len[k], sent[frame].size()) << port << " frame " << frame;
    EXPECT_EQ(std::memcmp(f, rw.dst.data(), 6), 0) << port << " frame " << frame;
    EXPECT_EQ(std::memcmp(f + 6, ports->port(port).mac.data(), 6), 0) << port << " frame " << frame;
    EXPECT_EQ(std::memcmp(f + 12, sent[frame].data() + 12, g.len[k] - 12), 0) << port << " frame " << frame;
  };
  for (uint32_t k = 0; k < got3.size; ++k) check(got3, k, 2 * k, "net_ring3");
  // net_ring4 got the flooded copies first (they are sent before the mbufs), then port 1's frames.
  for (uint32_t k = 0; k < 20; ++k) check(got4, k, 2 * k, "net_ring4");
  for (uint32_t k = 20; k < 40; ++k) check(got4, k, 2 * (k - 20) + 1, "net_ring4");
  cells->free_bulk(got3.cell.data(), got3.size);
  cells->free_bulk(got4.cell.data(), got4.size);
  EXPECT_EQ(ports->free_mbufs(0), ports->all_mbufs(0));
}

// The IPv4 app with one route, 10.0.0.0/8 to port 0: the frames of write_frame go back out.
struct RingRouter {
  ipv4::Fib fib;
  ipv4::RouteTable table;
  std::unique_ptr<ForwardApp> app;
};
std::unique_ptr<RingRouter> ring_router() {
  auto r = std::make_unique<RingRouter>();
  r->fib.path = "test";
  r->fib.routes = {{0x0A000000, 8, 0}};
  r->fib.max_next_hop = 0;
  r->table = ipv4::make_table("dir24-8", r->fib);
  r->app = ipv4::make_app(r->table, r->fib);
  return r;
}

// Frames 1000 onwards sent into `ring` from an ordinary pool, where they wait to be received.
void put_frames_on(const std::shared_ptr<DpdkPorts>& ports, const std::string& ring, uint32_t frames) {
  DpdkTx tx(ports, {ring}, 0, L2Rewrite{});
  Counters c(1);
  inject(tx, frames, c, 1000);
  ASSERT_EQ(tx.sent(), frames);
}

// A run's ends on `ring`: one worker's receive queue and transmit queue.
void ring_ends(const std::shared_ptr<DpdkPorts>& ports, const std::string& ring,
               std::vector<std::unique_ptr<PacketSource>>& sources, std::vector<std::unique_ptr<PacketSink>>& sinks) {
  sources.push_back(std::make_unique<DpdkRx>(ports, std::vector<std::string>{ring}, 0));
  sinks.push_back(std::make_unique<DpdkTx>(ports, std::vector<std::string>{ring}, 0, L2Rewrite{}));
}

// After `passes` x the frames put into `ring` went round: each frame passed exactly `passes`
// times (TTL that much lower), whole and with a valid checksum, and every mbuf is back.
void expect_frames_went_round(const std::shared_ptr<DpdkPorts>& ports, const std::string& ring, uint32_t frames,
                              uint32_t passes) {
  PacketPool* cells = ports->cells(0);
  DpdkRx rx(ports, {ring}, 0);
  PacketBatch back;
  ASSERT_EQ(receive(rx, *cells, back, frames), frames);
  for (uint32_t i = 0; i < back.size; ++i) {
    const uint8_t* f = cells->data(back.cell[i]);
    std::vector<uint8_t> want(back.len[i]);
    write_frame(want.data(), back.len[i], 1000 + i);
    ASSERT_EQ(back.len[i], 60 + (1000 + i) % 1400) << i;
    EXPECT_EQ(f[14 + 8], 64 - passes) << "TTL of frame " << i;
    EXPECT_TRUE(ipv4_checksum_ok(f + 14, 20)) << i;
    EXPECT_EQ(std::memcmp(f + 34, want.data() + 34, back.len[i] - 34), 0) << "payload of frame " << i;
  }
  cells->free_bulk(back.cell.data(), back.size);
  EXPECT_EQ(ports->free_mbufs(0), ports->all_mbufs(0));
}

// A run of the workers over the ring: the frames put in circulate, each received, routed (TTL one
// lower) and sent back into the ring, in place.
TEST(DpdkPorts, WorkersForwardInPlaceAroundARing) {
  auto ports = ring_ports({"net_ring1"}, 1);
  if (!ports) GTEST_SKIP() << "this build has no DPDK ports";
  ASSERT_NE(ports->cells(0), nullptr);
  const std::unique_ptr<RingRouter> router = ring_router();
  const ForwardApp* app = router->app.get();
  constexpr uint32_t kFrames = 200, kPasses = 5;
  ASSERT_NO_FATAL_FAILURE(put_frames_on(ports, "net_ring1", kFrames));
  std::vector<std::unique_ptr<PacketSource>> sources;
  std::vector<std::unique_ptr<PacketSink>> sinks;
  ring_ends(ports, "net_ring1", sources, sinks);
  WorkersConfig wc;
  wc.workers = 1;
  wc.ports = app->ports();
  wc.packets = kFrames * kPasses;
  wc.burst = 32;
  const WorkersResult res = run_workers_live(*app, sources, sinks, wc);
  EXPECT_EQ(res.counters.rx_packets, kFrames * kPasses);
  EXPECT_EQ(res.counters.tx_packets, kFrames * kPasses);
  EXPECT_EQ(res.counters.dropped(), 0u);
  expect_frames_went_round(ports, "net_ring1", kFrames, kPasses);
}

// The same through the resident path's receive thread (processing its batches itself, as without
// a GPU): the frames stay in their mbufs through the batch and those mbufs are sent (zero copy),
// or each burst's mbufs are copied into the ring's slot and freed at once and what the app
// forwards leaves in fresh mbufs. Either way every frame passes as often, every mbuf comes back.
void resident_round(const char* ring, bool zero_copy) {
  auto ports = ring_ports({ring}, 1);
  if (!ports) GTEST_SKIP() << "this build has no DPDK ports";
  ASSERT_NE(ports->cells(0), nullptr);
  const std::unique_ptr<RingRouter> router = ring_router();
  const ForwardApp* app = router->app.get();
  constexpr uint32_t kFrames = 200, kPasses = 5;
  ASSERT_NO_FATAL_FAILURE(put_frames_on(ports, ring, kFrames));
  std::vector<std::unique_ptr<PacketSource>> sources;
  std::vector<std::unique_ptr<PacketSink>> sinks;
  ring_ends(ports, ring, sources, sinks);
  ResidentConfig rc;
  rc.producers = 1;
  rc.cpu = true;
  rc.ring.batch = 64;
  rc.ring.slots_per_producer = 4;
  rc.ports = app->ports();
  rc.packets = kFrames * kPasses;
  rc.zero_copy = zero_copy;
  const ResidentResult res = run_resident_live(*app, sources, sinks, rc);
  EXPECT_EQ(res.run.counters.rx_packets, kFrames * kPasses);
  EXPECT_EQ(res.run.counters.tx_packets, kFrames * kPasses);
  EXPECT_EQ(res.run.counters.dropped(), 0u);
  EXPECT_GT(res.batches, 0u);
  EXPECT_EQ(res.describe.find("frames in the ports' buffers") != std::string::npos, zero_copy) << res.describe;
  expect_frames_went_round(ports, ring, kFrames, kPasses);
}

TEST(DpdkPorts, TheResidentPathForwardsAroundARingInTheMbufs) { resident_round("net_ring5", true); }

TEST(DpdkPorts, TheResidentPathForwardsAroundARingThroughCopies) { resident_round("net_ring6", false); }

}  // namespace
}  // namespace tandem
