// Evading the firewall by malformation (RFC 1858, RFC 3128), and the packets every router drops
// (IPv4 option lists with a bad length, IPv6 type 0 routing headers, RFC 5095): frames built byte
// by byte here, each with its verdict written down from the policy (docs/DESIGN.md, "Filtering
// malformed and fragmented packets"), through fw-router's scalar and batched paths, its GPU runner
// (skipped without a GPU) and the worker pipeline with --verify's reference check; and through
// DPI's packet reader, which marks the frames whose payload it cannot see.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "apps/dpi/dpi_match.h"
#include "apps/fwrouter/fw_router_app.h"
#include "sched/workers.h"
#include "tests/bytes.h"
#include "tests/test_util.h"

namespace tandem::fwrouter {
namespace {

using test::Bytes;
using test::cat;
using test::put16;
using test::put32;

// RFC 1071 from the definition.
uint16_t checksum(const uint8_t* p, size_t len) {
  uint64_t sum = 0;
  for (size_t i = 0; i + 1 < len; i += 2) sum += uint32_t(p[i] << 8 | p[i + 1]);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return uint16_t(~sum);
}

constexpr uint32_t kFrom10_1 = 0x0A010001;  // matched by no rule without ports
constexpr uint32_t kFrom10_9 = 0x0A090001;  // accepted by `accept src 10.9.0.0/16`
constexpr uint32_t kDst = 0x01020304;       // routed to port 2

struct V4 {
  uint8_t proto = 6;
  uint16_t frag = 0;  // flags and fragment offset (8-byte units)
  uint32_t src = kFrom10_1;
  Bytes opts;         // a multiple of 4 bytes
};
Bytes v4(const V4& o, const Bytes& payload) {
  Bytes f = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00};
  const size_t hdr = 20 + o.opts.size();
  f.push_back(uint8_t(0x40 | hdr / 4));
  f.push_back(0);
  put16(f, uint32_t(hdr + payload.size()));
  put16(f, 0x1234);
  put16(f, o.frag);
  f.insert(f.end(), {64, o.proto, 0, 0});
  put32(f, o.src);
  put32(f, kDst);
  f.insert(f.end(), o.opts.begin(), o.opts.end());
  const uint16_t c = checksum(f.data() + 14, hdr);
  f[24] = uint8_t(c >> 8);
  f[25] = uint8_t(c);
  return cat(f, payload);
}
// TCP with the given data offset (in 4-byte words; the header is 20 bytes whatever it says, plus
// NOP options up to it) and `payload` bytes after it.
Bytes tcp(uint16_t dport, int data_off_words = 5, size_t payload = 0) {
  Bytes b;
  put16(b, 40000);
  put16(b, dport);
  b.resize(12, 0);
  b.insert(b.end(), {uint8_t(data_off_words << 4), 0x02, 0xFF, 0xFF, 0, 0, 0, 0});  // SYN
  b.resize(b.size() + std::max(0, data_off_words * 4 - 20), 1);
  b.resize(b.size() + payload, 0xAB);
  return b;
}
Bytes udp(uint16_t dport, size_t payload, int udp_len = -1) {
  Bytes b;
  put16(b, 40000);
  put16(b, dport);
  put16(b, uint32_t(udp_len >= 0 ? udp_len : int(8 + payload)));
  put16(b, 0);
  b.resize(b.size() + payload, 0xCD);
  return b;
}
Bytes first_bytes(const Bytes& b, size_t n) { return Bytes(b.begin(), b.begin() + long(n)); }

// IPv6 (not handled by fw-router) with `next` and the payload.
Bytes v6(uint8_t next, const Bytes& payload) {
  Bytes f = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x86, 0xDD, 0x60, 0, 0, 0};
  put16(f, uint32_t(payload.size()));
  f.insert(f.end(), {next, 64});
  for (int i = 0; i < 32; ++i) f.push_back(uint8_t(i == 0 || i == 16 ? 0x20 : i == 15 || i == 31 ? 1 : 0));
  return cat(f, payload);
}
Bytes v6_routing(uint8_t next, uint8_t type, uint8_t segments_left) {
  return cat({next, 2, type, segments_left}, Bytes(20, 0));  // 24 bytes: one address and a reserved word
}

