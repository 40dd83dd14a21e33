// The ipv4 app (apps/ipv4/ipv4_app.h), over each table it can choose, on hand-made frames: every
// drop reason a router decides, the TTL and checksum rewrite, the accounting, identical results
// from the scalar and batched paths, and the reference (--verify) agreeing with every decision the
// lookup made; choosing the table by name (ipv4_table.h make_table) and its GPU refusal.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "apps/ipv4/ipv4_app.h"
#include "apps/registry.h"
#include "core/checksum.h"
#include "io/traffic_gen.h"

namespace tandem::ipv4 {
namespace {

constexpr uint32_t ip(int a, int b, int c, int d) {
  return (uint32_t(a) << 24) | (uint32_t(b) << 16) | (uint32_t(c) << 8) | uint32_t(d);
}

// A valid Ethernet/IPv4/UDP frame from the generator, then edited.
std::vector<uint8_t> frame(uint32_t src, uint32_t dst, uint8_t ttl) {
  GenSpec spec;
  spec.count = 1;
  const PacketStore s = generate(spec);
  std::vector<uint8_t> f(s.frame(0), s.frame(0) + s.caplen[0]);
  uint8_t* iph = f.data() + 14;
  for (int i = 0; i < 4; ++i) {
    iph[12 + i] = uint8_t(src >> (24 - 8 * i));
    iph[16 + i] = uint8_t(dst >> (24 - 8 * i));
  }
  iph[8] = ttl;
  const uint16_t c = ipv4_header_checksum(iph, 20);
  iph[10] = uint8_t(c >> 8);
  iph[11] = uint8_t(c);
  return f;
}

// The same frame with an 802.1Q tag and 4 bytes of IPv4 options (IHL 6): the IP header moves.
std::vector<uint8_t> tagged_with_options(std::vector<uint8_t> f) {
  const uint8_t tag[4] = {0x81, 0x00, 0x00, 0x2A};
  f.insert(f.begin() + 12, tag, tag + 4);
  const uint8_t nops[4] = {1, 1, 1, 1};
  f.insert(f.begin() + 18 + 20, nops, nops + 4);
  uint8_t* iph = f.data() + 18;
  iph[0] = 0x46;
  const uint16_t total = uint16_t((iph[2] << 8 | iph[3]) + 4);
  iph[2] = uint8_t(total >> 8);
  iph[3] = uint8_t(total);
  const uint16_t c = ipv4_header_checksum(iph, 24);
  iph[10] = uint8_t(c >> 8);
  iph[11] = uint8_t(c);
  return f;
}

struct Case {
  const char* what;
  std::vector<uint8_t> bytes;
  uint32_t want;    // Verdict encoding
  size_t l3 = 14;   // offset of the IPv4 header
};

// The parameter: the table's name (ipv4_table.h kTableNames).
class ForwardTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    fib.routes = {{ip(20, 0, 0, 0), 8, 3}, {ip(20, 1, 2, 128), 25, 7}};
    fib.max_next_hop = 7;
    table = make_table(GetParam(), fib);
    app = make_app(table, fib);
    app->build_reference();
    const uint32_t src = ip(10, 0, 0, 1);
    cases.push_back({"routed", frame(src, ip(20, 9, 9, 9), 64), Verdict::port(3)});
    cases.push_back({"longer prefix", frame(src, ip(20, 1, 2, 200), 64), Verdict::port(7)});
    cases.push_back({"ttl 2 still forwarded", frame(src, ip(20, 1, 2, 1), 2), Verdict::port(3)});
    cases.push_back({"vlan + options", tagged_with_options(frame(src, ip(20, 1, 2, 130), 9)), Verdict::port(7), 18});
    cases.push_back({"vlan + options, ttl 1", tagged_with_options(frame(src, ip(20, 1, 2, 130), 1)),
                     Verdict::drop(DropReason::kTtlExceeded), 18});
    cases.push_back({"ttl 1", frame(src, ip(20, 1, 2, 1), 1), Verdict::drop(DropReason::kTtlExceeded)});
    cases.push_back({"ttl 0", frame(src, ip(20, 1, 2, 1), 0), Verdict::drop(DropReason::kTtlExceeded)});
    cases.push_back({"no route", frame(src, ip(21, 0, 0, 1), 64), Verdict::drop(DropReason::kNoRoute)});
    cases.push_back({"multicast dst", frame(src, ip(224, 0, 0, 251), 64), Verdict::drop(DropReason::kMartian)});
    cases.push_back({"broadcast dst", frame(src, ip(255, 255, 255, 255), 64), Verdict::drop(DropReason::kMartian)});
    cases.push_back({"class E dst", frame(src, ip(240, 0, 0, 1), 64), Verdict::drop(DropReason::kMartian)});
    cases.push_back({"0/8 dst", frame(src, ip(0, 1, 2, 3), 64), Verdict::drop(DropReason::kMartian)});
    cases.push_back({"loopback dst", frame(src, ip(127, 0, 0, 1), 64), Verdict::drop(DropReason::kMartian)});
    cases.push_back({"loopback src", frame(ip(127, 0, 0, 1), ip(20, 0, 0, 1), 64), Verdict::drop(DropReason::kMartian)});
    cases.push_back({"multicast src", frame(ip(230, 0, 0, 1), ip(20, 0, 0, 1), 64), Verdict::drop(DropReason::kMartian)});
    cases.push_back({"0/8 src", frame(ip(0, 0, 0, 1), ip(20, 0, 0, 1), 64), Verdict::drop(DropReason::kMartian)});
    auto bad_sum = frame(src, ip(20, 0, 0, 1), 64);
    bad_sum[14 + 10] ^= 0x01;
    cases.push_back({"bad checksum", bad_sum, Verdict::drop(DropReason::kBadChecksum)});
    auto arp = frame(src, ip(20, 0, 0, 1), 64);
    arp[12] = 0x08;
    arp[13] = 0x06;
    cases.push_back({"arp", arp, Verdict::drop(DropReason::kNotIp)});
    std::vector<uint8_t> v6(14 + 40 + 8, 0);
    v6[12] = 0x86;
    v6[13] = 0xDD;
    v6[14] = 0x60;
    v6[14 + 5] = 8;   // payload length
    v6[14 + 6] = 17;  // UDP
    v6[14 + 7] = 64;
    v6[14 + 40 + 5] = 8;  // UDP length
    cases.push_back({"ipv6", v6, Verdict::drop(DropReason::kNotHandled)});
    auto cut = frame(src, ip(20, 0, 0, 1), 64);
    cut.resize(30);
    cases.push_back({"truncated", cut, Verdict::drop(DropReason::kTruncated)});
  }

