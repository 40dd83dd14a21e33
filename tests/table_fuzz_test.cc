// The table fuzz target's checks (fuzz/table_invariants.h: LineReader and the IPv4, IPv6, NDN and
// L2 table loaders) run as an ordinary test under any compiler, on slices of the real BGP table and
// of NDN and L2 tables made from it, mutated (tests/mutation.h).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "fuzz/table_invariants.h"
#include "tests/mutation.h"

namespace tandem::fuzz {
namespace {

TEST(TableFuzz, MutatedTablesLoadOrFailCleanly) {
  std::vector<std::string> lines = lines_of_gz(TANDEM_SOURCE_DIR "/data/fib/iprbench_tier1_fulltable_prefixes.txt.gz", 400);
  ASSERT_EQ(lines.size(), 400u);
  // The table's IPv6 part, NDN names and MACs, so that every loader sees lines it accepts.
  lines.push_back("2001:db8::/32 7\n");
  lines.push_back("2a00:1450::/29\n");
  lines.push_back("/com/example/www 3\n");
  lines.push_back("/org/ndn 12\n");
  lines.push_back("02:00:5e:00:53:01 4\n");
  lines.push_back("0a:1b:2c:3d:4e:5f 65534\n");
  lines.push_back("1.2.3.0/24 16777214\n");
  lines.push_back("# a comment\n");
  // Found by table_fuzz: a last line that is a lone CR.
  const std::string cr_last = "1.0.0.0/8 4\n\n\r";
  EXPECT_EQ(check_table_input(reinterpret_cast<const uint8_t*>(cr_last.data()), cr_last.size()), nullptr);
  // Found by table_fuzz: an over-long line whose own text says "NUL byte".
  const std::string says_nul = "1.0.0.0/8 4\n" + std::string(10, 'x') + " NUL byte " + std::string(300, 'y') + "\n";
  EXPECT_EQ(check_table_input(reinterpret_cast<const uint8_t*>(says_nul.data()), says_nul.size()), nullptr);
  // Found by table_fuzz: a last line over the cap whose byte after the cap is a CR was cut to the
  // cap and accepted.
  const std::string cr_at_cap = std::string(256, 'x') + "\r" + std::string(100, 'y');
  EXPECT_EQ(check_table_input(reinterpret_cast<const uint8_t*>(cr_at_cap.data()), cr_at_cap.size()), nullptr);
  std::mt19937_64 rng(14);
  for (int i = 0; i < 4000; ++i) {
    std::string in;
    const int n = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < n; ++k) in += lines[rng() % lines.size()];
    if (i % 8 != 0) mutate(in, rng);
    const char* broke = check_table_input(reinterpret_cast<const uint8_t*>(in.data()), in.size());
    ASSERT_EQ(broke, nullptr) << "input " << i << ": " << broke << "\n--- input ---\n" << in;
  }
}

}  // namespace
}  // namespace tandem::fuzz