constexpr uint16_t kMf = 0x2000;  // more fragments
uint32_t drop(DropReason r) { return Verdict::drop(r); }
const uint32_t kRouted = Verdict::port(2);

constexpr bool kBlind = true;  // DPI cannot see the payload (dpi::PacketInfo::not_inspected)

struct Case {
  std::string what;
  Bytes frame;
  uint32_t want;
  bool dpi_blind = false;
};

// Every case, with the verdict the policy gives it under kRules.
std::vector<Case> cases() {
  const DropReason kTiny = DropReason::kTinyFragment, kBadL4 = DropReason::kBadL4,
                   kDenied = kAclDenied, kOptions = DropReason::kBadIpOptions;
  std::vector<Case> v = {
      {"tcp to 22", v4({}, tcp(22)), drop(kDenied)},
      {"tcp to 80", v4({}, tcp(80, 5, 10)), kRouted},
      {"udp to 53", v4({.proto = 17}, udp(53, 20)), kRouted},
      {"first fragment, whole tcp header, to 80", v4({.frag = kMf}, tcp(80, 5, 8)), kRouted},
      {"first fragment, whole tcp header, to 22", v4({.frag = kMf}, tcp(22, 5, 8)), drop(kDenied)},
      {"first fragment, whole udp header, udp length of the datagram", v4({.proto = 17, .frag = kMf}, udp(53, 8, 3000)),
       kRouted},
      // Tiny first fragments: the ports, or the TCP flags, are in the next fragment (RFC 1858).
      {"first fragment, 8 bytes of tcp to 22", v4({.frag = kMf}, first_bytes(tcp(22), 8)), drop(kTiny), kBlind},
      {"first fragment, 16 bytes of tcp to 22", v4({.frag = kMf}, first_bytes(tcp(22), 16)), drop(kTiny), kBlind},
      {"first fragment, 19 bytes of tcp to 22", v4({.frag = kMf}, first_bytes(tcp(22), 19)), drop(kTiny), kBlind},
      {"first fragment, tcp data offset 8 in 24 bytes", v4({.frag = kMf}, first_bytes(tcp(22, 8), 24)), drop(kTiny),
       kBlind},
      {"first fragment, no tcp bytes", v4({.frag = kMf}, {}), drop(kTiny), kBlind},
      {"first fragment, 4 bytes of udp to 53", v4({.proto = 17, .frag = kMf}, first_bytes(udp(53, 0), 4)), drop(kTiny),
       kBlind},
      {"first fragment, 2 bytes of icmp", v4({.proto = 1, .frag = kMf}, {8, 0}), drop(kTiny), kBlind},
      // Malformed transport headers: the ports would read as 0.
      {"tcp data offset 0 to 22", v4({}, tcp(22, 0, 20)), drop(kBadL4), kBlind},
      {"tcp data offset 1 to 22", v4({}, tcp(22, 1, 20)), drop(kBadL4), kBlind},
      {"tcp data offset 2 to 22", v4({}, tcp(22, 2, 20)), drop(kBadL4), kBlind},
      {"tcp data offset 3 to 22", v4({}, tcp(22, 3, 20)), drop(kBadL4), kBlind},
      {"tcp data offset 4 to 22", v4({}, tcp(22, 4, 20)), drop(kBadL4), kBlind},
      {"first fragment, tcp data offset 4", v4({.frag = kMf}, tcp(22, 4, 20)), drop(kBadL4), kBlind},
      {"tcp header past the datagram", v4({}, first_bytes(tcp(22, 15), 40)), drop(kBadL4), kBlind},
      {"19 bytes of tcp", v4({}, first_bytes(tcp(22), 19)), drop(kBadL4), kBlind},
      {"udp length 7", v4({.proto = 17}, udp(53, 8, 7)), drop(kBadL4), kBlind},
      {"udp length 0", v4({.proto = 17}, udp(53, 8, 0)), drop(kBadL4), kBlind},
      {"udp length past the datagram", v4({.proto = 17}, udp(53, 8, 17)), drop(kBadL4), kBlind},
      {"7 bytes of udp", v4({.proto = 17}, first_bytes(udp(53, 0), 7)), drop(kBadL4), kBlind},
      {"first fragment, udp length 7", v4({.proto = 17, .frag = kMf}, udp(53, 8, 7)), drop(kBadL4), kBlind},
      // A TCP fragment at offset 8 bytes may rewrite the first one's ports and flags (RFC 3128),
      // even from a source whose later fragments pass.
      {"tcp fragment at offset 1", v4({.frag = kMf | 1}, tcp(22)), drop(DropReason::kFragmentOverlap), kBlind},
      {"last tcp fragment at offset 1, from 10.9/16", v4({.frag = 1, .src = kFrom10_9}, tcp(22)),
       drop(DropReason::kFragmentOverlap), kBlind},
      // Later fragments have no ports: rules that name ports do not match them (as iptables).
      // Their bytes here look like a TCP header to port 80, which `accept dport 0-1023` admits.
      {"tcp fragment at offset 2", v4({.frag = kMf | 2}, tcp(80)), drop(kDenied), kBlind},
      {"later tcp fragment", v4({.frag = 185}, tcp(80, 5, 40)), drop(kDenied), kBlind},
      {"later udp fragment at offset 1", v4({.proto = 17, .frag = kMf | 1}, udp(53, 16)), drop(kDenied), kBlind},
      {"later tcp fragment from 10.9/16", v4({.frag = 185, .src = kFrom10_9}, tcp(80, 5, 40)), kRouted, kBlind},
      {"later gre fragment from 10.9/16", v4({.proto = 47, .frag = 185, .src = kFrom10_9}, Bytes(40, 0)),
       drop(kDenied), kBlind},
      // Protocols without ports: the same.
      {"icmp echo", v4({.proto = 1}, {8, 0, 0xF7, 0xFF, 0, 0, 0, 0}), drop(kDenied)},
      {"icmp echo from 10.9/16", v4({.proto = 1, .src = kFrom10_9}, {8, 0, 0xF7, 0xFF, 0, 0, 0, 0}), kRouted},
      {"gre from 10.9/16", v4({.proto = 47, .src = kFrom10_9}, Bytes(8, 0)), drop(kDenied)},
      // IPv4 options: well framed ones pass, a bad length is dropped before anything else.
      {"router alert option, tcp to 80", v4({.opts = {148, 4, 0, 0}}, tcp(80)), kRouted},
      {"NOPs and end of list, tcp to 22", v4({.opts = {1, 1, 0, 0}}, tcp(22)), drop(kDenied)},
      {"option length 0", v4({.opts = {148, 0, 0, 0}}, tcp(80)), drop(kOptions), kBlind},
      {"option length 1", v4({.opts = {148, 1, 0, 0}}, tcp(80)), drop(kOptions), kBlind},
      {"option past the header", v4({.opts = {1, 7, 6, 0}}, tcp(80)), drop(kOptions), kBlind},
      {"option type without its length byte", v4({.opts = {1, 1, 1, 7}}, tcp(80)), drop(kOptions), kBlind},
      // IPv6 is not the fw-router's: not handled, whatever it holds; a type 0 routing header with
      // segments left is dropped by the parser, for every app.
      {"ipv6 tiny first fragment of tcp", v6(44, cat({6, 0, 0, 1, 0, 0, 0, 7}, first_bytes(tcp(22), 8))),
       drop(DropReason::kNotHandled), kBlind},
      {"ipv6 routing header type 0, 1 segment left", v6(43, cat(v6_routing(6, 0, 1), tcp(22))),
       drop(DropReason::kIpv6Rh0), kBlind},
      {"ipv6 routing header type 0, no segment left", v6(43, cat(v6_routing(6, 0, 0), tcp(22))),
       drop(DropReason::kNotHandled)},
  };
  return v;
}

