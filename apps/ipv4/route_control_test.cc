// Live route updates (route_control.h): the commands, both copies of the table kept equal, and a
// burst of 10,000 updates while workers forward, each packet checked against the table versions
// it could have seen (none lost, none forwarded by a half-applied batch).
#include "apps/ipv4/route_control.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "apps/ipv4/ipv4_app.h"
#include "apps/ipv4/ipv4_table.h"
#include "apps/ipv4/ref_trie.h"
#include "core/byte_order.h"
#include "core/rcu.h"
#include "core/usage_error.h"
#include "io/gen_frames.h"
#include "gpu/gpu_runtime.h"
#include "gpu/table_updates.h"
#include "sched/workers.h"
#include "tests/pipeline_runs.h"

namespace tandem::ipv4 {
namespace {

Fib fib_of(const std::vector<Route>& routes) {
  Fib f;
  f.path = "test";
  f.routes = routes;
  for (const Route& r : routes) f.max_next_hop = std::max(f.max_next_hop, r.next_hop);
  return f;
}

TEST(RouteControl, CommandsAndErrors) {
  Fib fib = fib_of({{0x0A000000, 8, 1}});
  RouteTable t = make_table("dir24-8", fib);
  std::unique_ptr<ForwardApp> app = make_app(t, fib);
  TableControl* tc = app->table_control();
  ASSERT_NE(tc, nullptr);
  const auto r = tc->apply({"add 10.1.0.0/16 7", "del 10.9.0.0/16", "add 10.2.3.0/24", "add 300.1.1.1/8 1",
                            "add 10.0.0.0/33 1", "drop 10.0.0.0/8", "add 10.3.0.0/16 2 extra", "del 10.1.0.0/16",
                            "add 10.4.0.0/16 99999999999"});
  ASSERT_EQ(r.size(), 9u);
  EXPECT_EQ(r[0], "");
  EXPECT_EQ(r[1], "no such route");
  EXPECT_NE(r[2].find("next hop"), std::string::npos) << r[2];
  EXPECT_NE(r[3].find("bad IPv4 address"), std::string::npos) << r[3];
  EXPECT_NE(r[4].find("over 32"), std::string::npos) << r[4];
  EXPECT_NE(r[5].find("unknown command"), std::string::npos) << r[5];
  EXPECT_NE(r[6].find("unexpected 'extra'"), std::string::npos) << r[6];
  EXPECT_EQ(r[7], "");
  EXPECT_NE(r[8].find("next hop"), std::string::npos) << r[8];
  EXPECT_EQ(tc->version(), 2u);
  // Poptrie takes no updates.
  RouteTable p = make_table("poptrie", fib);
  EXPECT_EQ(make_app(p, fib)->table_control(), nullptr);
}

// After every batch the published copy answers as a reference trie given the same commands; the
// copies alternate, so both are checked, batch after batch.
TEST(RouteControl, BothCopiesFollowTheReference) {
  Fib fib = fib_of({{0x0A000000, 8, 1}, {0x0B000000, 8, 2}, {0x0A010100, 24, 3}});
  RouteTable t = make_table("dir24-8", fib);
  std::unique_ptr<ForwardApp> app = make_app(t, fib);
  TableControl* tc = app->table_control();
  RefTrie ref;
  std::map<std::pair<uint32_t, int>, uint32_t> routes;
  for (const Route& r : fib.routes) {
    ref.insert(r.prefix, r.len, r.next_hop);
    routes[{r.prefix, r.len}] = r.next_hop;
  }
  std::mt19937 rng(5);
  for (int batch = 0; batch < 60; ++batch) {
    std::vector<std::string> lines;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      const int len = std::vector<int>{8, 12, 16, 20, 24, 25, 28, 32}[rng() % 8];
      const uint32_t prefix = ((rng() % 2 ? 0x0A000000u : 0x0B000000u) | (rng() & 0x00FFFFFFu)) & depth_mask(len);
      if (rng() % 3 == 0 && !routes.empty()) {
        auto it = routes.begin();
        std::advance(it, rng() % routes.size());
        lines.push_back("del " + format_ipv4(it->first.first) + "/" + std::to_string(it->first.second));
        ref.remove(it->first.first, it->first.second);
        routes.erase(it);
      } else {
        const uint32_t nh = rng() % 50;
        lines.push_back("add " + format_ipv4(prefix) + "/" + std::to_string(len) + " " + std::to_string(nh));
        ref.insert(prefix, static_cast<uint8_t>(len), nh);
        routes[{prefix, len}] = nh;
      }
    }
    for (const std::string& e : tc->apply(lines)) ASSERT_EQ(e, "");
    std::vector<uint32_t> keys(4000), got(4000);
    for (uint32_t& k : keys) k = (rng() % 2 ? 0x0A000000u : 0x0B000000u) | (rng() & 0x00FFFFFFu);
    app->lookup_items_scalar(keys.data(), got.data(), keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(got[i], ref.lookup(keys[i])) << "batch " << batch << " key " << format_ipv4(keys[i]);
    }
  }
}

// A live source of IPv4/UDP frames to random addresses of 10.0.0.0/8; each frame carries, in its
// payload, the table version published when it was received (before any lookup of it).
class StampingSource final : public PacketSource {
 public:
  StampingSource(const RouteControl& rc, uint32_t seed, const std::atomic<bool>& quiet) : rc_(rc), rng_(seed), quiet_(quiet) {}
  uint32_t rx_burst(PacketPool& pool, PacketBatch& b) override {
    if (quiet_.load()) return 0;
    // A burst every 50 us or so: the control thread gets a core on a small machine too, and the
    // record of every packet stays a few million entries.
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    const uint32_t want = std::min<uint32_t>(PacketBatch::kCapacity - b.size, burst_);
    const uint32_t got = pool.alloc_bulk(&b.cell[b.size], want);
    const uint64_t version = rc_.version();
    // Every other burst is held until the next publish (or 5 ms), so its lookups run on a table
    // newer than its stamp: lookups that straddle a publish happen on every machine, not only when
    // the scheduler happens to interleave the threads that way.
    if (++bursts_ % 2 == 0) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
      while (rc_.publishing() == version && !quiet_.load() && std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
    }
    const uint8_t mac[6] = {2, 0, 0, 0, 0, 1};
    for (uint32_t k = 0; k < got; ++k) {
      const uint32_t i = b.size + k;
      uint8_t* f = pool.data(b.cell[i]);
      const uint32_t len = 14 + 20 + 8 + 8;
      gen::write_eth(f, mac, mac, 0x0800);
      // Mostly the /24s the updates touch (10.0.0.0/16), some elsewhere under the /8.
      const uint32_t dst = 0x0A000000u | (rng_() % 4 ? (rng_() & 0xFFFFu) : (rng_() & 0xFFFFFFu));
      gen::write_ipv4(f + 14, 20 + 8 + 8, 0, kProtoUdp, 0xC0000201u, dst);
      gen::write_l4_header(f + 34, kProtoUdp, 16, 1, 2, 0, 0);
      std::memcpy(f + 42, &version, 8);
      b.len[i] = static_cast<uint16_t>(len);
      b.wire_len[i] = len;
      b.ts_ns[i] = 0;
      b.verdict[i] = Verdict::kUnset;
    }
    b.size += got;
    return got;
  }
  std::string describe() const override { return "stamping source"; }
  bool live() const override { return true; }

