// Live firewall rule updates (fw_rule_control.h): the commands, their numbering and errors; random
// batches against a reference rule list (one classifier build per batch), on the CPU and on the
// GPU's device copy; and a burst of 1,000 rule updates in 100 batches while workers forward on the
// CPU or through the GPU engine, each packet's verdict checked against the rule sets it could have
// seen (none lost, none judged by a half-applied batch).
#include "apps/fwrouter/fw_rule_control.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "apps/acl/hypersplit.h"
#include "apps/fwrouter/fw_router_gpu.h"
#include "core/byte_order.h"
#include "core/rcu.h"
#include "core/usage_error.h"
#include "gpu/gpu_runtime.h"
#include "gpu/table_updates.h"
#include "io/gen_frames.h"
#include "sched/workers.h"
#include "tests/pipeline_runs.h"

namespace tandem::fwrouter {
namespace {

constexpr uint32_t kPort = 3;  // the route of 20.0.0.0/8; other destinations have none

// The app over `rules` (Tandem's syntax) and one route, 20.0.0.0/8 -> kPort.
struct World {
  acl::RuleSet rules;
  ipv4::Fib fib;
  ipv4::Dir24_8 table;
  acl::HyperSplit tree;
  std::unique_ptr<FwRouterTables> tables;
  std::unique_ptr<FwRouterApp> app;
  RuleControl* control = nullptr;