const char* kRules =
    "drop proto tcp dport 22\n"
    "accept dport 0-1023\n"
    "drop proto 47\n"
    "accept src 10.9.0.0/16\n"
    "default drop\n";

// The app on kRules and one route, 1.0.0.0/8 -> port 2.
struct Firewall {
  acl::RuleSet rules;
  ipv4::Fib fib;
  ipv4::Dir24_8 table;
  acl::HyperSplit tree;
  FwRouterTables tables;
  FwRouterApp app;

  static acl::RuleSet load() {
    const std::string path = ::testing::TempDir() + "/fw_evasion_rules.txt";
    std::ofstream(path) << kRules;
    return acl::load_rules(path);
  }
  static ipv4::Fib routes() {
    ipv4::Fib f;
    f.routes = {{0x01000000u, 8, 2}};
    f.max_next_hop = 2;
    return f;
  }
  static const ipv4::Dir24_8& with_routes(ipv4::Dir24_8& t, const ipv4::Fib& f) {
    for (const ipv4::Route& r : f.routes) EXPECT_EQ(t.add(r.prefix, r.len, r.next_hop), ipv4::Dir24_8::Status::kOk);
    return t;
  }
  Firewall()
      : rules(load()),
        fib(routes()),
        tree(acl::HyperSplit::build(rules.rules)),
        tables(rules, tree, with_routes(table, fib), fib),
        app(tables) {
    app.build_reference();
  }
};