 private:
  const RouteControl& rc_;
  std::mt19937 rng_;
  const std::atomic<bool>& quiet_;
  uint64_t bursts_ = 0;
};

struct Seen {
  uint32_t dst;
  uint32_t verdict;
  uint64_t lo, hi;  // the versions published before its receipt and after its transmission
};

// Records every frame at transmission with the version a lookup may have seen at most.
class RecordingSink final : public PacketSink {
 public:
  explicit RecordingSink(const RouteControl& rc) : rc_(rc) {}
  void tx_burst(const PacketPool& pool, const PacketBatch& b, Counters&) override {
    const uint64_t hi = rc_.publishing();
    forwarded.fetch_add(b.size, std::memory_order_relaxed);
    for (uint32_t i = 0; i < b.size; ++i) {
      const uint8_t* f = pool.data(b.cell[i]);
      uint64_t lo;
      std::memcpy(&lo, f + 42, 8);
      seen.push_back({load_be32(f + 30), b.verdict[i], lo, hi});
    }
  }
  std::vector<Seen> seen;
  std::atomic<uint64_t> forwarded{0};

 private:
  const RouteControl& rc_;
};

// A burst of 10,000 updates while two workers forward, on the CPU's batched path or, with
// `gpu_mode`, through the GPU engine (the updates reach the offload runner's device copy).
void updates_while_forwarding(std::optional<gpu::GpuMode> gpu_mode) {
  Fib fib = fib_of({{0x0A000000, 8, 1}});
  RouteTable t = make_table("dir24-8", fib);
  std::unique_ptr<ForwardApp> app = make_app(t, fib);
  auto* rc = dynamic_cast<RouteControl*>(app->table_control());
  ASSERT_NE(rc, nullptr);
  const int workers = 2;
  Rcu rcu(workers + 1);  // the workers, and the GPU engine's CPU fallback
  rc->set_rcu(&rcu);

  // The updates: /24s of 10.0.0.0/16 (and /25s inside them, which need tbl8 groups: adding and
  // deleting them allocates and frees groups) get next hops that name the update (2 + i % 5000),
  // or are deleted. Each /24's history records (version, next hop or none).
  std::map<uint32_t, std::vector<std::pair<uint64_t, int64_t>>> history;  // key: prefix << 8 | len
  std::mt19937 rng(11);
  std::vector<std::vector<std::string>> batches;
  std::vector<std::vector<std::pair<uint32_t, int64_t>>> batch_ops;
  std::map<uint32_t, bool> present;
  int made = 0;
  while (made < 10000) {
    const int n = std::min<int>(10000 - made, 1 + static_cast<int>(rng() % 50));
    std::vector<std::string> lines;
    std::vector<std::pair<uint32_t, int64_t>> ops;
    for (int k = 0; k < n; ++k, ++made) {
      const int len = rng() % 4 == 0 ? 25 : 24;
      const uint32_t prefix = (0x0A000000u | (rng() % 256) << 8 | (len == 25 ? (rng() % 2) << 7 : 0));
      const uint32_t key = prefix << 8 | static_cast<uint32_t>(len);
      if (present[key] && rng() % 2) {
        lines.push_back("del " + format_ipv4(prefix) + "/" + std::to_string(len));
        ops.push_back({key, -1});
        present[key] = false;
      } else {
        const int64_t nh = 2 + made % 5000;
        lines.push_back("add " + format_ipv4(prefix) + "/" + std::to_string(len) + " " + std::to_string(nh));
        ops.push_back({key, nh});
        present[key] = true;
      }
    }
    batches.push_back(std::move(lines));
    batch_ops.push_back(std::move(ops));
  }

  std::atomic<bool> quiet{false};
  std::atomic<int> stop{0};
  std::vector<std::unique_ptr<PacketSource>> sources;
  std::vector<std::unique_ptr<PacketSink>> sinks;
  std::vector<RecordingSink*> rec;
  for (int w = 0; w < workers; ++w) {
    sources.push_back(std::make_unique<StampingSource>(*rc, 100 + w, quiet));
    auto s = std::make_unique<RecordingSink>(*rc);
    rec.push_back(s.get());
    sinks.push_back(std::move(s));
  }
  std::vector<uint64_t> boundary{0};  // the version after each batch
  auto forward_some = [&](uint64_t n) {
    test::wait_until_forwarded([&] {
      uint64_t t = 0;
      for (const RecordingSink* s : rec) t += s->forwarded.load(std::memory_order_relaxed);
      return t;
    }, n);
  };
  std::thread control([&] {
    // Let the workers get going, then the burst of updates, then some more forwarding.
    forward_some(2000);
    for (size_t b = 0; b < batches.size(); ++b) {
      for (const std::string& e : rc->apply(batches[b])) ASSERT_EQ(e, "");
      boundary.push_back(rc->version());
    }
    forward_some(2000);
    quiet = true;
    stop = 1;
  });
  WorkersConfig wc;
  wc.workers = workers;
  wc.ports = app->ports();
  wc.stop = &stop;
  wc.rcu = &rcu;
  GpuEngine engine;
  if (gpu_mode) {
    wc.max_bursts_in_flight = 64;
    engine = attach_gpu_engine(wc, *app, app->make_gpu_runner(test::mode_options(*gpu_mode)), test::mode_engine_config(),
                               /*staged=*/true);
  }
  const WorkersResult r = run_workers_live(*app, sources, sinks, wc);
  control.join();
  ASSERT_EQ(rc->version(), 10000u);

  // Replay the log: per key, the next hop from each batch boundary on.
  uint64_t v = 0;
  for (const auto& ops : batch_ops) {
    v += ops.size();
    for (const auto& [key, nh] : ops) history[key].push_back({v, nh});
  }
  // The route for dst at version v: the longest of its /25 and /24 present then, else the /8.
  auto at = [&](uint32_t key, uint64_t ver) -> int64_t {
    const auto it = history.find(key);
    if (it == history.end()) return -1;
    int64_t nh = -1;
    for (const auto& [when, hop] : it->second) {
      if (when > ver) break;
      nh = hop;
    }
    return nh;
  };
  auto route = [&](uint32_t dst, uint64_t ver) -> uint32_t {
    const int64_t r25 = at((dst & 0xFFFFFF80u) << 8 | 25, ver);
    if (r25 >= 0) return static_cast<uint32_t>(r25);
    const int64_t r24 = at((dst & 0xFFFFFF00u) << 8 | 24, ver);
    return r24 >= 0 ? static_cast<uint32_t>(r24) : 1u;
  };
  uint64_t checked = 0, misrouted = 0, during = 0;
  for (const RecordingSink* s : rec) {
    for (const Seen& p : s->seen) {
      ++checked;
      ASSERT_LE(p.lo, p.hi);
      during += p.hi > p.lo;
      // Allowed: the route at any batch boundary between the two stamps.
      bool ok = false;
      const auto first = std::lower_bound(boundary.begin(), boundary.end(), p.lo);
      auto from = first;
      if (from != boundary.begin() && (from == boundary.end() || *from > p.lo)) --from;
      for (auto it = from; it != boundary.end() && *it <= p.hi && !ok; ++it) {
        ok = Verdict::port(p.verdict) == route(p.dst, *it);
      }
      misrouted += !ok;
      if (!ok && misrouted < 5) {
        ADD_FAILURE() << format_ipv4(p.dst) << " went to port " << Verdict::port(p.verdict) << ", seen between versions "
                      << p.lo << " and " << p.hi;
      }
    }
  }
  EXPECT_EQ(misrouted, 0u);
  EXPECT_TRUE(r.counters.balanced());
  EXPECT_EQ(r.counters.dropped(), 0u);
  EXPECT_EQ(checked, r.counters.rx_packets) << "every packet received was forwarded and seen";
  EXPECT_GT(checked, 10000u);
  EXPECT_GT(during, 1000u) << "packets in flight while the table changed";
  std::printf("%llu packets checked, %llu of them forwarded while updates were published\n",
              static_cast<unsigned long long>(checked), static_cast<unsigned long long>(during));
  if (gpu_mode) test::expect_all_on_gpu(engine, 10);
}

TEST(RouteControl, TenThousandUpdatesWhileForwardingLoseAndMisrouteNothing) { updates_while_forwarding(std::nullopt); }

// The same burst through the GPU's offload path, in each mode that launches per batch: every
// packet's next hop is the route of a version published between its receipt and its transmission.
TEST(RouteControl, TenThousandUpdatesOnTheGpuLoseAndMisrouteNothing) {
  if (!gpu::available()) GTEST_SKIP() << "no GPU";
  for (gpu::GpuMode mode : {gpu::GpuMode::kAsync, gpu::GpuMode::kGraph, gpu::GpuMode::kMapped}) {
    SCOPED_TRACE(gpu::gpu_mode_name(mode));
    updates_while_forwarding(mode);
  }
}

// Every device byte a batch changes is staged: random batches of routes of every length (adds,
// next-hop changes, deletes that free and recycle tbl8 groups, short prefixes over many blocks and
// over extended entries), each followed by lookups through an offload runner (whose submit applies
// what was committed) that must equal the host table's.
TEST(RouteControl, DeviceCopyFollowsRandomBatches) {
  if (!gpu::available()) GTEST_SKIP() << "no GPU";
  Fib fib = fib_of({{0x0A000000, 8, 1}, {0xC0A80000, 16, 2}});
  RouteTable t = make_table("dir24-8", fib);
  std::unique_ptr<ForwardApp> app = make_app(t, fib);
  auto* rc = dynamic_cast<RouteControl*>(app->table_control());
  ASSERT_NE(rc, nullptr);
  gpu::OffloadOptions oo;
  oo.capacity = 1 << 16;
  std::unique_ptr<gpu::OffloadRunner> runner = app->make_gpu_runner(oo);
  std::mt19937 rng(5);
  std::vector<std::pair<uint32_t, int>> present;  // prefix, length
  std::vector<uint32_t> probes(oo.capacity), got(oo.capacity), want(oo.capacity);
  uint64_t compared = 0;
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> lines;
    std::vector<std::pair<uint32_t, int>> touched;
    const int n = 1 + static_cast<int>(rng() % 20);
    for (int k = 0; k < n; ++k) {
      if (!present.empty() && rng() % 3 == 0) {
        const size_t i = rng() % present.size();
        const auto [prefix, len] = present[i];
        present.erase(present.begin() + static_cast<long>(i));
        lines.push_back("del " + format_ipv4(prefix) + "/" + std::to_string(len));
        touched.push_back({prefix, len});
        continue;
      }
      // Mostly inside 10/8 (so routes nest and share tbl8 groups), some short ones over it.
      const int len = rng() % 20 == 0 ? 1 + static_cast<int>(rng() % 12) : 13 + static_cast<int>(rng() % 20);
      const uint32_t base = len >= 8 ? (0x0A000000u | (rng() & 0x00FFFFFFu)) : static_cast<uint32_t>(rng());
      const uint32_t prefix = base & depth_mask(static_cast<uint32_t>(len));
      if (std::find(present.begin(), present.end(), std::make_pair(prefix, len)) == present.end()) {
        present.push_back({prefix, len});
      }
      lines.push_back("add " + format_ipv4(prefix) + "/" + std::to_string(len) + " " + std::to_string(1 + rng() % 1000));
      touched.push_back({prefix, len});
    }
    // A del of a prefix added earlier in the same batch, or twice: "no such route" is fine.
    rc->apply(lines);
    size_t m = 0;
    for (const auto& [prefix, len] : touched) {
      const uint32_t span = len >= 32 ? 0u : (~0u >> len);
      for (uint32_t a : {prefix, prefix + span, prefix + span / 2, prefix + (span & static_cast<uint32_t>(rng())), prefix - 1, prefix + span + 1}) {
        if (m < probes.size() / 2) probes[m++] = a;
      }
    }
    while (m < probes.size()) probes[m++] = rng() % 2 ? (0x0A000000u | (rng() & 0x00FFFFFFu)) : static_cast<uint32_t>(rng());
    gpu::run_all(*runner, probes.data(), got.data(), probes.size());
    app->lookup_items_scalar(probes.data(), want.data(), probes.size());
    for (size_t i = 0; i < probes.size(); ++i) {
      if (got[i] != want[i]) {
        FAIL() << "round " << round << ": " << format_ipv4(probes[i]) << ": device " << got[i] << ", host " << want[i];
      }
    }
    compared += probes.size();
  }
  EXPECT_EQ(rc->device_copy()->device_version(), rc->version());
  EXPECT_GT(rc->device_copy()->applies(), 250u);
  std::printf("%llu lookups compared after 300 batches; %llu KiB copied to the device\n",
              static_cast<unsigned long long>(compared),
              static_cast<unsigned long long>(rc->device_copy()->bytes_copied() / 1024));
}

// A persistent kernel runs through updates: its runners are not held between batches, and
// wrapping one is refused.
TEST(RouteControl, PersistentRunnersAreNotWrapped) {
  if (!gpu::available()) GTEST_SKIP() << "no GPU";
  gpu::OffloadOptions oo;
  oo.mode = gpu::GpuMode::kPersistent;
  Fib fib = fib_of({{0x0A000000, 8, 1}});
  {
    RouteTable t = make_table("dir24-8", fib);
    std::unique_ptr<ForwardApp> app = make_app(t, fib);
    EXPECT_THROW(gpu::with_table_updates(app->make_gpu_runner(oo), std::make_shared<gpu::DeviceTableUpdates>()),
                 gpu::GpuError);
    // A persistent runner made first: the app then takes no control.
    EXPECT_THROW(app->table_control(), UsageError);
  }
  RouteTable t = make_table("dir24-8", fib);
  std::unique_ptr<ForwardApp> app = make_app(t, fib);
  ASSERT_NE(app->table_control(), nullptr);
  EXPECT_THROW(app->make_gpu_runner(oo), UsageError) << "a control first: no persistent runner";
}

}  // namespace
}  // namespace tandem::ipv4