  World(const std::vector<std::string>& lines, acl::Action default_action) {
    for (const std::string& l : lines) {
      acl::Rule r;
      std::string why;
      EXPECT_TRUE(acl::parse_rule(l, &r, &why)) << why;
      rules.rules.push_back(r);
    }
    rules.default_action = default_action;
    rules.path = "test";
    fib.routes = {{0x14000000u, 8, kPort}};
    fib.max_next_hop = kPort;
    EXPECT_EQ(table.add(0x14000000u, 8, kPort), ipv4::Dir24_8::Status::kOk);
    tree = acl::HyperSplit::build(rules.rules);
    tables = std::make_unique<FwRouterTables>(rules, tree, table, fib);
    app = std::make_unique<FwRouterApp>(*tables);
    control = dynamic_cast<RuleControl*>(app->table_control());
    EXPECT_NE(control, nullptr);
  }
};

// The reference decision: the first matching rule of `rules` in order, else the default; an
// accepted header is routed when its destination is in 20.0.0.0/8.
uint32_t decide(const std::vector<acl::Rule>& rules, uint8_t default_action, const acl::Header& h) {
  uint8_t action = default_action;
  for (const acl::Rule& r : rules) {
    if (acl::rule_matches(r, h)) {
      action = r.action;
      break;
    }
  }
  if (action != acl::kAccept) return kDenied;
  return h.dst >> 24 == 20 ? kPort : ipv4::kNoRoute;
}

acl::Header header(uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, uint8_t proto) {
  acl::Header h;
  h.src = src;
  h.dst = dst;
  h.sport = sport;
  h.dport = dport;
  h.proto = proto;
  return h;
}

std::vector<std::string> formatted(const std::vector<acl::Rule>& rules) {
  std::vector<std::string> out;
  for (const acl::Rule& r : rules) out.push_back(acl::format_rule(r));
  return out;
}

std::vector<acl::Rule> parsed(const std::vector<std::string>& lines) {
  std::vector<acl::Rule> out;
  for (const std::string& l : lines) {
    acl::Rule r;
    std::string why;
    EXPECT_TRUE(acl::parse_rule(l, &r, &why)) << why;
    out.push_back(r);
  }
  return out;
}

TEST(RuleControl, CommandsNumberingAndErrors) {
  World w({"drop src 10.0.0.0/8 dport 22 proto tcp", "accept dport 53 proto udp"}, acl::kAccept);
  TableControl* tc = w.control;
  ASSERT_NE(tc, nullptr);
  EXPECT_EQ(w.app->table_control(), tc) << "made once";
  const acl::Header ssh = header(0x0A000001, 0x14000008, 4000, 22, kProtoTcp);
  const acl::Header web = header(0x0A000001, 0x14000008, 4000, 80, kProtoTcp);
  const acl::Header dns = header(0x0A000001, 0x14000008, 4000, 53, kProtoUdp);
  const acl::Header udp = header(0x0A000001, 0x14000008, 4000, 54, kProtoUdp);
  const acl::Header nine = header(0x0A000001, 0x14000009, 4000, 80, kProtoTcp);
  const std::vector<acl::Header> hs = {ssh, web, dns, udp, nine};
  auto decisions = [&] {
    std::vector<uint32_t> got(hs.size()), one(hs.size());
    w.app->lookup_items(hs.data(), got.data(), hs.size());
    w.app->lookup_items_scalar(hs.data(), one.data(), hs.size());
    EXPECT_EQ(got, one) << "batched and scalar";
    return got;
  };
  EXPECT_EQ(decisions(), (std::vector<uint32_t>{kDenied, kPort, kPort, kPort, kPort}));

  const auto r = tc->apply({"add 1 drop dst 20.0.0.9", "add 5 accept", "add 4 drop proto udp", "del 0", "del 2",
                            "add 2 reject src any", "add x accept", "add 2", "add", "del", "del 1 2", "default maybe",
                            "default drop", "flush", "add 1 accept sport 99999", "del 99999999999999999999",
                            "default drop now", "add 1 accept src 10.0.0.300"});
  ASSERT_EQ(r.size(), 18u);
  EXPECT_EQ(r[0], "");
  EXPECT_EQ(r[1], "add: position '5': want a number from 1 to 4 (4 appends)");
  EXPECT_EQ(r[2], "") << "appended as rule 4";
  EXPECT_EQ(r[3], "del: position '0': want a number from 1 to 4");
  EXPECT_EQ(r[4], "") << "rule 2 is the ssh rule now";
  EXPECT_NE(r[5].find("add: a rule starts with accept or drop"), std::string::npos) << r[5];
  EXPECT_NE(r[6].find("add: position 'x'"), std::string::npos) << r[6];
  EXPECT_EQ(r[7], "add: missing RULE after the position");
  EXPECT_EQ(r[8], "add: missing POS RULE");
  EXPECT_EQ(r[9], "del: missing POS");
  EXPECT_EQ(r[10], "unexpected '2' at the end");
  EXPECT_EQ(r[11], "default: want accept or drop, not 'maybe'");
  EXPECT_EQ(r[12], "");
  EXPECT_NE(r[13].find("unknown command 'flush'"), std::string::npos) << r[13];
  EXPECT_NE(r[14].find("add: bad port range"), std::string::npos) << r[14];
  EXPECT_NE(r[15].find("del: position"), std::string::npos) << r[15];
  EXPECT_EQ(r[16], "unexpected 'now' at the end");
  EXPECT_NE(r[17].find("add: bad address"), std::string::npos) << r[17];
  EXPECT_EQ(tc->version(), 4u);
  EXPECT_EQ(w.control->rebuilds(), 1u) << "one classifier for the batch";
  EXPECT_EQ(formatted(w.control->rules().rules),
            formatted(parsed({"drop dst 20.0.0.9", "accept dport 53 proto udp", "drop proto udp"})));
  EXPECT_EQ(w.control->rules().default_action, acl::kDrop);
  // ssh and web: no rule now, the default drops them; dns: rule 2; other udp: rule 3; to .9: rule 1.
  EXPECT_EQ(decisions(), (std::vector<uint32_t>{kDenied, kDenied, kPort, kDenied, kDenied}));
  // The loaded set is untouched (the GPU path and --verify read it).
  EXPECT_EQ(w.rules.rules.size(), 2u);
  EXPECT_EQ(w.tables->decide(ssh), kDenied);
  EXPECT_EQ(w.tables->decide(web), kPort);

  // Deleting every rule; a batch of refused lines publishes nothing.
  const auto r2 = tc->apply({"default accept", "del 3", "del 1", "del 1", "del 1"});
  EXPECT_EQ(r2, (std::vector<std::string>{"", "", "", "", "del: there are no rules"}));
  EXPECT_EQ(decisions(), (std::vector<uint32_t>{kPort, kPort, kPort, kPort, kPort}));
  EXPECT_EQ(tc->version(), 8u);
  EXPECT_EQ(w.control->rebuilds(), 2u);
  EXPECT_EQ(tc->apply({"del 1", "add 2 accept"}), (std::vector<std::string>{"del: there are no rules",
                                                                              "add: position '2': want a number from 1 "
                                                                              "to 1 (1 appends)"}));
  EXPECT_EQ(tc->version(), 8u);
  EXPECT_EQ(w.control->rebuilds(), 2u);
  EXPECT_EQ(tc->syntax(), "add POS RULE | del POS | default accept|drop");
}

// A worker that has not passed a quiescent state since a batch was published may still be reading
// the rule set it loaded before: apply() publishes at once, but frees that set only after the
// worker's next quiescent state.
TEST(RuleControl, TheSetAReaderHoldsIsFreedOnlyAfterItsQuiescentState) {
  World w({}, acl::kAccept);
  std::atomic<const FwRouterTables*> current{nullptr};
  RuleControl rc(*w.tables, current);
  EXPECT_EQ(current.load(), w.tables.get());
  Rcu rcu(1);
  rc.set_rcu(&rcu);
  EXPECT_EQ(rc.apply({"add 1 drop dport 80"})[0], "") << "no reader online: no wait";
  const acl::Header web = header(0x0A000001, 0x14000008, 4000, 80, kProtoTcp);
  rcu.online(0);
  const FwRouterTables* held = current.load();  // reader 0 holds the set made by the batch
  ASSERT_NE(held, w.tables.get());
  EXPECT_EQ(held->decide(web), kDenied);
  std::atomic<bool> done{false};
  std::thread control([&] {
    EXPECT_EQ(rc.apply({"del 1"})[0], "");
    done = true;
  });
  while (rc.version() == 1) std::this_thread::yield();
  EXPECT_NE(current.load(), held) << "published at once";
  EXPECT_EQ(current.load()->decide(web), kPort);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(done.load()) << "apply() waits for the reader";
  EXPECT_EQ(held->decide(web), kDenied) << "the set the reader holds is still there";
  rcu.quiescent(0);
  control.join();
  EXPECT_TRUE(done.load());
  EXPECT_EQ(rc.rebuilds(), 2u);
}

// A random rule over the small header space of random_header.
std::string random_rule(std::mt19937& rng) {
  auto n = [&](uint32_t k) { return std::to_string(rng() % k); };
  std::string s = rng() % 2 ? "drop" : "accept";
  switch (rng() % 4) {
    case 1: s += " src 10.0." + n(4) + ".0/24"; break;
    case 2: s += " src 10.0." + n(4) + "." + n(4); break;
    case 3: s += " src 10.0.0.0/23"; break;
    default: break;
  }
  switch (rng() % 4) {
    case 1: s += " dst 20.0." + n(4) + ".0/24"; break;
    case 2: s += " dst 20.0." + n(4) + "." + n(4); break;
    case 3: s += " dst 30.0.0.0/16"; break;
    default: break;
  }
  if (rng() % 2) {
    const uint32_t lo = 1 + rng() % 8;
    s += " dport " + (rng() % 2 ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(lo + rng() % 4));
  }
  if (rng() % 5 == 0) s += " sport 1000-1001";
  const uint32_t p = rng() % 3;
  if (p) s += p == 1 ? " proto tcp" : " proto udp";
  return s;
}

// Sources in 10.0.0-3.0-3, destinations in 20.0.0-3.0-3 (routed) or 30.0.0.0-3 (no route), source
// ports 1000-1003, destination ports 1-8, TCP or UDP.
acl::Header random_header(std::mt19937_64& rng) {
  auto k = [&] { return static_cast<uint32_t>(rng() % 4); };
  const uint32_t dst = rng() % 8 ? 0x14000000u | k() << 8 | k() : 0x1E000000u | k();
  return header(0x0A000000u | k() << 8 | k(), dst,
                static_cast<uint16_t>(1000 + rng() % 4), static_cast<uint16_t>(1 + rng() % 8),
                rng() % 2 ? kProtoTcp : kProtoUdp);
}

// One random command for a list of `n` rules, with its effect on `ref` when it is valid.
std::string random_command(std::mt19937& rng, std::vector<acl::Rule>* ref, uint8_t* default_action, bool* valid) {
  const size_t n = ref->size();
  const uint32_t kind = rng() % 20;
  *valid = true;
  if (kind == 0) {
    *default_action = rng() % 2 ? acl::kDrop : acl::kAccept;
    return *default_action == acl::kDrop ? "default drop" : "default accept";
  }
  if (kind == 1) {  // out of range
    *valid = false;
    return rng() % 2 ? "del " + std::to_string(n + 1) : "add " + std::to_string(n + 2) + " accept";
  }
  if (n > 0 && (kind < 9 || n > 50)) {
    const size_t pos = 1 + rng() % n;
    ref->erase(ref->begin() + static_cast<std::ptrdiff_t>(pos - 1));
    return "del " + std::to_string(pos);
  }
  const size_t pos = 1 + rng() % (n + 1);
  const std::string text = random_rule(rng);
  ref->insert(ref->begin() + static_cast<std::ptrdiff_t>(pos - 1), parsed({text})[0]);
  return "add " + std::to_string(pos) + " " + text;
}

// After every batch the published rules equal the reference list, and the app decides as a
// linear first-match search over it, batched and one at a time, and, with `gpu`, through an
// offload runner (whose submit takes the batch's device copy).
void random_batches_follow_the_reference(bool gpu) {
  std::mt19937 rng(7);
  std::vector<std::string> initial;
  for (int i = 0; i < 20; ++i) initial.push_back(random_rule(rng));
  World w(initial, acl::kAccept);
  std::unique_ptr<gpu::OffloadRunner> runner;
  if (gpu) {
    gpu::OffloadOptions oo;
    oo.capacity = 1024;  // several batches per check
    runner = w.app->make_gpu_runner(oo);
  }
  std::vector<acl::Rule> ref = w.rules.rules;
  uint8_t default_action = acl::kAccept;
  std::mt19937_64 hrng(8);
  std::vector<acl::Header> hs(3000);
  for (acl::Header& h : hs) h = random_header(hrng);
  uint64_t versions = 0, built = 0;
  for (int batch = 0; batch < 100; ++batch) {
    std::vector<std::string> lines;
    std::vector<bool> valid;
    const int n = 1 + static_cast<int>(rng() % 30);
    for (int i = 0; i < n; ++i) {
      bool ok = false;
      lines.push_back(random_command(rng, &ref, &default_action, &ok));
      valid.push_back(ok);
    }
    const std::vector<std::string> r = w.control->apply(lines);
    uint64_t applied = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
      ASSERT_EQ(r[i].empty(), valid[i]) << "batch " << batch << ": " << lines[i] << ": " << r[i];
      applied += valid[i];
    }
    versions += applied;
    built += applied > 0;
    ASSERT_EQ(w.control->version(), versions);
    ASSERT_EQ(w.control->rebuilds(), built);
    ASSERT_EQ(formatted(w.control->rules().rules), formatted(ref)) << "batch " << batch;
    std::vector<uint32_t> got(hs.size()), one(hs.size());
    w.app->lookup_items(hs.data(), got.data(), hs.size());
    w.app->lookup_items_scalar(hs.data(), one.data(), hs.size());
    for (size_t i = 0; i < hs.size(); ++i) {
      const uint32_t want = decide(ref, default_action, hs[i]);
      ASSERT_EQ(got[i], want) << "batched, batch " << batch << " header " << i;
      ASSERT_EQ(one[i], want) << "scalar, batch " << batch << " header " << i;
    }
    if (runner) {
      std::vector<uint32_t> dev(hs.size());
      gpu::run_all(*runner, hs.data(), dev.data(), hs.size());
      for (size_t i = 0; i < hs.size(); ++i) {
        ASSERT_EQ(dev[i], decide(ref, default_action, hs[i])) << "GPU, batch " << batch << " header " << i;
      }
    }
  }
  EXPECT_GT(built, 90u);
  if (runner) {
    const gpu::DeviceTableUpdates* d = w.control->device_copy();
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->device_version(), versions);
    EXPECT_EQ(d->applies(), built) << "one device copy per batch that changed the rules";
    EXPECT_EQ(d->uploads(), built);
    EXPECT_GT(d->uploaded_bytes(), built * sizeof(acl::HsNode));
  }
}