  // Loads every case into a batch, forwards it, returns the batch (cells still allocated).
  void forward(bool batched, PacketBatch& b, Counters& c) {
    b.clear();
    for (const Case& k : cases) {
      const uint32_t i = b.size++;
      ASSERT_EQ(pool.alloc_bulk(&b.cell[i], 1), 1u);
      std::memcpy(pool.data(b.cell[i]), k.bytes.data(), k.bytes.size());
      b.len[i] = static_cast<uint16_t>(k.bytes.size());
      b.wire_len[i] = static_cast<uint32_t>(k.bytes.size());
      b.verdict[i] = Verdict::kUnset;
    }
    if (batched) {
      app->forward_batched(pool, b, c);
    } else {
      app->forward_scalar(pool, b, c);
    }
  }

  Fib fib;
  RouteTable table;
  std::unique_ptr<ForwardApp> app;
  PacketPool pool{512};
  std::vector<Case> cases;
};

TEST_P(ForwardTest, EveryVerdictAndRewriteOnBothPaths) {
  PacketBatch out[2];
  for (int batched = 0; batched < 2; ++batched) {
    Counters c(16);
    PacketBatch& b = out[batched];
    forward(batched, b, c);
    uint64_t fwd = 0;
    for (uint32_t i = 0; i < b.size; ++i) {
      EXPECT_EQ(b.verdict[i], cases[i].want) << cases[i].what << (batched ? " (batched)" : " (scalar)");
      const size_t l3 = cases[i].l3;
      const uint8_t* iph = pool.data(b.cell[i]) + l3;
      uint32_t want = 0;
      if (app->reference_verdict(pool.data(b.cell[i]), b.len[i], b.l3_off[i], b.verdict[i], &want)) {
        EXPECT_EQ(b.verdict[i], want) << cases[i].what << ": the reference differs";
      }
      if (!Verdict::is_drop(b.verdict[i])) {
        ++fwd;
        EXPECT_EQ(iph[8], cases[i].bytes[l3 + 8] - 1) << cases[i].what << ": TTL";
        EXPECT_TRUE(ipv4_checksum_ok(iph, (iph[0] & 0xF) * 4)) << cases[i].what << ": checksum";
        // Nothing else changed.
        for (size_t j = 0; j < cases[i].bytes.size(); ++j) {
          if (j != l3 + 8 && j != l3 + 10 && j != l3 + 11) {
            ASSERT_EQ(pool.data(b.cell[i])[j], cases[i].bytes[j]) << cases[i].what << " byte " << j;
          }
        }
      } else {
        EXPECT_EQ(0, std::memcmp(pool.data(b.cell[i]), cases[i].bytes.data(), cases[i].bytes.size()))
            << cases[i].what << ": a dropped packet was modified";
      }
    }
    EXPECT_EQ(c.rx_packets, cases.size());
    EXPECT_EQ(c.tx_packets, fwd);
    EXPECT_TRUE(c.balanced());
    EXPECT_EQ(c.tx_per_port[3], 2u);
    EXPECT_EQ(c.tx_per_port[7], 2u);
    EXPECT_EQ(c.drops[int(DropReason::kMartian)], 8u);
    EXPECT_EQ(c.drops[int(DropReason::kTtlExceeded)], 3u);
    EXPECT_EQ(c.drops[int(DropReason::kNoRoute)], 1u);
    pool.free_bulk(b.cell.data(), b.size);
  }
}

