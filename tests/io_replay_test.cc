// ReplaySource: order, loops, batch capacity, back-pressure from a dry pool, truncation.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "core/packet_pool.h"
#include "io/packet_source.h"
#include "io/packet_store.h"

namespace tandem {
namespace {

// Frame i has a distinct length and content, and wire_len/timestamp derived from i.
PacketStore make_store(size_t n, uint32_t base_len = 60) {
  PacketStore s;
  std::vector<uint8_t> f;
  for (size_t i = 0; i < n; ++i) {
    f.resize(base_len + i % 50);
    for (size_t j = 0; j < f.size(); ++j) f[j] = static_cast<uint8_t>(i * 7 + j);
    s.add(f.data(), static_cast<uint32_t>(f.size()), static_cast<uint32_t>(f.size() + 4), 1000 + i);
  }
  return s;
}

// Checks that batch entry `b` holds store frame `k`, truncated to the pool's frame limit.
void expect_frame(const PacketPool& pool, const PacketBatch& batch, uint32_t b,
                  const PacketStore& s, size_t k) {
  const uint32_t len = std::min(s.caplen[k], pool.max_frame());
  ASSERT_EQ(batch.len[b], len) << "frame " << k;
  ASSERT_EQ(batch.wire_len[b], s.wire_len[k]) << "frame " << k;
  ASSERT_EQ(batch.ts_ns[b], s.ts_ns[k]) << "frame " << k;
  ASSERT_EQ(batch.verdict[b], Verdict::kUnset) << "frame " << k;
  ASSERT_EQ(0, std::memcmp(pool.data(batch.cell[b]), s.frame(k), len)) << "frame " << k;
}

// Drains `src` (with a bounded number of calls), freeing cells after each burst; returns how
// many frames it served and checks each against the store, in order.
uint64_t drain(ReplaySource& src, PacketPool& pool, const PacketStore& s, int max_calls = 100000) {
  PacketBatch batch;
  uint64_t total = 0;
  for (int c = 0; c < max_calls; ++c) {
    batch.clear();
    const uint32_t n = src.rx_burst(pool, batch);
    if (n == 0) break;
    EXPECT_EQ(batch.size, n);
    for (uint32_t i = 0; i < n; ++i) expect_frame(pool, batch, i, s, (total + i) % s.size());
    total += n;
    pool.free_bulk(batch.cell.data(), batch.size);
  }
  return total;
}

TEST(ReplaySource, ServesAllFramesInOrderOnce) {
  const PacketStore s = make_store(1000);
  PacketPool pool(4096);
  ReplaySource src(s, 1);
  EXPECT_EQ(drain(src, pool, s), 1000u);
  EXPECT_EQ(src.served(), 1000u);
  PacketBatch batch;
  EXPECT_EQ(src.rx_burst(pool, batch), 0u) << "exhausted stays exhausted";
  EXPECT_EQ(pool.available(), pool.num_cells()) << "no cell leaked";
}

// Frames are copied as whole 64-byte lines where the store and the cell have room for the last
// line, else byte by byte: every length from 0 to 300 (ending the store with the shortest, whose
// last line would run past it), into cells of 256 bytes (a 128-byte frame limit, longer frames
// truncated). A line copied too far would reach the next cell's headroom, which stays as filled.
TEST(ReplaySource, CopiesEveryLengthUpToTheStoresEnd) {
  PacketStore s;
  std::vector<uint8_t> f;
  for (int len = 300; len >= 0; --len) {
    f.resize(len);
    for (int j = 0; j < len; ++j) f[j] = static_cast<uint8_t>(len * 31 + j);
    s.add(f.data(), static_cast<uint32_t>(len), static_cast<uint32_t>(len), 0);
  }
  PacketPool pool(512, 256);
  ASSERT_EQ(pool.max_frame(), 128u);
  for (uint32_t c = 0; c < pool.num_cells(); ++c) {
    std::memset(pool.data(c) - PacketPool::kHeadroom, 0xA5, PacketPool::kHeadroom);
  }
  ReplaySource src(s, 1);
  PacketBatch batch;
  uint64_t k = 0;
  while (src.rx_burst(pool, batch) != 0) {
    for (uint32_t i = 0; i < batch.size; ++i, ++k) {
      expect_frame(pool, batch, i, s, k);
      const uint8_t* head = pool.data(batch.cell[i]) - PacketPool::kHeadroom;
      for (uint32_t j = 0; j < PacketPool::kHeadroom; ++j) ASSERT_EQ(head[j], 0xA5) << "frame " << k;
    }
    batch.clear();  // the cells stay taken: each frame lands in a fresh one
  }
  EXPECT_EQ(k, 301u);
  for (uint32_t c = 0; c < pool.num_cells(); ++c) {
    const uint8_t* head = pool.data(c) - PacketPool::kHeadroom;
    for (uint32_t j = 0; j < PacketPool::kHeadroom; ++j) ASSERT_EQ(head[j], 0xA5) << "cell " << c;
  }
}

TEST(ReplaySource, Loops) {
  const PacketStore s = make_store(10);
  PacketPool pool(1024);
  ReplaySource src(s, 3);
  PacketBatch batch;
  // 30 frames fit one batch: the loop boundary is crossed inside a burst.
  EXPECT_EQ(src.rx_burst(pool, batch), 30u);
  for (uint32_t i = 0; i < 30; ++i) expect_frame(pool, batch, i, s, i % 10);
  pool.free_bulk(batch.cell.data(), batch.size);
  batch.clear();
  EXPECT_EQ(src.rx_burst(pool, batch), 0u);
  EXPECT_EQ(src.served(), 30u);

  ReplaySource src2(s, 40);  // 400 frames: two bursts, the second partial
  EXPECT_EQ(drain(src2, pool, s), 400u);

  const PacketStore big = make_store(300);
  ReplaySource src3(big, 4);
  EXPECT_EQ(drain(src3, pool, big), 1200u);
}

TEST(ReplaySource, ForeverLoops) {
  const PacketStore s = make_store(7);
  PacketPool pool(1024);
  ReplaySource src(s, 0);
  EXPECT_EQ(drain(src, pool, s, 50), 50u * PacketBatch::kCapacity);
  EXPECT_EQ(src.served(), 50u * PacketBatch::kCapacity);
  EXPECT_NE(src.describe().find("forever"), std::string::npos) << src.describe();
}

TEST(ReplaySource, RespectsBatchCapacity) {
  const PacketStore s = make_store(1000);
  PacketPool pool(4096);
  ReplaySource src(s, 1);
  PacketBatch batch;
  batch.size = pool.alloc_bulk(batch.cell.data(), 100);  // a batch already holding 100 packets
  EXPECT_EQ(src.rx_burst(pool, batch), PacketBatch::kCapacity - 100);
  EXPECT_TRUE(batch.full());
  for (uint32_t i = 100; i < batch.size; ++i) expect_frame(pool, batch, i, s, i - 100);
  EXPECT_EQ(src.rx_burst(pool, batch), 0u) << "a full batch takes nothing";
  EXPECT_EQ(src.served(), PacketBatch::kCapacity - 100);
  pool.free_bulk(batch.cell.data(), batch.size);
  batch.clear();
  // Nothing was skipped: the next burst continues with frame 156.
  EXPECT_EQ(src.rx_burst(pool, batch), PacketBatch::kCapacity);
  expect_frame(pool, batch, 0, s, PacketBatch::kCapacity - 100);
  pool.free_bulk(batch.cell.data(), batch.size);
}

TEST(ReplaySource, NearlyDryPool) {
  const PacketStore s = make_store(100);
  PacketPool pool(64);
  std::vector<uint32_t> held(61);
  ASSERT_EQ(pool.alloc_bulk(held.data(), 61), 61u);  // 3 cells left
  ReplaySource src(s, 1);
  PacketBatch batch;
  EXPECT_EQ(src.rx_burst(pool, batch), 3u);
  for (uint32_t i = 0; i < 3; ++i) expect_frame(pool, batch, i, s, i);
  EXPECT_EQ(pool.available(), 0u);
  EXPECT_EQ(src.rx_burst(pool, batch), 0u) << "dry pool";
  EXPECT_EQ(batch.size, 3u);
  // After the pool refills, serving resumes at frame 3: back-pressure loses nothing.
  pool.free_bulk(held.data(), 61);
  pool.free_bulk(batch.cell.data(), batch.size);
  batch.clear();
  EXPECT_EQ(src.rx_burst(pool, batch), 64u);
  for (uint32_t i = 0; i < 64; ++i) expect_frame(pool, batch, i, s, 3 + i);
  EXPECT_EQ(src.served(), 67u);
  pool.free_bulk(batch.cell.data(), batch.size);
}

TEST(ReplaySource, TruncatesOversizedFrames) {
  PacketStore s;
  std::vector<uint8_t> f(1000);
  for (size_t j = 0; j < f.size(); ++j) f[j] = static_cast<uint8_t>(j * 3);
  s.add(f.data(), 1000, 1000, 1);
  s.add(f.data(), 100, 1000, 2);
  PacketPool pool(8, 256);  // max_frame() = 128
  ASSERT_EQ(pool.max_frame(), 128u);
  ReplaySource src(s, 1);
  PacketBatch batch;
  ASSERT_EQ(src.rx_burst(pool, batch), 2u);
  EXPECT_EQ(batch.len[0], 128u);
  EXPECT_EQ(batch.wire_len[0], 1000u);
  EXPECT_EQ(0, std::memcmp(pool.data(batch.cell[0]), f.data(), 128));
  EXPECT_EQ(batch.len[1], 100u);
  EXPECT_EQ(batch.wire_len[1], 1000u);
}

TEST(ReplaySource, EmptyStore) {
  const PacketStore s;
  PacketPool pool(8);
  ReplaySource src(s, 0);
  PacketBatch batch;
  EXPECT_EQ(src.rx_burst(pool, batch), 0u);
  EXPECT_EQ(pool.available(), 8u);
}

TEST(PacketStore, AddAndTotals) {
  PacketStore s;
  const uint8_t a[3] = {1, 2, 3};
  s.add(a, 3, 64, 10);
  s.add(nullptr, 0, 0, 11);
  s.add(a + 1, 2, 2, 12);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s.total_caplen(), 5u);
  EXPECT_EQ(s.offset[2], 3u);
  EXPECT_EQ(s.frame(2)[0], 2);
  EXPECT_EQ(s.wire_len[0], 64u);
  EXPECT_EQ(s.ts_ns[1], 11u);
}

// Not a benchmark, only a guard against an accidentally slow hot path (e.g. a per-packet
// allocation): 64-byte frames should replay at well over 1 Mpps even in a debug build.
TEST(ReplaySource, ReplaysQuickly) {
  const PacketStore s = make_store(4096);
  PacketPool pool(1024);
  ReplaySource src(s, 0);
  PacketBatch batch;
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t n = 0;
  for (int c = 0; c < 20000; ++c) {
    batch.clear();
    n += src.rx_burst(pool, batch);
    pool.free_bulk(batch.cell.data(), batch.size);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(n, 20000u * PacketBatch::kCapacity);
  RecordProperty("mpps", static_cast<int>(n / secs / 1e6));
  EXPECT_GT(n / secs, 1e6);
}

// A queue's copy holds the chosen frames, in the chosen order, with their lengths and times, and a
// replay of it serves what a replay through the order in the whole store serves.
TEST(PacketStore, SelectLaysOutTheChosenFramesInOrder) {
  PacketStore s;
  for (uint32_t i = 0; i < 40; ++i) {
    std::vector<uint8_t> f(20 + i * 3, static_cast<uint8_t>(i));
    s.add(f.data(), static_cast<uint32_t>(f.size()), static_cast<uint32_t>(f.size() + i), 1000 + i);
  }
  const std::vector<uint32_t> which = {7, 3, 39, 0, 3, 21};
  const PacketStore q = s.select(which);
  ASSERT_EQ(q.size(), which.size());
  uint64_t expect_off = 0;
  for (size_t k = 0; k < which.size(); ++k) {
    const uint32_t i = which[k];
    EXPECT_EQ(q.caplen[k], s.caplen[i]);
    EXPECT_EQ(q.wire_len[k], s.wire_len[i]);
    EXPECT_EQ(q.ts_ns[k], s.ts_ns[i]);
    EXPECT_EQ(q.offset[k], expect_off) << "back to back";
    expect_off += q.caplen[k];
    EXPECT_EQ(0, std::memcmp(q.frame(k), s.frame(i), s.caplen[i]));
  }
  EXPECT_EQ(q.bytes.size(), expect_off);
  PacketPool p1(64, 256), p2(64, 256);
  ReplaySource through_order(s, 1, &which), copy(q, 1);
  PacketBatch a, b;
  ASSERT_EQ(through_order.rx_burst(p1, a), which.size());
  ASSERT_EQ(copy.rx_burst(p2, b), which.size());
  for (size_t k = 0; k < which.size(); ++k) {
    EXPECT_EQ(a.len[k], b.len[k]);
    EXPECT_EQ(a.wire_len[k], b.wire_len[k]);
    EXPECT_EQ(0, std::memcmp(p1.data(a.cell[k]), p2.data(b.cell[k]), a.len[k]));
  }
  EXPECT_EQ(s.select({}).size(), 0u);
}

}  // namespace
}  // namespace tandem
