// The L2 switch's MAC table (apps/l2): the cuckoo table against std::unordered_map under random
// insert/update/erase sequences (lookup, lookup_batch and its pipeline distances), filling to the
// advertised load and to kFull, the keys that collide with naive empty markers, concurrent readers
// during cuckoo moves, the learning-switch semantics, MAC text and the table file loader.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include "apps/l2/l2_loader.h"
#include "apps/l2/mac_table.h"
#include "tests/test_util.h"

namespace tandem::l2 {
namespace {

using S = MacTable::Status;
using Reference = std::unordered_map<uint64_t, uint32_t>;

constexpr uint64_t kBroadcast = 0xFFFFFFFFFFFFull;

uint32_t ref_lookup(const Reference& ref, uint64_t mac) {
  const auto it = ref.find(mac);
  return it == ref.end() ? kMiss : it->second;
}

// Distinct random 48-bit MACs, with the all-zero and all-ones MACs among them.
std::vector<uint64_t> random_macs(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::unordered_map<uint64_t, bool> seen;
  std::vector<uint64_t> macs = {0, kBroadcast};
  seen[0] = seen[kBroadcast] = true;
  while (macs.size() < n) {
    const uint64_t m = rng() & kMacMask;
    if (seen.emplace(m, true).second) macs.push_back(m);
  }
  return macs;
}

// Every way of looking up `keys` agrees with the reference.
void expect_lookups_match(const MacTable& t, const Reference& ref, const std::vector<uint64_t>& keys) {
  std::vector<uint32_t> want(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) want[i] = ref_lookup(ref, keys[i]);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(t.lookup(keys[i]), want[i]) << "scalar, MAC " << format_mac(keys[i]);
  }
  std::vector<uint32_t> got(keys.size());
  auto check = [&](const char* what) {
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(got[i], want[i]) << what << ", key " << i << " of " << keys.size() << ", MAC " << format_mac(keys[i]);
    }
  };
  std::fill(got.begin(), got.end(), 12345u);
  t.lookup_batch(keys.data(), got.data(), keys.size());
  check("lookup_batch");
  for (uint32_t d : {1u, 4u, 8u, 16u, 32u, 64u}) {
    std::fill(got.begin(), got.end(), 12345u);
    mac_lookup_pipeline(t, keys.data(), got.data(), keys.size(), d);
    check("pipeline");
  }
}

TEST(L2MacTable, SlotEncodingNeverMistakesAnEmptySlotForAKey) {
  EXPECT_TRUE(mac_slot_empty(kEmptySlot));
  for (uint64_t mac : {uint64_t{0}, kBroadcast, uint64_t{0x0123456789AB}}) {
    for (uint32_t port : {0u, 1u, kMaxPort}) {
      const uint64_t slot = mac_slot_make(mac, port);
      EXPECT_NE(slot, kEmptySlot);
      EXPECT_FALSE(mac_slot_empty(slot));
      EXPECT_EQ(mac_slot_mac(slot), mac);
      EXPECT_EQ(mac_slot_port(slot), port);
    }
  }
  const uint64_t bucket[8] = {};
  EXPECT_EQ(mac_bucket_probe(bucket, 0), kMiss) << "a zero-filled bucket must not hold MAC 0";
}

TEST(L2MacTable, SizingIsAPowerOfTwoOfCacheLineBuckets) {
  static_assert(kSlotsPerBucket * sizeof(uint64_t) == 64);
  for (size_t cap : {size_t{0}, size_t{1}, size_t{100}, size_t{1000}, size_t{1} << 20}) {
    MacTable t(cap);
    EXPECT_EQ(t.bucket_count() & (t.bucket_count() - 1), 0u);
    EXPECT_GE(t.bucket_count(), 2u);
    EXPECT_GE(t.capacity(), cap);
    EXPECT_LE(t.capacity(), t.slot_count());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.slots()) % 64, 0u);
    EXPECT_EQ(t.size(), 0u);
    EXPECT_EQ(t.load_factor(), 0.0);
  }
  EXPECT_EQ(MacTable(1 << 20).bucket_count(), size_t{1} << 18);  // 1M / (0.9 * 8) -> 2^18
  EXPECT_EQ(MacTable(1000, 1.0).bucket_count(), 128u);
  EXPECT_THROW(MacTable(10, 0.0), std::invalid_argument);
  EXPECT_THROW(MacTable(10, 1.5), std::invalid_argument);
}