TEST(RuleControl, RandomBatchesFollowTheReference) { random_batches_follow_the_reference(false); }

TEST(RuleControl, DeviceCopyFollowsRandomBatches) {
  if (!gpu::available()) GTEST_SKIP() << "no GPU";
  random_batches_follow_the_reference(true);
}

// The device copies of rule sets are freed once no batch can read them: the one the device holds
// and the newest stay.
TEST(RuleControl, DeviceVersionsAreFreedOnceUnread) {
  if (!gpu::available()) GTEST_SKIP() << "no GPU";
  World w({"drop dport 22 proto tcp"}, acl::kAccept);
  std::vector<int> freed(6, 0);  // before `versions`, whose buffers mark it when they go
  auto device = FwRouterGpu::create(*w.tables);
  auto updates = std::make_shared<gpu::DeviceTableUpdates>();
  gpu::DeviceTableVersions versions(updates, device->device_root(), sizeof(FwRouterGpu::DeviceTables));
  auto publish = [&](uint64_t v) {
    gpu::UploadedVersion c = device->upload_rules(*w.tables);
    // The buffers, and a mark when they go.
    c.buffers = std::make_shared<std::pair<std::shared_ptr<void>, std::shared_ptr<int>>>(
        c.buffers, std::shared_ptr<int>(&freed[v], [](int* f) { *f = 1; }));
    versions.publish(v, std::move(c), 0);
  };
  publish(1);
  EXPECT_EQ(versions.kept(), 1u) << "the device reads the caller's version 0";
  updates->apply();
  EXPECT_EQ(updates->device_version(), 1u);
  publish(2);
  EXPECT_EQ(versions.kept(), 2u);
  publish(3);
  EXPECT_EQ(versions.kept(), 2u) << "version 2 was never taken";
  EXPECT_EQ(freed, (std::vector<int>{0, 0, 1, 0, 0, 0}));
  updates->apply();
  publish(4);
  EXPECT_EQ(freed, (std::vector<int>{0, 1, 1, 0, 0, 0}));
  EXPECT_EQ(versions.kept(), 2u);
}

