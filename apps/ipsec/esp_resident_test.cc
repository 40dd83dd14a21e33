// The ipsec app on the resident path (apps/ipsec/esp_resident.h, sched/resident.h): frames that
// grow and shrink in the ring, the per-SA state carried through ordered steps on the GPU and back,
// and a GPU fault that must neither lose a packet nor send a sequence number twice. The reference
// is the scalar path of a fresh gateway over the same frames (apps/ipsec/esp_test_traffic.h).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "apps/ipsec/esp_frame.h"
#include "apps/ipsec/esp_test_traffic.h"
#include "core/byte_order.h"
#include "gpu/gpu_runtime.h"
#include "sched/resident.h"
#include "tests/test_util.h"

namespace tandem::ipsec {
namespace {

ResidentConfig config(const ForwardApp& app, gpu::FrameLayout layout, uint32_t batch, bool cpu) {
  ResidentConfig rc;
  rc.cpu = cpu;
  rc.ring.layout = layout;
  rc.ring.batch = batch;
  rc.ring.slots_per_producer = 4;
  rc.ring.cell_size = 2048;
  rc.ring.blocks = 8;
  rc.verify = true;
  rc.ports = app.ports();
  return rc;
}

const Suite kSuites[] = {{"aes-128-cbc", 200, 3000, "imix"},
                         {"aes-128-gcm", 200, 3000, "imix"},
                         {"chacha20-poly1305", 50, 3000, "64"},
                         {"aes-256-gcm", 1, 4000, "128"}};  // one SA: every frame in the ordered steps' same group

std::string label(const Suite& u, const ResidentConfig& rc) {
  return u.cipher + " " + std::to_string(u.sas) + " SA(s), " + (rc.cpu ? "cpu " : "gpu ") +
         gpu::frame_layout_name(rc.ring.layout) + ", batch " + std::to_string(rc.ring.batch) + ", " +
         std::to_string(rc.producers) + " receive thread(s)";
}

// One run of a fresh gateway; checks it against the reference.
void run_and_compare(const Suite& u, const PacketStore& s, const Reference& ref, ResidentConfig rc) {
  LoadedApp g = gateway(u.cipher, u.sas);
  rc.ports = g.app->ports();
  CollectingSink sink;
  if (rc.producers == 1) rc.sink = &sink;
  const ResidentResult r = run_resident(*g.app, s, rc);
  const std::string what = label(u, rc);
  EXPECT_FALSE(r.gpu_failed) << what << ": " << r.gpu_error;
  EXPECT_EQ(r.run.counters.rx_packets, s.size()) << what;
  EXPECT_TRUE(r.run.counters.balanced()) << what;
  EXPECT_EQ(counted(r.run.counters), ref.verdicts) << what;
  EXPECT_EQ(r.run.verify_mismatches, 0u) << what;
  EXPECT_GT(r.run.verify_checked, 0u) << what;
  if (rc.producers == 1) {
    EXPECT_EQ(sink.frames, ref.forwarded) << what;
    EXPECT_EQ(next_seqs(table_of(g)), ref.next_seq) << what << ": the state the run leaves";
    EXPECT_EQ(tops(table_of(g)), ref.top) << what;
  }
  if (!rc.cpu) EXPECT_EQ(r.cpu_batches, 0u) << what;
}

TEST(EspResident, TheReceiveThreadsRingGivesTheScalarPathsFramesAndState) {
  for (const Suite& u : kSuites) {
    const PacketStore s = traffic(gateway(u.cipher, u.sas), u.count, u.size);
    const Reference ref = reference(u.cipher, u.sas, s);
    ASSERT_GT(ref.verdicts.count(Verdict::drop(kReplayed)) + ref.verdicts.count(Verdict::drop(kTooOld)), 0u);
    ASSERT_GT(ref.verdicts.count(Verdict::drop(kBadIcv)), 0u);
    for (const gpu::FrameLayout layout : {gpu::FrameLayout::kCells, gpu::FrameLayout::kPacked}) {
      run_and_compare(u, s, ref, config(*gateway(u.cipher, u.sas).app, layout, 97, true));
    }
  }
}

TEST(EspResident, TheGpuGivesTheScalarPathsFramesAndState) {
  TANDEM_REQUIRE_GPU();
  for (const Suite& u : kSuites) {
    const PacketStore s = traffic(gateway(u.cipher, u.sas), u.count, u.size);
    const Reference ref = reference(u.cipher, u.sas, s);
    for (const gpu::FrameLayout layout : {gpu::FrameLayout::kCells, gpu::FrameLayout::kPacked}) {
      for (const uint32_t batch : {97u, 1024u}) {
        run_and_compare(u, s, ref, config(*gateway(u.cipher, u.sas).app, layout, batch, false));
      }
    }
    // Three receive threads: each SA's frames stay on one (RSS by flow), so the counts are the same.
    ResidentConfig rc = config(*gateway(u.cipher, u.sas).app, gpu::FrameLayout::kCells, 97, false);
    rc.producers = 3;
    run_and_compare(u, s, ref, rc);
  }
}

// On the host's last GPU (GPU 1 of two): the SA state, tables and kernel all on that GPU.
TEST(EspResident, TheLastGpuOfTheHostGivesTheScalarPathsFramesAndState) {
  TANDEM_REQUIRE_GPU();
  const Suite& u = kSuites[0];
  const PacketStore s = traffic(gateway(u.cipher, u.sas), u.count, u.size);
  const Reference ref = reference(u.cipher, u.sas, s);
  ResidentConfig rc = config(*gateway(u.cipher, u.sas).app, gpu::FrameLayout::kCells, 97, false);
  rc.gpus = {gpu::device_count() - 1};
  run_and_compare(u, s, ref, rc);
}

TEST(EspResident, TheDmaVariantIsRefused) {
  TANDEM_REQUIRE_GPU();
  LoadedApp g = gateway("aes-128-gcm", 4);
  ResidentConfig rc = config(*g.app, gpu::FrameLayout::kPacked, 64, false);
  rc.ring.mode = gpu::GpuMode::kAsync;
  EXPECT_THROW(run_resident(*g.app, traffic(g, 100, "64"), rc), gpu::GpuError);
}

// A GPU that faults mid-run: every packet counted, the rest finished on the CPU from the state the
// GPU left, no outbound sequence number sent twice and no inbound packet delivered twice.
TEST(EspResident, AGpuFaultLosesNoPacketAndSendsNoSequenceNumberTwice) {
  TANDEM_REQUIRE_GPU();
  const Suite u{"aes-128-gcm", 20, 4000, "64"};
  LoadedApp g = gateway(u.cipher, u.sas);
  const PacketStore s = traffic(g, u.count, u.size);
  const Reference ref = reference(u.cipher, u.sas, s);
  ResidentConfig rc = config(*g.app, gpu::FrameLayout::kCells, 64, false);
  rc.ring.fault_at_batch = 20;
  CollectingSink sink;
  rc.sink = &sink;
  const ResidentResult r = run_resident(*g.app, s, rc);
  EXPECT_TRUE(r.gpu_failed);
  EXPECT_GT(r.cpu_batches, 0u);
  EXPECT_EQ(r.run.counters.rx_packets, s.size());
  EXPECT_TRUE(r.run.counters.balanced());
  EXPECT_EQ(r.run.verify_mismatches, 0u);
  std::set<std::pair<uint32_t, uint32_t>> sent;  // (SPI, sequence number) of every ESP frame sent
  for (const auto& f : sink.frames) {
    if (f.size() > 42 && f[23] == kProtoEsp) {
      EXPECT_TRUE(sent.emplace(load_be32(f.data() + 34), load_be32(f.data() + 38)).second) << "a number sent twice";
    }
  }
  EXPECT_GT(sent.size(), 0u);
  // A replay accepted after the fault (a window that lost what the GPU accepted) would deliver
  // more than the reference does.
  EXPECT_LE(r.run.counters.tx_per_port[kPortDecrypted], ref.verdicts.at(Verdict::port(kPortDecrypted)));
}

}  // namespace
}  // namespace tandem::ipsec