TEST(L2MacTable, ZeroAndBroadcastMacsAreOrdinaryKeys) {
  MacTable t(64);
  EXPECT_EQ(t.lookup(0), kMiss);
  EXPECT_EQ(t.lookup(kBroadcast), kMiss);
  EXPECT_EQ(t.insert(0, 0), S::kInserted);
  EXPECT_EQ(t.lookup(0), 0u);
  EXPECT_EQ(t.lookup(kBroadcast), kMiss);
  EXPECT_EQ(t.insert(kBroadcast, kMaxPort), S::kInserted);
  EXPECT_EQ(t.lookup(kBroadcast), kMaxPort);
  EXPECT_EQ(t.size(), 2u);
  EXPECT_TRUE(t.erase(0));
  EXPECT_FALSE(t.erase(0));
  EXPECT_EQ(t.lookup(0), kMiss);
  EXPECT_EQ(t.lookup(kBroadcast), kMaxPort);
  EXPECT_EQ(t.size(), 1u);
  // Values that are not MACs or ports are refused; a value over 48 bits never matches its low bits.
  EXPECT_EQ(t.insert(kBroadcast + 1, 1), S::kBadMac);
  EXPECT_EQ(t.insert(5, kMaxPort + 1), S::kBadPort);
  EXPECT_EQ(t.insert(5, kMiss), S::kBadPort);
  EXPECT_EQ(t.lookup(kBroadcast | (uint64_t{1} << 48)), kMiss);
  EXPECT_FALSE(t.erase(kBroadcast | (uint64_t{1} << 48)));
  EXPECT_EQ(t.size(), 1u);
  expect_lookups_match(t, {{kBroadcast, kMaxPort}}, {0, kBroadcast, kBroadcast | (uint64_t{1} << 48), 7});
}

TEST(L2MacTable, DuplicateMacsUpdateInPlace) {
  MacTable t(1000);
  EXPECT_EQ(t.insert(0x001122334455, 3), S::kInserted);
  const uint64_t v = t.version();
  EXPECT_EQ(t.insert(0x001122334455, 3), S::kUpdated);
  EXPECT_EQ(t.version(), v) << "the same port again must not write";
  EXPECT_EQ(t.insert(0x001122334455, 9), S::kUpdated);
  EXPECT_GT(t.version(), v);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.lookup(0x001122334455), 9u);
  // Updates of keys sitting in either bucket of a crowded table, sizes unchanged.
  MacTable small(512, 1.0);
  Reference ref;
  const auto macs = random_macs(480, 7);
  for (size_t i = 0; i < macs.size(); ++i) {
    ASSERT_EQ(small.insert(macs[i], static_cast<uint32_t>(i)), S::kInserted);
    ref[macs[i]] = static_cast<uint32_t>(i);
  }
  for (size_t i = 0; i < macs.size(); ++i) {
    ASSERT_EQ(small.insert(macs[i], static_cast<uint32_t>(i + 1000)), S::kUpdated);
    ref[macs[i]] = static_cast<uint32_t>(i + 1000);
  }
  EXPECT_EQ(small.size(), macs.size());
  expect_lookups_match(small, ref, macs);
}