// A control's runners launch per batch: a persistent runner is refused when a control is there.
TEST(RuleControl, PersistentRunnersAreRefusedWithAControl) {
  if (!gpu::available()) GTEST_SKIP() << "no GPU";
  World w({"drop dport 22 proto tcp"}, acl::kAccept);
  gpu::OffloadOptions oo;
  oo.mode = gpu::GpuMode::kPersistent;
  EXPECT_THROW(w.app->make_gpu_runner(oo), UsageError);
}

// Frames: Ethernet, IPv4, TCP or UDP, then the stamp.
uint32_t stamp_at(uint8_t proto) { return 14 + gen::kIpv4Len + gen::l4_header_len(proto); }

// A live source of frames with headers of random_header; each carries, after its transport
// header, the version published when it was received (before any lookup of it).
class StampingSource final : public PacketSource {
 public:
  StampingSource(const RuleControl& rc, Rcu& rcu, int reader, uint32_t seed, const std::atomic<bool>& quiet)
      : rc_(rc), rcu_(rcu), reader_(reader), rng_(seed), quiet_(quiet) {}
  uint32_t rx_burst(PacketPool& pool, PacketBatch& b) override {
    if (quiet_.load()) return 0;
    // A burst every 50 us or so: the control thread gets a core on a small machine too.
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    const uint32_t got = pool.alloc_bulk(&b.cell[b.size], std::min<uint32_t>(PacketBatch::kCapacity - b.size, 64));
    const uint64_t version = rc_.version();
    // Every other burst is held until the next publish (or 5 ms), so that its lookups run on a
    // rule set newer than its stamp on every machine, not only when the scheduler interleaves so.
    // Its worker holds no rule set meanwhile: it reports quiescent states, or the grace period of
    // the publish before would wait for this one (and the control for the hold's end).
    if (++bursts_ % 2 == 0) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
      while (rc_.publishing() == version && !quiet_.load() && std::chrono::steady_clock::now() < until) {
        rcu_.quiescent(reader_);  // no rule set held here: the publish's grace period need not wait
        std::this_thread::yield();
      }
    }
    const uint8_t mac[6] = {2, 0, 0, 0, 0, 1};
    for (uint32_t k = 0; k < got; ++k) {
      const uint32_t i = b.size + k;
      uint8_t* f = pool.data(b.cell[i]);
      const acl::Header h = random_header(rng_);
      const uint32_t l4 = gen::l4_header_len(h.proto) + 8;
      gen::write_eth(f, mac, mac, 0x0800);
      gen::write_ipv4(f + 14, gen::kIpv4Len + l4, 0, h.proto, h.src, h.dst);
      gen::write_l4_header(f + 14 + gen::kIpv4Len, h.proto, l4, h.sport, h.dport, 1, 0);
      std::memcpy(f + stamp_at(h.proto), &version, 8);
      const uint32_t len = 14 + gen::kIpv4Len + l4;
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
  const RuleControl& rc_;
  Rcu& rcu_;
  int reader_;
  std::mt19937_64 rng_;
  const std::atomic<bool>& quiet_;
  uint64_t bursts_ = 0;
};

struct Seen {
  acl::Header h;
  uint32_t verdict;
  uint64_t lo, hi;  // the versions published before its receipt and after its verdict
};

// Records every frame's header and verdict with the version a lookup may have seen at most.
class RecordingSink final : public PacketSink {
 public:
  explicit RecordingSink(const RuleControl& rc) : rc_(rc) {}
  void tx_burst(const PacketPool& pool, const PacketBatch& b, Counters&) override {
    const uint64_t hi = rc_.publishing();
    for (uint32_t i = 0; i < b.size; ++i) {
      const uint8_t* f = pool.data(b.cell[i]);
      const uint8_t* ip = f + 14;
      const acl::Header h =
          header(load_be32(ip + 12), load_be32(ip + 16), load_be16(ip + 20), load_be16(ip + 22), ip[9]);
      uint64_t lo;
      std::memcpy(&lo, f + stamp_at(h.proto), 8);
      seen.push_back({h, b.verdict[i], lo, hi});
    }
  }
  std::vector<Seen> seen;

