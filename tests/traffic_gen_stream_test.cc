// The generator in chunks (TrafficGenerator, what `tandem gen` streams) makes generate()'s frames,
// and the sizes it holds in memory are bounded: flows by count and kMaxGenFlows, whole captures in
// memory by the machine's memory.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "io/traffic_gen.h"

namespace tandem {
namespace {

void expect_throws_naming(const std::function<void()>& f, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

TEST(TrafficGenerator, ChunksMakeTheSameFramesAsGenerate) {
  const std::vector<std::pair<uint32_t, uint8_t>> fib = {{0x0A000000, 8}, {0x14010000, 16}, {0xC0000201, 32}};
  for (const char* spec : {"count=5000,size=imix,proto=tcp,flows=50,seed=9", "count=4001,dst=fib,flows=0,seed=2",
                           "count=3000,dst=fib,flows=300,zipf=1.1,size=1518,seed=3"}) {
    const GenSpec g = parse_gen_spec(spec);
    const PacketStore whole = generate(g, fib);
    TrafficGenerator gen(g, fib);
    PacketStore chunk;
    uint64_t at = 0, n;
    while ((n = gen.next(chunk, 777)) != 0) {  // not a multiple of IMIX's blocks of 12
      ASSERT_EQ(chunk.size(), n);
      for (size_t i = 0; i < n; ++i, ++at) {
        ASSERT_LT(at, whole.size()) << spec;
        ASSERT_EQ(chunk.caplen[i], whole.caplen[at]) << spec << " frame " << at;
        ASSERT_EQ(chunk.wire_len[i], whole.wire_len[at]) << spec << " frame " << at;
        ASSERT_EQ(chunk.ts_ns[i], whole.ts_ns[at]) << spec << " frame " << at;
        ASSERT_EQ(0, std::memcmp(chunk.frame(i), whole.frame(at), chunk.caplen[i])) << spec << " frame " << at;
      }
    }
    EXPECT_EQ(at, g.count) << spec;
    EXPECT_EQ(gen.next(chunk, 777), 0u) << "nothing after the end";
  }
}

TEST(TrafficGenerator, FlowsAreBounded) {
  expect_throws_naming([] { parse_gen_spec("count=10,flows=1000000000"); }, {"flows=1000000000", "maximum"});
  expect_throws_naming([] { parse_gen_spec("count=10,flows=11"); }, {"flows=11", "count=10"});
  EXPECT_EQ(parse_gen_spec("count=10,flows=10").flows, 10u);
  GenSpec g;
  g.count = 100;
  g.flows = 101;  // set directly, not parsed: the generators check too
  expect_throws_naming([&] { TrafficGenerator gen(g); }, {"flows=101", "count=100"});
  expect_throws_naming([&] { generate(g); }, {"flows=101"});
}

TEST(TrafficGenerator, ACountBeyondMemoryIsRefusedInMemoryOnly) {
  GenSpec g;
  g.count = 1000000000000000ull;  // 10^15 frames: petabytes
  expect_throws_naming([&] { validate_gen_spec(g); }, {"count=1000000000000000", "memory"});
  expect_throws_naming([&] { generate(g); }, {"memory"});
  // In chunks it is only a long stream.
  TrafficGenerator gen(g);
  PacketStore chunk;
  EXPECT_EQ(gen.next(chunk, 10), 10u);
  EXPECT_EQ(chunk.size(), 10u);
}

}  // namespace
}  // namespace tandem
