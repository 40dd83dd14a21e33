// The NDN FIB (apps/ndn/ndn_fib.h) against a plain reference (a map of prefixes, longest first) on
// names from the real URL list and on edge cases; scalar and batched lookups from parsed Interest
// packets; the FIB file loader's errors.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "apps/ndn/ndn_fib.h"
#include "core/table_reader.h"
#include "tests/test_util.h"

namespace tandem::ndn {
namespace {

uint32_t reference(const std::map<Name, uint32_t>& fib, const Name& name) {
  for (size_t k = name.size() + 1; k-- > 0;) {
    auto it = fib.find(Name(name.begin(), name.begin() + static_cast<long>(k)));
    if (it != fib.end()) return it->second;
  }
  return kNoRoute;
}

std::vector<Name> url_names(size_t limit) {
  std::vector<Name> out;
  const std::string path = test::shared_data_path("names/iscx_url2016_benign_list_big_final.csv.gz");
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return out;
  char line[65536];
  while (out.size() < limit && gzgets(f, line, sizeof line)) {
    std::string url(line);
    while (!url.empty() && (url.back() == '\n' || url.back() == '\r')) url.pop_back();
    if (url.empty() || url == "URLs") continue;
    out.push_back(name_of_url(url));
  }
  gzclose(f);
  return out;
}

// Checks every name, scalar from components, scalar and batched from encoded Interests.
void check_all(const NdnFib& fib, const std::map<Name, uint32_t>& ref, const std::vector<Name>& names) {
  std::vector<std::vector<uint8_t>> pkts;
  std::vector<NdnName> parsed(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    pkts.push_back(encode_interest(names[i], static_cast<uint32_t>(i)));
    ASSERT_EQ(ndn_parse_interest(pkts[i].data(), static_cast<uint32_t>(pkts[i].size()), &parsed[i]), NdnStatus::kOk);
  }
  std::vector<const uint8_t*> ptrs;
  for (auto& p : pkts) ptrs.push_back(p.data());
  std::vector<uint32_t> batch(names.size() + 1, 0xABCDu);
  fib.lookup_batch(ptrs.data(), parsed.data(), batch.data(), names.size());
  EXPECT_EQ(batch.back(), 0xABCDu) << "lookup_batch wrote past the end";
  size_t bad = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const uint32_t want = reference(ref, names[i]);
    const uint32_t a = fib.lookup(names[i]);
    const uint32_t b = fib.lookup(pkts[i].data(), parsed[i]);
    if (a != want || b != want || batch[i] != want) {
      if (++bad <= 5) ADD_FAILURE() << to_uri(names[i]) << ": want " << want << " got " << a << "/" << b << "/" << batch[i];
    }
  }
  EXPECT_EQ(bad, 0u);
}

TEST(NdnFib, EdgeCases) {
  NdnFib fib(4);
  std::map<Name, uint32_t> ref;
  auto add = [&](const Name& n, uint32_t nh) {
    const auto st = fib.add(n, nh);
    EXPECT_TRUE(st == NdnFib::Status::kOk || st == NdnFib::Status::kReplaced);
    ref[n] = nh;
  };
  const std::vector<Name> probes = {{}, {"com"}, {"com", "example"}, {"com", "example", ""}, {"com", "", "x"},
                                    {"org"}, {"com", "exampl"}, {"com", "examplee"}, {std::string(300, 'a')},
                                    {std::string(300, 'a'), "b"}, {"a", "b", "c", "d", "e", "f", "g", "h"}};
  check_all(fib, ref, probes);  // empty FIB: no route anywhere
  add({"com"}, 1);
  add({"com", "example"}, 2);
  add({"com", ""}, 3);                 // an empty component
  add({std::string(300, 'a')}, 4);     // a 3-byte TLV-LENGTH
  check_all(fib, ref, probes);
  add({}, 9);                          // the default route
  add({"com", "example"}, 5);          // replaced
  EXPECT_EQ(fib.add({"com", "example"}, 5), NdnFib::Status::kReplaced);
  EXPECT_EQ(fib.size(), 5u);
  check_all(fib, ref, probes);
  EXPECT_EQ(fib.add(Name(kMaxComponents + 1, "x"), 1), NdnFib::Status::kTooManyComponents);
}

TEST(NdnFib, RealUrlNamesAgreeWithReference) {
  const std::vector<Name> names = url_names(40000);
  if (names.empty()) GTEST_SKIP() << "../shared/data/names is not present";
  std::mt19937_64 rng(3);
  NdnFib fib(16);  // starts small: the table must grow on its own
  std::map<Name, uint32_t> ref;
  for (const Name& n : names) {  // a random prefix of each name, a third of them
    if (rng() % 3) continue;
    const size_t k = n.empty() ? 0 : 1 + rng() % n.size();
    const Name p(n.begin(), n.begin() + static_cast<long>(k));
    const uint32_t nh = static_cast<uint32_t>(rng() % 64);
    fib.add(p, nh);
    ref[p] = nh;
  }
  EXPECT_EQ(fib.size(), ref.size());
  std::vector<Name> probes = names;
  for (int i = 0; i < 2000; ++i) {  // unrelated and near-miss names
    Name x = names[rng() % names.size()];
    if (!x.empty()) x.back() += "x";
    probes.push_back(x);
    probes.push_back({"zz" + std::to_string(i)});
  }
  check_all(fib, ref, probes);
}

TEST(NdnFib, LoaderErrorsNameFileAndLine) {
  auto write = [](const std::string& name, const std::string& text) {
    const std::string p = testing::TempDir() + name;
    FILE* f = std::fopen(p.c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
    return p;
  };
  const NdnFibFile ok = load_ndn_fib(write("ok.fib", "# fib\n/com/example 3\n\n/ 1\n/com/example 4\n/a/.../b 2\n"));
  ASSERT_EQ(ok.routes.size(), 3u);
  EXPECT_EQ(ok.duplicates.count, 1u);
  EXPECT_EQ(ok.routes[0].second, 4u);
  EXPECT_EQ(ok.routes[2].first, (Name{"a", "", "b"}));
  const std::pair<std::string, std::string> bad[] = {
      {"/com 1\ncom 2\n", ":2: NDN URI must start with '/'"},
      {"/com\n", ":1: missing next hop"},
      {"/com 1 2\n", ":1: too many columns"},
      {"/com x\n", ":1: next hop must be an integer"},
      {"/a/../b 1\n", ":1: NDN URI component `..` is reserved"},
  };
  int i = 0;
  for (const auto& [text, want] : bad) {
    const std::string p = write("bad" + std::to_string(i++) + ".fib", text);
    try {
      load_ndn_fib(p);
      ADD_FAILURE() << "loaded: " << text;
    } catch (const tandem::TableError& e) {
      EXPECT_NE(std::string(e.what()).find(p + want), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tandem::ndn
