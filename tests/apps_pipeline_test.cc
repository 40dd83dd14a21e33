// Every registered app (apps/registry.h), with the cases it declares, through the worker pipeline (sched/workers.h) on
// real tables and generated traffic with malformed frames mixed in: the CPU scalar path, the CPU
// batched path with 1 and 3 workers, the offload engine without a GPU (the app's CPU fallback
// behind the GPU path's worker logic), the staged engine over a host runner, and, where a GPU is
// usable, every offload mode: identical counters (per port, per drop reason) and every decision
// equal to the app's reference (a trie, a map). The app's whole per-packet logic on single frames
// (apps/frame_core.h), on the host and on the GPU's whole-frame runner in both modes, gives the
// scalar path's verdicts and bytes, frame by frame.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "apps/ndn/ndn_app.h"
#include "apps/ndn/ndn_gpu.h"
#include "apps/registry.h"
#include "gpu/frame_runner.h"
#include "gpu/offload_engine.h"
#include "gpu/staged_engine.h"
#include "io/flow_traffic.h"
#include "io/traffic_gen.h"
#include "sched/workers.h"
#include "tests/app_cases.h"
#include "tests/pipeline_runs.h"
#include "tests/test_util.h"

namespace tandem {
namespace {

using test::check_cpu_paths;
using test::check_gpu_modes;
using test::run_verified;

// The items of every frame the app looks up, as classify() extracts them.
std::vector<uint8_t> items_of(const ForwardApp& app, const PacketStore& s) {
  std::vector<uint8_t> items(s.size() * app.item_bytes());
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (app.item_of_frame(s.frame(i), s.caplen[i], items.data() + n * app.item_bytes())) ++n;
  }
  items.resize(n * app.item_bytes());
  return items;
}

class AppsPipeline : public ::testing::TestWithParam<Case> {};

TEST_P(AppsPipeline, EveryPathGivesTheReferenceDecisions) {
  const Case& c = GetParam();
  LoadedApp a = load_app(c.app, c.t.args);
  ForwardApp& app = *a.app;
  app.build_reference();
  PacketStore s = a.generate(parse_gen_spec(c.t.gen));
  add_bad_frames(s);

  // Item level: the scalar and the batched lookups agree on every key of the traffic.
  const std::vector<uint8_t> items = items_of(app, s);
  const size_t n = items.size() / app.item_bytes();
  ASSERT_GT(n, 0u);
  // Results of the app's size (result_bytes), compared as bytes.
  const size_t rb = app.result_bytes();
  std::vector<uint8_t> one(n * rb), batch(n * rb + 4, 0xAB);
  app.lookup_items_scalar(items.data(), one.data(), n);
  app.lookup_items(items.data(), batch.data(), n);
  EXPECT_EQ(std::vector<uint8_t>(batch.begin() + n * rb, batch.end()), std::vector<uint8_t>(4, 0xAB))
      << "lookup_items wrote past the end";
  batch.resize(n * rb);
  EXPECT_EQ(one, batch) << c.t.label << ": batched lookups differ from scalar ones";

  WorkersConfig wc;
  wc.path = LookupPath::kScalar;
  const WorkersResult ref = run_verified(app, s, wc);
  EXPECT_EQ(ref.counters.rx_packets, s.size());
  EXPECT_EQ(ref.verify_mismatches, 0u);
  EXPECT_EQ(ref.counters.tx_packets > 0, c.t.forwards);
  EXPECT_GE(ref.counters.dropped(), c.t.min_drops) << "the bad frames";
  check_cpu_paths(app, s, c.t.label, [&](const WorkersResult& r, const std::string& what) { expect_same(ref, r, what); });
  // Without a GPU path, asking for a GPU runner is a usage error, with or without a GPU.
  if (!no_gpu_path(c).empty()) EXPECT_THROW(app.make_gpu_runner(gpu::OffloadOptions{}), UsageError) << c.t.label;
}

TEST_P(AppsPipeline, EveryGpuModeGivesTheReferenceDecisions) {
  TANDEM_REQUIRE_GPU();
  const Case& c = GetParam();
  if (const std::string why = no_gpu_path(c); !why.empty()) GTEST_SKIP() << c.t.label << ": " << why;
  LoadedApp a = load_app(c.app, c.t.args);
  ForwardApp& app = *a.app;
  app.build_reference();
  PacketStore s = a.generate(parse_gen_spec(c.t.gen));
  add_bad_frames(s);
  const std::vector<uint8_t> items = items_of(app, s);
  const size_t n = items.size() / app.item_bytes();
  std::vector<uint8_t> one(n * app.result_bytes()), on_gpu(n * app.result_bytes());
  app.lookup_items_scalar(items.data(), one.data(), n);
  {
    gpu::OffloadOptions oo;
    oo.capacity = 1000;  // several batches, the last one partial
    auto runner = app.make_gpu_runner(oo);
    gpu::run_all(*runner, items.data(), on_gpu.data(), n);
    EXPECT_EQ(one, on_gpu) << c.t.label << ": GPU lookups differ from the CPU's";
  }
  WorkersConfig wc;
  wc.path = LookupPath::kScalar;
  const WorkersResult ref = run_verified(app, s, wc);
  check_gpu_modes(app, s, c.t.label, [&](const WorkersResult& r, const std::string& what) { expect_same(ref, r, what); });
}

TEST_P(AppsPipeline, TheWholeFrameLogicGivesTheScalarPathsVerdictsAndBytes) {
  const Case& c = GetParam();
  LoadedApp a = load_app(c.app, c.t.args);
  const ForwardApp& app = *a.app;
  PacketStore s = a.generate(parse_gen_spec(c.t.gen));
  add_bad_frames(s);
  const Forwarded want = forward_scalar(app, s);
  size_t rewritten = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    std::vector<uint8_t> f(s.frame(i), s.frame(i) + s.caplen[i]);
    ASSERT_EQ(app.forward_frame(f.data(), s.caplen[i]), want.verdicts[i]) << c.t.label << " frame " << i;
    ASSERT_EQ(f, want.frames[i]) << c.t.label << " frame " << i;
    rewritten += !std::equal(f.begin(), f.end(), s.frame(i));
  }
  EXPECT_EQ(rewritten > 0, c.app == "ipv4" || c.app == "ipv6" || c.app == "fw-router") << c.t.label;
}

