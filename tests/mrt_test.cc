// The MRT reader (io/mrt.h) and the FIB loaders on MRT input: synthetic dumps of every supported
// record kind written here byte by byte from RFC 6396, errors naming record and offset, mutated
// dumps (the fuzz target's checks under any compiler), and the real RIPE RIS dump when
// ../shared/data is present.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "apps/ipv4/fib_loader.h"
#include "apps/ipv4/ref_trie.h"
#include "apps/ipv6/fib6_loader.h"
#include "io/mrt.h"
#include "tests/bytes.h"
#include "test_util.h"

namespace tandem {
namespace {

using test::append;
using test::Bytes;
using test::put16;
using test::put32;

Bytes record(uint16_t type, uint16_t subtype, const Bytes& body) {
  Bytes r;
  put32(r, 1027000000);
  put16(r, type);
  put16(r, subtype);
  put32(r, static_cast<uint32_t>(body.size()));
  append(r, body);
  return r;
}

Bytes attr(uint8_t type, const Bytes& value, bool extended = false) {
  Bytes a = {static_cast<uint8_t>(0x40 | (extended ? 0x10 : 0)), type};
  if (extended) {
    put16(a, static_cast<uint16_t>(value.size()));
  } else {
    a.push_back(static_cast<uint8_t>(value.size()));
  }
  append(a, value);
  return a;
}

// TABLE_DUMP (v1), IPv4: one prefix as seen from one peer.
Bytes table_dump_v4(uint32_t prefix, uint8_t len, uint32_t next_hop) {
  Bytes b;
  put16(b, 0);  // view
  put16(b, 1);  // sequence
  put32(b, prefix);
  b.push_back(len);
  b.push_back(1);             // status
  put32(b, 1027000000);       // originated
  put32(b, 0xC1000001);       // peer address
  put16(b, 3333);             // peer AS
  Bytes attrs = attr(1, {0});
  Bytes nh;
  put32(nh, next_hop);
  append(attrs, attr(3, nh));
  put16(b, static_cast<uint16_t>(attrs.size()));
  append(b, attrs);
  return record(12, 1, b);
}

// TABLE_DUMP_V2 RIB record: one prefix, entries with the given attribute blocks.
Bytes rib_v2(uint16_t subtype, const Bytes& prefix_bytes, uint8_t len, const std::vector<Bytes>& entry_attrs,
             bool add_path = false) {
  Bytes b;
  put32(b, 7);  // sequence
  b.push_back(len);
  append(b, prefix_bytes);
  put16(b, static_cast<uint16_t>(entry_attrs.size()));
  for (const Bytes& a : entry_attrs) {
    put16(b, 0);           // peer index
    put32(b, 1027000000);  // originated
    if (add_path) put32(b, 99);
    put16(b, static_cast<uint16_t>(a.size()));
    append(b, a);
  }
  return record(13, subtype, b);
}

Bytes nh4(uint32_t a) {
  Bytes v;
  put32(v, a);
  return attr(3, v);
}
Bytes mp_reach_abbrev(const Bytes& addr) {  // TABLE_DUMP_V2 form: length + address
  Bytes v = {static_cast<uint8_t>(addr.size())};
  append(v, addr);
  return attr(14, v, /*extended=*/true);
}
Bytes v6addr(uint16_t first, uint16_t last) {
  Bytes a(16, 0);
  a[0] = static_cast<uint8_t>(first >> 8);
  a[1] = static_cast<uint8_t>(first);
  a[14] = static_cast<uint8_t>(last >> 8);
  a[15] = static_cast<uint8_t>(last);
  return a;
}

// A dump with one of everything the reader supports, plus a record type it skips.
Bytes sample_dump() {
  Bytes d;
  append(d, table_dump_v4(0x0A000000, 8, 0xC0000201));             // 10.0.0.0/8 via 192.0.2.1
  append(d, table_dump_v4(0x0A000000, 8, 0xC0000202));             // same prefix, another peer
  append(d, table_dump_v4(0x0A010000, 16, 0xC0000202));            // 10.1.0.0/16 via 192.0.2.2
  append(d, record(13, 1, Bytes{0xC0, 0, 2, 1, 0, 0, 0, 0}));       // PEER_INDEX_TABLE (not parsed)
  append(d, rib_v2(2, {0xC6, 0x33, 0x64}, 24, {nh4(0xC0000203), nh4(0xC0000201)}));  // 198.51.100.0/24
  append(d, rib_v2(8, {0xCB, 0x00, 0x71}, 24, {nh4(0xC0000204)}, /*add_path=*/true));  // 203.0.113.0/24
  append(d, rib_v2(4, {0x20, 0x01, 0x0D, 0xB8}, 32, {mp_reach_abbrev(v6addr(0xFE80, 1))}));  // 2001:db8::/32
  append(d, rib_v2(4, {}, 0, {attr(1, {0})}));                       // ::/0 without a next hop
  append(d, record(16, 4, Bytes(20, 0xAB)));                         // BGP4MP: skipped
  return d;
}

std::string write_gz(const Bytes& data, const std::string& name) {
  const std::string path = testing::TempDir() + name;
  gzFile f = gzopen(path.c_str(), "wb");
  EXPECT_NE(f, nullptr);
  if (!data.empty()) {
    EXPECT_EQ(gzwrite(f, data.data(), static_cast<unsigned>(data.size())), static_cast<int>(data.size()));
  }
  gzclose(f);
  return path;
}

TEST(Mrt, ReadsEveryRecordKind) {
  const Bytes d = sample_dump();
  std::vector<mrt::RibRoute> got;
  const mrt::MrtStats st = mrt::read_buffer(d.data(), d.size(), [&](const mrt::RibRoute& r) { got.push_back(r); });
  EXPECT_EQ(st.records, 9u);
  EXPECT_EQ(st.table_dump, 3u);
  EXPECT_EQ(st.rib_records, 4u);
  EXPECT_EQ(st.peer_tables, 1u);
  EXPECT_EQ(st.skipped_records, 1u);
  EXPECT_EQ(st.entries, 8u);
  EXPECT_EQ(st.no_next_hop, 1u);
  EXPECT_EQ(st.bytes, d.size());
  ASSERT_EQ(got.size(), 8u);
  EXPECT_EQ(got[0].family, 4);
  EXPECT_EQ(got[0].len, 8);
  EXPECT_EQ(got[0].prefix[0], 10);
  EXPECT_TRUE(got[0].has_next_hop);
  EXPECT_EQ(got[0].next_hop[3], 1);
  EXPECT_EQ(got[3].len, 24);
  EXPECT_EQ(got[3].entry, 0u);
  EXPECT_EQ(got[4].entry, 1u);
  EXPECT_EQ(got[4].next_hop[3], 1);
  EXPECT_EQ(got[5].next_hop[3], 4);  // ADD-PATH entry
  EXPECT_EQ(got[6].family, 6);
  EXPECT_EQ(got[6].next_hop_family, 6);
  EXPECT_EQ(got[6].next_hop[0], 0xFE);
  EXPECT_FALSE(got[7].has_next_hop);
  EXPECT_EQ(got[7].len, 0);
}

TEST(Mrt, FibLoadersTakeTheFirstEntryAndNumberNextHops) {
  const std::string path = write_gz(sample_dump(), "sample.mrt.gz");
  const ipv4::Fib fib = ipv4::load_fib(path);
  ASSERT_EQ(fib.routes.size(), 4u);
  EXPECT_EQ(fib.mrt_records, 9u);
  EXPECT_EQ(fib.other_paths, 2u);  // 10/8's second peer, 198.51.100/24's second entry
  EXPECT_EQ(fib.ipv6_skipped, 2u);
  EXPECT_EQ(fib.next_hop_addresses, 4u);  // .1, .2, .3, .4 in order of first use
  ipv4::RefTrie t;
  for (const auto& r : fib.routes) t.insert(r.prefix, r.len, r.next_hop);
  EXPECT_EQ(t.lookup(0x0A020304), 0u);    // 10/8 -> 192.0.2.1 = port 0
  EXPECT_EQ(t.lookup(0x0A010203), 1u);    // 10.1/16 -> 192.0.2.2 = port 1
  EXPECT_EQ(t.lookup(0xC6336401), 2u);    // first entry's 192.0.2.3, not the second's .1
  EXPECT_EQ(t.lookup(0xCB007101), 3u);
  EXPECT_EQ(t.lookup(0x0B000000), kNoRoute);

  const ipv6::Fib6 fib6 = ipv6::load_fib6(path);
  ASSERT_EQ(fib6.routes.size(), 2u);
  EXPECT_EQ(fib6.ipv4_skipped, 5u);  // first entries of IPv4 records (TABLE_DUMP has one per peer)
  EXPECT_EQ(fib6.routes[0].len, 32);
  EXPECT_EQ(fib6.routes[0].next_hop, 0u);
  EXPECT_EQ(fib6.routes[1].len, 0);
  EXPECT_EQ(fib6.derived_next_hops, 1u);  // ::/0 had no next hop
}

TEST(Mrt, ErrorsNameTheRecordAndOffset) {
  const Bytes good = table_dump_v4(0x0A000000, 8, 0xC0000201);
  auto expect_error = [](const Bytes& d, const std::string& want) {
    try {
      mrt::read_buffer(d.data(), d.size(), [](const mrt::RibRoute&) {}, "dump");
      ADD_FAILURE() << "no error, wanted " << want;
    } catch (const mrt::MrtError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  Bytes two = good;
  append(two, good);
  two.resize(two.size() - 3);  // the second record is cut short
  expect_error(two, "dump: record 2 at byte " + std::to_string(good.size()) + ": truncated record");
  expect_error(Bytes(good.begin(), good.begin() + 7), "record 1 at byte 0: truncated record header");
  Bytes bad_len = good;
  bad_len[12 + 8] = 40;  // TABLE_DUMP prefix length byte: 40 > 32
  expect_error(bad_len, "prefix length 40 over 32");
  Bytes rib = rib_v2(2, {10}, 8, {nh4(1)});
  rib.push_back(0);  // one byte after the last entry (record length adjusted below)
  rib[11] = static_cast<uint8_t>(rib[11] + 1);
  expect_error(rib, "1 bytes after the last RIB entry");
  Bytes short_attr = rib_v2(2, {10}, 8, {Bytes{0x40, 3, 4, 1, 2}});  // NEXT_HOP says 4 bytes, has 2
  expect_error(short_attr, "truncated attribute value");
  expect_error(record(12, 7, Bytes(30, 0)), "TABLE_DUMP with unknown AFI 7");

  // Through the loaders: the file name and a non-zero record number.
  const std::string path = write_gz(two, "cut.mrt.gz");
  try {
    ipv4::load_fib(path);
    ADD_FAILURE() << "a truncated dump loaded";
  } catch (const ipv4::FibError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": record 2"), std::string::npos) << e.what();
  }
}

TEST(Mrt, MutatedDumpsAreReadOrRejectedNeverCrash) {
  const Bytes base = sample_dump();
  std::mt19937_64 rng(11);
  size_t rejected = 0;
  for (int i = 0; i < 20000; ++i) {
    Bytes d = base;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) d[rng() % d.size()] = static_cast<uint8_t>(rng());
    if (rng() % 4 == 0) d.resize(rng() % d.size());
    try {
      mrt::read_buffer(d.data(), d.size(), [](const mrt::RibRoute& r) {
        ASSERT_TRUE(r.family == 4 || r.family == 6);
        ASSERT_LE(r.len, r.family == 4 ? 32 : 128);
      });
    } catch (const mrt::MrtError&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 1000u);  // the mutations do reach the error paths
}

TEST(Mrt, TextTablesAreNotTakenForMrt) {
  const std::string path = testing::TempDir() + "table.txt";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("10.0.0.0/8 1\n", f);
  std::fclose(f);
  EXPECT_FALSE(mrt::looks_like_mrt(path));
  EXPECT_EQ(ipv4::load_fib(path).routes.size(), 1u);
  EXPECT_TRUE(mrt::looks_like_mrt(write_gz(sample_dump(), "sniffed.bin.gz")));
}

// The real RIPE RIS dump (TABLE_DUMP, 2002): only in ../shared (GPL data, not shipped).
TEST(Mrt, RealRipeRisDump) {
  const std::string path = test::shared_data_path("fib/ripe_ris_bview.20020722.2337.mrt.gz");
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    std::fclose(f);
  } else {
    GTEST_SKIP() << path << " is not present (../shared/data is optional)";
  }
  const ipv4::Fib fib = ipv4::load_fib(path);
  EXPECT_EQ(fib.mrt_records, 115521u);  // as data/README.md describes the file
  EXPECT_EQ(fib.routes.size(), 112988u);
  EXPECT_GT(fib.next_hop_addresses, 1u);
  EXPECT_EQ(fib.derived_next_hops, 0u);
  for (const auto& r : fib.routes) ASSERT_LT(r.next_hop, fib.next_hop_addresses);
  uint64_t entries = 0;
  const mrt::MrtStats st = mrt::read_file(path, [&](const mrt::RibRoute&) { ++entries; });
  EXPECT_EQ(st.table_dump, st.records);
  EXPECT_EQ(entries, fib.routes.size() + fib.other_paths + fib.ipv6_skipped);
}

}  // namespace
}  // namespace tandem
