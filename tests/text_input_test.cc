// Hostile text input: every reader (tables, rules, traces, key and URL lists) goes through
// LineReader, so NUL bytes, over-long lines, endless and truncated input fail the same way
// everywhere, naming the file and line; numbers out of range and silent surprises in tables and
// rule files are errors or warnings.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <string>
#include <vector>

#include "apps/acl/acl_rules.h"
#include "apps/dpi/ids_rules.h"
#include "apps/ipv4/fib_loader.h"
#include "apps/ipv6/fib6_loader.h"
#include "apps/l2/l2_loader.h"
#include "apps/ndn/ndn_app.h"
#include "apps/ndn/ndn_fib.h"
#include "core/batch.h"
#include "core/table_reader.h"

namespace tandem {
namespace {

std::string temp_file(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string gzip_file(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + "/" + name;
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
  return path;
}

// Every line of `path`, or the error's message after the lines read before it.
std::string read_all(const std::string& path, LineLimits lim = {}, std::vector<std::string>* lines = nullptr) {
  try {
    LineReader in(path, lim);
    for (std::string_view l; in.next(&l);) {
      if (lines) lines->emplace_back(l);
    }
    return "";
  } catch (const TableError& e) {
    return e.what();
  }
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(LineReader, ReadsLinesWithAndWithoutFinalNewline) {
  std::vector<std::string> lines;
  EXPECT_EQ(read_all(temp_file("a.txt", "one\r\ntwo\n\nthree"), {}, &lines), "");
  EXPECT_EQ(lines, (std::vector<std::string>{"one", "two", "", "three"}));
  lines.clear();
  EXPECT_EQ(read_all(gzip_file("a.txt.gz", "x\ny\n"), {}, &lines), "");
  EXPECT_EQ(lines, (std::vector<std::string>{"x", "y"}));
}

TEST(LineReader, ANulByteIsAnErrorNamingTheLineAndColumn) {
  const std::string e = read_all(temp_file("nul.txt", std::string("1.0.0.0/8 1\n2.0.0.0/8 2\0 3.0.0.0/8 3\n", 37)));
  EXPECT_TRUE(contains(e, "nul.txt:2: NUL byte at column 12")) << e;
  EXPECT_TRUE(contains(e, "\\x00")) << "the excerpt shows the byte: " << e;
}

TEST(LineReader, AnOverLongLineIsAnErrorAndTheReaderCanSkipIt) {
  const std::string path = temp_file("long.txt", "a\n" + std::string(10000, 'x') + "\nb\n");
  EXPECT_TRUE(contains(read_all(path), "long.txt:2: line too long (over 4095 bytes)"));
  // A caller that skips bad lines goes on after it (the rest of the line is not read as lines).
  LineReader in(path);
  std::string_view l;
  ASSERT_TRUE(in.next(&l));
  EXPECT_EQ(l, "a");
  EXPECT_THROW(in.next(&l), LineError);
  ASSERT_TRUE(in.next(&l));
  EXPECT_EQ(l, "b");
  EXPECT_EQ(in.line_number(), 3u);
  EXPECT_FALSE(in.next(&l));
}

TEST(LineReader, TheExcerptIsShortAndPrintable) {
  const std::string e = read_all(temp_file("ctl.txt", std::string(5000, '\x01') + "\n"));
  EXPECT_LT(e.size(), 500u) << "an error quotes at most a short excerpt";
  EXPECT_EQ(e.find('\x01'), std::string::npos);
}

TEST(LineReader, EndlessInputEndsWithAnError) {
  // /dev/zero: NUL bytes at once, never a newline.
  EXPECT_TRUE(contains(read_all("/dev/zero"), "NUL byte at column 1"));
  // Valid lines without end: the byte cap stops it.
  std::string many;
  for (int i = 0; i < 2000; ++i) many += "1.2.3.0/24 1\n";
  LineLimits lim;
  lim.max_bytes = 4096;
  EXPECT_TRUE(contains(read_all(temp_file("many.txt", many), lim), "input larger than 4096 bytes"));
}

TEST(LineReader, TruncatedGzipIsReportedAsTruncated) {
  std::string text;
  auto line = [](int i) { return std::to_string(1 + i % 200) + "." + std::to_string(i / 200) + ".0.0/16 " + std::to_string(i % 7); };
  for (int i = 0; i < 20000; ++i) text += line(i) + "\n";
  const std::string whole = gzip_file("whole.gz", text);
  std::ifstream f(whole, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::string cut = temp_file("cut.gz", bytes.substr(0, bytes.size() / 2));
  std::vector<std::string> lines;
  const std::string e = read_all(cut, {}, &lines);
  EXPECT_TRUE(contains(e, "truncated input")) << e;
  EXPECT_TRUE(contains(e, "cut.gz:" + std::to_string(lines.size() + 1) + ":")) << "names the cut line: " << e;
  // The lines before the cut are whole.
  for (size_t i = 0; i < lines.size(); ++i) ASSERT_EQ(lines[i], line(static_cast<int>(i)));
  // A loader says "truncated", not a syntax error about the cut line.
  try {
    ipv4::load_fib(cut);
    ADD_FAILURE() << "a truncated table must not load";
  } catch (const ipv4::FibError& x) {
    EXPECT_TRUE(contains(x.what(), "truncated input")) << x.what();
  }
}

TEST(Secrets, KeyFieldsAreRedactedInExcerpts) {
  EXPECT_EQ(redact_secrets("dir=out spi=0x10 key=0123456789abcdef authkey=ffff cipher=aes"),
            "dir=out spi=0x10 key=<redacted> authkey=<redacted> cipher=aes");
  EXPECT_EQ(redact_secrets("KEY=aa,PSK=bb;secret=cc monkey=dd"), "KEY=<redacted>,PSK=<redacted>;secret=<redacted> monkey=dd");
  const char kLine[] = "spi=1 key=00112233445566778899aabbccddeeff\x00\n";
  const std::string e = read_all(temp_file("sa.txt", std::string(kLine, sizeof kLine - 1)));
  EXPECT_TRUE(contains(e, "key=<redacted>")) << e;
  EXPECT_FALSE(contains(e, "00112233")) << "key material in an error: " << e;
}

TEST(TableLoaders, EveryLoaderRefusesNulBytes) {
  const std::string nul("1.0.0.0/8 1\x00 2.0.0.0/8 2\n", 25);
  EXPECT_THROW(ipv4::load_fib(temp_file("t4", nul)), ipv4::FibError);
  EXPECT_THROW(ipv6::load_fib6(temp_file("t6", std::string("2001:db8::/32 1\x00\n", 17))), ipv6::Fib6Error);
  EXPECT_THROW(acl::load_rules(temp_file("r", std::string("drop proto tcp\x00 dport 22\naccept\n", 31))), TableError);
  EXPECT_THROW(acl::load_trace(temp_file("tr", std::string("1 2 3 4 6\x00\n", 11))), TableError);
  EXPECT_THROW(ndn::load_ndn_fib(temp_file("n", std::string("/a 1\x00/b 2\n", 10))), TableError);
  EXPECT_THROW(dpi::load_ids_rules({temp_file("ids", std::string("alert tcp any any -> any 22 (content:\"a\"; sid:1;)\x00\n", 52))}),
               std::runtime_error);
  EXPECT_THROW(ndn::ndn_setup_from_urls(temp_file("u", std::string("http://a.com/x\x00http://b.com\n", 28)), 4, 0, 1),
               std::runtime_error);
}

TEST(TableLoaders, ANextHopEqualToTheFloodMarkerIsRefused) {
  const std::string flood = std::to_string(Verdict::kFloodPort);
  const std::string max = std::to_string(Verdict::kMaxPort);
  EXPECT_THROW(ipv4::load_fib(temp_file("f4", "1.0.0.0/8 " + flood + "\n")), ipv4::FibError);
  EXPECT_EQ(ipv4::load_fib(temp_file("m4", "1.0.0.0/8 " + max + "\n")).routes.at(0).next_hop, Verdict::kMaxPort);
  EXPECT_THROW(ipv6::load_fib6(temp_file("f6", "2001:db8::/32 " + flood + "\n")), ipv6::Fib6Error);
  EXPECT_THROW(ndn::load_ndn_fib(temp_file("fn", "/a " + flood + "\n")), TableError);
}

TEST(TableLoaders, DuplicateAndConflictingRoutesAreCountedWithTheirFirstLine) {
  const ipv4::Fib f = ipv4::load_fib(temp_file("dup4", "1.0.0.0/8 1\n2.0.0.0/8 2\n1.0.0.0/8 1\n2.0.0.0/8 3\n"));
  EXPECT_EQ(f.duplicates.count, 2u);
  EXPECT_EQ(f.duplicates.conflicting, 1u);
  const std::string w = f.duplicates.warning("routes");
  EXPECT_TRUE(contains(w, "2 duplicate routes (1 with another value; the last line wins), the first at ")) << w;
  EXPECT_TRUE(contains(w, "dup4:3")) << w;
  EXPECT_EQ(ipv4::load_fib(temp_file("nodup", "1.0.0.0/8 1\n")).duplicates.warning("routes"), "");
  const ipv6::Fib6 f6 = ipv6::load_fib6(temp_file("dup6", "2001:db8::/32 1\n2001:db8::/32 2\n"));
  EXPECT_EQ(f6.duplicates.conflicting, 1u);
  const ndn::NdnFibFile fn = ndn::load_ndn_fib(temp_file("dupn", "/a 1\n/a 1\n"));
  EXPECT_EQ(fn.duplicates.count, 1u);
  EXPECT_EQ(fn.duplicates.conflicting, 0u);
  l2::MacTable table(1024);
  const l2::L2LoadStats st = l2::load_l2_table(temp_file("dupl2", "02:00:00:00:00:01 1\n02:00:00:00:00:01 2\n"), table);
  EXPECT_EQ(st.duplicates.conflicting, 1u);
}

TEST(IdsRules, OutOfRangePositionsFailTheRuleInsteadOfBeingIgnored) {
  for (const char* opt : {"offset:2147483648", "depth:99999999999", "distance:-4294967296", "within:70000"}) {
    const std::string p = temp_file("off.rules", std::string("alert tcp any any -> any any (content:\"abc\"; ") + opt + "; sid:7;)\n");
    try {
      dpi::load_ids_rules({p});
      ADD_FAILURE() << opt << " must fail the rule";
    } catch (const std::runtime_error& e) {
      EXPECT_TRUE(contains(e.what(), "out of range")) << e.what();
    }
  }
  // A variable (byte_extract) is still taken as not applied.
  const dpi::IdsRuleSet s = dpi::load_ids_rules(
      {temp_file("var.rules", "alert tcp any any -> any any (content:\"abc\"; offset:myvar; sid:7;)\n")});
  ASSERT_EQ(s.rules.size(), 1u);
  EXPECT_EQ(s.ignored_options.count("offset (variable)"), 1u);
}

TEST(IdsRules, AnUnknownProtocolIsAnError) {
  const std::string p = temp_file("proto.rules", "alert tcpp any any -> any 22 (content:\"a\"; sid:1;)\n");
  try {
    dpi::load_ids_rules({p});
    ADD_FAILURE() << "an unknown protocol must fail the rule";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(contains(e.what(), "proto.rules:1: unknown protocol `tcpp`")) << e.what();
  }
  EXPECT_EQ(dpi::protocol_classes("http"), dpi::kClassTcp);
  EXPECT_EQ(dpi::protocol_classes("bogus"), 0u);
}

TEST(IdsRules, DuplicateSidsAreReported) {
  const dpi::IdsRuleSet s = dpi::load_ids_rules({temp_file(
      "dupsid.rules", "alert tcp any any -> any any (content:\"a\"; sid:5;)\nalert tcp any any -> any any (content:\"b\"; sid:5;)\n")});
  EXPECT_EQ(s.rules.size(), 2u);
  EXPECT_EQ(s.duplicate_sids, 1u);
  ASSERT_EQ(s.duplicate_sid_examples.size(), 1u);
  EXPECT_TRUE(contains(s.duplicate_sid_examples[0], "dupsid.rules:2: sid 5 already at ")) << s.duplicate_sid_examples[0];
}

TEST(AclRules, ASkippedLineKeepsItsNumber) {
  acl::LoadOptions o;
  o.skip_bad = true;
  const acl::RuleSet s = acl::load_rules(temp_file("skip.rules", "accept proto tcp\nbogus\ndefault drop\ndrop proto udp\n"), o);
  ASSERT_EQ(s.rules.size(), 2u);
  EXPECT_EQ(s.number, (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(s.errors.size(), 1u);
}

TEST(AclRules, TheTraceIsReadInChunks) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += std::to_string(i) + " 2 3 4 6\n";
  acl::TraceReader r(temp_file("trace", text));
  std::vector<acl::Header> h(300);
  size_t total = 0;
  for (size_t n; (n = r.read(h.data(), h.size())) > 0; total += n) ASSERT_EQ(h[0].src, total);
  EXPECT_EQ(total, 1000u);
}

}  // namespace
}  // namespace tandem
