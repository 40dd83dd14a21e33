// pcap/pcapng reading and writing: round trips with nanosecond timestamps, the bundled captures,
// and the errors users see for damaged, foreign or missing files.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/packet_pool.h"
#include "io/pcap_io.h"
#include "io/pcapng_writer.h"
#include "test_util.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

#ifndef TANDEM_HAVE_PCAP
#define REQUIRE_PCAP() \
  GTEST_SKIP() << "this build of Tandem has no libpcap (TANDEM_HAVE_PCAP unset)"
#else
#define REQUIRE_PCAP() \
  do {                 \
  } while (0)
#endif

constexpr uint64_t kTs = 1700000000123456789ull;

class PcapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "tandem_io_pcap_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string tmp(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

uint32_t le32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | uint32_t{p[3]} << 24; }

// A few frames with distinct contents, lengths (one of them truncated) and timestamps.
PacketStore sample_store() {
  PacketStore s;
  for (uint32_t i = 0; i < 5; ++i) {
    std::vector<uint8_t> f(60 + i * 37);
    for (size_t j = 0; j < f.size(); ++j) f[j] = static_cast<uint8_t>(i * 31 + j);
    const uint32_t wire = i == 2 ? 1514 : static_cast<uint32_t>(f.size());
    s.add(f.data(), static_cast<uint32_t>(f.size()), wire, kTs + i * 1000000007ull);
  }
  return s;
}

void expect_same(const PacketStore& a, const PacketStore& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a.caplen[i], b.caplen[i]) << "packet " << i;
    ASSERT_EQ(a.wire_len[i], b.wire_len[i]) << "packet " << i;
    ASSERT_EQ(a.ts_ns[i], b.ts_ns[i]) << "packet " << i;
    ASSERT_EQ(0, std::memcmp(a.frame(i), b.frame(i), a.caplen[i])) << "packet " << i;
  }
}

TEST(PcapFormat, FromPath) {
  EXPECT_EQ(format_from_path("out.pcapng"), PacketWriter::Format::kPcapng);
  EXPECT_EQ(format_from_path("/a/b/OUT.PCAPNG"), PacketWriter::Format::kPcapng);
  EXPECT_EQ(format_from_path("out.pcap"), PacketWriter::Format::kPcap);
  EXPECT_EQ(format_from_path("pcapng"), PacketWriter::Format::kPcap);
  EXPECT_EQ(format_from_path("capture"), PacketWriter::Format::kPcap);
}

// The pcapng writer needs no libpcap, so its block layout is checked byte by byte everywhere.
TEST_F(PcapTest, PcapngLayout) {
  const std::string path = tmp("layout.pcapng");
  {
    PcapngWriter w(path, 1000);
    const uint8_t frame[5] = {1, 2, 3, 4, 5};
    w.write(frame, 5, 64, kTs);
    w.close();
    EXPECT_EQ(w.packets(), 1u);
  }
  const std::vector<uint8_t> b = read_file(path);
  ASSERT_EQ(b.size(), 28u + 32u + 40u);
  EXPECT_EQ(le32(&b[0]), 0x0A0D0D0Au);  // SHB
  EXPECT_EQ(le32(&b[4]), 28u);
  EXPECT_EQ(le32(&b[8]), 0x1A2B3C4Du);
  EXPECT_EQ(le32(&b[24]), 28u);
  const uint8_t* idb = &b[28];
  EXPECT_EQ(le32(idb), 1u);
  EXPECT_EQ(le32(idb + 4), 32u);
  EXPECT_EQ(idb[8] | idb[9] << 8, 1);    // LINKTYPE_ETHERNET
  EXPECT_EQ(le32(idb + 12), 1000u);      // snaplen
  EXPECT_EQ(idb[16] | idb[17] << 8, 9);  // if_tsresol
  EXPECT_EQ(idb[18] | idb[19] << 8, 1);
  EXPECT_EQ(idb[20], 9);          // 10^-9
  EXPECT_EQ(le32(idb + 24), 0u);  // opt_endofopt
  EXPECT_EQ(le32(idb + 28), 32u);
  const uint8_t* epb = &b[60];
  EXPECT_EQ(le32(epb), 6u);
  EXPECT_EQ(le32(epb + 4), 40u);
  EXPECT_EQ(le32(epb + 8), 0u);
  EXPECT_EQ((uint64_t{le32(epb + 12)} << 32) | le32(epb + 16), kTs);
  EXPECT_EQ(le32(epb + 20), 5u);
  EXPECT_EQ(le32(epb + 24), 64u);
  EXPECT_EQ(0, std::memcmp(epb + 28, "\x01\x02\x03\x04\x05\0\0\0", 8));  // data + padding
  EXPECT_EQ(le32(epb + 36), 40u);
}