// The frames in one batch, as a worker receives them.
struct Burst {
  PacketPool pool{64, 2048};
  PacketBatch b;
  explicit Burst(const std::vector<Case>& cs) {
    EXPECT_EQ(pool.alloc_bulk(b.cell.data(), uint32_t(cs.size())), cs.size());
    for (size_t i = 0; i < cs.size(); ++i) {
      std::copy(cs[i].frame.begin(), cs[i].frame.end(), pool.data(b.cell[i]));
      b.len[i] = uint16_t(cs[i].frame.size());
      b.wire_len[i] = b.len[i];
      b.ts_ns[i] = 0;
    }
    b.size = uint32_t(cs.size());
  }
};

// Each frame's verdict as expected, the reference's (where the rules decided) equal to it, and
// the counters: every frame accounted for, by reason.
void check_verdicts(const Firewall& fw, const std::vector<Case>& cs, Burst& burst, const Counters& c,
                    const std::string& path) {
  std::vector<uint64_t> want_drops(kDropReasonCount, 0);
  for (size_t i = 0; i < cs.size(); ++i) {
    const uint32_t got = burst.b.verdict[i];
    EXPECT_EQ(got, cs[i].want) << path << ": " << cs[i].what << ": got "
                               << (Verdict::is_drop(got) ? drop_reason_name(Verdict::reason(got)) : "forwarded");
    uint32_t ref = 0;
    if (fw.app.reference_verdict(burst.pool.data(burst.b.cell[i]), burst.b.len[i], burst.b.l3_off[i], got, &ref)) {
      EXPECT_EQ(ref, got) << path << ": reference, " << cs[i].what;
    }
    if (Verdict::is_drop(cs[i].want)) ++want_drops[int(Verdict::reason(cs[i].want))];
  }
  EXPECT_TRUE(c.balanced()) << path;
  EXPECT_EQ(c.rx_packets, cs.size()) << path;
  for (int r = 1; r < kDropReasonCount; ++r) {
    EXPECT_EQ(c.drops[r], want_drops[r]) << path << ": " << drop_reason_name(DropReason(r));
  }
}

TEST(FwEvasion, EveryCaseOnTheCpuPaths) {
  const Firewall fw;
  const std::vector<Case> cs = cases();
  ASSERT_LE(cs.size(), size_t{PacketBatch::kCapacity});
  for (LookupPath path : {LookupPath::kScalar, LookupPath::kBatched}) {
    Burst burst(cs);
    Counters c(fw.app.ports());
    if (path == LookupPath::kScalar) {
      fw.app.forward_scalar(burst.pool, burst.b, c);
    } else {
      fw.app.forward_batched(burst.pool, burst.b, c);
    }
    check_verdicts(fw, cs, burst, c, path == LookupPath::kScalar ? "scalar" : "batched");
  }
}

