// The ESP gateway on single frames: round trips for every suite and tunnel family, OpenSSL's
// frames byte for byte equal to apps/crypto's (the GPU's code), and every way an inbound frame can
// be wrong dropped with its reason (tampered, replayed, truncated, bad padding, dummy, wrong inner
// packet, outside the SA's selector), never a crash.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "apps/ipsec/esp_hd.h"
#include "apps/ipsec/esp_openssl.h"
#include "apps/ipsec/ipsec_app.h"
#include "apps/ipsec/sa_gen.h"
#include "core/table_reader.h"
#include "io/flow_traffic.h"
#include "tests/test_util.h"

namespace tandem::ipsec {
namespace {

constexpr Cipher kCiphers[] = {Cipher::kAes128Cbc, Cipher::kAes128Gcm, Cipher::kAes256Gcm, Cipher::kChacha20Poly1305};

std::string hex_of(std::mt19937_64& rng, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s += {d[rng() & 15], d[rng() & 15]};
  return s;
}

// One SA pair on one line each: outbound `spi` protecting `sel`, and the inbound SA with the same
// SPI and keys, so that the app opens what it sealed.
std::string sa_pair(Cipher c, uint32_t spi, const std::string& outer_src, const std::string& outer_dst,
                    const std::string& sel, bool esn, std::mt19937_64& rng, const std::string& in_extra = "") {
  const std::string key = hex_of(rng, cipher_key_bytes(c) + cipher_salt_bytes(c));
  std::string auth = c == Cipher::kAes128Cbc ? " auth=hmac-sha1-96 authkey=" + hex_of(rng, 20) : "";
  const std::string common = " spi=" + std::to_string(spi) + " src=" + outer_src + " dst=" + outer_dst +
                             " cipher=" + cipher_name(c) + " key=" + key + auth + (esn ? " esn=yes" : "");
  return "dir=out" + common + " selector=" + sel + "\n" + "dir=in" + common + in_extra + "\n";
}

struct Gateway {
  explicit Gateway(const std::string& text) {
    path = test::write_temp_file("esp", "sa.txt", text);
    table = std::make_unique<SaTable>(load_sa_file(path));
    app = std::make_unique<IpsecApp>(*table);
  }
  // The frame through the app in a buffer with room to grow: its verdict, the frame as left.
  uint32_t run(std::vector<uint8_t>& f) const {
    const size_t n = f.size();
    f.resize(n + kMaxEspGrowth);
    uint32_t len = static_cast<uint32_t>(n);
    const uint32_t v = app->process(f.data(), &len, static_cast<uint32_t>(f.size()));
    f.resize(Verdict::is_drop(v) ? n : len);
    return v;
  }
  std::string path;
  std::unique_ptr<SaTable> table;
  std::unique_ptr<IpsecApp> app;
};

// Cleartext frames of `family`, every size from the least to 1514 bytes in steps.
std::vector<std::vector<uint8_t>> cleartext(int family, const std::string& src, const std::string& dst, int n) {
  std::vector<std::vector<uint8_t>> v;
  GenFlow f;
  f.ip_version = family;
  IpPrefix ps, pd;
  std::string why;
  EXPECT_TRUE(parse_ip_prefix(src, &ps, &why)) << why;
  EXPECT_TRUE(parse_ip_prefix(dst, &pd, &why)) << why;
  std::memcpy(f.src, ps.addr.bytes.data(), 16);
  std::memcpy(f.dst, pd.addr.bytes.data(), 16);
  f.sport = 1234;
  f.dport = 80;
  const uint32_t least = min_frame_len(f, kProtoUdp);
  for (int i = 0; i < n; ++i) {
    const uint32_t len = least + static_cast<uint32_t>((1514 - least) * i / std::max(1, n - 1));
    std::vector<uint8_t> frame(len);
    write_flow_frame(frame.data(), len, f, kProtoUdp, static_cast<uint64_t>(i));
    v.push_back(std::move(frame));
  }
  return v;
}

// The inner IP packet of a frame: what a round trip must give back (its Ethernet padding left
// out, its MAC addresses kept).
std::vector<uint8_t> inner(const std::vector<uint8_t>& f) {
  ParsedPacket pp;
  EXPECT_EQ(parse_packet(f.data(), static_cast<uint32_t>(f.size()), &pp), DropReason::kNone);
  std::vector<uint8_t> v(f.begin(), f.begin() + 12);
  v.push_back(f[pp.l3_off - 2]);
  v.push_back(f[pp.l3_off - 1]);
  v.insert(v.end(), f.begin() + pp.l3_off, f.begin() + pp.l3_off + pp.l3_len);
  return v;
}

struct Tunnel {
  const char* name;
  const char* outer_src;
  const char* outer_dst;
  int inner_family;
  const char* sel;
  const char* src;
  const char* dst;
};
constexpr Tunnel kTunnels[] = {
    {"4in4", "192.0.2.1", "198.51.100.1", 4, "10.0.0.0/8,172.16.0.0/12", "10.1.2.3/32", "172.16.9.9/32"},
    {"6in4", "192.0.2.1", "198.51.100.1", 6, "fd00::/8,2001:db8::/32", "fd00::1/128", "2001:db8::7/128"},
    {"4in6", "2001:db8:ffff::1", "2001:db8:eeee::1", 4, "10.0.0.0/8,172.16.0.0/12", "10.1.2.3/32", "172.16.9.9/32"},
    {"6in6", "2001:db8:ffff::1", "2001:db8:eeee::1", 6, "fd00::/8,2001:db8::/32", "fd00::1/128", "2001:db8::7/128"},
};

TEST(Esp, EverySuiteAndTunnelRoundTripsAndOpenSslEqualsTheGpuCode) {
  std::mt19937_64 rng(41);
  const crypto::AesTables* t = &crypto::aes_tables();
  for (Cipher c : kCiphers) {
    for (const Tunnel& tn : kTunnels) {
      for (bool esn : {false, true}) {
        SCOPED_TRACE(std::string(cipher_name(c)) + " " + tn.name + (esn ? " esn" : ""));
        Gateway g(sa_pair(c, 0x4242, tn.outer_src, tn.outer_dst, tn.sel, esn, rng));
        if (esn) {  // across a 2^32 boundary, the receiver where the sender is
          g.table->set_next_seq(0, (uint64_t{7} << 32) - 20);
          g.table->set_replay_top(1, (uint64_t{7} << 32) - 21);
        }
        const EspSaKeys out_keys = esp_sa_keys(g.table->sa(0));
        for (const auto& clear : cleartext(tn.inner_family, tn.src, tn.dst, 40)) {
          std::vector<uint8_t> f = clear;
          const uint64_t seq = g.table->peek_seq(0);
          ASSERT_EQ(g.run(f), Verdict::port(kPortTunnel));
          // The same frame sealed by the device code.
          std::vector<uint8_t> hd = clear;
          hd.resize(hd.size() + kMaxEspGrowth);
          ParsedPacket pp;
          ASSERT_EQ(parse_packet(clear.data(), static_cast<uint32_t>(clear.size()), &pp), DropReason::kNone);
          EspLayout l;
          ASSERT_EQ(esp_encapsulate(hd.data(), static_cast<uint32_t>(hd.size()), pp, g.table->tunnel(0), seq, &l),
                    DropReason::kNone);
          esp_hd_seal(out_keys, t, hd.data(), l, seq);
          hd.resize(l.frame_len);
          ASSERT_EQ(hd, f) << "OpenSSL and apps/crypto differ at " << clear.size() << " bytes";
          ASSERT_EQ(f.size() % 4, 2u) << "the ESP part ends on a 4-byte boundary";
          // Back through the inbound SA: the inner packet as it was.
          ASSERT_EQ(g.run(f), Verdict::port(kPortDecrypted));
          ASSERT_EQ(f, inner(clear));
        }
      }
    }
  }
}

// An ESP frame of SA pair `g` and the same frame's layout, sealed for sequence number seq.
std::vector<uint8_t> esp_frame(Gateway& g, size_t clear_len = 200) {
  std::vector<uint8_t> f = cleartext(4, "10.1.2.3/32", "172.16.9.9/32", 60)[clear_len * 59 / 1514];
  EXPECT_EQ(g.run(f), Verdict::port(kPortTunnel));
  return f;
}

TEST(Esp, TamperedFramesAreDroppedForTheirIcv) {
  std::mt19937_64 rng(42);
  for (Cipher c : kCiphers) {
    SCOPED_TRACE(cipher_name(c));
    Gateway g(sa_pair(c, 0x4242, "192.0.2.1", "198.51.100.1", "10.0.0.0/8,172.16.0.0/12", false, rng,
                      " replay-window=0"));
    const std::vector<uint8_t> good = esp_frame(g);
    const size_t esp = kEthHeaderLen + 20;
    for (size_t pos = esp; pos < good.size(); ++pos) {
      std::vector<uint8_t> f = good;
      f[pos] ^= static_cast<uint8_t>(1u << (pos % 8));
      const DropReason want = pos < esp + 4 ? kUnknownSpi : kBadIcv;
      ASSERT_EQ(g.run(f), Verdict::drop(want)) << "byte " << pos;
    }
    std::vector<uint8_t> f = good;
    EXPECT_EQ(g.run(f), Verdict::port(kPortDecrypted)) << "untampered";
  }
}

TEST(Esp, ReplayedAndOldFramesAreDropped) {
  std::mt19937_64 rng(43);
  for (Cipher c : kCiphers) {
    SCOPED_TRACE(cipher_name(c));
    Gateway g(sa_pair(c, 0x4242, "192.0.2.1", "198.51.100.1", "10.0.0.0/8,172.16.0.0/12", false, rng,
                      " replay-window=32"));
    std::vector<std::vector<uint8_t>> sent;
    for (int i = 0; i < 40; ++i) sent.push_back(esp_frame(g));
    std::vector<uint8_t> f = sent[39];
    EXPECT_EQ(g.run(f), Verdict::port(kPortDecrypted));
    f = sent[39];
    EXPECT_EQ(g.run(f), Verdict::drop(kReplayed));
    f = sent[7];  // seq 8: 40 - 8 = 32, left of a 32-packet window
    EXPECT_EQ(g.run(f), Verdict::drop(kTooOld));
    f = sent[20];  // inside the window, not seen: accepted once
    EXPECT_EQ(g.run(f), Verdict::port(kPortDecrypted));
    f = sent[20];
    EXPECT_EQ(g.run(f), Verdict::drop(kReplayed));
    // A forged frame with a fresh number must not move the window.
    f = esp_frame(g);
    f[f.size() - 1] ^= 1;
    EXPECT_EQ(g.run(f), Verdict::drop(kBadIcv));
    f = sent[10];  // still inside the window: the forged number did not move it
    EXPECT_EQ(g.run(f), Verdict::port(kPortDecrypted));
  }
}

// Truncated ESP frames, with the outer length fixed up so that they parse: never accepted.
TEST(Esp, TruncatedFramesAreDroppedWithAReason) {
  std::mt19937_64 rng(44);
  for (Cipher c : kCiphers) {
    SCOPED_TRACE(cipher_name(c));
    Gateway g(sa_pair(c, 0x4242, "192.0.2.1", "198.51.100.1", "10.0.0.0/8,172.16.0.0/12", false, rng,
                      " replay-window=0"));
    const std::vector<uint8_t> good = esp_frame(g, 300);
    for (size_t n = kEthHeaderLen + 20; n < good.size(); ++n) {
      std::vector<uint8_t> f(good.begin(), good.begin() + n);
      store_be16(f.data() + kEthHeaderLen + 2, static_cast<uint32_t>(n - kEthHeaderLen));
      store_be16(f.data() + kEthHeaderLen + 10, 0);
      store_be16(f.data() + kEthHeaderLen + 10, ipv4_header_checksum(f.data() + kEthHeaderLen, 20));
      const uint32_t v = g.run(f);
      ASSERT_TRUE(Verdict::is_drop(v)) << n;
      const DropReason r = Verdict::reason(v);
      ASSERT_TRUE(r == kBadEspLength || r == kBadIcv) << n << ": " << IpsecApp::reason_name(r);
      // Cut without fixing the length: the outer header says more than there is.
      std::vector<uint8_t> cut(good.begin(), good.begin() + n);
      ASSERT_EQ(g.run(cut), Verdict::drop(DropReason::kTruncated)) << n;
    }
  }
}

// Frames with a valid ICV over wrong contents: sealed by hand with the device code.
TEST(Esp, WrongPaddingNextHeaderAndInnerPacketsAreDropped) {
  std::mt19937_64 rng(45);
  for (Cipher c : kCiphers) {
    SCOPED_TRACE(cipher_name(c));
    Gateway g(sa_pair(c, 0x4242, "192.0.2.1", "198.51.100.1", "10.0.0.0/8,172.16.0.0/12", false, rng,
                      " replay-window=0 selector=172.16.9.0/24,10.1.2.0/24"));
    const EspSaKeys keys = esp_sa_keys(g.table->sa(0));
    const std::vector<uint8_t> clear = cleartext(4, "10.1.2.3/32", "172.16.9.9/32", 60)[7];
    // Builds the frame, lets `edit` change the cleartext payload (inner, padding, trailer), seals it.
    auto forged = [&](auto edit, uint64_t seq = 77) {
      std::vector<uint8_t> f = clear;
      f.resize(f.size() + kMaxEspGrowth);
      ParsedPacket pp;
      EXPECT_EQ(parse_packet(clear.data(), static_cast<uint32_t>(clear.size()), &pp), DropReason::kNone);
      EspLayout l;
      EXPECT_EQ(esp_encapsulate(f.data(), static_cast<uint32_t>(f.size()), pp, g.table->tunnel(0), seq, &l),
                DropReason::kNone);
      edit(f.data() + l.payload, l.payload_len);
      esp_hd_seal(keys, &crypto::aes_tables(), f.data(), l, seq);
      f.resize(l.frame_len);
      return f;
    };
    std::vector<uint8_t> f = forged([](uint8_t*, uint32_t) {});
    // The inner packet goes 10.1.2.3 -> 172.16.9.9; the inbound SA admits 172.16.9/24 -> 10.1.2/24.
    EXPECT_EQ(g.run(f), Verdict::drop(kSelectorMismatch));
    f = forged([](uint8_t* p, uint32_t n) { p[n - 1] = kNextHeaderNone; });
    EXPECT_EQ(g.run(f), Verdict::drop(kDummy));
    f = forged([](uint8_t* p, uint32_t n) { p[n - 1] = 17; });
    EXPECT_EQ(g.run(f), Verdict::drop(kBadInner));
    f = forged([](uint8_t* p, uint32_t n) { p[n - 1] = kNextHeaderIpv6; });
    EXPECT_EQ(g.run(f), Verdict::drop(kBadInner)) << "an IPv4 packet announced as IPv6";
    f = forged([](uint8_t* p, uint32_t n) { p[n - 2] = static_cast<uint8_t>(n); });
    EXPECT_EQ(g.run(f), Verdict::drop(kBadPadding)) << "pad length past the payload";
    f = forged([](uint8_t* p, uint32_t n) { p[n - 2] = static_cast<uint8_t>(p[n - 2] + 4); });
    EXPECT_EQ(g.run(f), Verdict::drop(kBadPadding)) << "padding bytes not 1, 2, 3, ...";
    f = forged([](uint8_t* p, uint32_t) { p[3] = static_cast<uint8_t>(p[3] + 1); });
    EXPECT_EQ(g.run(f), Verdict::drop(kBadInner)) << "inner total length off by one";
    f = forged([](uint8_t* p, uint32_t) { p[10] ^= 0xFF; });
    EXPECT_EQ(g.run(f), Verdict::drop(kBadInner)) << "inner header checksum";
  }
}

TEST(Esp, UnknownSpiFragmentsAndBypass) {
  std::mt19937_64 rng(46);
  Gateway g(sa_pair(Cipher::kAes128Gcm, 0x4242, "192.0.2.1", "198.51.100.1", "10.0.0.0/8,172.16.0.0/12", false, rng));
  std::vector<uint8_t> f = esp_frame(g);
  store_be32(f.data() + kEthHeaderLen + 20, 0x9999);
  EXPECT_EQ(g.run(f), Verdict::drop(kUnknownSpi));
  f = esp_frame(g);
  store_be16(f.data() + kEthHeaderLen + 6, 0x2000);  // MF
  store_be16(f.data() + kEthHeaderLen + 10, 0);
  store_be16(f.data() + kEthHeaderLen + 10, ipv4_header_checksum(f.data() + kEthHeaderLen, 20));
  EXPECT_EQ(g.run(f), Verdict::drop(kEspFragment));
  std::vector<uint8_t> other = cleartext(4, "11.1.2.3/32", "172.16.9.9/32", 3)[1];
  f = other;
  EXPECT_EQ(g.run(f), Verdict::port(kPortBypass));
  EXPECT_EQ(f, other) << "a bypassed frame leaves unchanged";
}

TEST(Esp, SequenceNumbersStopAt2To32WithoutEsnAndGoOnWithIt) {
  std::mt19937_64 rng(47);
  for (bool esn : {false, true}) {
    Gateway g(sa_pair(Cipher::kChacha20Poly1305, 0x4242, "192.0.2.1", "198.51.100.1", "10.0.0.0/8,172.16.0.0/12",
                      esn, rng));
    g.table->set_next_seq(0, 0xFFFFFFFFu);
    std::vector<uint8_t> f = cleartext(4, "10.1.2.3/32", "172.16.9.9/32", 3)[1];
    EXPECT_EQ(g.run(f), Verdict::port(kPortTunnel));
    EXPECT_EQ(load_be32(f.data() + kEthHeaderLen + 24), 0xFFFFFFFFu);
    f = cleartext(4, "10.1.2.3/32", "172.16.9.9/32", 3)[1];
    if (!esn) {
      EXPECT_EQ(g.run(f), Verdict::drop(kSeqOverflow));
    } else {
      EXPECT_EQ(g.run(f), Verdict::port(kPortTunnel));
      EXPECT_EQ(load_be32(f.data() + kEthHeaderLen + 24), 0u) << "the low half of 2^32";
    }
  }
}

TEST(Esp, FramesThatWouldNotFitAreDropped) {
  std::mt19937_64 rng(48);
  Gateway g(sa_pair(Cipher::kAes128Cbc, 0x4242, "192.0.2.1", "198.51.100.1", "10.0.0.0/8,172.16.0.0/12", false, rng));
  std::vector<uint8_t> f = cleartext(4, "10.1.2.3/32", "172.16.9.9/32", 3)[2];
  const std::vector<uint8_t> before = f;
  uint32_t len = static_cast<uint32_t>(f.size());
  f.resize(len + 20);
  EXPECT_EQ(g.app->process(f.data(), &len, len + 20), Verdict::drop(kTooBig));
  f.resize(before.size());
  EXPECT_EQ(f, before);
}

TEST(SaTable, SelectorsAreTriedInFileOrder) {
  std::mt19937_64 rng(49);
  std::string text = sa_pair(Cipher::kAes128Gcm, 0x1001, "192.0.2.1", "198.51.100.1", "10.1.0.0/16,0.0.0.0/0", false, rng);
  text += sa_pair(Cipher::kAes128Gcm, 0x1002, "192.0.2.1", "198.51.100.2", "10.1.2.3/32,172.16.9.9/32", false, rng);
  text += sa_pair(Cipher::kAes128Gcm, 0x1003, "192.0.2.1", "198.51.100.3", "10.9.9.9/32,172.16.9.9/32", false, rng);
  text += sa_pair(Cipher::kAes128Gcm, 0x1004, "192.0.2.1", "198.51.100.4", "10.0.0.0/8,0.0.0.0/0", false, rng);
  Gateway g(text);
  auto spi_of = [&](const char* src) {
    std::vector<uint8_t> f = cleartext(4, src, "172.16.9.9/32", 3)[1];
    EXPECT_EQ(g.run(f), Verdict::port(kPortTunnel));
    return load_be32(f.data() + kEthHeaderLen + 20);
  };
  EXPECT_EQ(spi_of("10.1.2.3/32"), 0x1001u) << "the earlier prefix wins over the later host pair";
  EXPECT_EQ(spi_of("10.9.9.9/32"), 0x1003u);
  EXPECT_EQ(spi_of("10.200.0.1/32"), 0x1004u);
}

TEST(SaTable, OutboundAeadSasMustNotShareAKey) {
  const std::string key = "0x000102030405060708090a0b0c0d0e0f10111213";
  const std::string path = test::write_temp_file(
      "esp", "dup.txt",
      "dir=out spi=0x1001 src=1.1.1.1 dst=2.2.2.2 cipher=aes-128-gcm key=" + key + " selector=10.0.0.0/8,0.0.0.0/0\n" +
          "dir=out spi=0x1002 src=1.1.1.1 dst=2.2.2.3 cipher=aes-128-gcm key=" + key + " selector=11.0.0.0/8,0.0.0.0/0\n");
  try {
    SaTable t(load_sa_file(path));
    FAIL() << "accepted";
  } catch (const TableError& e) {
    EXPECT_NE(std::string(e.what()).find(":2: outbound SA spi 4098 has the key of line 1"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("0001020304"), std::string::npos) << "no key in messages";
  }
}

TEST(SaGen, GeneratedSasWriteAndReadBackAndCarryTrafficBothWays) {
  for (Cipher c : kCiphers) {
    SaFile f = generated_sas(50, c, 3);
    ASSERT_EQ(f.sas.size(), 100u);
    std::string text;
    for (const Sa& sa : f.sas) text += format_sa_line(sa) + "\n";
    const std::string path = test::write_temp_file("esp", "gen.txt", text);
    SaFile back = load_sa_file(path);
    ASSERT_EQ(back.sas.size(), f.sas.size());
    for (size_t i = 0; i < f.sas.size(); ++i) {
      EXPECT_EQ(back.sas[i].key, f.sas[i].key);
      EXPECT_EQ(back.sas[i].salt, f.sas[i].salt);
      EXPECT_EQ(back.sas[i].spi, f.sas[i].spi);
      EXPECT_EQ(format_prefix(back.sas[i].sel_src), format_prefix(f.sas[i].sel_src));
    }
    SaTable t(std::move(f));
    IpsecApp app(t);
    for (const char* traffic : {"out", "in"}) {
      const PacketStore s = generate_esp_traffic(t, parse_gen_spec("count=500,dst=fib,size=imix,seed=3"), traffic);
      ASSERT_EQ(s.size(), 500u);
      const uint32_t want = std::string(traffic) == "out" ? kPortTunnel : kPortDecrypted;
      for (size_t i = 0; i < s.size(); ++i) {
        std::vector<uint8_t> fr(s.frame(i), s.frame(i) + s.caplen[i]);
        fr.resize(fr.size() + kMaxEspGrowth);
        uint32_t len = s.caplen[i];
        ASSERT_EQ(app.process(fr.data(), &len, static_cast<uint32_t>(fr.size())), Verdict::port(want)) << traffic << i;
      }
    }
  }
}

}  // namespace
}  // namespace tandem::ipsec
