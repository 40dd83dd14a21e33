// The ipsec app under the scheduler (sched/hetero.h): frames go to devices by SA, and an SA's
// sequence numbers and replay window move with its shard (gpu::ResidentRunner::release_state and
// adopt_state). With shards moving every tick, every SA's frames must still be numbered and
// checked in arrival order: one receive thread gives the scalar path's frames byte for byte (as a
// multiset: devices finish at different times), any number of them its counts, and the SA table
// ends in the scalar path's state. A GPU that faults mid-run must send no sequence number twice.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "apps/ipsec/esp_test_traffic.h"
#include "core/byte_order.h"
#include "gpu/gpu_runtime.h"
#include "sched/hetero.h"
#include "tests/chaos_controller.h"
#include "tests/test_util.h"

namespace tandem::ipsec {
namespace {

DeviceSpec device(const std::string& id, sched::DeviceKind kind, double sim_us = 0) {
  DeviceSpec d;
  d.id = id;
  d.kind = kind;
  d.cost.a_ns = sim_us * 1000;
  return d;
}

HeteroConfig config(const ForwardApp& app, int dispatchers, std::vector<DeviceSpec> devs) {
  HeteroConfig c;
  c.dispatchers = dispatchers;
  c.devices = std::move(devs);
  c.cpu_batch = 97;
  c.cpu_slots = 4;
  c.gpu_ring.batch = 97;
  c.gpu_ring.slots_per_producer = 4;
  c.gpu_ring.blocks = 8;
  c.verify = true;
  c.ports = app.ports();
  c.tick_ms = 0.5;
  return c;
}

const Suite kSuites[] = {{"aes-128-cbc", 200, 6000, "imix"}, {"aes-128-gcm", 3, 6000, "64"}};

// Runs a fresh gateway over `s` with shards moving every tick; checks it against the reference.
// `every_device_used`: each device must have processed packets. A suite of a few SAs may leave a
// device without any when the run ends before the controller moves one there (a busy machine).
HeteroResult run_and_compare(const Suite& u, const PacketStore& s, const Reference& ref, int dispatchers,
                             std::vector<DeviceSpec> devs, const std::string& what, gpu::FrameLayout layout = gpu::FrameLayout::kCells,
                             bool every_device_used = true) {
  LoadedApp g = gateway(u.cipher, u.sas);
  HeteroConfig hc = config(*g.app, dispatchers, std::move(devs));
  hc.gpu_ring.layout = layout;
  ChaosController chaos;
  hc.controller = &chaos;
  hc.tick_ms = 1;  // a run of a few milliseconds on a fast machine still moves its SAs several times
  CollectingSink sink;
  if (dispatchers == 1) hc.sink = &sink;
  const HeteroResult r = run_hetero(*g.app, s, hc);
  EXPECT_EQ(r.run.counters.rx_packets, s.size()) << what;
  EXPECT_TRUE(r.run.counters.balanced()) << what;
  EXPECT_EQ(counted(r.run.counters), ref.verdicts) << what;
  EXPECT_EQ(r.run.verify_mismatches, 0u) << what;
  EXPECT_GT(r.run.verify_checked, 0u) << what;
  EXPECT_EQ(r.reordered, 0u) << what;
  EXPECT_EQ(r.lost, 0u) << what;
  EXPECT_EQ(next_seqs(table_of(g)), ref.next_seq) << what << ": the SA table after the run";
  EXPECT_EQ(tops(table_of(g)), ref.top) << what;
  if (dispatchers == 1) {
    std::vector<std::vector<uint8_t>> want = ref.forwarded;
    std::sort(want.begin(), want.end());
    std::sort(sink.frames.begin(), sink.frames.end());
    EXPECT_EQ(sink.frames, want) << what;
  }
  for (const DeviceReport& d : r.devices) {
    EXPECT_FALSE(d.failed) << what << ", " << d.id << ": " << d.error;
    if (every_device_used) EXPECT_GT(d.packets, 0u) << what << ", " << d.id;
  }
  return r;
}

// The scheduler's key of a frame is its SA, as the app's processing finds it; a frame with none
// (malformed, or no SA selects it) has no key.
TEST(EspSchedule, EveryFrameNamesTheSaItUses) {
  const Suite& u = kSuites[0];
  LoadedApp g = gateway(u.cipher, u.sas);
  const PacketStore s = traffic(g, u.count, u.size);
  const IpsecApp& app = static_cast<const IpsecApp&>(*g.app);
  uint32_t keyed = 0, sealed = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const uint32_t key = app.state_key(s.frame(i), s.caplen[i]);
    if (key == ForwardApp::kNoStateKey) continue;
    ++keyed;
    ASSERT_LT(key, table_of(g).size());
    const uint32_t spi = table_of(g).sa(key).spi;
    // An ESP frame names its SA by SPI; a cleartext one leaves sealed under its SA's SPI.
    std::vector<uint8_t> f(s.frame(i), s.frame(i) + s.caplen[i]);
    if (is_esp(s, i)) {
      EXPECT_EQ(load_be32(f.data() + 34), spi) << "frame " << i;
      continue;
    }
    f.resize(2048);
    uint32_t len = s.caplen[i];
    if (app.process(f.data(), &len, 2048) == Verdict::port(kPortTunnel)) {
      EXPECT_EQ(load_be32(f.data() + 34), spi) << "frame " << i;
      ++sealed;
    }
  }
  EXPECT_GT(keyed, s.size() * 9 / 10);
  EXPECT_GT(sealed, s.size() / 3);
  EXPECT_EQ(g.app->state_keys(), table_of(g).size());
  // A frame that does not parse, or that no SA selects, uses no key.
  const uint8_t junk[20] = {};
  EXPECT_EQ(g.app->state_key(junk, sizeof junk), ForwardApp::kNoStateKey);
}

// Two CPU groups and a slower simulated device, sharing the app's SA table: SAs move between them
// every tick. The simulated device's 300 us a batch makes the run last some milliseconds however
// fast the machine, so that the SAs do move.
TEST(EspSchedule, SasMovingAmongCpuGroupsKeepTheScalarPathsNumbersAndWindows) {
  for (const Suite& u : kSuites) {
    const PacketStore s = traffic(gateway(u.cipher, u.sas), u.count, u.size);
    const Reference ref = reference(u.cipher, u.sas, s);
    for (const int dispatchers : {1, 3}) {
      const std::string what = u.cipher + ", " + std::to_string(dispatchers) + " dispatcher(s)";
      const HeteroResult r = run_and_compare(
          u, s, ref, dispatchers,
          {device("cpu0", sched::DeviceKind::kCpu), device("cpu1", sched::DeviceKind::kCpu),
           device("sim0", sched::DeviceKind::kSim, 300)},
          what, gpu::FrameLayout::kCells, /*every_device_used=*/u.sas >= 10);
      EXPECT_GT(r.switches.size(), 1u) << what;
    }
  }
}

// The GPU keeps its own copy of the SAs' state: every move to or from it hands the state over.
TEST(EspSchedule, SasMovingBetweenTheGpuAndACpuGroupCarryTheirState) {
  TANDEM_REQUIRE_GPU();
  for (const Suite& u : kSuites) {
    const PacketStore s = traffic(gateway(u.cipher, u.sas), u.count, u.size);
    const Reference ref = reference(u.cipher, u.sas, s);
    for (const gpu::FrameLayout layout : {gpu::FrameLayout::kCells, gpu::FrameLayout::kPacked}) {
      for (const int dispatchers : {1, 3}) {
        const std::string what = u.cipher + ", " + gpu::frame_layout_name(layout) + ", " + std::to_string(dispatchers) +
                                 " dispatcher(s)";
        run_and_compare(u, s, ref, dispatchers,
                        {device("cpu0", sched::DeviceKind::kCpu), device("gpu0", sched::DeviceKind::kGpu)}, what, layout);
      }
    }
  }
}

// Two GPU devices (two GPUs where the host has them, else two on GPU 0), each with its own copy,
// and a CPU group: a move between the GPUs goes through the SA table.
TEST(EspSchedule, SasMovingBetweenTwoGpuDevicesCarryTheirState) {
  TANDEM_REQUIRE_GPU();
  const Suite& u = kSuites[0];
  const PacketStore s = traffic(gateway(u.cipher, u.sas), u.count, u.size);
  const Reference ref = reference(u.cipher, u.sas, s);
  DeviceSpec second = device("gpu1", sched::DeviceKind::kGpu);
  second.gpu = gpu::device_count() > 1 ? 1 : 0;
  run_and_compare(u, s, ref, 1, {device("cpu0", sched::DeviceKind::kCpu), device("gpu0", sched::DeviceKind::kGpu), second},
                  "two GPU devices");
}

// A GPU that faults while SAs move: every packet counted, no (SPI, sequence number) sent twice, no
// inbound packet delivered more often than the scalar path delivers it.
TEST(EspSchedule, AGpuFaultWhileSasMoveSendsNoSequenceNumberTwice) {
  TANDEM_REQUIRE_GPU();
  const Suite u{"aes-128-gcm", 20, 6000, "64"};
  LoadedApp g = gateway(u.cipher, u.sas);
  const PacketStore s = traffic(g, u.count, u.size);
  const Reference ref = reference(u.cipher, u.sas, s);
  DeviceSpec gpu0 = device("gpu0", sched::DeviceKind::kGpu);
  gpu0.fault_at_batch = 4;
  HeteroConfig hc = config(*g.app, 1, {device("cpu0", sched::DeviceKind::kCpu), gpu0});
  ChaosController chaos;
  hc.controller = &chaos;
  hc.tick_ms = 1;  // a run of a few milliseconds on a fast machine still moves its SAs several times
  CollectingSink sink;
  hc.sink = &sink;
  const HeteroResult r = run_hetero(*g.app, s, hc);
  EXPECT_TRUE(r.devices[1].failed);
  EXPECT_EQ(r.run.counters.rx_packets, s.size());
  EXPECT_TRUE(r.run.counters.balanced());
  EXPECT_EQ(r.run.verify_mismatches, 0u);
  EXPECT_EQ(r.reordered, 0u);
  EXPECT_EQ(r.lost, 0u);
  std::set<std::pair<uint32_t, uint32_t>> sent;
  for (const auto& f : sink.frames) {
    if (f.size() > 42 && f[23] == kProtoEsp) {
      EXPECT_TRUE(sent.emplace(load_be32(f.data() + 34), load_be32(f.data() + 38)).second) << "a number sent twice";
    }
  }
  EXPECT_GT(sent.size(), 0u);
  EXPECT_LE(r.run.counters.tx_per_port[kPortDecrypted], ref.verdicts.at(Verdict::port(kPortDecrypted)));
  // Every outbound number taken by the GPU or the CPU is behind the SA's counter when the run ends.
  const std::vector<uint64_t> next = next_seqs(table_of(g));
  for (const auto& [spi, seq] : sent) {
    for (uint32_t i = 0; i < table_of(g).size(); ++i) {
      if (table_of(g).sa(i).dir == SaDir::kOut && table_of(g).sa(i).spi == spi) EXPECT_LT(seq, next[i]) << "SPI " << spi;
    }
  }
}

}  // namespace
}  // namespace tandem::ipsec
