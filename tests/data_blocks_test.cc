// Results of any size reach apply (apps/forward_app.h, data blocks): an app whose lookup result is
// 16 bytes (a port and a 12-byte rewrite of the destination MAC and the IPv4 TOS) forwards the same
// through the scalar and batched CPU paths, the gathering engine's CPU fallback and the staged
// engine over a host runner, and its rewrite lands in every forwarded frame.
#include <gtest/gtest.h>

#include <cstring>

#include "apps/forward_app_impl.h"
#include "core/flow_hash.h"
#include "core/parse.h"
#include "io/traffic_gen.h"
#include "sched/workers.h"
#include "tests/pipeline_runs.h"

namespace tandem {
namespace {

struct WideResult {
  uint32_t port;
  uint8_t mac[6];
  uint8_t tos;
  uint8_t pad[5];
};
static_assert(sizeof(WideResult) == 16);

// Port, new destination MAC and TOS from a hash of the destination address (the "table").
WideResult wide_lookup(uint32_t dst) {
  const uint64_t h = mix64(dst);
  WideResult r{};
  r.port = static_cast<uint32_t>(h % 7);
  for (int i = 0; i < 6; ++i) r.mac[i] = static_cast<uint8_t>(h >> (8 * i + 8));
  r.mac[0] &= 0xFE;  // unicast
  r.tos = static_cast<uint8_t>(h >> 56) & 0xFC;
  return r;
}

struct WideTraits {
  using Key = uint32_t;
  using Item = uint32_t;
  using Result = WideResult;
  static constexpr const char* kName = "wide-result";

