// The FIB text loader: accepted syntax, derived next hops, and errors that name file and line.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "apps/ipv4/fib_loader.h"
#include "tests/test_util.h"

namespace tandem::ipv4 {
namespace {

class FibLoaderTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) { return test::write_temp_file("fib", name, text); }
  // The FibError message for a file containing `text`, or "" if it loaded.
  std::string error_of(const std::string& text) {
    const std::string path = write("bad.txt", text);
    try {
      load_fib(path);
    } catch (const FibError& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(FibLoaderTest, ParsesPrefixesNextHopsCommentsAndIpv6) {
  const std::string path = write("ok.txt",
                                 "# a comment\n"
                                 "\n"
                                 "10.0.0.0/8 3\n"
                                 "  192.168.1.0/24\t  7   # trailing comment\r\n"
                                 "2001:db8::/32\n"
                                 "1.2.3.4/32\n"
                                 "0.0.0.0/0 0\n"
                                 "10.1.2.3/8 4\n");
  const Fib f = load_fib(path);
  ASSERT_EQ(f.routes.size(), 4u);
  EXPECT_EQ(f.lines, 8u);
  EXPECT_EQ(f.ipv6_skipped, 1u);
  EXPECT_EQ(f.duplicates.count, 1u);
  EXPECT_EQ(f.host_bits_cleared, 1u);
  EXPECT_EQ(f.derived_next_hops, 1u);
  EXPECT_EQ(f.routes[0].prefix, 0x0A000000u);
  EXPECT_EQ(f.routes[0].len, 8);
  EXPECT_EQ(f.routes[0].next_hop, 4u) << "the later duplicate wins";
  EXPECT_EQ(f.routes[1].next_hop, 7u);
  EXPECT_EQ(f.routes[2].next_hop, derived_next_hop(0x01020304, 32, 16));
  EXPECT_LT(f.routes[2].next_hop, 16u);
  EXPECT_EQ(f.routes[3].len, 0);
  EXPECT_EQ(f.max_next_hop, std::max<uint32_t>(7, f.routes[2].next_hop));
}

TEST_F(FibLoaderTest, DerivedNextHopsAreSpreadAndStable) {
  // A documented rule users can rely on: pin a few values.
  EXPECT_EQ(derived_next_hop(0x01000000, 24, 16), derived_next_hop(0x01000000, 24, 16));
  std::vector<int> hist(16);
  for (uint32_t i = 0; i < 16000; ++i) ++hist[derived_next_hop(i << 8, 24, 16)];
  for (int h : hist) EXPECT_NEAR(h, 1000, 150);
}

TEST_F(FibLoaderTest, ReadsGzip) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string path = (dir / ("tandem_fib_" + std::to_string(getpid()) + ".txt.gz")).string();
  gzFile g = gzopen(path.c_str(), "wb");
  gzputs(g, "10.0.0.0/8 1\n11.0.0.0/8 2\n");
  gzclose(g);
  const Fib f = load_fib(path);
  EXPECT_EQ(f.routes.size(), 2u);
  std::filesystem::remove(path);
}

TEST_F(FibLoaderTest, ErrorsNameFileLineAndProblem) {
  const std::string e1 = error_of("10.0.0.0/8\n10.0.0.0/33\n");
  EXPECT_NE(e1.find("bad.txt:2:"), std::string::npos) << e1;
  EXPECT_NE(e1.find("over 32"), std::string::npos) << e1;
  EXPECT_NE(e1.find("10.0.0.0/33"), std::string::npos) << e1;

  const std::string e2 = error_of("# ok\nthis is garbage\n");
  EXPECT_NE(e2.find("bad.txt:2:"), std::string::npos) << e2;

  EXPECT_NE(error_of("10.0.0.0\n").find("missing /length"), std::string::npos);
  EXPECT_NE(error_of("10.0.0.256/8\n").find("bad IPv4 address"), std::string::npos);
  EXPECT_NE(error_of("10.0.0/8\n").find("bad IPv4 address"), std::string::npos);
  EXPECT_NE(error_of("10.0.0.0.0/8\n").find("bad IPv4 address"), std::string::npos);
  EXPECT_NE(error_of("10.0.0.0/\n").find("bad prefix length"), std::string::npos);
  EXPECT_NE(error_of("10.0.0.0/-1\n").find("bad prefix length"), std::string::npos);
  EXPECT_NE(error_of("10.0.0.0/8 x\n").find("next hop"), std::string::npos);
  EXPECT_NE(error_of("10.0.0.0/8 16777216\n").find("next hop"), std::string::npos);
  EXPECT_NE(error_of("10.0.0.0/8 1 2\n").find("too many columns"), std::string::npos);
  EXPECT_NE(error_of(std::string("10.0.0.0/8\n\x01\x02\xff\n", 14)).find("bad.txt:2:"), std::string::npos);
}

TEST_F(FibLoaderTest, MissingAndCorruptFiles) {
  try {
    load_fib("/nonexistent/table.txt");
    FAIL() << "no error";
  } catch (const FibError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/table.txt: cannot open"), std::string::npos) << e.what();
  }
  // A gzip header followed by garbage.
  const std::string path = write("corrupt.txt.gz", std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage-garbage", 25));
  try {
    load_fib(path);
    FAIL() << "no error";
  } catch (const FibError& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt.txt.gz"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem::ipv4
