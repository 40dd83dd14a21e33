// Outputs never overwrite an input and are never seen half-written (io/output_file.h); a second
// SIGINT removes the temporary files of outputs in progress (core/stop_signal.h).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/stop_signal.h"
#include "io/output_file.h"
#include "io/pcap_io.h"
#include "io/pcapng_writer.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tandem_output_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string read(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  static void write(const std::string& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }
  // Names in the directory, sorted.
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  // Expects check_outputs to refuse, naming every string of `needles`.
  static void expect_refused(const std::vector<NamedPath>& in, const std::vector<NamedPath>& out,
                             const std::vector<std::string>& needles) {
    try {
      check_outputs(in, out);
      ADD_FAILURE() << "not refused: " << out[0].flag << " " << out[0].path;
    } catch (const IoError& e) {
      for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    }
  }

  fs::path dir_;
};

TEST_F(OutputFileTest, CommitPutsTheWholeFileInPlace) {
  const std::string p = path("out.txt");
  write(p, "old contents");
  {
    OutputFile out(p);
    std::fputs("new contents", out.stream());
    std::fflush(out.stream());
    // Written and flushed but not committed: readers still see the old file, the new one is a
    // hidden temporary beside it.
    EXPECT_EQ(read(p), "old contents");
    ASSERT_EQ(listing().size(), 2u);
    EXPECT_EQ(listing()[0].rfind(".out.txt.tmp-", 0), 0u) << listing()[0];
    out.commit();
    EXPECT_TRUE(out.committed());
    out.commit();  // twice is fine
  }
  EXPECT_EQ(read(p), "new contents");
  EXPECT_EQ(listing(), std::vector<std::string>{"out.txt"});
}