TEST_F(PcapTest, PcapngWriterBadDirectory) {
  const std::string path = tmp("no/such/dir/x.pcapng");
  try {
    PcapngWriter w(path);
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

#ifndef TANDEM_HAVE_PCAP
TEST_F(PcapTest, NoPcapBuildSaysSo) {
  try {
    load_pcap("some.pcap");
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("some.pcap: this build of Tandem has no libpcap"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(PacketWriter(tmp("x.pcapng"), PacketWriter::Format::kPcapng), IoError);
}
#endif

TEST_F(PcapTest, RoundTripPcapNanoseconds) {
  REQUIRE_PCAP();
  const PacketStore s = sample_store();
  const std::string path = tmp("rt.pcap");
  save_pcap(s, path);
  const std::vector<uint8_t> b = read_file(path);
  ASSERT_GE(b.size(), 24u);
  EXPECT_EQ(le32(&b[0]), 0xA1B23C4Du) << "expected the nanosecond pcap magic";
  expect_same(s, load_pcap(path));
}

TEST_F(PcapTest, RoundTripPcapng) {
  REQUIRE_PCAP();
  const PacketStore s = sample_store();
  const std::string path = tmp("rt.pcapng");
  save_pcap(s, path);
  EXPECT_EQ(le32(read_file(path).data()), 0x0A0D0D0Au);
  expect_same(s, load_pcap(path));
}

TEST_F(PcapTest, ReaderApi) {
  REQUIRE_PCAP();
  const std::string path = tmp("api.pcap");
  {
    PacketWriter w(path, PacketWriter::Format::kPcap);
    const uint8_t frame[60] = {0xAA};
    w.write(frame, 60, 60, kTs);
    w.write(frame, 60, 70, kTs + 1);
    w.close();
    w.close();  // twice is fine
    EXPECT_EQ(w.packets(), 2u);
    EXPECT_THROW(w.write(frame, 60, 60, kTs), IoError);
  }
  PcapReader r(path);
  const uint8_t* data;
  uint32_t cap, wire;
  uint64_t ts;
  ASSERT_TRUE(r.next(&data, &cap, &wire, &ts));
  EXPECT_EQ(cap, 60u);
  EXPECT_EQ(wire, 60u);
  EXPECT_EQ(ts, kTs);
  EXPECT_EQ(data[0], 0xAA);
  ASSERT_TRUE(r.next(&data, &cap, &wire, &ts));
  EXPECT_EQ(wire, 70u);
  EXPECT_EQ(ts, kTs + 1);
  EXPECT_FALSE(r.next(&data, &cap, &wire, &ts));
  EXPECT_EQ(r.packets(), 2u);
  EXPECT_EQ(r.snaplen(), 262144u);
}

TEST_F(PcapTest, WriterTruncatesToSnaplen) {
  REQUIRE_PCAP();
  for (const char* name : {"snap.pcap", "snap.pcapng"}) {
    const std::string path = tmp(name);
    std::vector<uint8_t> frame(1000, 0x5A);
    {
      PacketWriter w(path, format_from_path(path), 128);
      w.write(frame.data(), 1000, 1000, kTs);
      w.close();
    }
    const PacketStore s = load_pcap(path);
    ASSERT_EQ(s.size(), 1u) << name;
    EXPECT_EQ(s.caplen[0], 128u) << name;
    EXPECT_EQ(s.wire_len[0], 1000u) << name;
  }
}

TEST_F(PcapTest, WriteErrorsNameTheFile) {
  REQUIRE_PCAP();
  for (const char* name : {"missing/dir/out.pcap", "missing/dir/out.pcapng"}) {
    const std::string path = tmp(name);
    try {
      PacketWriter w(path, format_from_path(path));
      FAIL() << "no error for " << path;
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(save_pcap(sample_store(), tmp("missing/x.pcap")), IoError);
}

TEST_F(PcapTest, BundledCaptures) {
  REQUIRE_PCAP();
  const std::pair<const char*, size_t> files[] = {{"data/pcap/example.pcap", 4631},
                                                  {"data/pcap/many-protocols.pcap", 4709},
                                                  {"data/pcap/tls2.pcap", 7451}};
  for (const auto& [rel, count] : files) {
    const std::string path = test::source_path(rel);
    const PacketStore s = load_pcap(path);
    EXPECT_EQ(s.size(), count) << rel;
    uint64_t sum = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      ASSERT_LE(s.caplen[i], s.wire_len[i]) << rel << " packet " << i;
      ASSERT_GT(s.ts_ns[i], 1000000000ull * 1000000000ull) << "timestamps are after 2001";
      sum += s.caplen[i];
    }
    EXPECT_EQ(s.total_caplen(), sum);
    EXPECT_EQ(s.bytes.size(), sum);
    EXPECT_EQ(load_pcap(path, 10).size(), 10u);
  }
}

TEST_F(PcapTest, RewriteLoadedCaptureIsLossless) {
  REQUIRE_PCAP();
  const PacketStore orig = load_pcap(test::source_path("data/pcap/example.pcap"));
  for (const char* name : {"copy.pcap", "copy.pcapng"}) {
    const std::string path = tmp(name);
    save_pcap(orig, path);
    expect_same(orig, load_pcap(path));
  }
}

// Returns the file offsets of every record header of a classic (microsecond, little-endian) pcap.
std::vector<size_t> record_offsets(const std::vector<uint8_t>& b) {
  std::vector<size_t> off;
  size_t pos = 24;
  while (pos + 16 <= b.size()) {
    off.push_back(pos);
    pos += 16 + le32(&b[pos + 8]);
  }
  return off;
}

TEST_F(PcapTest, TruncatedFileNamesFileAndPacket) {
  REQUIRE_PCAP();
  const std::vector<uint8_t> orig = read_file(test::source_path("data/pcap/example.pcap"));
  ASSERT_EQ(le32(orig.data()), 0xA1B2C3D4u);
  const std::vector<size_t> rec = record_offsets(orig);
  ASSERT_EQ(rec.size(), 4631u);
  // Cut inside packet 1000's data, then inside packet 2000's record header.
  const std::pair<size_t, size_t> cuts[] = {{1000, rec[999] + 16 + 10}, {2000, rec[1999] + 7}};
  for (const auto& [packet, cut] : cuts) {
    const std::string path = tmp("truncated_" + std::to_string(packet) + ".pcap");
    write_file(path, std::vector<uint8_t>(orig.begin(), orig.begin() + cut));
    PcapReader r(path);
    const uint8_t* data;
    uint32_t cap, wire;
    uint64_t ts;
    try {
      while (r.next(&data, &cap, &wire, &ts)) {
      }
      FAIL() << "no error for a file cut at byte " << cut;
    } catch (const IoError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(path), std::string::npos) << msg;
      EXPECT_NE(msg.find("packet " + std::to_string(packet) + ":"), std::string::npos) << msg;
      EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
    }
    EXPECT_EQ(r.packets(), packet - 1);
    EXPECT_THROW(load_pcap(path), IoError);
  }
}

TEST_F(PcapTest, ForeignAndMissingFiles) {
  REQUIRE_PCAP();
  const std::string text = tmp("notes.pcap");
  { std::ofstream(text) << "this is not a capture file, just some text long enough\n"; }
  const std::string missing = tmp("missing.pcap");
  for (const std::string& path : {text, missing}) {
    try {
      PcapReader r(path);
      FAIL() << "no error for " << path;
    } catch (const IoError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
      EXPECT_GT(msg.size(), path.size() + 10) << "a reason follows the name: " << msg;
    }
  }
  try {
    load_pcap(missing);
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
}

TEST_F(PcapTest, RawIpLinkTypeIsRejected) {
  REQUIRE_PCAP();
  // A classic pcap with LINKTYPE_RAW (101) and one IPv4 packet, written by hand.
  std::vector<uint8_t> b = {0xD4, 0xC3, 0xB2, 0xA1, 2,    0,    4, 0, 0,   0, 0, 0,
                            0,    0,    0,    0,    0xFF, 0xFF, 0, 0, 101, 0, 0, 0};
  const uint8_t rec[16] = {1, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 20, 0, 0, 0};
  b.insert(b.end(), rec, rec + 16);
  b.insert(b.end(), 20, 0x45);
  const std::string path = tmp("raw.pcap");
  write_file(path, b);
  try {
    PcapReader r(path);
    FAIL() << "a raw-IP capture was accepted";
  } catch (const IoError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("link type RAW"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Ethernet"), std::string::npos) << msg;
  }
}

TEST_F(PcapTest, PcapSourceStreamsLikeLoad) {
  REQUIRE_PCAP();
  const std::string path = test::source_path("data/pcap/many-protocols.pcap");
  const PacketStore ref = load_pcap(path);
  PacketPool pool(512);
  PcapSource src(path);
  EXPECT_NE(src.describe().find("many-protocols.pcap"), std::string::npos);
  PacketBatch batch;
  size_t seen = 0;
  for (;;) {
    batch.clear();
    const uint32_t n = src.rx_burst(pool, batch);
    if (n == 0) break;
    ASSERT_EQ(batch.size, n);
    for (uint32_t i = 0; i < n; ++i, ++seen) {
      ASSERT_LT(seen, ref.size());
      const uint32_t want_len = std::min(ref.caplen[seen], pool.max_frame());
      ASSERT_EQ(batch.len[i], want_len);
      ASSERT_EQ(batch.wire_len[i], ref.wire_len[seen]);
      ASSERT_EQ(batch.ts_ns[i], ref.ts_ns[seen]);
      ASSERT_EQ(batch.verdict[i], Verdict::kUnset);
      ASSERT_EQ(0, std::memcmp(pool.data(batch.cell[i]), ref.frame(seen), want_len));
    }
    pool.free_bulk(batch.cell.data(), batch.size);
  }
  EXPECT_EQ(seen, ref.size());
  EXPECT_EQ(src.served(), ref.size());
  EXPECT_EQ(pool.available(), pool.num_cells()) << "unused cells went back to the pool";

  // max_packets, and a pool with only 3 free cells: nothing is lost to back-pressure.
  PcapSource limited(path, 10);
  PacketPool small(3);
  size_t got = 0;
  for (;;) {
    batch.clear();
    const uint32_t n = limited.rx_burst(small, batch);
    if (n == 0) break;
    EXPECT_LE(n, 3u);
    for (uint32_t i = 0; i < n; ++i) {
      EXPECT_EQ(batch.ts_ns[i], ref.ts_ns[got + i]);
    }
    got += n;
    small.free_bulk(batch.cell.data(), batch.size);
  }
  EXPECT_EQ(got, 10u);
}

TEST_F(PcapTest, PcapSinkWritesForwardedOnly) {
  REQUIRE_PCAP();
  PacketPool pool(16);
  PacketBatch batch;
  batch.size = pool.alloc_bulk(batch.cell.data(), 4);
  const uint32_t verdicts[4] = {Verdict::port(1), Verdict::drop(DropReason::kNoRoute),
                                Verdict::kUnset, Verdict::port(0)};
  for (uint32_t i = 0; i < 4; ++i) {
    std::memset(pool.data(batch.cell[i]), 0x10 + i, 60);
    batch.len[i] = 60;
    batch.wire_len[i] = 60;
    batch.ts_ns[i] = kTs + i;
    batch.verdict[i] = verdicts[i];
  }
  for (const char* name : {"sink.pcap", "sink.pcapng"}) {
    const std::string path = tmp(name);
    {
      PcapSink sink(path);
      Counters c;
      sink.tx_burst(pool, batch, c);
      sink.flush();
      EXPECT_EQ(sink.written(), 2u);
      sink.close();
    }
    const PacketStore s = load_pcap(path);
    ASSERT_EQ(s.size(), 2u) << name;
    EXPECT_EQ(s.ts_ns[0], kTs);
    EXPECT_EQ(s.frame(0)[0], 0x10);
    EXPECT_EQ(s.ts_ns[1], kTs + 3);
    EXPECT_EQ(s.frame(1)[0], 0x13);
  }
}

// An independent reader: scapy must see the same packets and nanosecond timestamps.
TEST_F(PcapTest, ScapyReadsOurFiles) {
  REQUIRE_PCAP();
  if (std::system("python3 -c 'import scapy' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3 with scapy is not available";
  }
  const PacketStore s = sample_store();
  for (const char* name : {"scapy.pcap", "scapy.pcapng"}) {
    const std::string path = tmp(name);
    save_pcap(s, path);
    const std::string out = tmp("scapy.txt");
    const std::string cmd =
        "python3 -c \"import sys\nfrom scapy.utils import rdpcap\nfrom decimal import Decimal\n"
        "for p in rdpcap(sys.argv[1]):\n"
        "    print(int(Decimal(p.time) * 10**9), len(p), p.wirelen, bytes(p)[:4].hex())\" " +
        path + " > " + out + " 2>/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream in(out);
    for (size_t i = 0; i < s.size(); ++i) {
      uint64_t ts;
      uint32_t len, wire;
      std::string head;
      ASSERT_TRUE(in >> ts >> len >> wire >> head) << name << " packet " << i;
      EXPECT_EQ(ts, s.ts_ns[i]) << name;
      EXPECT_EQ(len, s.caplen[i]) << name;
      EXPECT_EQ(wire, s.wire_len[i]) << name;
      char hex[9];
      std::snprintf(hex, sizeof hex, "%02x%02x%02x%02x", s.frame(i)[0], s.frame(i)[1],
                    s.frame(i)[2], s.frame(i)[3]);
      EXPECT_EQ(head, hex) << name;
    }
  }
}

}  // namespace
}  // namespace tandem
