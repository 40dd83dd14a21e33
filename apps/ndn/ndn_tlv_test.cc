// NDN TLV v0.3 parsing (apps/ndn/ndn_tlv.h) and names (apps/ndn/ndn_name.h): encode/parse round
// trips on the real URL list, every malformed-packet status on hand-built packets, mutated packets
// (the fuzz target's invariants under any compiler), URI form edge cases.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "apps/ndn/ndn_name.h"
#include "apps/ndn/ndn_tlv.h"
#include "tests/test_util.h"

namespace tandem::ndn {
namespace {

using Bytes = std::vector<uint8_t>;

NdnStatus parse(const Bytes& b, NdnName* out = nullptr) {
  NdnName scratch;
  return ndn_parse_interest(b.data(), static_cast<uint32_t>(b.size()), out ? out : &scratch);
}

TEST(NdnTlv, EncodeParseRoundTrip) {
  const Name n = {"com", "example", "www", "", std::string(300, 'x'), std::string("\0\xff/", 3)};
  const Bytes pkt = encode_interest(n, 0x01020304, true, true);
  NdnName p;
  ASSERT_EQ(parse(pkt, &p), NdnStatus::kOk);
  EXPECT_EQ(p.count, 6);
  EXPECT_EQ(name_of(pkt.data(), p), n);
  for (int i = 0; i < p.count; ++i) EXPECT_EQ(p.type[i], kTlvGenericComponent);
  // The 300-byte component needs a 3-byte TLV-LENGTH (253 + 2 bytes).
  EXPECT_EQ(p.length[4], 300u);
  NdnName e;
  ASSERT_EQ(parse(encode_interest({}, 7), &e), NdnStatus::kOk);
  EXPECT_EQ(e.count, 0);  // the empty name
}

TEST(NdnTlv, EveryMalformationHasItsStatus) {
  const Bytes good = encode_interest({"a", "bc"}, 9);
  // good = 05 L 07 L2 08 01 'a' 08 02 'b' 'c' 0A 04 nonce
  EXPECT_EQ(parse(good), NdnStatus::kOk);
  EXPECT_EQ(parse({}), NdnStatus::kTruncated);
  EXPECT_EQ(parse(Bytes(good.begin(), good.end() - 1)), NdnStatus::kTruncated);  // value cut short
  EXPECT_EQ(parse({0x05}), NdnStatus::kTruncated);                                 // no TLV-LENGTH
  EXPECT_EQ(parse({0x05, 0xFD, 0x00}), NdnStatus::kTruncated);                      // 2-byte length cut
  Bytes trailing = good;
  trailing.push_back(0);
  EXPECT_EQ(parse(trailing), NdnStatus::kBadLength);  // bytes after the Interest
  Bytes data_pkt = good;
  data_pkt[0] = 0x06;  // a Data packet
  EXPECT_EQ(parse(data_pkt), NdnStatus::kNotInterest);
  EXPECT_EQ(parse({0x00, 0x00}), NdnStatus::kBadType);
  Bytes no_name = good;
  no_name[2] = 0x0A;  // the first element is not a Name
  EXPECT_EQ(parse(no_name), NdnStatus::kNoName);
  Bytes comp_past_name = good;
  comp_past_name[5] = 0x06;  // component 'a' claims 6 bytes: past the Name's end, inside the packet
  EXPECT_EQ(parse(comp_past_name), NdnStatus::kBadLength);
  Bytes zero_type = good;
  zero_type[4] = 0x00;  // a name component of TLV-TYPE 0
  EXPECT_EQ(parse(zero_type), NdnStatus::kBadType);
  Bytes big_type = {0x05, 0x09, 0x07, 0x07, 0xFE, 0x00, 0x01, 0x00, 0x00, 0x01, 0x41};  // type 65536
  EXPECT_EQ(parse(big_type), NdnStatus::kBadType);
  Name many(kMaxComponents + 1, "c");
  EXPECT_EQ(parse(encode_interest(many, 1)), NdnStatus::kTooManyComponents);
  EXPECT_EQ(parse(encode_interest(Name(kMaxComponents, "c"), 1)), NdnStatus::kOk);
  Bytes bad_tail = good;
  bad_tail[bad_tail.size() - 5] = 0x09;  // the Nonce claims 9 bytes: past the Interest
  EXPECT_EQ(parse(bad_tail), NdnStatus::kBadLength);
  for (auto s : {NdnStatus::kOk, NdnStatus::kTruncated, NdnStatus::kBadLength, NdnStatus::kBadType,
                 NdnStatus::kNotInterest, NdnStatus::kNoName, NdnStatus::kTooManyComponents}) {
    EXPECT_STRNE(ndn_status_name(s), "?");
  }
}

TEST(NdnTlv, MutatedPacketsNeverReadOutOfBounds) {
  std::mt19937_64 rng(5);
  const Name base = {"org", "example", "video", "2024", "seg", std::string(200, 'z')};
  size_t ok = 0, bad = 0;
  for (int i = 0; i < 50000; ++i) {
    Bytes b = encode_interest(base, static_cast<uint32_t>(rng()), rng() & 1, rng() & 1);
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < flips; ++k) b[rng() % b.size()] = static_cast<uint8_t>(rng());
    if (rng() % 3 == 0) b.resize(rng() % b.size());
    NdnName p;
    if (ndn_parse_interest(b.data(), static_cast<uint32_t>(b.size()), &p) == NdnStatus::kOk) {
      ++ok;
      ASSERT_LE(p.count, kMaxComponents);
      ASSERT_LE(uint64_t{p.name_offset} + p.name_length, b.size());
      for (int c = 0; c < p.count; ++c) {
        ASSERT_GE(p.offset[c], p.name_offset);
        ASSERT_LE(uint64_t{p.offset[c]} + p.length[c], uint64_t{p.name_offset} + p.name_length);
      }
    } else {
      ++bad;
    }
  }
  EXPECT_GT(ok, 1000u);
  EXPECT_GT(bad, 1000u);
}

TEST(NdnName, UriForm) {
  EXPECT_EQ(parse_uri("/"), Name{});
  EXPECT_EQ(parse_uri("/com/example/www/a"), (Name{"com", "example", "www", "a"}));
  EXPECT_EQ(parse_uri("ndn:/a/b/"), (Name{"a", "b"}));
  EXPECT_EQ(parse_uri("/a/.../b"), (Name{"a", "", "b"}));
  EXPECT_EQ(parse_uri("/...."), (Name{"."}));
  EXPECT_EQ(parse_uri("/a%2Fb%00"), (Name{std::string("a/b\0", 4)}));
  EXPECT_THROW(parse_uri("a/b"), NameError);
  EXPECT_THROW(parse_uri("/a/../b"), NameError);
  EXPECT_THROW(parse_uri("/a%2"), NameError);
  EXPECT_THROW(parse_uri("/a%zz"), NameError);
  for (const Name& n : {Name{}, Name{""}, Name{"", ""}, Name{".", "..", "...", "a b", std::string("\x80\x01", 2)}}) {
    EXPECT_EQ(parse_uri(to_uri(n)), n) << to_uri(n);
  }
  EXPECT_EQ(to_uri({"a", ""}), "/a/...");
}

TEST(NdnName, FromUrls) {
  EXPECT_EQ(name_of_url("http://www.example.com/a/b?x=1#f"), (Name{"com", "example", "www", "a", "b"}));
  EXPECT_EQ(name_of_url("https://user@example.org:8080/"), (Name{"org", "example"}));
  EXPECT_EQ(name_of_url("example.org"), (Name{"org", "example"}));
  EXPECT_EQ(name_of_url("http://a.b//c/"), (Name{"b", "a", "", "c"}));  // a trailing / adds nothing, as in the URI form
  EXPECT_THROW(name_of_url("http:///path"), NameError);
}

// Every URL of the real list: its name survives encoding, parsing and the URI form.
TEST(NdnName, RealUrlListRoundTrips) {
  const std::string path = test::shared_data_path("names/iscx_url2016_benign_list_big_final.csv.gz");
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) GTEST_SKIP() << path << " is not present (../shared/data is optional)";
  char line[65536];
  size_t urls = 0, too_long = 0, max_components = 0;
  while (gzgets(f, line, sizeof line)) {
    std::string url(line);
    while (!url.empty() && (url.back() == '\n' || url.back() == '\r')) url.pop_back();
    if (url.empty() || url == "URLs") continue;
    const Name n = name_of_url(url);
    ++urls;
    max_components = std::max(max_components, n.size());
    EXPECT_EQ(parse_uri(to_uri(n)), n) << url;
    const Bytes pkt = encode_interest(n, static_cast<uint32_t>(urls));
    NdnName p;
    const NdnStatus st = ndn_parse_interest(pkt.data(), static_cast<uint32_t>(pkt.size()), &p);
    if (n.size() > static_cast<size_t>(kMaxComponents)) {
      EXPECT_EQ(st, NdnStatus::kTooManyComponents);
      ++too_long;
      continue;
    }
    ASSERT_EQ(st, NdnStatus::kOk) << url;
    ASSERT_EQ(name_of(pkt.data(), p), n) << url;
  }
  gzclose(f);
  EXPECT_GT(urls, 30000u);
  EXPECT_EQ(too_long, 0u) << "names longer than kMaxComponents; the longest has " << max_components;
}

}  // namespace
}  // namespace tandem::ndn