// The same frames as the workers run them (`tandem run --verify`): the scalar and batched paths
// give the same counters, and the reference agrees with every decision the rules made.
TEST(FwEvasion, WorkerPipelineWithVerify) {
  const Firewall fw;
  const std::vector<Case> cs = cases();
  PacketStore s;
  for (const Case& c : cs) s.add(c.frame.data(), uint32_t(c.frame.size()), uint32_t(c.frame.size()), 0);
  WorkersConfig wc;
  wc.ports = fw.app.ports();
  wc.verify = true;
  wc.burst = 7;
  uint64_t routed = 0, denied = 0;
  for (const Case& c : cs) {
    routed += !Verdict::is_drop(c.want);
    denied += c.want == drop(kAclDenied);
  }
  std::vector<WorkersResult> results;
  for (LookupPath path : {LookupPath::kScalar, LookupPath::kBatched}) {
    wc.path = path;
    results.push_back(run_workers(fw.app, s, wc));
    const WorkersResult& r = results.back();
    EXPECT_EQ(r.verify_mismatches, 0u);
    EXPECT_EQ(r.verify_checked, routed + denied);
    EXPECT_EQ(r.counters.tx_packets, routed);
    EXPECT_EQ(r.counters.drops[int(kAclDenied)], denied);
    EXPECT_EQ(r.counters.drops[int(DropReason::kTinyFragment)], 7u);
    EXPECT_TRUE(r.counters.balanced());
  }
  EXPECT_EQ(results[0].counters.drops, results[1].counters.drops);
}

// The GPU's decisions on the frames' firewall headers equal the CPU's, and whole bursts through
// the GPU runner (classify, the GPU, apply: the staged engine's steps) give every expected verdict.
TEST(FwEvasion, GpuGivesTheSameVerdicts) {
  TANDEM_REQUIRE_GPU();
  Firewall fw;
  const std::vector<Case> cs = cases();
  Burst burst(cs);
  Counters c(fw.app.ports());
  KeyBatch keys(fw.app.item_bytes());
  fw.app.classify(burst.pool, burst.b, keys, c);
  size_t to_rules = 0;
  for (const Case& k : cs) {
    const DropReason r = Verdict::reason(k.want);
    to_rules += !Verdict::is_drop(k.want) || r == kAclDenied;
  }
  ASSERT_EQ(keys.count, to_rules);
  std::vector<uint32_t> cpu(keys.count), gpu_out(keys.count, 0xABCDu);
  fw.app.lookup_items_scalar(keys.data(), cpu.data(), keys.count);
  gpu::OffloadOptions oo;
  oo.capacity = 16;  // several batches
  auto runner = fw.app.make_gpu_runner(oo);
  gpu::run_all(*runner, keys.data(), gpu_out.data(), keys.count);
  EXPECT_EQ(gpu_out, cpu);
  fw.app.apply(burst.pool, burst.b, keys, gpu_out.data(), c);
  check_verdicts(fw, cs, burst, c, "GPU");
}

// DPI cannot drop what it cannot see, but it says so: the frames whose payload it cannot locate
// (cut or malformed transport headers, later fragments, frames the parser drops) are marked not
// inspected, and no content is found in them; the rest are inspected.
TEST(FwEvasion, DpiMarksWhatItCannotInspect) {
  for (const Case& c : cases()) {
    const dpi::PacketInfo p = dpi::packet_info(c.frame.data(), uint32_t(c.frame.size()));
    EXPECT_EQ(p.not_inspected, c.dpi_blind) << c.what;
    if (c.dpi_blind) {
      EXPECT_EQ(p.len, 0u) << c.what;
    }
  }
  const Bytes arp = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02, 0, 0, 0, 0, 2, 0x08, 0x06, 0, 1};
  EXPECT_FALSE(dpi::packet_info(arp.data(), uint32_t(arp.size())).not_inspected) << "not IP: nothing to inspect";
}

}  // namespace
}  // namespace tandem::fwrouter