INSTANTIATE_TEST_SUITE_P(Tables, ForwardTest, ::testing::Values("dir24-8", "poptrie"),
                         [](const auto& info) { return info.param == "dir24-8" ? std::string("dir24_8") : info.param; });

TEST(Ipv4Tables, ChosenByNameAndOnlyThoseNames) {
  Fib fib;
  fib.path = "routes.txt";
  fib.routes = {{ip(20, 0, 0, 0), 8, 3}};
  const RouteTable d = make_table("dir24-8", fib);
  ASSERT_TRUE(d.dir24_8 && !d.poptrie);
  EXPECT_EQ(d.dir24_8->lookup(ip(20, 1, 2, 3)), 3u);
  RouteTable p = make_table("poptrie", fib);
  ASSERT_TRUE(p.poptrie && !p.dir24_8);
  EXPECT_EQ(p.poptrie->lookup(ip(20, 1, 2, 3)), 3u);
  EXPECT_STREQ(make_app(p, fib)->name(), "ipv4");
  for (const char* bad : {"", "DIR-24-8", "dir24_8", "trie"}) {
    EXPECT_FALSE(known_table(bad)) << bad;
    EXPECT_THROW(make_table(bad, fib), UsageError) << bad;
  }
  EXPECT_EQ(no_gpu_path("dir24-8"), "");
  EXPECT_NE(no_gpu_path("poptrie"), "");
}

// A route list Poptrie cannot hold (over 65535 distinct next hops) is a usage error naming the file.
TEST(Ipv4Tables, PoptrieLimitIsAUsageErrorNamingTheFile) {
  Fib fib;
  fib.path = "many-hops.txt";
  for (uint32_t i = 0; i <= Poptrie::kMaxNextHops; ++i) fib.routes.push_back({i << 8, 24, i});
  try {
    make_table("poptrie", fib);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("many-hops.txt"), std::string::npos) << e.what();
  }
}

// `tandem lookup` through the registration: the table --table names, and no GPU for Poptrie.
TEST(Ipv4Tables, KeyLookupReadsTheChosenTable) {
  const AppSpec* spec = find_app("ipv4");
  ASSERT_TRUE(spec && spec->lookup && spec->no_gpu_path);
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "/ipv4_tables_test_fib.txt";
  {
    std::ofstream f(path);
    f << "20.0.0.0/8 3\n20.1.2.128/25 7\n";
  }
  for (const char* table : {"dir24-8", "poptrie"}) {
    AppArgs args;
    args.set("fib", path);
    args.set("table", table);
    auto l = spec->lookup(args, /*gpu=*/false);
    std::string why, out;
    for (const char* key : {"20.1.2.200", "20.9.9.9", "21.0.0.1"}) ASSERT_TRUE(l->add(key, &why)) << why;
    l->flush(&out);
    EXPECT_EQ(out, "20.1.2.200 7\n20.9.9.9 3\n21.0.0.1 -\n") << table;
    EXPECT_EQ(spec->no_gpu_path(args).empty(), std::string(table) == "dir24-8");
  }
  AppArgs args;
  args.set("fib", path);
  args.set("table", "poptrie");
  EXPECT_THROW(spec->lookup(args, /*gpu=*/true), UsageError) << "refused before any GPU is touched";
  std::remove(path.c_str());
}

TEST(PacketPool, AllocatesDistinctCellsAndRunsDry) {
  PacketPool pool(300);
  EXPECT_EQ(pool.available(), 300u);
  EXPECT_EQ(pool.max_frame(), PacketPool::kDefaultCellSize - PacketPool::kHeadroom);
  std::vector<uint32_t> cells(400);
  EXPECT_EQ(pool.alloc_bulk(cells.data(), 256), 256u);
  EXPECT_EQ(pool.alloc_bulk(cells.data() + 256, 100), 44u) << "only what is left";
  EXPECT_EQ(pool.available(), 0u);
  EXPECT_EQ(pool.alloc_bulk(cells.data(), 1), 0u);
  std::vector<bool> seen(300);
  for (int i = 0; i < 300; ++i) {
    ASSERT_LT(cells[i], 300u);
    EXPECT_FALSE(seen[cells[i]]);
    seen[cells[i]] = true;
    // Cells do not overlap and frames start 64-byte aligned after the headroom.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pool.data(cells[i])) % 64, 0u);
    std::memset(pool.data(cells[i]), i & 0xFF, pool.max_frame());
  }
  for (int i = 0; i < 300; ++i) EXPECT_EQ(pool.data(cells[i])[pool.max_frame() - 1], i & 0xFF);
  pool.free_bulk(cells.data(), 300);
  EXPECT_EQ(pool.available(), 300u);
  EXPECT_THROW(PacketPool(10, 100), std::invalid_argument);
}

}  // namespace
}  // namespace tandem::ipv4