 private:
  const RuleControl& rc_;
};

uint32_t verdict_of(uint32_t decision) {
  if (decision == kDenied) return Verdict::drop(kAclDenied);
  return decision == ipv4::kNoRoute ? Verdict::drop(DropReason::kNoRoute) : Verdict::port(decision);
}

// 1,000 rule updates while two workers forward, on the CPU's batched path or, with `gpu_mode`,
// through the GPU engine (each batch's rules reach the offload runner's device copy).
void rule_updates_while_forwarding(std::optional<gpu::GpuMode> gpu_mode) {
  std::mt19937 rng(21);
  std::vector<std::string> initial;
  for (int i = 0; i < 30; ++i) initial.push_back(random_rule(rng));
  World w(initial, acl::kDrop);
  const int workers = 2;
  Rcu rcu(workers + 1);  // the workers, and the GPU engine's CPU fallback
  w.control->set_rcu(&rcu);

  // 100 batches of 10 commands; the rule list and default after each batch, by version.
  struct Snapshot {
    uint64_t version;
    std::vector<acl::Rule> rules;
    uint8_t default_action;
  };
  std::vector<Snapshot> snapshots{{0, w.rules.rules, acl::kDrop}};
  std::vector<std::vector<std::string>> batches;
  {
    std::vector<acl::Rule> ref = w.rules.rules;
    uint8_t default_action = acl::kDrop;
    uint64_t v = 0;
    for (int b = 0; b < 100; ++b) {
      std::vector<std::string> lines;
      while (lines.size() < 10) {
        bool valid = false;
        const std::string line = random_command(rng, &ref, &default_action, &valid);
        if (valid) lines.push_back(line);
      }
      v += lines.size();
      snapshots.push_back({v, ref, default_action});
      batches.push_back(std::move(lines));
    }
  }

  std::atomic<bool> quiet{false};
  std::atomic<int> stop{0};
  std::vector<std::unique_ptr<PacketSource>> sources;
  std::vector<std::unique_ptr<PacketSink>> sinks;
  std::vector<RecordingSink*> rec;
  for (int k = 0; k < workers; ++k) {
    sources.push_back(std::make_unique<StampingSource>(*w.control, rcu, k, 100 + k, quiet));
    auto s = std::make_unique<RecordingSink>(*w.control);
    rec.push_back(s.get());
    sinks.push_back(std::move(s));
  }
  std::thread control([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (const auto& lines : batches) {
      for (const std::string& e : w.control->apply(lines)) EXPECT_EQ(e, "");
      // Time for bursts between publishes: each batch's rule set is seen by some packets.
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    quiet = true;
    stop = 1;
  });
  WorkersConfig wc;
  wc.workers = workers;
  wc.ports = w.app->ports();
  wc.stop = &stop;
  wc.rcu = &rcu;
  GpuEngine engine;
  if (gpu_mode) {
    wc.max_bursts_in_flight = 64;
    engine = attach_gpu_engine(wc, *w.app, w.app->make_gpu_runner(test::mode_options(*gpu_mode)),
                               test::mode_engine_config(), /*staged=*/true);
  }
  const WorkersResult r = run_workers_live(*w.app, sources, sinks, wc);
  control.join();
  ASSERT_EQ(w.control->version(), 1000u);
  ASSERT_EQ(w.control->rebuilds(), 100u);

  uint64_t checked = 0, wrong = 0, during = 0, changed = 0;
  for (const RecordingSink* s : rec) {
    for (const Seen& p : s->seen) {
      ++checked;
      ASSERT_LE(p.lo, p.hi);
      during += p.hi > p.lo;
      // Allowed: the verdict under any rule set published between the two stamps, exactly.
      auto it = std::upper_bound(snapshots.begin(), snapshots.end(), p.lo,
                                 [](uint64_t v, const Snapshot& x) { return v < x.version; });
      --it;
      bool ok = false;
      std::vector<uint32_t> allowed;
      for (; it != snapshots.end() && it->version <= p.hi; ++it) {
        allowed.push_back(verdict_of(decide(it->rules, it->default_action, p.h)));
        ok = ok || allowed.back() == p.verdict;
      }
      changed += std::count(allowed.begin(), allowed.end(), allowed.front()) != static_cast<long>(allowed.size());
      wrong += !ok;
      if (!ok && wrong < 5) {
        ADD_FAILURE() << "a packet got verdict " << p.verdict << ", seen between versions " << p.lo << " and " << p.hi;
      }
    }
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_TRUE(r.counters.balanced());
  EXPECT_EQ(checked, r.counters.rx_packets) << "every packet received was judged and seen";
  EXPECT_GT(checked, 10000u);
  EXPECT_GT(r.counters.drops[int(kAclDenied)], checked / 20);
  EXPECT_GT(r.counters.tx_packets, checked / 20);
  EXPECT_GT(during, 1000u) << "packets in flight while the rules changed";
  EXPECT_GT(changed, 100u) << "packets whose verdict a publish during their lookup could change";
  std::printf("%llu packets checked, %llu of them judged while rule sets were published, %llu of those with verdicts "
              "that differ between the sets they could see\n",
              static_cast<unsigned long long>(checked), static_cast<unsigned long long>(during),
              static_cast<unsigned long long>(changed));
  if (gpu_mode) {
    test::expect_all_on_gpu(engine, 10);
    EXPECT_EQ(w.control->device_copy()->device_version(), 1000u) << "the last rule set reached the device";
  }
}

TEST(RuleControl, ThousandRuleUpdatesWhileForwardingMisjudgeNothing) { rule_updates_while_forwarding(std::nullopt); }

// The same through the GPU's offload path, in each mode that launches per batch.
TEST(RuleControl, ThousandRuleUpdatesOnTheGpuMisjudgeNothing) {
  if (!gpu::available()) GTEST_SKIP() << "no GPU";
  for (gpu::GpuMode mode : {gpu::GpuMode::kAsync, gpu::GpuMode::kGraph, gpu::GpuMode::kMapped}) {
    SCOPED_TRACE(gpu::gpu_mode_name(mode));
    rule_updates_while_forwarding(mode);
  }
}

// Last in this file: a trapped kernel breaks the process's GPU for good (ctest runs each test in a
// process of its own). An update whose upload fails on the failed device, before any engine has
// seen the fault, applies on the host (whatever reads the device from then on fails too), and the
// device copy is abandoned; a runner made afterwards is refused.
TEST(RuleControl, AnUploadIntoAFailedGpuAppliesOnTheHost) {
  if (!gpu::available()) GTEST_SKIP() << "no GPU";
  World w({"drop dport 22 proto tcp"}, acl::kAccept);
  gpu::OffloadOptions oo;
  oo.capacity = 64;
  oo.fault_at_batch = 1;
  auto runner = w.app->make_gpu_runner(oo);
  std::vector<acl::Header> hs(10, header(0x0A000001u, 0x14000001u, 1000, 80, kProtoTcp));
  std::vector<uint32_t> out(hs.size());
  EXPECT_THROW(gpu::run_all(*runner, hs.data(), out.data(), hs.size()), gpu::GpuError);
  EXPECT_EQ(w.control->apply({"add 1 drop dport 80 proto tcp"}), std::vector<std::string>{""});
  EXPECT_EQ(w.control->version(), 1u);
  EXPECT_EQ(formatted(w.control->rules().rules).front(), formatted(parsed({"drop dport 80 proto tcp"})).front());
  ASSERT_NE(w.control->device_copy(), nullptr);
  EXPECT_TRUE(w.control->device_copy()->abandoned());
  EXPECT_EQ(w.control->device_copy()->uploads(), 0u);
  EXPECT_THROW(w.app->make_gpu_runner(gpu::OffloadOptions{}), gpu::GpuError);
}

}  // namespace
}  // namespace tandem::fwrouter