// Random operations on a small, crowded table (cuckoo paths, kFull and erasures all happen),
// checked against the reference after every step batch, with every batch size.
TEST(L2MacTable, RandomOperationsMatchAReferenceMap) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    MacTable t(4096, 1.0);  // 512 buckets, 4096 slots
    Reference ref;
    const auto pool = random_macs(6000, seed);  // more MACs than slots
    std::mt19937_64 rng(seed * 77);
    uint64_t fulls = 0;
    const size_t batch_sizes[] = {0, 1, 7, 64, 1000};
    for (int round = 0; round < 40; ++round) {
      for (int op = 0; op < 1000; ++op) {
        const uint64_t mac = pool[rng() % pool.size()];
        if (rng() % 100 < 70) {
          const uint32_t port = static_cast<uint32_t>(rng() % (kMaxPort + 1));
          const bool present = ref.count(mac) != 0;
          const S s = t.insert(mac, port);
          if (s == S::kFull) {
            ASSERT_FALSE(present) << "an update never needs a free slot";
            ++fulls;
          } else {
            ASSERT_EQ(s, present ? S::kUpdated : S::kInserted);
            ref[mac] = port;
          }
        } else {
          ASSERT_EQ(t.erase(mac), ref.erase(mac) == 1);
        }
        ASSERT_EQ(t.size(), ref.size());
      }
      // Present keys, absent keys, and a mix, in each batch size.
      std::vector<uint64_t> keys;
      for (size_t i = 0; i < batch_sizes[round % 5]; ++i) keys.push_back(pool[rng() % pool.size()]);
      expect_lookups_match(t, ref, keys);
    }
    std::vector<uint64_t> all(pool.begin(), pool.end());
    all.push_back(0x0000DEADBEEF);  // never inserted
    expect_lookups_match(t, ref, all);
    EXPECT_GT(t.cuckoo_moves(), 0u) << "the test should exercise cuckoo paths";
    EXPECT_GT(fulls, 0u) << "the test should exercise kFull";
    EXPECT_GT(t.load_factor(), 0.9);
  }
}

TEST(L2MacTable, OneMillionEntryTableFillsToItsAdvertisedLoad) {
  MacTable t(1 << 20);
  const size_t n = t.capacity();  // 0.9 of 2^21 slots: 1887436 entries
  ASSERT_GE(n, size_t{1} << 20);
  const auto macs = random_macs(n + 100000, 11);
  Reference ref;
  ref.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t port = static_cast<uint32_t>(mix64(macs[i]) % (kMaxPort + 1));
    ASSERT_EQ(t.insert(macs[i], port), S::kInserted) << "entry " << i << " at load " << t.load_factor();
    ref[macs[i]] = port;
  }
  EXPECT_EQ(t.size(), n);
  EXPECT_NEAR(t.load_factor(), MacTable::kDefaultMaxLoad, 1e-6);
  EXPECT_LE(t.longest_path(), MacTable::kMaxPathLength);
  expect_lookups_match(t, ref, macs);  // n present, 100000 absent
}

TEST(L2MacTable, FillingUntilFullLosesNothing) {
  for (uint64_t seed : {5u, 6u}) {
    MacTable t(8192, 1.0);  // 1024 buckets
    Reference ref;
    const auto macs = random_macs(t.slot_count() + 1, seed);
    size_t i = 0;
    S s = S::kInserted;
    for (; i < macs.size(); ++i) {
      s = t.insert(macs[i], static_cast<uint32_t>(i % 1000));
      if (s != S::kInserted) break;
      ref[macs[i]] = static_cast<uint32_t>(i % 1000);
    }
    ASSERT_EQ(s, S::kFull) << "a table cannot hold more keys than slots";
    const double max_load = t.load_factor();
    EXPECT_GT(max_load, 0.93) << "a BFS of up to 5 moves should reach a high load";
    std::printf("seed %llu: first kFull at load %.4f (%zu of %zu slots), %llu moves, longest path %u\n",
                static_cast<unsigned long long>(seed), max_load, t.size(), t.slot_count(),
                static_cast<unsigned long long>(t.cuckoo_moves()), t.longest_path());
    // A failed insert changes nothing: not a slot, not the size, not the version.
    const std::vector<uint64_t> before(t.slots(), t.slots() + t.slot_count());
    const uint64_t version = t.version();
    EXPECT_EQ(t.insert(macs[i], 1), S::kFull);
    EXPECT_TRUE(std::equal(before.begin(), before.end(), t.slots()));
    EXPECT_EQ(t.version(), version);
    EXPECT_EQ(t.size(), ref.size());
    EXPECT_EQ(t.lookup(macs[i]), kMiss);
    // Every key inserted before is still there with its port; updates still work when full.
    expect_lookups_match(t, ref, macs);
    EXPECT_EQ(t.insert(macs[0], 999), S::kUpdated);
    EXPECT_EQ(t.lookup(macs[0]), 999u);
  }
}