TEST_F(OutputFileTest, NotCommittedLeavesTheDestinationAsItWas) {
  const std::string p = path("out.txt");
  write(p, "old contents");
  try {
    OutputFile out(p);
    std::fputs("half of it", out.stream());
    throw std::runtime_error("a failure mid-way");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(read(p), "old contents");
  EXPECT_EQ(listing(), std::vector<std::string>{"out.txt"}) << "the temporary file was removed";
  {
    OutputFile fresh(path("new.txt"));
    std::fputs("x", fresh.stream());
    fresh.discard();
    fresh.discard();
  }
  EXPECT_EQ(listing(), std::vector<std::string>{"out.txt"}) << "a discarded new file never appears";
}

TEST_F(OutputFileTest, PermissionsOfANewFileOrOfTheOneReplaced) {
  const mode_t mask = umask(022);
  write_text_file(path("new.txt"), "x");
  struct stat st;
  ASSERT_EQ(stat(path("new.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  chmod(path("new.txt").c_str(), 0640);
  write_text_file(path("new.txt"), "y");
  ASSERT_EQ(stat(path("new.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  umask(mask);
}

TEST_F(OutputFileTest, WritesThroughASymlinkToItsTarget) {
  const std::string target = path("target.txt"), link = path("link.txt");
  write(target, "old");
  fs::create_symlink("target.txt", link);  // relative, resolved from the link's directory
  write_text_file(link, "new");
  EXPECT_TRUE(fs::is_symlink(link)) << "the link stays a link";
  EXPECT_EQ(read(target), "new");
  // A dangling link gets its target created.
  fs::create_symlink("later.txt", path("dangling.txt"));
  write_text_file(path("dangling.txt"), "made");
  EXPECT_EQ(read(path("later.txt")), "made");
}

// Devices and pipes cannot be renamed over: they are written in place, also through the links of
// /proc/self/fd (what /dev/stdout leads to).
TEST_F(OutputFileTest, APipeIsWrittenInPlace) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const std::string p = "/proc/self/fd/" + std::to_string(fds[1]);
  EXPECT_NO_THROW(check_outputs({}, {{"--out", p}, {"--json", p}}));
  {
    OutputFile out(p);
    std::fputs("through the pipe", out.stream());
    out.commit();
  }
  close(fds[1]);
  char buf[64] = {};
  EXPECT_EQ(::read(fds[0], buf, sizeof buf - 1), 16);
  EXPECT_STREQ(buf, "through the pipe");
  close(fds[0]);
  write_text_file("/dev/null", "discarded");
  EXPECT_TRUE(listing().empty());
}

TEST_F(OutputFileTest, ErrorsNameTheFile) {
  const std::string missing = path("no/such/dir/out.txt");
  try {
    OutputFile out(missing);
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  EXPECT_THROW(OutputFile(dir_.string()), IoError) << "a directory";
  // /dev/full takes writes in place (it is not a regular file) and fails them: commit() reports it.
  if (access("/dev/full", W_OK) == 0) {
    OutputFile full("/dev/full");
    std::fputs("anything", full.stream());
    try {
      full.commit();
      FAIL() << "no error";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find("/dev/full: write failed"), std::string::npos) << e.what();
    }
  }
}

TEST_F(OutputFileTest, AnOutputMustNotBeAnInput) {
  const std::string cap = path("in.pcap");
  write(cap, "capture bytes");
  const std::vector<NamedPath> in = {{"--fib", path("fib.txt")}, {"--pcap", cap}};
  write(path("fib.txt"), "10.0.0.0/8 1\n");
  expect_refused(in, {{"--out", cap}}, {"--out " + cap, "--pcap " + cap, "input"});
  // The same file under other names: a symbolic link, a hard link, a path with dot segments.
  fs::create_symlink(cap, path("sym.pcap"));
  expect_refused(in, {{"--out", path("sym.pcap")}}, {"sym.pcap", "--pcap"});
  fs::create_hard_link(cap, path("hard.pcap"));
  expect_refused(in, {{"--out", path("hard.pcap")}}, {"hard.pcap", "--pcap"});
  expect_refused(in, {{"--json", (dir_ / "." / "fib.txt").string()}}, {"--json", "--fib"});
  EXPECT_EQ(read(cap), "capture bytes");
  // Other files, files not made yet and inputs that name nothing pass.
  write(path("old_out.pcap"), "a previous output");
  EXPECT_NO_THROW(check_outputs(in, {{"--out", path("old_out.pcap")}, {"--json", path("new.json")}}));
  EXPECT_NO_THROW(check_outputs({{"--keys", "-"}, {"--app", "ipv4"}}, {{"--out", path("x.pcap")}}));
}

TEST_F(OutputFileTest, TwoOutputsMustNotBeOneFile) {
  const std::string a = path("a.out");
  expect_refused({}, {{"--out", a}, {"--json", a}}, {"--json " + a, "--out " + a});
  expect_refused({}, {{"--out", a}, {"--json", (dir_ / "sub" / ".." / "a.out").string()}}, {"--json"});
  write(a, "exists");
  fs::create_symlink(a, path("b.out"));
  expect_refused({}, {{"--out", a}, {"--json", path("b.out")}}, {"b.out"});
  // Writing /dev/null twice destroys nothing.
  EXPECT_NO_THROW(check_outputs({}, {{"--out", "/dev/null"}, {"--json", "/dev/null"}}));
}

TEST_F(OutputFileTest, CaptureWritersPublishOnlyOnClose) {
  const uint8_t frame[60] = {0x42};
  {
    PcapngWriter ng(path("direct.pcapng"));  // needs no libpcap
    ng.write(frame, 60, 60, 1);
    ng.flush();
    EXPECT_FALSE(fs::exists(path("direct.pcapng"))) << "visible before close()";
  }
  EXPECT_TRUE(listing().empty()) << "a writer destroyed without close() left a file";
#ifdef TANDEM_HAVE_PCAP
  for (const char* name : {"w.pcapng", "w.pcap"}) {
    const std::string p = path(name);
    {
      PacketWriter w(p, format_from_path(p));
      w.write(frame, 60, 60, 1);
      w.flush();
      EXPECT_FALSE(fs::exists(p)) << name << ": visible before close()";
    }
    EXPECT_FALSE(fs::exists(p)) << name << ": a writer destroyed without close() left a file";
    {
      PacketWriter w(p, format_from_path(p));
      w.write(frame, 60, 60, 1);
      w.close();
    }
    EXPECT_EQ(load_pcap(p).size(), 1u) << name;
  }
  EXPECT_EQ(listing(), (std::vector<std::string>{"w.pcap", "w.pcapng"})) << "no temporary file left behind";
#endif
}

TEST_F(OutputFileTest, CaptureFormatFollowsTheExtension) {
  EXPECT_EQ(capture_format("--out", "x.pcap"), PacketWriter::Format::kPcap);
  EXPECT_EQ(capture_format("--out", "X.PCAPNG"), PacketWriter::Format::kPcapng);
  EXPECT_EQ(capture_format("--out", "/dev/null"), PacketWriter::Format::kPcap);
  for (const char* bad : {"x.pcap.gz", "x.txt", "capture"}) {
    try {
      capture_format("--out", bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--out ") + bad + ": Tandem writes captures as .pcap or .pcapng"),
                std::string::npos)
          << e.what();
    }
  }
}

// The first SIGINT only asks to stop; a second one ends the process at once, after removing the
// temporary files of outputs in progress. Run in a child, whose signal state is its own.
TEST_F(OutputFileTest, SecondSignalRemovesTemporaryFiles) {
  const std::string p = path("interrupted.pcap");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    install_stop_handler();
    OutputFile out(p);
    std::fputs("partial", out.stream());
    std::fflush(out.stream());
    raise(SIGINT);
    if (stop_signal() != SIGINT) _exit(2);
    raise(SIGINT);  // ends the process
    _exit(3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  EXPECT_TRUE(listing().empty()) << "left: " << (listing().empty() ? "" : listing()[0]);
}

}  // namespace
}  // namespace tandem
