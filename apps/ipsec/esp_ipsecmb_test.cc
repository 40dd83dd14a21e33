// The ipsec app's batched path (a burst's crypto in one intel-ipsec-mb pass) against its scalar
// path (OpenSSL frame by frame), for every suite, with and without ESN, over IPv4 and IPv6
// tunnels and every frame length: the same frames byte for byte, sealed and opened; the same
// verdicts for tampered, replayed, too old and unknown frames; the same through forward_batched;
// and several threads sharing one key store.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "apps/ipsec/esp_ipsecmb.h"
#include "apps/ipsec/ipsec_app.h"
#include "apps/ipsec/sa_gen.h"
#include "core/batch.h"
#include "core/byte_order.h"
#include "core/packet_pool.h"
#include "io/flow_traffic.h"

namespace tandem::ipsec {
namespace {

// Skips where the library is not available, except in CI, whose builds must have it.
#define REQUIRE_IPSEC_MB()                                                                  \
  do {                                                                                      \
    if (!EspIpsecMb::available()) {                                                         \
      const char* ci = std::getenv("CI");                                                   \
      if (ci != nullptr && std::string(ci) == "true") FAIL() << EspIpsecMb::describe();     \
      GTEST_SKIP() << EspIpsecMb::describe();                                               \
    }                                                                                       \
  } while (0)

using Frame = std::vector<uint8_t>;

constexpr Cipher kCiphers[] = {Cipher::kAes128Cbc, Cipher::kAes128Gcm, Cipher::kAes256Gcm, Cipher::kChacha20Poly1305};
constexpr uint32_t kPairs = 6;
constexpr uint32_t kCell = 2048;

IpAddr v6(uint8_t last) {
  IpAddr a;
  a.family = 6;
  a.bytes = {0x20, 0x01, 0x0d, 0xb8};
  a.bytes[15] = last;
  return a;
}

// kPairs SA pairs that loop back: outbound SA k (generated_sas' keys and selectors), then an
// inbound SA with its SPI and keys that opens its frames and delivers what its selector holds.
// Every other pair tunnels over IPv6.
SaFile looped_sas(Cipher c, bool esn, uint32_t window) {
  const SaFile g = generated_sas(kPairs, c, 77);
  SaFile f;
  f.path = "looped";
  for (const Sa& s : g.sas) {
    if (s.dir != SaDir::kOut) continue;
    Sa out = s;
    out.esn = esn;
    if (f.sas.size() / 2 % 2 == 1) out.src = v6(1), out.dst = v6(2);
    Sa in = out;
    in.dir = SaDir::kIn;
    in.replay_window = window;
    out.line = f.sas.size() + 1;
    f.sas.push_back(out);
    in.line = f.sas.size() + 1;
    f.sas.push_back(in);
  }
  return f;
}

struct Gateway {
  // Outbound SAs send from `first`; inbound ones expect it next.
  Gateway(const SaFile& f, uint64_t first) : table(SaFile(f)), app(table) {
    for (uint32_t i = 0; i < table.size(); ++i) {
      if (table.sa(i).dir == SaDir::kOut) {
        table.set_next_seq(i, first);
      } else {
        table.set_replay_top(i, first - 1);
      }
    }
  }
  SaTable table;
  IpsecApp app;
};

// Cleartext frames of every length from the least to 1514 bytes in `step`s, for the pairs'
// selectors in turn; every 10th one no SA selects.
std::vector<Frame> cleartext(uint32_t step) {
  std::vector<Frame> v;
  for (uint32_t i = 0;; ++i) {
    GenFlow f;
    const uint32_t k = i % kPairs;
    store_be32(f.src, (i % 10 == 9 ? 0x0B000000u : 0x0A000000u) + k + 1);
    store_be32(f.dst, 0xAC100000u + k + 1);
    f.sport = static_cast<uint16_t>(1000 + i);
    f.dport = 80;
    const uint32_t len = min_frame_len(f, kProtoUdp) + i * step;
    if (len > 1514) break;
    Frame frame(len);
    write_flow_frame(frame.data(), len, f, kProtoUdp, i);
    v.push_back(std::move(frame));
  }
  return v;
}

// What decapsulation gives back of a cleartext frame: its MACs, ethertype and IP packet.
Frame inner_of(const Frame& f) {
  ParsedPacket pp;
  EXPECT_EQ(parse_packet(f.data(), static_cast<uint32_t>(f.size()), &pp), DropReason::kNone);
  Frame v(kEthHeaderLen + pp.l3_len);
  std::copy_n(f.begin(), kEthHeaderLen, v.begin());
  std::copy_n(f.begin() + pp.l3_off, pp.l3_len, v.begin() + kEthHeaderLen);
  return v;
}

struct Results {
  std::vector<uint32_t> verdicts;
  std::vector<Frame> frames;  // as the app left them; empty for drops
};

Results scalar(Gateway& g, const std::vector<Frame>& in) {
  Results r;
  for (const Frame& f : in) {
    Frame cell = f;
    cell.resize(kCell);
    uint32_t len = static_cast<uint32_t>(f.size());
    r.verdicts.push_back(g.app.process(cell.data(), &len, kCell));
    cell.resize(Verdict::is_drop(r.verdicts.back()) ? 0 : len);
    r.frames.push_back(std::move(cell));
  }
  return r;
}

// Through process_burst, in bursts of the sizes given in turn.
Results burst(Gateway& g, const std::vector<Frame>& in, const std::vector<uint32_t>& sizes) {
  Results r;
  r.frames = in;
  r.verdicts.resize(in.size());
  std::vector<uint8_t*> cells(in.size());
  std::vector<uint32_t> lens(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    r.frames[i].resize(kCell);
    cells[i] = r.frames[i].data();
    lens[i] = static_cast<uint32_t>(in[i].size());
  }
  size_t s = 0;
  for (uint32_t base = 0; base < in.size(); s = (s + 1) % sizes.size()) {
    const uint32_t n = std::min<uint32_t>(sizes[s], static_cast<uint32_t>(in.size()) - base);
    g.app.process_burst(cells.data() + base, lens.data() + base, kCell, n, r.verdicts.data() + base);
    base += n;
  }
  for (size_t i = 0; i < in.size(); ++i) r.frames[i].resize(Verdict::is_drop(r.verdicts[i]) ? 0 : lens[i]);
  return r;
}

void expect_same(const Results& want, const Results& got, const std::string& what) {
  ASSERT_EQ(want.verdicts.size(), got.verdicts.size());
  for (size_t i = 0; i < want.verdicts.size(); ++i) {
    ASSERT_EQ(got.verdicts[i], want.verdicts[i]) << what << " frame " << i;
    ASSERT_EQ(got.frames[i], want.frames[i]) << what << " frame " << i << " (" << want.frames[i].size() << " bytes)";
  }
}

size_t count(const Results& r, uint32_t verdict) { return std::count(r.verdicts.begin(), r.verdicts.end(), verdict); }

TEST(EspIpsecMb, DescribesItsVersionAndCodePath) {
  REQUIRE_IPSEC_MB();
  const std::string d = EspIpsecMb::describe();
  RecordProperty("ipsec_mb", d);
  std::printf("%s\n", d.c_str());
  EXPECT_EQ(d.rfind("intel-ipsec-mb ", 0), 0u) << d;
}

TEST(EspIpsecMb, BurstsSealAndOpenAsOpenSslDoesForEverySuite) {
  REQUIRE_IPSEC_MB();
  const std::vector<Frame> clear = cleartext(1);
  for (Cipher c : kCiphers) {
    for (bool esn : {false, true}) {
      SCOPED_TRACE(std::string(cipher_name(c)) + (esn ? " esn" : ""));
      const SaFile sas = looped_sas(c, esn, 64);
      // With ESN, the numbers cross a 2^32 boundary.
      const uint64_t first = esn ? (uint64_t{7} << 32) - 100 : 1;
      Gateway a(sas, first), b(sas, first);
      const Results sealed = scalar(a, clear);
      expect_same(sealed, burst(b, clear, {256, 1, 37, 300, 5}), "sealed");
      ASSERT_GT(count(sealed, Verdict::port(kPortTunnel)), clear.size() * 8 / 10);
      ASSERT_GT(count(sealed, Verdict::port(kPortBypass)), 0u);

      // The sealed frames back, with forgeries, copies and strangers among them. With ESN, only
      // what the two paths judge alike (esp_frame.h: a frame pushed out of the window within a
      // burst): copies within the window, sequence numbers left as they are.
      std::mt19937_64 rng(esn ? 5 : 6);
      std::vector<Frame> in;
      std::vector<size_t> genuine;  // in's index of sealed frame j, and its cleartext
      std::vector<size_t> clear_of;
      for (size_t i = 0; i < clear.size(); ++i) {
        if (sealed.verdicts[i] != Verdict::port(kPortTunnel)) continue;
        const Frame& f = sealed.frames[i];
        const uint32_t esp = kEthHeaderLen + (load_be16(f.data() + 12) == kEthTypeIpv4 ? 20 : 40);
        const uint64_t roll = rng() % 100;
        if (roll < 8) {
          Frame forged = f;
          const size_t at = esp + (esn ? 8 : 0) + rng() % (f.size() - esp - (esn ? 8 : 0));
          forged[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
          in.push_back(std::move(forged));
        }
        genuine.push_back(in.size());
        clear_of.push_back(i);
        in.push_back(f);
        const size_t j = genuine.size() - 1;
        if (roll >= 8 && roll < 14) {
          in.push_back(in[genuine[j - rng() % std::min<size_t>(j + 1, 40)]]);
        } else if (!esn && roll >= 14 && roll < 17 && j >= 700) {
          in.push_back(in[genuine[j - 500 - rng() % 200]]);  // some 90 numbers back in its SA
        } else if (roll >= 17 && roll < 19) {
          Frame stranger = f;
          store_be32(stranger.data() + esp, 0x999999);
          in.push_back(std::move(stranger));
        }
      }
      const Results opened = scalar(a, in);
      expect_same(opened, burst(b, in, {256, 64, 1, 200}), "opened");
      for (size_t j = 0; j < genuine.size(); ++j) {
        ASSERT_EQ(opened.verdicts[genuine[j]], Verdict::port(kPortDecrypted)) << j;
        ASSERT_EQ(opened.frames[genuine[j]], inner_of(clear[clear_of[j]])) << j;
      }
      EXPECT_GT(count(opened, Verdict::drop(kBadIcv)), 0u);
      EXPECT_GT(count(opened, Verdict::drop(kReplayed)), 0u);
      EXPECT_GT(count(opened, Verdict::drop(kUnknownSpi)), 0u);
      if (!esn) {
        EXPECT_GT(count(opened, Verdict::drop(kTooOld)), 0u);
      }
    }
  }
}

// A number the window held before a burst, pushed out of it by a frame earlier in the same burst:
// too old, as frame by frame, not replayed.
TEST(EspIpsecMb, AReplayPushedOutOfTheWindowWithinItsBurstIsTooOld) {
  REQUIRE_IPSEC_MB();
  const std::vector<Frame> clear = cleartext(1);
  const SaFile sas = looped_sas(Cipher::kAes128Cbc, false, 64);
  Gateway a(sas, 1), b(sas, 1);
  const Results sealed = scalar(a, clear);
  // One IPv4 tunnel's sealed frames, numbered 1, 2, ... in order.
  std::vector<Frame> one;
  uint32_t spi = 0;
  for (size_t i = 0; i < clear.size(); ++i) {
    if (sealed.verdicts[i] != Verdict::port(kPortTunnel)) continue;
    const Frame& f = sealed.frames[i];
    if (load_be16(f.data() + 12) != kEthTypeIpv4) continue;
    const uint32_t s = load_be32(f.data() + kEthHeaderLen + 20);
    if (one.empty()) spi = s;
    if (s == spi) one.push_back(f);
  }
  ASSERT_GT(one.size(), 90u);
  // The first burst brings numbers 1 to 10; the second number 90, then number 3 again.
  std::vector<Frame> in(one.begin(), one.begin() + 10);
  in.push_back(one[89]);
  in.push_back(one[2]);
  const Results want = scalar(a, in);
  ASSERT_EQ(want.verdicts.back(), Verdict::drop(kTooOld));
  expect_same(want, burst(b, in, {10, 2}), "a replay pushed out of the window within its burst");
}

// forward_batched against forward_scalar on one batch of both directions: verdicts, lengths,
// bytes and counters.
TEST(EspIpsecMb, ForwardBatchedEqualsForwardScalar) {
  REQUIRE_IPSEC_MB();
  const std::vector<Frame> clear = cleartext(11);
  for (Cipher c : kCiphers) {
    SCOPED_TRACE(cipher_name(c));
    const SaFile sas = looped_sas(c, true, 64);
    Gateway peer(sas, 1), a(sas, 1), b(sas, 1);
    std::vector<Frame> mixed;
    for (const Frame& f : scalar(peer, clear).frames) {
      if (!f.empty()) mixed.push_back(f);
      if (mixed.size() % 3 == 0) mixed.push_back(clear[mixed.size() % clear.size()]);
    }
    mixed.resize(std::min<size_t>(mixed.size(), PacketBatch::kCapacity));
    PacketPool pool(2 * PacketBatch::kCapacity, kCell);
    PacketBatch batches[2];
    Counters counters[2] = {Counters(a.app.ports()), Counters(b.app.ports())};
    for (int path = 0; path < 2; ++path) {
      PacketBatch& pb = batches[path];
      ASSERT_EQ(pool.alloc_bulk(pb.cell.data(), static_cast<uint32_t>(mixed.size())), mixed.size());
      pb.size = static_cast<uint32_t>(mixed.size());
      for (size_t i = 0; i < mixed.size(); ++i) {
        std::copy(mixed[i].begin(), mixed[i].end(), pool.data(pb.cell[i]));
        pb.len[i] = static_cast<uint16_t>(mixed[i].size());
      }
      if (path == 0) {
        a.app.forward_scalar(pool, pb, counters[0]);
      } else {
        b.app.forward_batched(pool, pb, counters[1]);
      }
    }
    for (size_t i = 0; i < mixed.size(); ++i) {
      ASSERT_EQ(batches[1].verdict[i], batches[0].verdict[i]) << i;
      ASSERT_EQ(batches[1].len[i], batches[0].len[i]) << i;
      if (Verdict::is_drop(batches[0].verdict[i])) continue;
      const uint8_t* x = pool.data(batches[0].cell[i]);
      const uint8_t* y = pool.data(batches[1].cell[i]);
      ASSERT_TRUE(std::equal(x, x + batches[0].len[i], y)) << i;
    }
    EXPECT_EQ(counters[1].tx_per_port, counters[0].tx_per_port);
    EXPECT_EQ(counters[1].drops, counters[0].drops);
    EXPECT_TRUE(counters[1].balanced());
    EXPECT_GT(counters[1].tx_per_port[kPortDecrypted], 0u);
    EXPECT_GT(counters[1].tx_per_port[kPortTunnel], 0u);
  }
}

// Threads seal at once through one app (each its own engine, the SAs' keys made by whichever
// thread comes first); every frame then opens to its cleartext.
TEST(EspIpsecMb, ThreadsShareTheKeysAndKeepTheirEngines) {
  REQUIRE_IPSEC_MB();
  const std::vector<Frame> clear = cleartext(5);
  for (Cipher c : kCiphers) {
    SCOPED_TRACE(cipher_name(c));
    Gateway g(looped_sas(c, false, 0), 1);  // no replay windows: the threads' numbers interleave
    constexpr int kThreads = 4;
    std::vector<Results> sealed(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back([&, t] { sealed[t] = burst(g, clear, {64, 13}); });
    for (std::thread& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
      const Results opened = burst(g, sealed[t].frames, {256});
      for (size_t i = 0; i < clear.size(); ++i) {
        if (sealed[t].verdicts[i] == Verdict::port(kPortBypass)) continue;
        ASSERT_EQ(sealed[t].verdicts[i], Verdict::port(kPortTunnel)) << t << " " << i;
        ASSERT_EQ(opened.verdicts[i], Verdict::port(kPortDecrypted)) << t << " " << i;
        ASSERT_EQ(opened.frames[i], inner_of(clear[i])) << t << " " << i;
      }
    }
  }
}

}  // namespace
}  // namespace tandem::ipsec
