// fw-router (apps/fwrouter): the 5-tuple firewall in front of the IPv4 router, on the real BGP
// table and ClassBench filter sets (and random rules). Every path's decisions equal an independent
// reference (linear first-match search over the rules, then the IPv4 reference trie): the CPU
// scalar and batched decisions, the GPU runner, and whole frames through the worker pipeline on
// every CPU path and every GPU offload mode, with every packet accounted for. (The benchmarks'
// fused and split GPU plans: bench/variants/fw_router_plans_test.cc.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "apps/fwrouter/fw_router_app.h"
#include "apps/fwrouter/fw_router_gpu.h"
#include "cli/app_setup.h"
#include "cli/commands.h"
#include "cli/table_setup.h"
#include "io/flow_traffic.h"
#include "io/traffic_gen.h"
#include "sched/workers.h"
#include "tests/fw_router_tables.h"
#include "tests/pipeline_runs.h"
#include "tests/test_util.h"

namespace tandem::fwrouter {
namespace {

using testdata::classbench_path;
using testdata::count_diff;
using testdata::fib_path;
using testdata::NamedRules;
using testdata::reference;
using testdata::Routes;
using testdata::rule_sets;

TEST(FwRouter, DropReasonHasAName) {
  EXPECT_STREQ(FwRouterTraits::drop_reason_name(kAclDenied), "acl_denied");
  EXPECT_TRUE(is_app_drop_reason(kAclDenied));
  for (int r = 0; r < kDropReasonCount; ++r) {
    const DropReason d = DropReason(r);
    if (d < DropReason::kCoreCount || is_app_drop_reason(d)) EXPECT_STRNE(drop_reason_name(d), "unknown") << r;
  }
  EXPECT_TRUE(FwRouterApp::lookup_drops(kAclDenied));
  EXPECT_TRUE(FwRouterApp::lookup_drops(DropReason::kNoRoute));
  EXPECT_FALSE(FwRouterApp::lookup_drops(DropReason::kMartian));
}

TEST(FwRouter, RuleLoading) {
  EXPECT_THROW(cli::load_fw_rules("", 0, ""), cli::UsageError);
  const acl::RuleSet r = cli::load_fw_rules("", 1000, "");
  EXPECT_EQ(cli::load_fw_rules("", 1000, "drop").default_action, acl::kDrop);
  size_t drops = 0;
  for (const acl::Rule& x : r.rules) drops += x.action == acl::kDrop;
  EXPECT_GT(drops, 100u);  // random_rules' own 80/20, untouched
  EXPECT_LT(drops, 300u);
  for (const acl::Rule& x : cli::load_fw_rules("", 1000, "", 0.0).rules) EXPECT_EQ(x.action, acl::kAccept);
  const std::string p = classbench_path("acl1_1k");
  if (p.empty()) return;
  EXPECT_THROW(cli::load_fw_rules(p, 5, ""), cli::UsageError);
  const acl::RuleSet cb = cli::load_fw_rules(p, 0, "");
  size_t cb_drops = 0;
  for (const acl::Rule& x : cb.rules) cb_drops += x.action == acl::kDrop;
  EXPECT_GT(cb_drops, cb.rules.size() / 10);  // 20% by default: ClassBench has no actions
  EXPECT_LT(cb_drops, cb.rules.size() * 3 / 10);
  EXPECT_EQ(cb.default_action, acl::kAccept);
}

// A hand-made rule set in Tandem's syntax, frames with known 5-tuples, each verdict known.
TEST(FwRouter, HandMadeRulesAndFrames) {
  const std::string path = ::testing::TempDir() + "/fw_router_rules.txt";
  std::ofstream(path) << "# ssh from 10/8 is refused, DNS to 8.8.8.0/24 allowed, other UDP refused\n"
                         "drop src 10.0.0.0/8 dport 22 proto tcp\n"
                         "accept dst 8.8.8.0/24 dport 53 proto udp\n"
                         "drop proto udp\n"
                         "default accept\n";
  const acl::RuleSet rules = cli::load_fw_rules(path, 0, "");
  ASSERT_EQ(rules.rules.size(), 3u);
  ipv4::Fib fib;
  fib.routes = {{0x08080800u, 24, 1}, {0x01000000u, 8, 2}};
  fib.max_next_hop = 2;
  ipv4::Dir24_8 table;
  for (const ipv4::Route& r : fib.routes) ASSERT_EQ(table.add(r.prefix, r.len, r.next_hop), ipv4::Dir24_8::Status::kOk);
  const acl::HyperSplit tree = acl::HyperSplit::build(rules.rules);
  const FwRouterTables t(rules, tree, table, fib);
  FwRouterApp app(t);
  app.build_reference();

  struct Case {
    uint32_t src, dst;
    uint16_t sport, dport;
    uint8_t proto;
    uint32_t want;
  };
  const Case cases[] = {
      {0x0A000001, 0x01020304, 40000, 22, 6, Verdict::drop(kAclDenied)},  // rule 1
      {0x0B000001, 0x01020304, 40000, 22, 6, Verdict::port(2)},                       // not from 10/8
      {0x0A000001, 0x08080808, 40000, 53, 17, Verdict::port(1)},                      // rule 2
      {0x0A000001, 0x08080808, 40000, 54, 17, Verdict::drop(kAclDenied)},  // rule 3
      {0x0A000001, 0x09090909, 40000, 80, 6, Verdict::drop(DropReason::kNoRoute)},     // default, no route
      {0x0A000001, 0xE0000001, 40000, 80, 6, Verdict::drop(DropReason::kMartian)},     // before the firewall
  };
  PacketStore s;
  for (const Case& c : cases) {
    GenFlow f;
    for (int i = 0; i < 4; ++i) {
      f.src[i] = static_cast<uint8_t>(c.src >> (24 - 8 * i));
      f.dst[i] = static_cast<uint8_t>(c.dst >> (24 - 8 * i));
    }
    f.sport = c.sport;
    f.dport = c.dport;
    std::vector<uint8_t> frame(60);
    write_flow_frame(frame.data(), 60, f, c.proto, s.size());
    s.add(frame.data(), 60, 60, 0);
  }
  for (LookupPath path : {LookupPath::kScalar, LookupPath::kBatched}) {
    PacketPool pool(16, 2048);
    PacketBatch b;
    Counters c(app.ports());
    ASSERT_EQ(pool.alloc_bulk(b.cell.data(), static_cast<uint32_t>(s.size())), s.size());
    for (size_t i = 0; i < s.size(); ++i) {
      std::copy_n(s.frame(i), s.caplen[i], pool.data(b.cell[i]));
      b.len[i] = static_cast<uint16_t>(s.caplen[i]);
    }
    b.size = static_cast<uint32_t>(s.size());
    if (path == LookupPath::kScalar) {
      app.forward_scalar(pool, b, c);
    } else {
      app.forward_batched(pool, b, c);
    }
    for (size_t i = 0; i < s.size(); ++i) {
      EXPECT_EQ(b.verdict[i], cases[i].want) << "case " << i;
      uint32_t want = 0;
      if (app.reference_verdict(pool.data(b.cell[i]), b.len[i], b.l3_off[i], b.verdict[i], &want)) {
        EXPECT_EQ(want, b.verdict[i]) << "reference, case " << i;
      } else {
        EXPECT_EQ(Verdict::reason(b.verdict[i]), DropReason::kMartian) << "case " << i;
      }
    }
    EXPECT_EQ(c.drops[int(kAclDenied)], 2u);
    EXPECT_TRUE(c.balanced());
  }
  // A protocol without ports (kNoPorts, as fw_header_of makes it): only rules without ports may
  // match it, here none, so the default policy accepts it.
  acl::Header icmp;
  icmp.src = 0x0A000001;
  icmp.dst = 0x08080808;
  icmp.proto = 1;
  icmp.flags = acl::kNoPorts;
  EXPECT_EQ(t.decide(icmp), 1u);
  acl::Header ssh = icmp;
  ssh.dport = 22;
  ssh.proto = 6;
  ssh.flags = 0;
  EXPECT_EQ(t.decide(ssh), kDenied);
  ssh.dport = 0;  // a later fragment of that flow: no ports, and the ssh rule does not apply
  ssh.flags = acl::kNoPorts;
  EXPECT_EQ(t.decide(ssh), 1u);
}

// Headers (half inside rules, the rest with destinations in the table or uniform): the scalar,
// batched and linear decisions equal the reference, and the mix holds every outcome.
TEST(FwRouter, CpuDecisionsEqualTheReference) {
  REQUIRE_FIB();
  const Routes& rt = Routes::get();
  for (const NamedRules& nr : rule_sets()) {
    const acl::HyperSplit tree = acl::HyperSplit::build(nr.rules.rules);
    const FwRouterTables t(nr.rules, tree, *rt.t.table, rt.t.fib);
    const std::vector<acl::Header> h = mixed_headers(nr.rules, rt.t.fib, nr.headers, 11);
    std::vector<uint32_t> want(h.size()), one(h.size()), batch(h.size() + 1, 0xABCDu), lin(h.size());
    size_t denied = 0, no_route = 0;
    for (size_t i = 0; i < h.size(); ++i) {
      want[i] = reference(nr.rules, rt.trie, h[i]);
      denied += want[i] == kDenied;
      no_route += want[i] == ipv4::kNoRoute;
      one[i] = t.decide(h[i]);
      lin[i] = decide_linear(t, h[i]);
    }
    t.decide_batch(h.data(), batch.data(), h.size());
    EXPECT_EQ(batch.back(), 0xABCDu) << nr.name << ": decide_batch wrote past the end";
    batch.pop_back();
    EXPECT_EQ(count_diff(one, want), 0u) << nr.name << " scalar";
    EXPECT_EQ(count_diff(batch, want), 0u) << nr.name << " batched";
    EXPECT_EQ(count_diff(lin, want), 0u) << nr.name << " linear";
    EXPECT_GT(denied, h.size() / 100) << nr.name;
    EXPECT_GT(no_route, h.size() / 100) << nr.name;
    EXPECT_GT(h.size() - denied - no_route, h.size() / 10) << nr.name;
    std::printf("%-24s %zu headers: %zu denied, %zu without a route, %zu routed\n", nr.name.c_str(), h.size(), denied,
                no_route, h.size() - denied - no_route);
  }
}

// The app's GPU path, the fused decision as an offload runner, in batches with a partial last one.
TEST(FwRouter, GpuRunnerEqualsTheReference) {
  TANDEM_REQUIRE_GPU();
  REQUIRE_FIB();
  testdata::for_each_rule_set(12, [](const NamedRules& nr, const FwRouterTables& t, const std::vector<acl::Header>& h,
                                     const std::vector<uint32_t>& want) {
    auto g = FwRouterGpu::create(t);
    gpu::OffloadOptions oo;
    oo.capacity = 1000;  // several batches, the last one partial
    auto runner = g->make_runner(oo);
    std::vector<uint32_t> runner_out(h.size());
    gpu::run_all(*runner, h.data(), runner_out.data(), h.size());
    EXPECT_EQ(count_diff(runner_out, want), 0u) << nr.name << " offload runner";
  });
}

// --- Whole frames through the worker pipeline (sched/workers.h), as tests/apps_pipeline_test.cc
// does for the other apps.

using test::check_cpu_paths;
using test::check_gpu_modes;
using test::run_verified;

struct PipelineCase {
  std::string name;
  cli::AppOptions opts;
  std::string gen;
};
std::vector<PipelineCase> pipeline_cases() {
  std::vector<PipelineCase> v;
  cli::AppOptions o;
  o.app = "fw-router";
  o.set("fib", fib_path());
  v.push_back({"random3000", cli::AppOptions(o).set("acl-random", "3000"), "count=30000,dst=uniform,flows=0,proto=tcp,seed=3"});
  const std::string rules = classbench_path("acl1_10k");
  if (!rules.empty()) v.push_back({"acl1_10k", o.set("rules", rules), "count=30000,dst=fib,flows=3000,zipf=1.1,seed=4"});
  return v;
}

PacketStore traffic(const cli::LoadedApp& a, const std::string& gen) {
  PacketStore s = a.generate(parse_gen_spec(gen));
  std::vector<uint8_t> f(s.frame(0), s.frame(0) + s.caplen[0]);
  s.add(f.data(), 10, 10, 0);  // truncated
  f[12] = 0x08;
  f[13] = 0x06;  // ARP
  s.add(f.data(), static_cast<uint32_t>(f.size()), static_cast<uint32_t>(f.size()), 0);
  return s;
}

void expect_same(const WorkersResult& a, const WorkersResult& b, const std::string& what) {
  EXPECT_EQ(a.counters.tx_per_port, b.counters.tx_per_port) << what;
  EXPECT_EQ(a.counters.drops, b.counters.drops) << what;
  EXPECT_TRUE(b.counters.balanced()) << what;
  EXPECT_EQ(b.counters.rx_packets, b.expected) << what;
  EXPECT_EQ(b.verify_mismatches, 0u) << what;
  EXPECT_EQ(b.verify_checked, a.verify_checked) << what;
}

TEST(FwRouter, PipelineCpuPathsAccountForEveryPacket) {
  REQUIRE_FIB();
  for (const PipelineCase& pc : pipeline_cases()) {
    cli::LoadedApp a = cli::load_app(pc.opts);
    ForwardApp& app = *a.app;
    EXPECT_STREQ(app.name(), "fw-router");
    app.build_reference();
    const PacketStore s = traffic(a, pc.gen);
    WorkersConfig wc;
    wc.path = LookupPath::kScalar;
    const WorkersResult ref = run_verified(app, s, wc);
    const Counters& c = ref.counters;
    const uint64_t denied = c.drops[int(kAclDenied)], no_route = c.drops[int(DropReason::kNoRoute)];
    EXPECT_EQ(c.rx_packets, s.size()) << pc.name;
    EXPECT_TRUE(c.balanced()) << pc.name;
    EXPECT_EQ(ref.verify_mismatches, 0u) << pc.name;
    // Every packet that reached the firewall was checked: forwarded, denied or without a route.
    EXPECT_EQ(ref.verify_checked, c.tx_packets + denied + no_route) << pc.name;
    EXPECT_GT(denied, s.size() / 100) << pc.name;
    EXPECT_GT(no_route, 0u) << pc.name;
    EXPECT_GT(c.tx_packets, s.size() / 2) << pc.name;
    EXPECT_GE(c.drops[int(DropReason::kTruncated)] + c.drops[int(DropReason::kNotIp)], 2u) << pc.name;
    std::printf("%s: %llu received, %llu forwarded, %llu denied, %llu without a route, %llu dropped in all\n",
                pc.name.c_str(), (unsigned long long)c.rx_packets, (unsigned long long)c.tx_packets,
                (unsigned long long)denied, (unsigned long long)no_route, (unsigned long long)c.dropped());
    check_cpu_paths(app, s, pc.name, [&](const WorkersResult& r, const std::string& what) { expect_same(ref, r, what); });
  }
}

TEST(FwRouter, PipelineEveryGpuMode) {
  TANDEM_REQUIRE_GPU();
  REQUIRE_FIB();
  for (const PipelineCase& pc : pipeline_cases()) {
    cli::LoadedApp a = cli::load_app(pc.opts);
    ForwardApp& app = *a.app;
    app.build_reference();
    const PacketStore s = traffic(a, pc.gen);
    // Item level: the frames' headers through the app's runner equal the CPU's.
    std::vector<acl::Header> items(s.size());
    size_t n = 0;
    for (size_t i = 0; i < s.size(); ++i) n += app.item_of_frame(s.frame(i), s.caplen[i], &items[n]);
    items.resize(n);
    std::vector<uint32_t> cpu(n), on_gpu(n);
    app.lookup_items_scalar(items.data(), cpu.data(), n);
    auto runner = app.make_gpu_runner(gpu::OffloadOptions{});
    gpu::run_all(*runner, items.data(), on_gpu.data(), n);
    EXPECT_EQ(count_diff(on_gpu, cpu), 0u) << pc.name << " runner";

    WorkersConfig wc;
    wc.path = LookupPath::kScalar;
    const WorkersResult ref = run_verified(app, s, wc);
    check_gpu_modes(app, s, pc.name, [&](const WorkersResult& r, const std::string& what) { expect_same(ref, r, what); });
  }
}

}  // namespace
}  // namespace tandem::fwrouter
