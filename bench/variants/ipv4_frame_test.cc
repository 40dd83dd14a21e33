// Whole-frame IPv4 forwarding (apps/ipv4/ipv4_frame_core.h), the code that the CPU forwarding
// stages (bench/variants/ipv4_forward.h) and the GPU's frame runner share. On the real table,
// with generated 64-byte traffic mutated into every kind of frame a router must drop, and with
// the real captures' small frames:
//  - forward_frame_cpu gives the verdicts and bytes that forward_scalar and forward_batched give,
//    and, where the mutation determines it, what the rules predict (computed here independently:
//    the martian ranges, the reference trie, a checksum recomputed in full);
//  - the GPU frame runner, in every offload mode, gives forward_frame_cpu's cells.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/byte_order.h"
#include "bench/variants/ipv4_forward.h"
#include "bench/variants/ipv4_gpu_variants.h"
#include "core/checksum.h"
#include "io/traffic_gen.h"
#include "tests/ipv4_table.h"

namespace tandem::ipv4 {
namespace {

using test::RealIpv4Table;

constexpr uint32_t kCellBytes = sizeof(FrameCell::frame);

// A frame to forward, and what the rules say must become of it where the mutation decides that.
struct TestFrame {
  FrameCell cell{};  // meta: the frame's length
  const char* kind = "";
  std::optional<uint32_t> want;  // the Verdict encoding
  uint32_t l3 = 14;              // where the IPv4 header is, when `want` is known
};

void fix_checksum(uint8_t* ip) { store_be16(ip + 10, ipv4_header_checksum(ip, (ip[0] & 0xFu) * 4)); }

// RFC 1812 5.3.7, written out again rather than taken from the code under test.
bool martian(uint32_t a) { return a < 0x01000000u || (a >> 24) == 127 || a >= 0xE0000000u; }

// The verdict of a well-formed IPv4 packet whose header is at `ip`.
uint32_t expected_ipv4(const RefTrie& trie, const uint8_t* ip) {
  if (martian(load_be32(ip + 12)) || martian(load_be32(ip + 16))) return Verdict::drop(DropReason::kMartian);
  if (ip[8] <= 1) return Verdict::drop(DropReason::kTtlExceeded);
  const uint32_t nh = trie.lookup(load_be32(ip + 16));
  return nh == kNoRoute ? Verdict::drop(DropReason::kNoRoute) : Verdict::port(nh);
}

uint32_t martian_or_neighbour(std::mt19937_64& rng) {
  static constexpr uint32_t kMartianTops[] = {0, 127, 224, 239, 240, 255};
  // Unicast neighbours of the martian ranges, which must be routed like any other address.
  static constexpr uint32_t kNeighbourTops[] = {1, 126, 128, 223};
  const uint32_t low = static_cast<uint32_t>(rng()) & 0xFFFFFF;
  switch (rng() % 8) {
    case 0: return 0xFFFFFFFFu;
    case 1:
    case 2: return kNeighbourTops[rng() % 4] << 24 | low;
    default: return kMartianTops[rng() % 6] << 24 | low;
  }
}

enum Kind {
  kValid, kTtl, kMartianSrc, kMartianDst, kBadChecksum, kBadVersion, kBadIhl, kLongIhl, kOptions,
  kBadOptions, kTotalLength, kTruncated, kEtherType, kVlan, kIpv6, kRandomBytes, kKinds
};
constexpr const char* kKindNames[kKinds] = {
    "valid", "ttl", "martian src", "martian dst", "bad checksum", "bad version", "bad ihl",
    "ihl past capture", "options", "bad options", "total length", "truncated", "ether type", "vlan",
    "ipv6", "random bytes"};

// Writes an option list into ip[20, hdr) (RFC 791): no-operations, options of random types and
// lengths, perhaps an end of list with junk after it. With `bad`, the list is well framed up to a
// last option whose length is 0, 1, past the header, or missing (the option starts at the last
// byte).
void write_options(uint8_t* ip, uint32_t hdr, std::mt19937_64& rng, bool bad) {
  const uint32_t stop = bad ? 20 + static_cast<uint32_t>(rng() % (hdr - 20)) : hdr;
  uint32_t i = 20;
  while (i < stop) {
    const uint32_t room = stop - i;
    const uint64_t pick = rng() % 4;
    if (pick == 0 || room < 2) {
      ip[i++] = 1;
    } else if (pick == 1 && !bad) {
      for (ip[i++] = 0; i < hdr; ++i) ip[i] = static_cast<uint8_t>(rng());
      return;
    } else {
      const uint32_t len = 2 + static_cast<uint32_t>(rng() % (room - 1));
      ip[i] = static_cast<uint8_t>(2 + rng() % 254);
      ip[i + 1] = static_cast<uint8_t>(len);
      for (uint32_t k = 2; k < len; ++k) ip[i + k] = static_cast<uint8_t>(rng());
      i += len;
    }
  }
  if (!bad) return;
  ip[i] = static_cast<uint8_t>(2 + rng() % 254);
  if (i + 1 == hdr) return;
  const uint32_t room = hdr - i;
  switch (rng() % 3) {
    case 0: ip[i + 1] = 0; break;
    case 1: ip[i + 1] = 1; break;
    default: ip[i + 1] = static_cast<uint8_t>(room + 1 + rng() % (255 - room)); break;
  }
}

// 802.1Q/802.1ad tags in front of a shortened datagram (IPv4 + 8 bytes of L4), so that it still
// fits in the cell. Three tags are one more than the parser accepts.
void make_vlan(TestFrame& t, std::mt19937_64& rng) {
  uint8_t* f = t.cell.frame;
  uint8_t out[kCellBytes];
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  std::memcpy(out, f, 12);
  const uint32_t tags = 1 + rng() % 3;
  uint32_t off = 12;
  for (uint32_t i = 0; i < tags; ++i, off += 4) {
    store_be16(out + off, rng() % 2 ? 0x8100 : 0x88A8);
    store_be16(out + off + 2, static_cast<uint32_t>(rng()));
  }
  store_be16(out + off, 0x0800);
  off += 2;
  uint8_t* ip = out + off;
  std::memcpy(ip, f + 14, 28);
  store_be16(ip + 2, 28);
  if (ip[9] == 17) store_be16(ip + 24, 8);  // UDP length
  fix_checksum(ip);
  std::memcpy(f, out, kCellBytes);
  t.l3 = off;
}

// An IPv6 packet, valid or not: the IPv4 app never routes it.
void make_ipv6(TestFrame& t, std::mt19937_64& rng) {
  uint8_t* f = t.cell.frame;
  store_be16(f + 12, 0x86DD);
  uint8_t* ip = f + 14;
  for (uint32_t i = 0; i < kCellBytes - 14; ++i) ip[i] = static_cast<uint8_t>(rng());
  ip[0] = 0x60;
  ip[7] = rng() % 2 ? static_cast<uint8_t>(rng() % 2) : 64;  // hop limit: IPv6 is not handled first
  uint32_t payload = 0;
  DropReason want = DropReason::kNotHandled;
  switch (rng() % 6) {
    case 0: ip[6] = 59, payload = 0, want = DropReason::kBadTotalLength; break;  // jumbogram
    case 1: ip[6] = 59, payload = 1 + rng() % 6; break;                       // no next header
    case 2: ip[6] = 58, payload = 4 + rng() % 3; break;                       // ICMPv6
    case 3: ip[6] = 17, payload = 6; break;  // UDP cut short: a flag, not a drop
    case 4: ip[6] = 0, payload = 6, want = DropReason::kTruncated; break;  // hop-by-hop needs 8
    default:
      ip[6] = static_cast<uint8_t>(rng());
      payload = 7 + rng() % 1500;
      want = DropReason::kTruncated;
      break;
  }
  store_be16(ip + 4, payload);
  if (rng() % 8 == 0) {
    ip[0] = static_cast<uint8_t>((rng() % 6) << 4);  // a version other than 6
    want = DropReason::kBadVersion;
  }
  t.want = Verdict::drop(want);
}

// A generated 60-byte frame, mutated into one kind of frame (or left valid).
TestFrame mutate(const uint8_t* gen, std::mt19937_64& rng, const RefTrie& trie) {
  TestFrame t;
  std::memcpy(t.cell.frame, gen, kCellBytes);
  t.cell.meta = kCellBytes;
  uint8_t* f = t.cell.frame;
  uint8_t* ip = f + 14;
  const auto k = static_cast<Kind>(rng() % kKinds);
  t.kind = kKindNames[k];
  auto drop = [&](DropReason r) {
    t.want = Verdict::drop(r);
    return t;
  };
  switch (k) {
    case kValid:
      break;
    case kTtl: {
      static constexpr uint8_t kTtls[] = {0, 1, 2, 3, 255};
      ip[8] = kTtls[rng() % 5];
      fix_checksum(ip);
      break;
    }
    case kMartianSrc:
    case kMartianDst:
      store_be32(ip + (k == kMartianSrc ? 12 : 16), martian_or_neighbour(rng));
      if (rng() % 4 == 0) ip[8] = static_cast<uint8_t>(rng() % 3);  // martian and expiring
      fix_checksum(ip);
      break;
    case kBadChecksum:
      // Any one bit of the header past the length fields: the sum no longer checks.
      ip[4 + rng() % 16] ^= static_cast<uint8_t>(1u << (rng() % 8));
      return drop(DropReason::kBadChecksum);
    case kBadVersion: {
      uint32_t v;
      do v = rng() % 16; while (v == 4);
      ip[0] = static_cast<uint8_t>(v << 4 | 5);
      if (rng() % 2) fix_checksum(ip);
      return drop(DropReason::kBadVersion);
    }
    case kBadIhl:
      ip[0] = static_cast<uint8_t>(0x40 | rng() % 5);
      return drop(DropReason::kBadIhl);
    case kLongIhl:  // 48..60 header bytes; the cell has 46 after Ethernet
      ip[0] = static_cast<uint8_t>(0x40 | (12 + rng() % 4));
      return drop(DropReason::kTruncated);
    case kOptions:  // 24..44 header bytes of well-framed options, checksum right: forwarded
    case kBadOptions: {
      const uint32_t words = 6 + static_cast<uint32_t>(rng() % 6);
      ip[0] = static_cast<uint8_t>(0x40 | words);
      write_options(ip, words * 4, rng, k == kBadOptions);
      fix_checksum(ip);
      if (k == kBadOptions) return drop(DropReason::kBadIpOptions);
      break;
    }
    case kTotalLength:
      switch (rng() % 3) {
        case 0:
          store_be16(ip + 2, rng() % 20);
          return drop(DropReason::kBadTotalLength);
        case 1:
          store_be16(ip + 2, 47 + rng() % (65536 - 47));
          return drop(DropReason::kTruncated);
        default:  // shorter than the frame: the rest is Ethernet padding
          store_be16(ip + 2, 20 + rng() % 27);
          fix_checksum(ip);
          break;
      }
      break;
    case kTruncated:  // the datagram (46 bytes) needs the whole cell
      t.cell.meta = rng() % kCellBytes;
      return drop(DropReason::kTruncated);
    case kEtherType: {
      static constexpr uint16_t kTypes[] = {0x0806, 0x88CC, 0x0000, 0x05DC, 0x8847, 0xFFFF, 0x86DD};
      const uint16_t type = kTypes[rng() % 7];
      store_be16(f + 12, type);
      // An IPv4 header under the IPv6 type fails IPv6's version check.
      return drop(type == 0x86DD ? DropReason::kBadVersion : DropReason::kNotIp);
    }
    case kVlan:
      make_vlan(t, rng);
      if (t.l3 == 12 + 3 * 4 + 2) return drop(DropReason::kNotIp);
      break;
    case kIpv6:
      make_ipv6(t, rng);
      return t;
    case kRandomBytes:  // no prediction: the paths must only agree
      for (uint64_t n = 1 + rng() % 4; n > 0; --n) f[rng() % kCellBytes] = static_cast<uint8_t>(rng());
      return t;
    case kKinds:
      break;
  }
  t.want = expected_ipv4(trie, f + t.l3);
  return t;
}

// Minimal classic-pcap reader (little-endian), as tests/parse_fuzz_test.cc's: no libpcap needed.
std::vector<std::vector<uint8_t>> read_pcap(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> d((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto le32 = [&](size_t o) { return d[o] | d[o + 1] << 8 | d[o + 2] << 16 | uint32_t(d[o + 3]) << 24; };
  std::vector<std::vector<uint8_t>> frames;
  if (d.size() < 24 || le32(0) != 0xA1B2C3D4u) return frames;
  size_t off = 24;
  while (off + 16 <= d.size() && le32(off + 8) <= d.size() - off - 16) {
    const uint32_t incl = le32(off + 8);
    frames.emplace_back(d.begin() + off + 16, d.begin() + off + 16 + incl);
    off += 16 + incl;
  }
  return frames;
}

// `n` mutated frames from generated traffic (half to the table's prefixes over UDP, half to
// uniform destinations over TCP), then every frame of the real captures that fits in a cell.
std::vector<TestFrame> test_frames(const RealIpv4Table& t, size_t n, uint64_t seed) {
  std::vector<std::pair<uint32_t, uint8_t>> prefixes;
  prefixes.reserve(t.fib.routes.size());
  for (const Route& r : t.fib.routes) prefixes.emplace_back(r.prefix, r.len);
  GenSpec fib_udp;
  fib_udp.count = n / 2 + 1;
  fib_udp.dst = GenSpec::Dst::kFib;
  fib_udp.seed = seed;
  GenSpec uniform_tcp;
  uniform_tcp.count = n / 2 + 1;
  uniform_tcp.proto = 6;
  uniform_tcp.seed = seed + 1;
  const PacketStore gen[2] = {generate(fib_udp, prefixes), generate(uniform_tcp)};
  std::mt19937_64 rng(seed);
  std::vector<TestFrame> frames;
  frames.reserve(n + 2000);
  for (size_t i = 0; i < n; ++i) {
    const PacketStore& s = gen[i % 2];
    EXPECT_EQ(s.caplen[i / 2], kCellBytes);
    frames.push_back(mutate(s.frame(i / 2), rng, t.trie));
  }
  size_t real = 0;
  for (const char* name : {"example.pcap", "many-protocols.pcap", "tls2.pcap"}) {
    for (const auto& f : read_pcap(test::source_path(std::string("data/pcap/") + name))) {
      if (f.size() > kCellBytes) continue;
      TestFrame tf;
      tf.kind = "capture";
      std::copy(f.begin(), f.end(), tf.cell.frame);
      tf.cell.meta = static_cast<uint32_t>(f.size());
      frames.push_back(tf);
      ++real;
    }
  }
  EXPECT_GT(real, 1000u) << "the captures' small frames are missing";
  return frames;
}

FrameCell forward_cell_cpu(const Dir24_8& table, FrameCell c) {
  c.meta = forward_frame_cpu(table, c.frame, std::min(c.meta, kCellBytes));
  return c;
}

// The frames through forward_scalar or forward_batched, a PacketBatch at a time; each cell comes
// back with its bytes after forwarding and its verdict in meta.
std::vector<FrameCell> forward_in_batches(const Dir24_8& table, const std::vector<TestFrame>& in,
                                          bool batched, Counters& c) {
  PacketPool pool(PacketBatch::kCapacity);
  PacketBatch b;
  std::vector<FrameCell> out(in.size());
  for (size_t base = 0; base < in.size(); base += PacketBatch::kCapacity) {
    const auto n = static_cast<uint32_t>(std::min<size_t>(PacketBatch::kCapacity, in.size() - base));
    b.clear();
    EXPECT_EQ(pool.alloc_bulk(b.cell.data(), n), n);
    b.size = n;
    for (uint32_t i = 0; i < n; ++i) {
      std::memcpy(pool.data(b.cell[i]), in[base + i].cell.frame, kCellBytes);
      b.len[i] = static_cast<uint16_t>(in[base + i].cell.meta);
      b.wire_len[i] = b.len[i];
      b.ts_ns[i] = 0;
      b.verdict[i] = Verdict::kUnset;
    }
    if (batched) {
      forward_batched(table, pool, b, c);
    } else {
      forward_scalar(table, pool, b, c);
    }
    for (uint32_t i = 0; i < n; ++i) {
      std::memcpy(out[base + i].frame, pool.data(b.cell[i]), kCellBytes);
      out[base + i].meta = b.verdict[i];
    }
    pool.free_bulk(b.cell.data(), n);
  }
  return out;
}

// "" when the cells are equal, else how they differ.
std::string cell_diff(const FrameCell& got, const FrameCell& want) {
  std::ostringstream s;
  if (got.meta != want.meta) s << "verdict " << std::hex << got.meta << " != " << want.meta << std::dec << "; ";
  for (uint32_t j = 0; j < kCellBytes; ++j) {
    if (got.frame[j] != want.frame[j]) {
      s << "byte " << j << ": " << int(got.frame[j]) << " != " << int(want.frame[j]);
      break;
    }
  }
  return s.str();
}

// What the frame must be after forwarding with its predicted verdict: unchanged when dropped;
// else TTL one less and a checksum that, computed in full, equals the path's incremental patch.
FrameCell predicted_cell(const TestFrame& t) {
  FrameCell c = t.cell;
  c.meta = *t.want;
  if (!Verdict::is_drop(c.meta)) {
    uint8_t* ip = c.frame + t.l3;
    --ip[8];
    fix_checksum(ip);
  }
  return c;
}

// Fails with the first few differences and their count.
class Mismatches {
 public:
  explicit Mismatches(std::string what) : what_(std::move(what)) {}
  void check(size_t i, const char* kind, const FrameCell& got, const FrameCell& want) {
    const std::string d = cell_diff(got, want);
    if (d.empty()) return;
    if (++count_ <= 10) ADD_FAILURE() << what_ << ": frame " << i << " (" << kind << "): " << d;
  }
  ~Mismatches() { EXPECT_EQ(count_, 0u) << what_; }

 private:
  std::string what_;
  size_t count_ = 0;
};

TEST(Ipv4Frame, CpuFrameForwardingMatchesTheBatchPathsAndTheRules) {
  const auto& t = RealIpv4Table::get();
  const std::vector<TestFrame> frames = test_frames(t, 200000, 1);
  Counters cs(16), cb(16);
  const std::vector<FrameCell> scalar = forward_in_batches(*t.dir, frames, false, cs);
  const std::vector<FrameCell> batched = forward_in_batches(*t.dir, frames, true, cb);
  EXPECT_TRUE(cs.balanced());
  EXPECT_TRUE(cb.balanced());
  EXPECT_EQ(cs.rx_packets, frames.size());

  std::array<size_t, kDropReasonCount> reasons{};
  std::map<std::string, size_t> predicted;
  size_t forwarded = 0;
  {
    Mismatches vs_scalar("forward_frame_cpu vs forward_scalar");
    Mismatches vs_batched("forward_frame_cpu vs forward_batched");
    Mismatches vs_rules("forward_frame_cpu vs the rules");
    Mismatches drop_rewrote("a dropped frame was rewritten");
    for (size_t i = 0; i < frames.size(); ++i) {
      const TestFrame& f = frames[i];
      const FrameCell got = forward_cell_cpu(*t.dir, f.cell);
      vs_scalar.check(i, f.kind, got, scalar[i]);
      vs_batched.check(i, f.kind, got, batched[i]);
      if (f.want) {
        vs_rules.check(i, f.kind, got, predicted_cell(f));
        ++predicted[f.kind];
      }
      if (Verdict::is_drop(got.meta)) {
        ++reasons[static_cast<int>(Verdict::reason(got.meta))];
        FrameCell same = f.cell;
        same.meta = got.meta;
        drop_rewrote.check(i, f.kind, got, same);
      } else {
        ++forwarded;
      }
    }
  }
  // The mutations reach every decision the router makes (kBadL4 is only ever a flag).
  EXPECT_GT(forwarded, 10000u);
  for (DropReason r : {DropReason::kTruncated, DropReason::kNotIp, DropReason::kBadVersion,
                       DropReason::kBadIhl, DropReason::kBadTotalLength, DropReason::kBadChecksum,
                       DropReason::kTtlExceeded, DropReason::kNoRoute, DropReason::kNotHandled,
                       DropReason::kMartian, DropReason::kBadIpOptions}) {
    EXPECT_GT(reasons[static_cast<int>(r)], 500u) << drop_reason_name(r);
  }
  for (int k = 0; k < kKinds; ++k) {
    if (k != kRandomBytes) {
      EXPECT_GT(predicted[kKindNames[k]], 5000u) << kKindNames[k];
    }
  }
}

TEST(Ipv4Frame, GpuFrameRunnerEveryModeMatchesCpu) {
  TANDEM_REQUIRE_GPU();
  const auto& t = RealIpv4Table::get();
  std::vector<TestFrame> frames = test_frames(t, 120000, 2);
  // Lengths past the cell: only the cell's 60 bytes are ever read.
  std::mt19937_64 rng(3);
  for (auto& f : frames) {
    static constexpr uint32_t kOver[] = {61, 64, 1514, 0xFFFFFFFFu};
    if (rng() % 64 == 0) f.cell.meta = kOver[rng() % 4];
  }
  std::vector<FrameCell> want(frames.size());
  for (size_t i = 0; i < frames.size(); ++i) want[i] = forward_cell_cpu(*t.dir, frames[i].cell);

  const auto table = Ipv4GpuTable::create(*t.dir);
  const auto g = Ipv4GpuVariants::create(*table);
  // Batch sizes across the graph mode's buckets and either side of the persistent kernel's
  // block-0-alone limit (2048 items).
  constexpr size_t kSizes[] = {8192, 1, 2048, 2049, 777, 8191, 64, 5000};
  for (gpu::GpuMode m : {gpu::GpuMode::kAsync, gpu::GpuMode::kGraph, gpu::GpuMode::kMapped,
                         gpu::GpuMode::kPersistent}) {
    auto r = g->make_frame_runner({m, 8192, 2, 0});
    ASSERT_EQ(r->in_item_bytes(), sizeof(FrameCell));
    ASSERT_EQ(r->out_item_bytes(), sizeof(FrameCell));
    std::vector<FrameCell> got(frames.size());
    size_t k = 0;
    for (size_t base = 0; base < frames.size(); ++k) {
      const size_t n = std::min(kSizes[k % std::size(kSizes)], frames.size() - base);
      const int slot = static_cast<int>(k % r->slots());
      auto* in = static_cast<FrameCell*>(r->in(slot));
      for (size_t i = 0; i < n; ++i) in[i] = frames[base + i].cell;
      std::memset(r->out(slot), 0xA5, n * sizeof(FrameCell));  // no stale cell may pass
      r->submit(slot, n);
      r->wait(slot);
      std::memcpy(static_cast<void*>(got.data() + base), r->out(slot), n * sizeof(FrameCell));
      base += n;
    }
    Mismatches bad(std::string("GPU ") + gpu::gpu_mode_name(m) + " vs forward_frame_cpu");
    for (size_t i = 0; i < frames.size(); ++i) bad.check(i, frames[i].kind, got[i], want[i]);
  }
}

}  // namespace
}  // namespace tandem::ipv4
