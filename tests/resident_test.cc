// The resident path (sched/resident.h, gpu/resident.h) for every registered app: the receive
// threads' ring (slots reused many times over, frames in cells or packed, batches closed by frames
// or by bytes, several threads), the counters taken from batch summaries, verification and the
// output, against the scalar path of the workers. On every machine the receive threads process
// the batches themselves (what they fall back to when the GPU fails); with a GPU, the persistent
// kernel on the mapped ring and the DMA variant must give the same counters, decisions and bytes,
// and a GPU that faults mid-run must leave every packet counted.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "apps/registry.h"
#include "gpu/gpu_runtime.h"
#include "io/traffic_gen.h"
#include "sched/resident.h"
#include "tests/app_cases.h"
#include "tests/resident_config.h"
#include "tests/test_util.h"

namespace tandem {
namespace {

std::string label(const Case& c, const ResidentConfig& rc) {
  return c.t.label + (rc.cpu ? " cpu" : std::string(" ") + gpu::gpu_mode_name(rc.ring.mode)) + " " +
         gpu::frame_layout_name(rc.ring.layout) + ", " + std::to_string(rc.producers) + " thread(s), batch " +
         std::to_string(rc.ring.batch);
}

class ResidentPath : public ::testing::TestWithParam<Case> {};

TEST_P(ResidentPath, TheReceiveThreadsRingGivesTheReferenceDecisions) {
  const Case& c = GetParam();
  LoadedCase l = load_case(c);
  const ForwardApp& app = *l.a.app;
  for (const gpu::FrameLayout layout : {gpu::FrameLayout::kCells, gpu::FrameLayout::kPacked}) {
    for (const int producers : {1, 3}) {
      ResidentConfig rc = resident_test_config(app, producers, layout, 97, true);
      const ResidentResult r = run_resident(app, l.s, rc);
      expect_same(l.ref, r.run, label(c, rc));
      EXPECT_EQ(r.cpu_batches, r.batches);
      EXPECT_GT(r.batches, l.s.size() / 97);
    }
  }
  // Two passes, and the output of the first: the scalar path's frames, byte for byte.
  ResidentConfig rc = resident_test_config(app, 1, gpu::FrameLayout::kPacked, 64, true);
  rc.repeat = 2;
  CollectingSink sink;
  rc.sink = &sink;
  const ResidentResult r = run_resident(app, l.s, rc);
  EXPECT_EQ(r.run.counters.rx_packets, 2 * l.s.size());
  EXPECT_TRUE(r.run.counters.balanced());
  EXPECT_EQ(sink.frames, forwarded_frames(l.scalar)) << label(c, rc);
}

TEST_P(ResidentPath, TheGpuGivesTheReferenceDecisionsAndBytes) {
  TANDEM_REQUIRE_GPU();
  const Case& c = GetParam();
  if (const std::string why = no_gpu_path(c); !why.empty()) GTEST_SKIP() << c.t.label << ": " << why;
  LoadedCase l = load_case(c);
  const ForwardApp& app = *l.a.app;
  struct Way {
    gpu::GpuMode mode;
    gpu::FrameLayout layout;
  };
  for (const Way w : {Way{gpu::GpuMode::kPersistent, gpu::FrameLayout::kCells},
                      Way{gpu::GpuMode::kPersistent, gpu::FrameLayout::kPacked},
                      Way{gpu::GpuMode::kAsync, gpu::FrameLayout::kPacked}}) {
    for (const int producers : {1, 3}) {
      ResidentConfig rc = resident_test_config(app, producers, w.layout, 97, false);
      rc.ring.mode = w.mode;
      rc.ring.blocks = 8;
      CollectingSink sink;
      if (producers == 1) rc.sink = &sink;
      const ResidentResult r = run_resident(app, l.s, rc);
      expect_same(l.ref, r.run, label(c, rc));
      EXPECT_FALSE(r.gpu_failed) << r.gpu_error;
      EXPECT_EQ(r.cpu_batches, 0u) << label(c, rc);
      if (producers == 1) EXPECT_EQ(sink.frames, forwarded_frames(l.scalar)) << label(c, rc);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Apps, ResidentPath, ::testing::ValuesIn(cases()), CaseName());

// The IPv4 app on generated traffic, for the tests of the path's machinery.
struct Ipv4 {
  LoadedApp a;
  PacketStore s;
};
Ipv4 ipv4(uint64_t count) {
  for (const Case& c : cases()) {
    if (c.app != "ipv4") continue;
    Ipv4 v{load_app(c.app, c.t.args), {}};
    v.a.app->build_reference();
    GenSpec g = parse_gen_spec(c.t.gen);
    g.count = count;
    g.flows = static_cast<uint32_t>(std::min<uint64_t>(g.flows, count));
    v.s = v.a.generate(g);
    return v;
  }
  ADD_FAILURE() << "no ipv4 test case";
  return {};
}

TEST(ResidentMachinery, AStopDrainsAndEveryReceivedPacketIsCounted) {
  Ipv4 v = ipv4(20000);
  if (!v.a.app) return;
  std::atomic<int> stop{0};
  ResidentConfig rc = resident_test_config(*v.a.app, 2, gpu::FrameLayout::kCells, 128, true);
  rc.repeat = 0;  // forever, until stopped
  rc.packets = 0;
  rc.stop = &stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop.store(1);
  });
  const ResidentResult r = run_resident(*v.a.app, v.s, rc);
  stopper.join();
  EXPECT_TRUE(r.run.stopped);
  EXPECT_GT(r.run.counters.rx_packets, 0u);
  EXPECT_TRUE(r.run.counters.balanced());
  EXPECT_EQ(r.run.verify_mismatches, 0u);
}

TEST(ResidentMachinery, PacedArrivalsPublishPartialBatchesAndTimeEveryPacket) {
  Ipv4 v = ipv4(20000);
  if (!v.a.app) return;
  ResidentConfig rc = resident_test_config(*v.a.app, 2, gpu::FrameLayout::kPacked, 1024, true);
  rc.rate_pps = 100000;  // 0.2 s
  rc.rx_hold_ns = 50000;
  const ResidentResult r = run_resident(*v.a.app, v.s, rc);
  EXPECT_EQ(r.run.counters.rx_packets, v.s.size());
  EXPECT_TRUE(r.run.counters.balanced());
  EXPECT_EQ(r.run.latency.count(), v.s.size());
  // At 50,000 packets per second per thread and a 50 us hold, batches leave with a few packets,
  // never full.
  EXPECT_GT(r.batches, v.s.size() / 16);
  EXPECT_GE(r.run.seconds, 0.15);
}

TEST(ResidentMachinery, APacketCountLoopsTheInput) {
  Ipv4 v = ipv4(1000);
  if (!v.a.app) return;
  ResidentConfig rc = resident_test_config(*v.a.app, 3, gpu::FrameLayout::kCells, 100, true);
  rc.packets = 12345;
  const ResidentResult r = run_resident(*v.a.app, v.s, rc);
  EXPECT_EQ(r.run.counters.rx_packets, 12345u);
  EXPECT_EQ(r.run.expected, 12345u);
  EXPECT_TRUE(r.run.counters.balanced());
}

// A fault breaks the process's CUDA context for good: one mode per test (ctest runs each test
// case in its own process).
void fault_run(gpu::GpuMode mode) {
  Ipv4 v = ipv4(200000);
  if (!v.a.app) return;
  ResidentConfig rc = resident_test_config(*v.a.app, 2, gpu::FrameLayout::kPacked, 256, false);
  rc.ring.mode = mode;
  rc.ring.fault_at_batch = 50;
  const ResidentResult r = run_resident(*v.a.app, v.s, rc);
  const std::string what = gpu::gpu_mode_name(mode);
  EXPECT_TRUE(r.gpu_failed) << what;
  EXPECT_GT(r.cpu_batches, 0u) << what;
  EXPECT_EQ(r.run.counters.rx_packets, v.s.size()) << what;
  EXPECT_TRUE(r.run.counters.balanced()) << what;
  EXPECT_EQ(r.run.verify_mismatches, 0u) << what;
  // Only frames the GPU was writing back when it failed may be dropped for it.
  EXPECT_LE(r.run.counters.drops[static_cast<int>(DropReason::kGpuFault)], 256u * 160) << what;
}

TEST(ResidentMachinery, AGpuFaultUnderThePersistentKernelIsFinishedOnTheCpu) {
  TANDEM_REQUIRE_GPU();
  fault_run(gpu::GpuMode::kPersistent);
}

TEST(ResidentMachinery, AGpuFaultInTheDmaVariantIsFinishedOnTheCpu) {
  TANDEM_REQUIRE_GPU();
  fault_run(gpu::GpuMode::kAsync);
}

// Several GPUs: receive thread t feeds GPU t mod N, each GPU its own ring and tables. GPUs 0 and 1
// where the host has two, else two rings on GPU 0; the same decisions as the scalar path.
TEST(ResidentMultiGpu, EachGpuTakesItsReceiveThreadsTraffic) {
  TANDEM_REQUIRE_GPU();
  for (const Case& c : cases()) {
    if (!no_gpu_path(c).empty()) continue;
    LoadedCase l = load_case(c);
    const ForwardApp& app = *l.a.app;
    if (app.frame_growth() != 0) continue;  // per-SA state lives on one GPU
    ResidentConfig rc = resident_test_config(app, 4, gpu::FrameLayout::kCells, 97, false);
    rc.ring.blocks = 8;
    rc.gpus = {0, gpu::device_count() > 1 ? 1 : 0};
    const ResidentResult r = run_resident(app, l.s, rc);
    expect_same(l.ref, r.run, c.t.label + ", 2 GPUs");
    EXPECT_FALSE(r.gpu_failed) << r.gpu_error;
    ASSERT_EQ(r.gpus.size(), 2u);
    uint64_t packets = 0;
    for (const ResidentGpuReport& g : r.gpus) {
      EXPECT_EQ(g.receive_threads, 2u);
      EXPECT_GT(g.batches, 0u) << c.t.label << ", GPU " << g.gpu;
      packets += g.packets;
    }
    EXPECT_EQ(packets, r.run.counters.rx_packets);
  }
}

// Five receive threads on two GPUs: threads 0, 2, 4 feed the first, 1 and 3 the second.
TEST(ResidentMultiGpu, AnUnevenSplitOfReceiveThreadsCountsEveryPacket) {
  TANDEM_REQUIRE_GPU();
  Ipv4 v = ipv4(50000);
  ResidentConfig rc = resident_test_config(*v.a.app, 5, gpu::FrameLayout::kPacked, 128, false);
  rc.gpus = {0, gpu::device_count() > 1 ? 1 : 0};
  const ResidentResult r = run_resident(*v.a.app, v.s, rc);
  EXPECT_FALSE(r.gpu_failed) << r.gpu_error;
  EXPECT_EQ(r.run.counters.rx_packets, v.s.size());
  EXPECT_TRUE(r.run.counters.balanced());
  EXPECT_EQ(r.run.verify_mismatches, 0u);
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_EQ(r.gpus[0].receive_threads, 3u);
  EXPECT_EQ(r.gpus[1].receive_threads, 2u);
  EXPECT_EQ(r.gpus[0].packets + r.gpus[1].packets, v.s.size());
  EXPECT_GT(r.gpus[1].batches, 0u);
  rc.gpus = {0, -1};
  EXPECT_THROW(run_resident(*v.a.app, v.s, rc), std::invalid_argument);
}

TEST(ResidentMultiGpu, MoreGpusThanReceiveThreadsIsRefused) {
  TANDEM_REQUIRE_GPU();
  Ipv4 v = ipv4(1000);
  ResidentConfig rc = resident_test_config(*v.a.app, 1, gpu::FrameLayout::kCells, 97, false);
  rc.gpus = {0, 0};
  EXPECT_THROW(run_resident(*v.a.app, v.s, rc), std::invalid_argument);
}

// A fault on the first GPU: its receive threads finish on the CPU, the other GPU goes on (with one
// GPU, both rings share its broken context and both finish on the CPU); every packet counted.
TEST(ResidentMultiGpu, AFaultOnOneGpuIsFinishedOnTheCpu) {
  TANDEM_REQUIRE_GPU();
  Ipv4 v = ipv4(200000);
  ResidentConfig rc = resident_test_config(*v.a.app, 4, gpu::FrameLayout::kCells, 256, false);
  rc.ring.fault_at_batch = 30;
  rc.ring.blocks = 8;
  const bool two = gpu::device_count() > 1;
  rc.gpus = {0, two ? 1 : 0};
  const ResidentResult r = run_resident(*v.a.app, v.s, rc);
  EXPECT_TRUE(r.gpu_failed);
  EXPECT_EQ(r.run.counters.rx_packets, v.s.size());
  EXPECT_TRUE(r.run.counters.balanced());
  EXPECT_EQ(r.run.verify_mismatches, 0u);
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_TRUE(r.gpus[0].failed);
  // The second GPU goes on where the driver lets it (the device host's driver reports every GPU of
  // the process failed after one faults: bench/probes/gpu_fault_isolation.cu); either way its
  // receive threads finish what it leaves, and nothing is counted twice.
  if (two && !r.gpus[1].failed) {
    EXPECT_GT(r.gpus[1].batches, 0u) << "the other GPU goes on";
  } else {
    EXPECT_NE(r.gpu_error.find("launch failure"), std::string::npos) << r.gpu_error;
  }
  if (!two) {
    EXPECT_TRUE(r.gpus[1].failed) << "one GPU, one context";
  }
}

}  // namespace
}  // namespace tandem