TEST_P(AppsPipeline, TheGpuGivenWholeFramesGivesTheScalarPathsVerdictsAndBytes) {
  TANDEM_REQUIRE_GPU();
  const Case& c = GetParam();
  LoadedApp a = load_app(c.app, c.t.args);
  const ForwardApp& app = *a.app;
  if (const std::string why = no_gpu_path(c); !why.empty()) {
    EXPECT_THROW(app.make_frame_runner({}), gpu::GpuError) << c.t.label;
    GTEST_SKIP() << c.t.label << ": " << why;
  }
  PacketStore s = a.generate(parse_gen_spec(c.t.gen));
  add_bad_frames(s);
  const Forwarded want = forward_scalar(app, s);
  for (gpu::GpuMode mode : {gpu::GpuMode::kAsync, gpu::GpuMode::kMapped}) {
    gpu::FrameOptions o;
    o.mode = mode;
    o.max_frames = 1000;        // several batches, bounded by frames ...
    o.max_bytes = 200 * 1024;   // ... or by bytes, whichever fills first
    o.tail_room = 24;
    auto runner = app.make_frame_runner(o);
    gpu::FramePacker batch(*runner, 0);
    size_t first = 0, batches = 0;
    auto finish = [&] {
      batch.submit();
      batch.wait();
      for (size_t k = 0; k < batch.frames(); ++k) {
        ASSERT_EQ(batch.verdict(k), want.verdicts[first + k]) << c.t.label << " frame " << first + k;
        ASSERT_TRUE(std::equal(want.frames[first + k].begin(), want.frames[first + k].end(), batch.frame(k)))
            << c.t.label << " frame " << first + k;
      }
      first += batch.frames();
      ++batches;
      batch.clear();
    };
    for (size_t i = 0; i < s.size(); ++i) {
      if (!batch.add(s.frame(i), s.caplen[i])) {
        finish();
        ASSERT_TRUE(batch.add(s.frame(i), s.caplen[i]));
      }
    }
    finish();
    EXPECT_EQ(first, s.size());
    EXPECT_GT(batches, 2u) << gpu::gpu_mode_name(mode);
  }
}

INSTANTIATE_TEST_SUITE_P(Apps, AppsPipeline, ::testing::ValuesIn(cases()), CaseName());

