// Live MAC table updates (mac_control.h): the commands and their errors, both copies of the table
// kept equal slot for slot against a std::map (a table filled to kFull included), and a burst of
// 10,000 updates while workers forward, each frame checked against the table versions it could
// have seen (none lost, none forwarded by a half-applied batch).
#include "apps/l2/mac_control.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "apps/l2/l2_app.h"
#include "core/byte_order.h"
#include "core/rcu.h"
#include "io/gen_frames.h"
#include "gpu/gpu_runtime.h"
#include "gpu/table_updates.h"
#include "sched/workers.h"
#include "tests/pipeline_runs.h"

namespace tandem::l2 {
namespace {

// A switch over `entries`, in a table sized for `capacity` entries.
L2Setup setup_of(const std::vector<std::pair<uint64_t, uint32_t>>& entries, size_t capacity) {
  L2Setup s;
  s.table = std::make_unique<MacTable>(capacity);
  for (const auto& [mac, port] : entries) {
    EXPECT_NE(s.table->insert(mac, port), MacTable::Status::kFull);
    s.max_port = std::max(s.max_port, port);
  }
  s.entries = entries;
  s.source = "test";
  return s;
}

// `n` distinct unicast MACs.
std::vector<uint64_t> unicast_macs(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> macs;
  std::map<uint64_t, bool> seen;
  while (macs.size() < n) {
    const uint64_t m = rng() & kMacMask & ~kMacGroupBit;
    if (seen.emplace(m, true).second) macs.push_back(m);
  }
  return macs;
}

TEST(MacControl, CommandsAndErrors) {
  L2Setup s = setup_of({{0x001b213a4f01ull, 1}}, 1024);
  L2App app(s, s.table.get());
  TableControl* tc = app.table_control();
  ASSERT_NE(tc, nullptr);
  EXPECT_EQ(app.table_control(), tc) << "made once";
  const auto r = tc->apply({"add 00:1b:21:3a:4f:02 7", "del 00:1b:21:3a:4f:09", "add 00:1b:21:3a:4f:03",
                            "add 00:1b:21:3a:4f 3", "add 01:00:5e:00:00:01 2", "drop 00:1b:21:3a:4f:01",
                            "add 00:1b:21:3a:4f:04 2 extra", "del 00:1b:21:3a:4f:01", "add 00:1b:21:3a:4f:05 65535",
                            "add 00:1B:21:3A:4F:06 65534", "del", "add 00-1b-21-3a-4f-07 1", "add 00:1b:21:3a:4f:08 -1",
                            "del ff:ff:ff:ff:ff:ff", "add 00:1b:21:3a:4f:02 9", "add 00:1b:21:3a:4f:0a 0x3"});
  ASSERT_EQ(r.size(), 16u);
  EXPECT_EQ(r[0], "");
  EXPECT_EQ(r[1], "no such MAC");
  EXPECT_NE(r[2].find("add: port '': want a number from 0 to 65534"), std::string::npos) << r[2];
  EXPECT_NE(r[3].find("bad MAC address"), std::string::npos) << r[3];
  EXPECT_NE(r[4].find("group (multicast/broadcast) MAC"), std::string::npos) << r[4];
  EXPECT_NE(r[5].find("unknown command 'drop'"), std::string::npos) << r[5];
  EXPECT_NE(r[6].find("unexpected 'extra'"), std::string::npos) << r[6];
  EXPECT_EQ(r[7], "");
  EXPECT_NE(r[8].find("port '65535'"), std::string::npos) << r[8];
  EXPECT_EQ(r[9], "") << "either case, the largest port";
  EXPECT_NE(r[10].find("del: missing MAC"), std::string::npos) << r[10];
  EXPECT_NE(r[11].find("bad MAC address"), std::string::npos) << r[11];
  EXPECT_NE(r[12].find("port '-1'"), std::string::npos) << r[12];
  EXPECT_NE(r[13].find("group"), std::string::npos) << r[13];
  EXPECT_EQ(r[14], "") << "a new port for a known MAC";
  EXPECT_NE(r[15].find("port '0x3'"), std::string::npos) << r[15];
  for (const std::string& e : r) EXPECT_EQ(e.find("4f:0"), std::string::npos) << "no MAC in a message: " << e;
  EXPECT_EQ(tc->version(), 4u);
  EXPECT_EQ(tc->syntax(), "add MAC PORT | del MAC");
  // What the data path reads now.
  const uint64_t keys[] = {0x001b213a4f01ull, 0x001b213a4f02ull, 0x001b213a4f06ull, 0x001b213a4f09ull};
  uint32_t got[4];
  app.lookup_items_scalar(keys, got, 4);
  EXPECT_EQ(got[0], kFlood);
  EXPECT_EQ(got[1], 9u);
  EXPECT_EQ(got[2], kMaxPort);
  EXPECT_EQ(got[3], kFlood);
  // A batch of bad lines publishes nothing.
  EXPECT_NE(tc->apply({"del 00:1b:21:3a:4f:01"})[0], "");
  EXPECT_EQ(tc->version(), 4u);
  EXPECT_TRUE(dynamic_cast<MacControl*>(tc)->copies_equal());
  // Without a writable table, no updates.
  L2App fixed(s);
  EXPECT_EQ(fixed.table_control(), nullptr);
}

// Random batches on a small table, filled past what it holds: after every batch both copies hold
// the same slots, and the published one answers as a std::map given the commands that succeeded.
// An add fails with "table full" only for a new MAC and only when the table is well filled.
TEST(MacControl, BothCopiesFollowTheReferenceUpToFull) {
  const std::vector<uint64_t> macs = unicast_macs(120, 3);
  L2Setup s = setup_of({{macs[0], 1}, {macs[1], 2}}, 40);  // 8 buckets, 64 slots
  L2App app(s, s.table.get());
  auto* mc = dynamic_cast<MacControl*>(app.table_control());
  ASSERT_NE(mc, nullptr);
  const size_t slots = s.table->slot_count();
  std::map<uint64_t, uint32_t> ref{{macs[0], 1}, {macs[1], 2}};
  std::mt19937 rng(5);
  uint64_t full = 0, versions = 0;
  for (int batch = 0; batch < 200; ++batch) {
    std::vector<std::string> lines;
    std::vector<std::pair<uint64_t, int64_t>> ops;  // (MAC, port or -1 to delete)
    const int n = 1 + static_cast<int>(rng() % 20);
    for (int i = 0; i < n; ++i) {
      const uint64_t mac = macs[rng() % macs.size()];
      // Mostly adds until the table has been full, then as many deletes as adds.
      if (rng() % (full ? 2 : 6) == 0) {
        lines.push_back("del " + format_mac(mac));
        ops.push_back({mac, -1});
      } else {
        const uint32_t port = rng() % 100;
        lines.push_back("add " + format_mac(mac) + " " + std::to_string(port));
        ops.push_back({mac, port});
      }
    }
    const std::vector<std::string> r = mc->apply(lines);
    for (size_t i = 0; i < ops.size(); ++i) {
      const auto [mac, port] = ops[i];
      if (port < 0) {
        ASSERT_EQ(r[i], ref.erase(mac) ? "" : "no such MAC") << "batch " << batch << " line " << i;
      } else if (r[i].empty()) {
        ref[mac] = static_cast<uint32_t>(port);
      } else {
        ASSERT_EQ(r[i].rfind("table full", 0), 0u) << r[i];
        ASSERT_EQ(ref.count(mac), 0u) << "an update never needs a free slot";
        ASSERT_GT(ref.size(), slots * 3 / 4) << "full at " << ref.size() << " of " << slots;
        ++full;
      }
      versions += r[i].empty();
    }
    ASSERT_TRUE(mc->copies_equal()) << "batch " << batch;
    ASSERT_EQ(s.table->size(), ref.size());
    ASSERT_EQ(mc->version(), versions);
    std::vector<uint32_t> got(macs.size());
    app.lookup_items(macs.data(), got.data(), macs.size());
    for (size_t i = 0; i < macs.size(); ++i) {
      const auto it = ref.find(macs[i]);
      ASSERT_EQ(got[i], it == ref.end() ? kFlood : it->second) << "batch " << batch << " MAC " << i;
    }
  }
  EXPECT_GT(full, 10u) << "the table was filled to kFull";
  std::printf("%llu adds refused as table full\n", static_cast<unsigned long long>(full));
}

// A worker that has not passed a quiescent state since a batch was published may still be reading
// the copy it loaded before: apply() publishes at once, but changes that copy only after the
// worker's next quiescent state.
TEST(MacControl, TheCopyAReaderHoldsChangesOnlyAfterItsQuiescentState) {
  const std::vector<uint64_t> macs = unicast_macs(2, 4);
  L2Setup s = setup_of({{macs[0], 1}}, 1024);
  L2App app(s, s.table.get());
  auto* mc = dynamic_cast<MacControl*>(app.table_control());
  ASSERT_NE(mc, nullptr);
  Rcu rcu(1);
  mc->set_rcu(&rcu);
  rcu.online(0);  // reader 0 may hold s.table, the copy published now
  const std::vector<uint64_t> held(s.table->slots(), s.table->slots() + s.table->slot_count());
  std::atomic<bool> done{false};
  std::thread control([&] {
    EXPECT_EQ(mc->apply({"add " + format_mac(macs[1]) + " 2", "del " + format_mac(macs[0])}),
              (std::vector<std::string>{"", ""}));
    done = true;
  });
  while (mc->version() == 0) std::this_thread::yield();
  uint32_t got[2];
  app.lookup_items_scalar(macs.data(), got, 2);
  EXPECT_EQ(got[0], kFlood) << "new lookups see the batch";
  EXPECT_EQ(got[1], 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(done.load()) << "apply() waits for the reader";
  EXPECT_TRUE(std::equal(held.begin(), held.end(), s.table->slots())) << "the copy the reader holds is untouched";
  rcu.quiescent(0);
  control.join();
  EXPECT_TRUE(done.load());
  EXPECT_TRUE(mc->copies_equal());
  EXPECT_EQ(s.table->lookup(macs[1]), 2u);
}

constexpr uint32_t kFrameLen = 64;
constexpr uint32_t kStampAt = 14;

// A live source of Ethernet frames to MACs of a pool (and some unknown ones); each frame carries,
// after its header, the table version published when it was received (before any lookup of it).
class StampingSource final : public PacketSource {
 public:
  StampingSource(const MacControl& mc, const std::vector<uint64_t>& pool, Rcu& rcu, int reader, uint32_t seed,
                 const std::atomic<bool>& quiet)
      : mc_(mc), pool_(pool), rcu_(rcu), reader_(reader), rng_(seed), quiet_(quiet) {}
  uint32_t rx_burst(PacketPool& pool, PacketBatch& b) override {
    if (quiet_.load()) return 0;
    // A burst every 50 us or so: the control thread gets a core on a small machine too.
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    const uint32_t got = pool.alloc_bulk(&b.cell[b.size], std::min<uint32_t>(PacketBatch::kCapacity - b.size, 64));
    const uint64_t version = mc_.version();
    // Every other burst is held until the next publish (or 5 ms), so that its lookups run on a
    // table newer than its stamp on every machine, not only when the scheduler interleaves so. Its
    // worker holds no table pointer meanwhile: it reports quiescent states, or the grace period
    // of the publish before would wait for this one (and the control for the hold's end).
    if (++bursts_ % 2 == 0) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
      while (mc_.publishing() == version && !quiet_.load() && std::chrono::steady_clock::now() < until) {
        rcu_.quiescent(reader_);  // no table pointer held here: the publish's grace period need not wait
        std::this_thread::yield();
      }
    }
    const uint8_t src[6] = {2, 0, 0, 0, 0, 1};
    for (uint32_t k = 0; k < got; ++k) {
      const uint32_t i = b.size + k;
      uint8_t* f = pool.data(b.cell[i]);
      // Mostly the pool's MACs (which the updates bind, move and delete), some never known.
      uint64_t mac = rng_() % 8 ? pool_[rng_() % pool_.size()] : (rng_() & kMacMask & ~kMacGroupBit);
      uint8_t dst[6];
      for (int j = 5; j >= 0; --j, mac >>= 8) dst[j] = static_cast<uint8_t>(mac);
      std::memset(f, 0, kFrameLen);
      gen::write_eth(f, dst, src, 0x88B5);  // a local experimental EtherType: no L3 parsed
      std::memcpy(f + kStampAt, &version, 8);
      b.len[i] = kFrameLen;
      b.wire_len[i] = kFrameLen;
      b.ts_ns[i] = 0;
      b.verdict[i] = Verdict::kUnset;
    }
    b.size += got;
    return got;
  }
  std::string describe() const override { return "stamping source"; }
  bool live() const override { return true; }

 private:
  const MacControl& mc_;
  const std::vector<uint64_t>& pool_;
  Rcu& rcu_;
  int reader_;
  std::mt19937_64 rng_;
  const std::atomic<bool>& quiet_;
  uint64_t bursts_ = 0;
};

struct Seen {
  uint64_t dst;
  uint32_t verdict;
  uint64_t lo, hi;  // the versions published before its receipt and after its transmission
};

// Records every frame at transmission with the version a lookup may have seen at most.
class RecordingSink final : public PacketSink {
 public:
  explicit RecordingSink(const MacControl& mc) : mc_(mc) {}
  void tx_burst(const PacketPool& pool, const PacketBatch& b, Counters&) override {
    const uint64_t hi = mc_.publishing();
    forwarded.fetch_add(b.size, std::memory_order_relaxed);
    for (uint32_t i = 0; i < b.size; ++i) {
      const uint8_t* f = pool.data(b.cell[i]);
      uint64_t lo;
      std::memcpy(&lo, f + kStampAt, 8);
      seen.push_back({load_be48(f), b.verdict[i], lo, hi});
    }
  }
  std::vector<Seen> seen;
  std::atomic<uint64_t> forwarded{0};