// Readers never miss a present key while a writer's cuckoo paths move entries around them.
TEST(L2MacTable, ConcurrentReadersNeverMissAMovingKey) {
  MacTable t(16384, 1.0);
  const auto macs = random_macs(2 * t.slot_count(), 21);
  const size_t resident = 4000;  // always present: the readers look them up
  for (size_t i = 0; i < resident; ++i) ASSERT_EQ(t.insert(macs[i], static_cast<uint32_t>(i % 100)), S::kInserted);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> misses{0}, wrong{0}, rounds{0};
  auto reader = [&](bool batch) {
    std::vector<uint32_t> ports(resident);
    while (!stop.load(std::memory_order_relaxed)) {
      if (batch) {
        t.lookup_batch(macs.data(), ports.data(), resident);
      } else {
        for (size_t i = 0; i < resident; ++i) ports[i] = t.lookup(macs[i]);
      }
      for (size_t i = 0; i < resident; ++i) {
        if (ports[i] == kMiss) ++misses;
        else if (ports[i] != i % 100) ++wrong;
      }
      ++rounds;
    }
  };
  std::thread scalar_reader(reader, false);
  std::thread batch_reader(reader, true);
  // Fill the table to kFull with other keys, then churn at ~99% load for 1.5 s (erase a random
  // filler, insert a new one): nearly every insert applies a cuckoo path, often moving resident
  // keys. Without the readers' sequence check this shows a few misses per second on a 2-core VM.
  const uint64_t moves_before = t.cuckoo_moves();
  std::vector<size_t> fillers;
  size_t next = resident;
  while (t.insert(macs[next], 7) == S::kInserted) fillers.push_back(next++);
  std::mt19937_64 rng(5);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  while (std::chrono::steady_clock::now() < until) {
    const size_t k = rng() % fillers.size();
    t.erase(macs[fillers[k]]);
    fillers[k] = fillers.back();
    fillers.pop_back();
    for (size_t tries = 0; tries < macs.size(); ++tries) {
      next = next + 1 < macs.size() ? next + 1 : resident;
      if (t.lookup(macs[next]) == kMiss && t.insert(macs[next], 7) == S::kInserted) {
        fillers.push_back(next);
        break;
      }
    }
  }
  stop = true;
  scalar_reader.join();
  batch_reader.join();
  EXPECT_GT(t.cuckoo_moves(), moves_before);
  EXPECT_GT(rounds.load(), 0u);
  EXPECT_EQ(misses.load(), 0u);
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_EQ(t.size(), resident + fillers.size());
  for (size_t i = 0; i < resident; ++i) ASSERT_EQ(t.lookup(macs[i]), i % 100);
}

TEST(L2MacTable, LearningSwitchForwardsFloodsAndRelearns) {
  MacTable t(1024);
  uint64_t a = 0, b = 0, mcast = 0, unknown = 0;
  ASSERT_TRUE(parse_mac("00:1b:21:3a:4f:01", &a));
  ASSERT_TRUE(parse_mac("02:00:00:00:00:02", &b));  // locally administered unicast
  ASSERT_TRUE(parse_mac("01:00:5e:00:00:fb", &mcast));
  ASSERT_TRUE(parse_mac("00:1b:21:3a:4f:99", &unknown));
  EXPECT_EQ(forward(t, a), kFlood) << "unknown destination";
  EXPECT_EQ(learn(t, a, 1), S::kInserted);
  EXPECT_EQ(learn(t, b, 2), S::kInserted);
  EXPECT_EQ(forward(t, a), 1u);
  EXPECT_EQ(forward(t, b), 2u);
  EXPECT_EQ(forward(t, unknown), kFlood);
  EXPECT_EQ(forward(t, kBroadcast), kFlood);
  EXPECT_EQ(forward(t, mcast), kFlood);
  // A group source is no station: not learned.
  EXPECT_EQ(learn(t, mcast, 3), S::kBadMac);
  EXPECT_EQ(learn(t, kBroadcast, 3), S::kBadMac);
  EXPECT_EQ(t.size(), 2u);
  // Even a group MAC inserted by hand is flooded: forward() does not look group addresses up.
  ASSERT_EQ(t.insert(mcast, 4), S::kInserted);
  EXPECT_EQ(t.lookup(mcast), 4u);
  EXPECT_EQ(forward(t, mcast), kFlood);
  // The station moved: the next frame from it re-binds it.
  EXPECT_EQ(learn(t, a, 5), S::kUpdated);
  EXPECT_EQ(forward(t, a), 5u);
  EXPECT_EQ(learn(t, a, kMaxPort + 1), S::kBadPort);
  const std::vector<uint64_t> dst = {a, b, mcast, unknown, kBroadcast, 0};
  std::vector<uint32_t> ports(dst.size());
  forward_batch(t, dst.data(), ports.data(), dst.size());
  for (size_t i = 0; i < dst.size(); ++i) EXPECT_EQ(ports[i], forward(t, dst[i])) << i;
  EXPECT_EQ(ports, (std::vector<uint32_t>{5, 2, kFlood, kFlood, kFlood, kFlood}));
}