  size_t ports() const { return 7; }
  DropReason classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off, uint32_t* flow) const {
    ParsedPacket pp;
    const DropReason r = parse_packet(frame, len, &pp);
    if (r != DropReason::kNone) return r;
    if (pp.ip_version != 4) return DropReason::kNotHandled;
    const uint8_t* d = frame + pp.l3_off + 16;
    *key = (uint32_t{d[0]} << 24) | (uint32_t{d[1]} << 16) | (uint32_t{d[2]} << 8) | d[3];
    *l3_off = pp.l3_off;
    if (flow) *flow = flow_hash(pp.tuple);
    return DropReason::kNone;
  }
  void prefetch(Key) const {}
  Result lookup(Key k) const { return wide_lookup(k); }
  void lookup_batch(const Key* keys, Result* results, size_t n) const {
    for (size_t i = 0; i < n; ++i) results[i] = wide_lookup(keys[i]);
  }
  void to_item(Key k, Item* item) const { *item = k; }
  void lookup_items(const Item* items, Result* results, size_t n) const { lookup_batch(items, results, n); }
  Result lookup_item(Item k) const { return wide_lookup(k); }
  // Rewrites the destination MAC and the TOS (with the IPv4 checksum updated) from the result.
  uint32_t apply(uint8_t* frame, uint32_t, uint16_t l3_off, const Result& r) const {
    std::memcpy(frame, r.mac, 6);
    uint8_t* ip = frame + l3_off;
    uint32_t sum = (uint32_t{ip[10]} << 8 | ip[11]) ^ 0xFFFF;  // RFC 1624: HC' = ~(~HC + ~m + m')
    sum += (uint32_t{ip[0]} << 8 | ip[1]) ^ 0xFFFF;
    ip[1] = r.tos;
    sum += uint32_t{ip[0]} << 8 | ip[1];
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    sum ^= 0xFFFF;
    ip[10] = static_cast<uint8_t>(sum >> 8);
    ip[11] = static_cast<uint8_t>(sum);
    return Verdict::port(r.port);
  }
  std::unique_ptr<gpu::OffloadRunner> make_gpu_runner(const gpu::OffloadOptions&) { return nullptr; }
  void build_reference() {}
  // The verdict the result gives, provided the frame carries the result's rewrite and a valid
  // IPv4 header (else a verdict no path gives, which verification counts as a mismatch).
  uint32_t reference_verdict(const uint8_t* frame, uint32_t len, uint16_t l3_off) const {
    ParsedPacket pp;
    if (parse_packet(frame, len, &pp) != DropReason::kNone) return Verdict::kUnset;
    const uint8_t* d = frame + l3_off + 16;
    const WideResult r = wide_lookup((uint32_t{d[0]} << 24) | (uint32_t{d[1]} << 16) | (uint32_t{d[2]} << 8) | d[3]);
    if (std::memcmp(frame, r.mac, 6) != 0 || frame[l3_off + 1] != r.tos) return Verdict::kUnset;
    return Verdict::port(r.port);
  }
};

using WideApp = ForwardAppImpl<WideTraits>;

WorkersResult run(const ForwardApp& app, const PacketStore& s, WorkersConfig wc) {
  wc.ports = app.ports();
  wc.verify = true;
  return run_workers(app, s, wc);
}

TEST(DataBlocks, SixteenByteResultsReachApplyOnEveryPath) {
  WideApp app;
  EXPECT_EQ(app.item_bytes(), 4u);
  EXPECT_EQ(app.result_bytes(), 16u);
  GenSpec g;
  g.count = 20000;
  g.flows = 500;
  const PacketStore s = generate(g);

  WorkersConfig wc;
  wc.path = LookupPath::kScalar;
  const WorkersResult ref = run(app, s, wc);
  ASSERT_EQ(ref.counters.tx_packets, s.size());
  EXPECT_EQ(ref.verify_checked, s.size());
  EXPECT_EQ(ref.verify_mismatches, 0u);

  const auto same = [&](const WorkersResult& r, const char* what) {
    EXPECT_EQ(r.counters.tx_per_port, ref.counters.tx_per_port) << what;
    EXPECT_EQ(r.counters.drops, ref.counters.drops) << what;
    EXPECT_EQ(r.verify_checked, s.size()) << what;
    EXPECT_EQ(r.verify_mismatches, 0u) << what;
  };
  wc.path = LookupPath::kBatched;
  wc.workers = 2;
  same(run(app, s, wc), "batched");

  gpu::EngineConfig ec;
  ec.max_batch = 1024;
  ec.max_wait_ns = 20000;
  {
    WorkersConfig g2;
    g2.workers = 2;
    g2.burst = 64;
    g2.max_bursts_in_flight = 16;
    GpuEngine e = attach_gpu_engine(g2, app, nullptr, ec, /*staged=*/false);
    same(run(app, s, g2), "gathering engine, CPU fallback");
    EXPECT_GT(e.stats().cpu_batches, 0u);
  }
  {
    WorkersConfig g3;
    g3.workers = 3;
    g3.burst = 100;
    g3.max_bursts_in_flight = 32;
    GpuEngine e = attach_gpu_engine(g3, app, std::make_unique<test::HostAppRunner>(app, 1024, 3), ec, /*staged=*/true);
    same(run(app, s, g3), "staged engine, host runner");
    EXPECT_GT(e.stats().batches, 0u);
  }
}

// A runner whose results are not the app's size is refused, not read past its end.
TEST(DataBlocks, ARunnerOfAnotherResultSizeIsRefused) {
  WideApp app;
  class FourByteRunner final : public gpu::OffloadRunner {
   public:
    gpu::GpuMode mode() const override { return gpu::GpuMode::kAsync; }
    size_t capacity() const override { return 16; }
    int slots() const override { return 1; }
    size_t in_item_bytes() const override { return 4; }
    size_t out_item_bytes() const override { return 4; }
    void* in(int) override { return buf; }
    void* out(int) override { return buf; }
    void submit(int, size_t) override {}
    void wait(int) override {}
    bool ready(int) override { return true; }
    uint32_t buf[16];
  };
  WorkersConfig wc;
  EXPECT_THROW(attach_gpu_engine(wc, app, std::make_unique<FourByteRunner>(), gpu::EngineConfig{}, true), std::invalid_argument);
}

}  // namespace
}  // namespace tandem