 private:
  const MacControl& mc_;
};

// A burst of 10,000 updates while two workers forward, on the CPU's batched path or, with
// `gpu_mode`, through the GPU engine (the updates reach the offload runner's device copy).
void updates_while_forwarding(std::optional<gpu::GpuMode> gpu_mode) {
  // 256 MACs, half of them known at the start.
  const std::vector<uint64_t> macs = unicast_macs(256, 9);
  std::vector<std::pair<uint64_t, uint32_t>> initial;
  for (size_t i = 0; i < macs.size(); i += 2) initial.push_back({macs[i], 1});
  L2Setup s = setup_of(initial, 1024);
  L2App app(s, s.table.get());
  auto* mc = dynamic_cast<MacControl*>(app.table_control());
  ASSERT_NE(mc, nullptr);
  const int workers = 2;
  Rcu rcu(workers + 1);  // the workers, and the GPU engine's CPU fallback
  mc->set_rcu(&rcu);

  // The updates bind MACs of the pool to ports that name the update (2 + i % 5000), or delete
  // them. Each MAC's history records (version from which it holds, port or -1 for none).
  std::mt19937 rng(11);
  std::vector<std::vector<std::string>> batches;
  std::vector<std::vector<std::pair<uint64_t, int64_t>>> batch_ops;
  std::map<uint64_t, bool> present;
  for (const auto& e : initial) present[e.first] = true;
  int made = 0;
  while (made < 10000) {
    const int n = std::min<int>(10000 - made, 1 + static_cast<int>(rng() % 50));
    std::vector<std::string> lines;
    std::vector<std::pair<uint64_t, int64_t>> ops;
    for (int k = 0; k < n; ++k, ++made) {
      const uint64_t mac = macs[rng() % macs.size()];
      if (present[mac] && rng() % 2) {
        lines.push_back("del " + format_mac(mac));
        ops.push_back({mac, -1});
        present[mac] = false;
      } else {
        const int64_t port = 2 + made % 5000;
        lines.push_back("add " + format_mac(mac) + " " + std::to_string(port));
        ops.push_back({mac, port});
        present[mac] = true;
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
    sources.push_back(std::make_unique<StampingSource>(*mc, macs, rcu, w, 100 + w, quiet));
    auto k = std::make_unique<RecordingSink>(*mc);
    rec.push_back(k.get());
    sinks.push_back(std::move(k));
  }
  std::vector<uint64_t> boundary{0};  // the version after each batch
  bool copies_equal = true;
  auto forward_some = [&](uint64_t n) {
    test::wait_until_forwarded([&] {
      uint64_t t = 0;
      for (const RecordingSink* k : rec) t += k->forwarded.load(std::memory_order_relaxed);
      return t;
    }, n);
  };
  std::thread control([&] {
    forward_some(2000);
    for (const auto& lines : batches) {
      for (const std::string& e : mc->apply(lines)) EXPECT_EQ(e, "");
      boundary.push_back(mc->version());
      copies_equal = copies_equal && mc->copies_equal();
    }
    forward_some(2000);
    quiet = true;
    stop = 1;
  });
  WorkersConfig wc;
  wc.workers = workers;
  wc.ports = app.ports();
  wc.stop = &stop;
  wc.rcu = &rcu;
  GpuEngine engine;
  if (gpu_mode) {
    wc.max_bursts_in_flight = 64;
    engine = attach_gpu_engine(wc, app, app.make_gpu_runner(test::mode_options(*gpu_mode)), test::mode_engine_config(),
                               /*staged=*/true);
  }
  const WorkersResult r = run_workers_live(app, sources, sinks, wc);
  control.join();
  ASSERT_EQ(mc->version(), 10000u);
  EXPECT_TRUE(copies_equal);

  std::map<uint64_t, std::vector<std::pair<uint64_t, int64_t>>> history;
  for (const auto& e : initial) history[e.first].push_back({0, e.second});
  uint64_t v = 0;
  for (const auto& ops : batch_ops) {
    v += ops.size();
    for (const auto& [mac, port] : ops) history[mac].push_back({v, port});
  }
  // The verdict for `dst` at version `ver`: its port then, or a flood.
  auto want = [&](uint64_t dst, uint64_t ver) -> uint32_t {
    int64_t port = -1;
    const auto it = history.find(dst);
    if (it != history.end()) {
      for (const auto& [when, p] : it->second) {
        if (when > ver) break;
        port = p;
      }
    }
    return l2_verdict(port < 0 ? kFlood : static_cast<uint32_t>(port));
  };
  uint64_t checked = 0, wrong = 0, during = 0, flooded = 0;
  for (const RecordingSink* k : rec) {
    for (const Seen& p : k->seen) {
      ++checked;
      ASSERT_LE(p.lo, p.hi);
      during += p.hi > p.lo;
      flooded += Verdict::port(p.verdict) == Verdict::kFloodPort;
      // Allowed: the verdict at any batch boundary between the two stamps.
      auto it = std::upper_bound(boundary.begin(), boundary.end(), p.lo);
      --it;  // the last boundary at or below lo: the table a lookup after lo saw at least
      bool ok = false;
      for (; it != boundary.end() && *it <= p.hi && !ok; ++it) ok = p.verdict == want(p.dst, *it);
      wrong += !ok;
      if (!ok && wrong < 5) {
        ADD_FAILURE() << "a frame got verdict " << p.verdict << ", seen between versions " << p.lo << " and " << p.hi;
      }
    }
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_TRUE(r.counters.balanced());
  EXPECT_EQ(r.counters.dropped(), 0u);
  EXPECT_EQ(checked, r.counters.rx_packets) << "every frame received was forwarded and seen";
  EXPECT_GT(checked, 10000u);
  EXPECT_GT(flooded, 0u);
  EXPECT_GT(during, 1000u) << "frames in flight while the table changed";
  std::printf("%llu frames checked, %llu of them forwarded while updates were published\n",
              static_cast<unsigned long long>(checked), static_cast<unsigned long long>(during));
  if (gpu_mode) test::expect_all_on_gpu(engine, 10);
}

TEST(MacControl, TenThousandUpdatesWhileForwardingLoseAndMisforwardNothing) { updates_while_forwarding(std::nullopt); }

// The same burst through the GPU's offload path, in each mode that launches per batch.
TEST(MacControl, TenThousandUpdatesOnTheGpuLoseAndMisforwardNothing) {
  if (!gpu::available()) GTEST_SKIP() << "no GPU";
  for (gpu::GpuMode mode : {gpu::GpuMode::kAsync, gpu::GpuMode::kGraph, gpu::GpuMode::kMapped}) {
    SCOPED_TRACE(gpu::gpu_mode_name(mode));
    updates_while_forwarding(mode);
  }
}

// Every slot a batch writes is staged: random inserts (cuckoo paths in a table filled to 85%) and
// erases, each batch followed by lookups of every MAC through an offload runner, which must equal
// the host table's; then the same on a table of 64 slots, smaller than one staged block.
void device_copy_follows_random_batches(size_t n_macs, size_t prefill, size_t capacity, int rounds, bool want_moves) {
  const std::vector<uint64_t> macs = unicast_macs(n_macs, 21);
  std::vector<std::pair<uint64_t, uint32_t>> initial;
  for (size_t i = 0; i < prefill; ++i) initial.push_back({macs[i], static_cast<uint32_t>(i % 7)});
  L2Setup s = setup_of(initial, capacity);
  L2App app(s, s.table.get());
  auto* mc = dynamic_cast<MacControl*>(app.table_control());
  ASSERT_NE(mc, nullptr);
  gpu::OffloadOptions oo;
  oo.capacity = macs.size();
  std::unique_ptr<gpu::OffloadRunner> runner = app.make_gpu_runner(oo);
  std::mt19937 rng(3);
  std::vector<uint32_t> got(macs.size()), want(macs.size());
  const uint64_t moves_before = s.table->cuckoo_moves();
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::string> lines;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) {
      const uint64_t mac = macs[rng() % macs.size()];
      lines.push_back(rng() % 4 == 0 ? "del " + format_mac(mac)
                                     : "add " + format_mac(mac) + " " + std::to_string(rng() % 1000));
    }
    mc->apply(lines);  // "no such MAC" and "table full" lines change nothing
    gpu::run_all(*runner, macs.data(), got.data(), macs.size());
    app.lookup_items_scalar(macs.data(), want.data(), macs.size());
    for (size_t i = 0; i < macs.size(); ++i) {
      if (got[i] != want[i]) FAIL() << "round " << round << ": MAC " << i << ": device " << got[i] << ", host " << want[i];
    }
  }
  EXPECT_EQ(mc->device_copy()->device_version(), mc->version());
  if (want_moves) EXPECT_GT(s.table->cuckoo_moves(), moves_before) << "cuckoo paths applied during the batches";
}

TEST(MacControl, DeviceCopyFollowsRandomBatches) {
  if (!gpu::available()) GTEST_SKIP() << "no GPU";
  {
    SCOPED_TRACE("4,096 slots");
    device_copy_follows_random_batches(4000, 3500, 2048, 200, true);
  }
  SCOPED_TRACE("64 slots");
  device_copy_follows_random_batches(100, 20, 40, 50, false);
}

}  // namespace
}  // namespace tandem::l2