TEST(L2MacText, ParsesStrictlyAndFormatsRoundTrip) {
  uint64_t m = 0;
  ASSERT_TRUE(parse_mac("aa:bb:cc:dd:ee:ff", &m));
  EXPECT_EQ(m, 0xAABBCCDDEEFFull);
  ASSERT_TRUE(parse_mac("AA:Bb:cC:00:09:F0", &m));
  EXPECT_EQ(m, 0xAABBCC0009F0ull);
  ASSERT_TRUE(parse_mac("00:00:00:00:00:00", &m));
  EXPECT_EQ(m, 0u);
  ASSERT_TRUE(parse_mac("ff:ff:ff:ff:ff:ff", &m));
  EXPECT_EQ(m, kBroadcast);
  EXPECT_TRUE(mac_is_group(m));
  ASSERT_TRUE(parse_mac("01:00:00:00:00:00", &m));
  EXPECT_TRUE(mac_is_group(m));
  ASSERT_TRUE(parse_mac("fe:ff:ff:ff:ff:ff", &m));
  EXPECT_FALSE(mac_is_group(m));
  EXPECT_EQ(format_mac(0xAABBCC0009F0ull), "aa:bb:cc:00:09:f0");
  EXPECT_EQ(format_mac(0), "00:00:00:00:00:00");
  EXPECT_EQ(format_mac(kBroadcast), "ff:ff:ff:ff:ff:ff");
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1000; ++i) {
    const uint64_t mac = rng() & kMacMask;
    ASSERT_TRUE(parse_mac(format_mac(mac), &m));
    ASSERT_EQ(m, mac);
  }
  for (const char* bad : {"", "aa:bb:cc:dd:ee", "aa:bb:cc:dd:ee:f", "aa:bb:cc:dd:ee:ff:", "aa:bb:cc:dd:ee:ff:00",
                          "a:bb:cc:dd:ee:fff", "aaa:bb:cc:dd:ee:f", "aa-bb-cc-dd-ee-ff", "aa.bb.cc.dd.ee.ff",
                          "aabb.ccdd.eeff", "aabbccddeeff", "aa:bb:cc:dd:ee:fg", "gg:bb:cc:dd:ee:ff",
                          " aa:bb:cc:dd:ee:f", "aa:bb:cc:dd:ee:f ", "aa:bb:cc:dd:ee: f", "aa::b:cc:dd:ee:ff",
                          "+a:bb:cc:dd:ee:ff", "0x:bb:cc:dd:ee:ff", "aa:bb:cc:dd:ee;ff", "aa:bb:cc:dd:ee:ff\n"}) {
    m = 12345;
    EXPECT_FALSE(parse_mac(bad, &m)) << '"' << bad << '"';
    EXPECT_EQ(m, 12345u) << "untouched on failure: " << bad;
  }
  EXPECT_FALSE(parse_mac(std::string_view("aa:bb:cc:dd:ee:f\0", 17), &m));
}

