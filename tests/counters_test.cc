// Counters::count, the CPU paths' one pass over a finished burst, against the per-frame calls
// (received, then verdict) on bursts of every kind of verdict.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "core/batch.h"
#include "core/counters.h"

namespace tandem {
namespace {

void expect_same(const Counters& a, const Counters& b) {
  EXPECT_EQ(a.rx_packets, b.rx_packets);
  EXPECT_EQ(a.rx_bytes, b.rx_bytes);
  EXPECT_EQ(a.tx_packets, b.tx_packets);
  EXPECT_EQ(a.tx_bytes, b.tx_bytes);
  EXPECT_EQ(a.tx_flooded, b.tx_flooded);
  EXPECT_EQ(a.drops, b.drops);
  EXPECT_EQ(a.tx_per_port, b.tx_per_port);
}

// Verdicts of every kind: each port in range, ports past the vector, flooding and every drop
// reason, in random bursts of every size.
TEST(Counters, CountMatchesPerFrameCalls) {
  std::mt19937 rng(7);
  Counters burst_counted(5), per_frame(5);
  uint64_t drops = 0, flooded = 0, past = 0;
  for (int round = 0; round < 2000; ++round) {
    PacketBatch b;
    b.size = round % (PacketBatch::kCapacity + 1);
    for (uint32_t i = 0; i < b.size; ++i) {
      b.len[i] = static_cast<uint16_t>(rng() % 1600);
      switch (rng() % 4) {
        case 0:
          b.verdict[i] = Verdict::drop(static_cast<DropReason>(1 + rng() % (kDropReasonCount - 1)));
          ++drops;
          break;
        case 1:
          b.verdict[i] = Verdict::kFloodPort;
          ++flooded;
          break;
        case 2:
          b.verdict[i] = 5 + rng() % 100;  // no per-port counter: counted in tx only
          ++past;
          break;
        default:
          b.verdict[i] = rng() % 5;
      }
      per_frame.received(b.len[i]);
      per_frame.verdict(b.verdict[i], b.len[i]);
    }
    burst_counted.count(b);
  }
  expect_same(burst_counted, per_frame);
  EXPECT_TRUE(burst_counted.balanced());
  EXPECT_GT(drops, 1000u);
  EXPECT_GT(flooded, 1000u);
  EXPECT_GT(past, 1000u);
  EXPECT_EQ(burst_counted.dropped(), drops);
  EXPECT_EQ(burst_counted.tx_flooded, flooded);
}

TEST(Counters, CountWithoutPorts) {
  Counters c;  // an app that declares no ports
  PacketBatch b;
  b.size = 3;
  b.len[0] = 60;
  b.len[1] = 1500;
  b.len[2] = 0;
  b.verdict[0] = 0;
  b.verdict[1] = Verdict::drop(DropReason::kNoRoute);
  b.verdict[2] = Verdict::kFloodPort;
  c.count(b);
  EXPECT_EQ(c.rx_packets, 3u);
  EXPECT_EQ(c.rx_bytes, 1560u);
  EXPECT_EQ(c.tx_packets, 2u);
  EXPECT_EQ(c.tx_bytes, 60u);
  EXPECT_EQ(c.tx_flooded, 1u);
  EXPECT_EQ(c.drops[static_cast<int>(DropReason::kNoRoute)], 1u);
  EXPECT_TRUE(c.balanced());
}

}  // namespace
}  // namespace tandem