// NDN's own drops, one frame each, through the app: every malformed Interest has its reason, and
// a name too long for a GPU item is still resolved (by the worker) on the GPU path's CPU side.
TEST(NdnApp, MalformedInterestsAreDroppedWithTheirReason) {
  ndn::NdnSetup setup;
  setup.fib = std::make_unique<ndn::NdnFib>(16);
  setup.routes = {{{"com", "example"}, 3}, {{}, 1}};
  for (const auto& [n, p] : setup.routes) setup.fib->add(n, p);
  setup.max_port = 3;
  ndn::NdnApp app(setup);
  app.build_reference();

  GenFlow f;
  f.dport = ndn::kNdnUdpPort;
  f.exact_payload = true;
  f.dst[0] = 192;
  f.dst[3] = 1;
  f.src[0] = 10;
  PacketStore s;
  auto add = [&](std::vector<uint8_t> payload, uint16_t dport = ndn::kNdnUdpPort) {
    f.payload = std::move(payload);
    f.dport = dport;
    std::vector<uint8_t> frame(std::max<uint32_t>(60, min_frame_len(f, 17)));
    write_flow_frame(frame.data(), static_cast<uint32_t>(frame.size()), f, 17, s.size());
    s.add(frame.data(), static_cast<uint32_t>(frame.size()), static_cast<uint32_t>(frame.size()), 0);
  };
  const std::vector<uint8_t> good = ndn::encode_interest({"com", "example", "www"}, 7);
  add(good);                                                      // port 3
  add(ndn::encode_interest({"org"}, 7));                          // the default route: port 1
  add(ndn::encode_interest({std::string(400, 'x')}, 7));          // too long for a GPU item: port 1
  add(good, 53);                                                  // not NDN's port
  std::vector<uint8_t> cut(good.begin(), good.end() - 3);
  add(cut);                                                       // truncated
  std::vector<uint8_t> data = good;
  data[0] = 0x06;
  add(data);                                                      // a Data packet
  std::vector<uint8_t> zero = good;
  zero[2] = 0;
  add(zero);                                                      // Name TLV-TYPE 0
  ndn::Name many(ndn::kMaxComponents + 1, "a");
  add(ndn::encode_interest(many, 7));                             // too many components

  auto check = [&](const WorkersResult& r, const char* what) {
    const auto& d = r.counters.drops;
    EXPECT_EQ(r.counters.rx_packets, 8u) << what;
    EXPECT_EQ(r.counters.tx_per_port[3], 1u) << what;
    EXPECT_EQ(r.counters.tx_per_port[1], 2u) << what;
    EXPECT_EQ(d[static_cast<int>(DropReason::kNotHandled)], 1u) << what;
    EXPECT_EQ(d[static_cast<int>(ndn::kBadNdnTlv)], 2u) << what;
    EXPECT_EQ(d[static_cast<int>(ndn::kNdnNotInterest)], 1u) << what;
    EXPECT_EQ(d[static_cast<int>(ndn::kNdnNameTooLong)], 1u) << what;
    EXPECT_EQ(r.verify_mismatches, 0u) << what;
    EXPECT_EQ(r.verify_checked, 3u) << what;
  };
  WorkersConfig wc;
  wc.path = LookupPath::kScalar;
  check(run_verified(app, s, wc), "scalar");
  wc.path = LookupPath::kBatched;
  check(run_verified(app, s, wc), "batched");
  gpu::EngineConfig ec;
  ec.max_batch = 256;
  WorkersConfig g;
  GpuEngine e = attach_gpu_engine(g, app, nullptr, ec, false);
  check(run_verified(app, s, g), "engine, CPU fallback (long name: kResolveOnCpu, then the worker)");
  if (gpu::available()) {
    gpu::OffloadOptions oo;
    oo.capacity = 256;
    WorkersConfig gg;
    GpuEngine ge = attach_gpu_engine(gg, app, app.make_gpu_runner(oo), ec, true);
    check(run_verified(app, s, gg), "GPU");
  }
}

// The G-Opt paper's fixed-size names: cut or padded to exactly the bytes asked for.
TEST(NdnApp, FixedSizeNames) {
  for (uint32_t bytes : {2u, 3u, 17u, 32u, 100u, 250u}) {
    for (const ndn::Name& n : {ndn::Name{}, ndn::Name{"com"}, ndn::Name{"com", "example", "www", "a-long-path-segment"},
                               ndn::Name{std::string(300, 'q')}}) {
      EXPECT_EQ(ndn::name_wire_bytes(ndn::fixed_size_name(n, bytes)).size(), bytes) << bytes << " " << ndn::to_uri(n);
    }
  }
  EXPECT_THROW(ndn::fixed_size_name({"a"}, 1), std::invalid_argument);
}

}  // namespace
}  // namespace tandem