class L2LoaderTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) { return test::write_temp_file("l2", name, text); }
  // The L2TableError message for a file containing `text`, or "" if it loaded.
  std::string error_of(const std::string& text) {
    const std::string path = write("bad.txt", text);
    MacTable t(100);
    try {
      load_l2_table(path, t);
    } catch (const L2TableError& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(L2LoaderTest, LoadsEntriesCommentsDuplicatesAndGzip) {
  const std::string text =
      "# static entries\n"
      "\n"
      "00:1b:21:3a:4f:01 3\n"
      "  02:00:00:00:00:02\t 0   # trailing comment\r\n"
      "00:00:00:00:00:00 65534\n"
      "00:1B:21:3A:4F:01 7\n";
  for (bool gz : {false, true}) {
    std::string path = write("ok.txt", text);
    if (gz) {
      path += ".gz";
      gzFile g = gzopen(path.c_str(), "wb");
      ASSERT_NE(g, nullptr);
      gzwrite(g, text.data(), static_cast<unsigned>(text.size()));
      gzclose(g);
    }
    MacTable t(100);
    const L2LoadStats st = load_l2_table(path, t);
    EXPECT_EQ(st.path, path);
    EXPECT_EQ(st.lines, 6u);
    EXPECT_EQ(st.entries, 4u);
    EXPECT_EQ(st.duplicates.count, 1u);
    EXPECT_EQ(st.max_port, 65534u);
    EXPECT_EQ(t.size(), 3u);
    EXPECT_EQ(t.lookup(0x001B213A4F01), 7u) << "the later duplicate wins";
    EXPECT_EQ(t.lookup(0x020000000002), 0u);
    EXPECT_EQ(t.lookup(0), 65534u);
  }
}

TEST_F(L2LoaderTest, ErrorsNameFileLineAndLine) {
  const std::string ok = "# header\n00:00:00:00:00:01 1\n";
  auto expect_error = [&](const std::string& bad_line, const std::string& what) {
    const std::string msg = error_of(ok + bad_line + "\n00:00:00:00:00:02 2\n");
    EXPECT_NE(msg.find("bad.txt:3: " + what), std::string::npos) << msg;
    EXPECT_NE(msg.find("`" + bad_line + "`"), std::string::npos) << msg;
  };
  expect_error("00:00:00:00:00:0g 1", "bad MAC address");
  expect_error("00-00-00-00-00-03 1", "bad MAC address");
  expect_error("0:00:00:00:00:03 1", "bad MAC address");
  expect_error("00:00:00:00:00:03", "missing port");
  expect_error("00:00:00:00:00:03 65535", "port must be an integer 0..65534");
  expect_error("00:00:00:00:00:03 -1", "port must be an integer");
  expect_error("00:00:00:00:00:03 3x", "port must be an integer");
  expect_error("00:00:00:00:00:03 3 4", "too many columns");
  expect_error("01:00:5e:00:00:01 3", "group (multicast/broadcast) MAC");
  expect_error("ff:ff:ff:ff:ff:ff 3", "group (multicast/broadcast) MAC");
  MacTable t(10);
  try {
    load_l2_table("/nonexistent/l2.txt", t);
    ADD_FAILURE() << "no error";
  } catch (const L2TableError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/l2.txt: cannot open"), std::string::npos) << e.what();
  }
}

TEST_F(L2LoaderTest, AFullTableIsAnErrorNamingTheLine) {
  // A 16-slot table (2 buckets) and 40 distinct MACs: find where a twin table fills up.
  const auto macs = random_macs(40, 9);
  std::string text = "# many\n";
  size_t full_at = 0;
  MacTable twin(16, 1.0);
  for (size_t i = 0; i < macs.size(); ++i) {
    const uint64_t mac = macs[i] & ~kMacGroupBit;  // the loader refuses group MACs
    text += format_mac(mac) + " " + std::to_string(i) + "\n";
    if (full_at == 0 && twin.insert(mac, static_cast<uint32_t>(i)) == S::kFull) full_at = i;
  }
  ASSERT_GT(full_at, 0u);
  const std::string path = write("full.txt", text);
  MacTable t(16, 1.0);
  std::string msg;
  try {
    load_l2_table(path, t);
  } catch (const L2TableError& e) {
    msg = e.what();
  }
  EXPECT_EQ(t.size(), full_at) << "the lines before it stay loaded";
  EXPECT_NE(msg.find("full.txt:" + std::to_string(full_at + 2) + ": MAC table full"), std::string::npos) << msg;
  EXPECT_NE(msg.find(format_mac(macs[full_at] & ~kMacGroupBit)), std::string::npos) << msg;
}

}  // namespace
}  // namespace tandem::l2
