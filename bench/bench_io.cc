// `tandem bench io`: the forwarding rate of live ports between processes, Tandem against DPDK's
// testpmd on the same virtual devices, in the same run. Three processes in a line, each on cores
// of its own:
//
//   generator (testpmd txonly) -> port in -> FORWARDER -> port out -> sink (testpmd rxonly)
//
// The forwarder is Tandem (the ipv4 app on a FIB, the full BGP table by default, dpdk: ports) or
// testpmd in io mode (the anchor: it forwards without looking at the packets). The rate is what
// the sink receives, sampled every second by testpmd; each row is the median of the samples after
// a warm-up. The generator's offered rate is printed beside it, so a row the generator limits is
// visible as such. Backends: memif (two memif links, shared memory between the processes) and
// veth (two veth pairs in a network namespace the bench makes for itself; testpmd on DPDK's
// af_packet driver, Tandem on its own AF_PACKET rings).
#include <fcntl.h>
#include <signal.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_report.h"
#include "cli/commands.h"
#include "core/machine_info.h"
#include "core/usage_error.h"

namespace tandem::cli {

namespace {

struct BenchIoOptions {
  std::string fib = "data/fib/iprbench_tier1_fulltable_prefixes.txt.gz";
  std::string testpmd;  // default: .deps/testpmd/testpmd, then dpdk-testpmd on the PATH
  std::string backends = "memif";
  std::string sizes = "64,1500";
  std::string queues = "1";
  std::string forwarders = "tandem,testpmd";
  std::string dst = "8.8.8.8";
  std::string cores;
  std::string tandem_args;  // more flags for Tandem's run (e.g. --app echo, --burst 32)
  double seconds = 5;
  double warmup = 2;
  int repeat = 3;  // each row this many times, the forwarders taking turns
  bool hugepages = false;  // every process's EAL memory on reserved 2 MiB pages
  bool memif_zero_copy = false;  // the forwarder is both links' memif client, in zero-copy mode
  std::string json;
};

using Clock = std::chrono::steady_clock;

// In a forked child: runs argv[0] (looked up on the PATH) with argv; returns only if it could not.
void exec_argv(const std::vector<std::string>& argv) {
  std::vector<char*> a;
  for (const std::string& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  execvp(a[0], a.data());
}

// A child process whose standard output and error are read, line by line, by a thread.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::vector<int>& cpus) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("bench io: pipe");
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("bench io: fork");
    if (pid_ == 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int c : cpus) CPU_SET(c, &set);
      if (!cpus.empty()) sched_setaffinity(0, sizeof set, &set);
      dup2(fds[1], STDOUT_FILENO);
      dup2(fds[1], STDERR_FILENO);
      const int null = open("/dev/null", O_RDONLY);
      if (null >= 0) dup2(null, STDIN_FILENO);
      exec_argv(argv);
      std::fprintf(stderr, "bench io: cannot run %s\n", argv[0].c_str());
      _exit(127);
    }
    close(fds[1]);
    fd_ = fds[0];
    reader_ = std::thread([this] {
      std::string part;
      char buf[4096];
      for (ssize_t n; (n = read(fd_, buf, sizeof buf)) > 0;) {
        part.append(buf, static_cast<size_t>(n));
        for (size_t nl; (nl = part.find('\n')) != std::string::npos; part.erase(0, nl + 1)) {
          std::lock_guard<std::mutex> lock(mutex_);
          lines_.push_back({Clock::now(), part.substr(0, nl)});
        }
      }
    });
  }
  ~Child() { stop(); }

  // Waits until a line holding `needle` has come (true), the process has ended or `timeout_s` passed.
  bool wait_for(const std::string& needle, double timeout_s) {
    const auto until = Clock::now() + std::chrono::duration<double>(timeout_s);
    for (size_t seen = 0; Clock::now() < until;) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (; seen < lines_.size(); ++seen) {
          if (lines_[seen].text.find(needle) != std::string::npos) return true;
        }
      }
      if (ended()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  // The numbers after `key` in the lines that came between t0 and t1.
  std::vector<double> values(const std::string& key, Clock::time_point t0, Clock::time_point t1) {
    std::vector<double> v;
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Line& l : lines_) {
      const size_t k = l.text.find(key);
      if (l.at < t0 || l.at > t1 || k == std::string::npos) continue;
      v.push_back(std::strtod(l.text.c_str() + k + key.size(), nullptr));
    }
    return v;
  }
  // The lines that start with `prefix`.
  std::vector<std::string> starting(const std::string& prefix) {
    std::vector<std::string> v;
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Line& l : lines_) {
      if (l.text.rfind(prefix, 0) == 0) v.push_back(l.text);
    }
    return v;
  }
  std::string tail(size_t n) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string s;
    for (size_t i = lines_.size() > n ? lines_.size() - n : 0; i < lines_.size(); ++i) s += lines_[i].text + "\n";
    return s;
  }
  // The exit status in words ("exit 0", "signal 9"), once it has ended.
  std::string status() {
    if (!ended()) return "running";
    if (WIFEXITED(status_)) return "exit " + std::to_string(WEXITSTATUS(status_));
    if (WIFSIGNALED(status_)) return "signal " + std::to_string(WTERMSIG(status_));
    return "?";
  }
  bool ended() {
    if (status_ >= 0) return true;
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) == pid_) status_ = st;
    return status_ >= 0;
  }
  // SIGINT (testpmd and Tandem both drain and exit), SIGKILL after 10 s.
  void stop() {
    if (pid_ > 0 && !ended()) {
      kill(pid_, SIGINT);
      const auto until = Clock::now() + std::chrono::seconds(10);
      while (!ended() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (!ended()) {
        kill(pid_, SIGKILL);
        int st = 0;
        waitpid(pid_, &st, 0);
        status_ = st;
      }
    }
    if (reader_.joinable()) reader_.join();
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  struct Line {
    Clock::time_point at;
    std::string text;
  };
  pid_t pid_ = -1;
  int fd_ = -1;
  int status_ = -1;
  std::thread reader_;
  std::mutex mutex_;
  std::vector<Line> lines_;
};

std::string join_cpus(const std::vector<int>& c) {
  std::string s;
  for (int x : c) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// The EAL memory each process reserves, MiB.
constexpr int kEalMiB = 1024;

// The EAL arguments every process gets: no PCI, shared files or telemetry, so that the processes
// do not see each other's state. By default no hugepages either, so that nothing on the machine
// needs setting up; with them (`--hugepages`), memory of the process's own (--in-memory) and
// addresses as IOVAs, so that an mbuf pool is one piece at one stride (Tandem's cells) as it is
// without hugepages, rather than objects kept within physical pages.
// A memif client in zero-copy mode shares its EAL memory with the server by one file a memseg list:
// it needs hugepages in single files.
std::string eal_base(const std::vector<int>& lcores, bool hugepages, bool single_files = false) {
  const std::string memory = hugepages ? std::string("--in-memory --iova-mode=va") + (single_files ? " --single-file-segments" : "")
                                       : "--no-huge --no-shconf";
  return memory + " --no-pci -m " + std::to_string(kEalMiB) + " --no-telemetry -l " + join_cpus(lcores);
}

// Free 2 MiB pages of the machine's reserve (/proc/meminfo), -1 where it does not say.
long free_hugepages_2m() {
  std::ifstream in("/proc/meminfo");
  long free = -1, size_kb = 0;
  for (std::string key; in >> key;) {
    long v = 0;
    in >> v;
    if (key == "HugePages_Free:") free = v;
    if (key == "Hugepagesize:") size_kb = v;
    in.ignore(1 << 10, '\n');
  }
  return size_kb == 2048 ? free : -1;
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> w;
  std::string cur;
  for (char c : s) {
    if (c == ' ') {
      if (!cur.empty()) w.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) w.push_back(cur);
  return w;
}

struct Ports {
  std::string gen, fwd, sink;       // the --vdev arguments of each process
  std::string tandem_rx, tandem_tx;  // Tandem's --rx and --tx for the forwarder's
  bool tandem_dpdk = true;           // Tandem's ports are DPDK's (it gets --dpdk)
};

// Copy mode: the forwarder serves the generator's link and is the sink's client, and the memif
// driver copies every frame into and out of the links' shared buffers on both sides. Zero copy:
// the forwarder is the client of both links with zero-copy=yes, so the links' buffers are its own
// mbufs and only the generator and the sink (the servers) copy, as a router would be set up
// beside VPP or another memif peer.
Ports memif_ports(const std::string& dir, bool zero_copy) {
  const auto m = [&](int i, const char* role, const char* sock) {
    return "--vdev net_memif" + std::to_string(i) + ",role=" + role + ",socket=" + dir + "/" + sock +
           ",socket-abstract=no" + (zero_copy && std::string(role) == "client" ? ",zero-copy=yes" : "");
  };
  if (zero_copy) {
    return {m(0, "server", "in.sock"), m(0, "client", "in.sock") + " " + m(1, "client", "out.sock"),
            m(0, "server", "out.sock"), "dpdk:net_memif0", "dpdk:net_memif1"};
  }
  return {m(0, "client", "in.sock"), m(0, "server", "in.sock") + " " + m(1, "client", "out.sock"),
          m(0, "server", "out.sock"), "dpdk:net_memif0", "dpdk:net_memif1"};
}

// The veth pairs: generator -> forwarder's input, forwarder's output -> sink.
constexpr const char* kVethGen = "tbio-gen";
constexpr const char* kVethIn = "tbio-in";
constexpr const char* kVethOut = "tbio-out";
constexpr const char* kVethSink = "tbio-sink";

Ports veth_ports(int q) {
  const auto v = [&](int i, const char* ifc) {
    return "--vdev net_af_packet" + std::to_string(i) + ",iface=" + ifc + ",qpairs=" + std::to_string(q);
  };
  return {v(0, kVethGen), v(0, kVethIn) + " " + v(1, kVethOut), v(0, kVethSink), std::string("af_packet:") + kVethIn,
          std::string("af_packet:") + kVethOut, false};
}

int run_quiet(const std::vector<std::string>& argv) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDOUT_FILENO);
    exec_argv(argv);
    _exit(127);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// Moves this process (and so every process it starts after) into a network namespace of its own
// and makes the two veth pairs there, up, with IPv6 off so that the kernel sends nothing of its
// own on them. The namespace ends with the last process in it: nothing is left behind on any exit.
void make_veth_namespace() {
  if (unshare(CLONE_NEWNET) != 0) {
    throw std::runtime_error(std::string("bench io --backends veth: cannot make a network namespace (root or "
                                         "CAP_SYS_ADMIN needed): ") + std::strerror(errno));
  }
  for (const char* conf : {"all", "default"}) {
    std::FILE* f = std::fopen((std::string("/proc/sys/net/ipv6/conf/") + conf + "/disable_ipv6").c_str(), "w");
    if (f) {
      std::fputs("1", f);
      std::fclose(f);
    }
  }
  // DPDK's af_packet driver joins each socket to fanout group (pid ^ ifindex) & 0xFFFF, and the kernel
  // refuses a group id that a socket of another interface holds: with consecutive ifindexes, a
  // generator whose pid is the forwarder's ^ 1 could not start. Indexes 0x2000 apart keep the four
  // ids apart unless the processes' pids are thousands apart.
  const struct {
    const char *a, *b;
    int ia, ib;
  } pairs[] = {{kVethGen, kVethIn, 0x2000, 0x4000}, {kVethOut, kVethSink, 0x6000, 0x8000}};
  for (const auto& [a, b, ia, ib] : pairs) {
    if (run_quiet({"ip", "link", "add", a, "index", std::to_string(ia), "type", "veth", "peer", "name", b, "index",
                   std::to_string(ib)}) != 0) {
      throw std::runtime_error(std::string("bench io --backends veth: `ip link add ") + a + " type veth peer name " + b +
                               "` failed (is iproute2's ip on the PATH?)");
    }
    for (const char* i : {a, b}) {
      if (run_quiet({"ip", "link", "set", i, "up"}) != 0) {
        throw std::runtime_error(std::string("bench io --backends veth: cannot set ") + i + " up");
      }
    }
  }
}

struct Result {
  std::string backend, forwarder;
  int size = 0, queues = 0;
  std::vector<double> mpps;       // the sink's samples
  std::vector<double> offered;    // the generator's
  std::vector<std::string> report;  // Tandem's report lines: its counts, drops, latency
  std::string error;
  double median() const { return mpps.empty() ? 0 : bench::median(mpps); }
};

// A row: its repetitions, each the median of its samples.
struct Row {
  std::string backend, forwarder;
  int size = 0, queues = 0;
  std::vector<Result> reps;
  std::vector<double> medians() const {
    std::vector<double> m;
    for (const Result& r : reps) m.push_back(r.median());
    return m;
  }
  double median() const { return reps.empty() ? 0 : bench::median(medians()); }
};

// The CPUs in the order rows take them: one hyperthread of each physical core first, then their
// siblings, so that no two busy-polling processes share a core while cores are left.
std::vector<int> physical_cores_first(const std::vector<int>& cpus) {
  auto read_id = [](int cpu, const char* what) {
    std::FILE* f = std::fopen(("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/" + what).c_str(), "r");
    int v = -1;
    if (f) {
      if (std::fscanf(f, "%d", &v) != 1) v = -1;
      std::fclose(f);
    }
    return v;
  };
  std::vector<int> first, rest;
  std::vector<std::pair<int, int>> seen;
  for (int c : cpus) {
    const std::pair<int, int> core{read_id(c, "physical_package_id"), read_id(c, "core_id")};
    if (core.second >= 0 && std::find(seen.begin(), seen.end(), core) != seen.end()) {
      rest.push_back(c);
    } else {
      seen.push_back(core);
      first.push_back(c);
    }
  }
  first.insert(first.end(), rest.begin(), rest.end());
  return first;
}

Result measure(const BenchIoOptions& o, const std::string& tp, const std::string& backend, int size, int q,
               const std::string& fwd, const std::vector<int>& cpus, const std::string& dir) {
  Result r{backend, fwd, size, q, {}, {}, {}};
  std::filesystem::remove(dir + "/in.sock");
  std::filesystem::remove(dir + "/out.sock");
  const bool zero_copy = backend == "memif" && o.memif_zero_copy;
  const Ports p = backend == "veth" ? veth_ports(q) : memif_ports(dir, zero_copy);
  // CPUs: the generator's main lcore and q forwarding lcores, the same for the sink, then the
  // forwarder's: a main lcore and q forwarding ones, which are testpmd's forwarding lcores and
  // Tandem's workers alike. This VM's vCPUs are not equally fast under load, so the two forwarders
  // forward on the same ones.
  size_t next = 0;
  auto take = [&](size_t n) {
    std::vector<int> c(cpus.begin() + static_cast<long>(next), cpus.begin() + static_cast<long>(next + n));
    next += n;
    return c;
  };
  const std::vector<int> gen_cpus = take(1 + q), sink_cpus = take(1 + q), fwd_cpus = take(1 + q);
  const std::vector<int> workers(fwd_cpus.begin() + 1, fwd_cpus.end());
  const std::string qs = std::to_string(q);
  const std::string testpmd_app = " --auto-start --stats-period 1 --nb-cores=" + qs + " --rxq=" + qs + " --txq=" + qs +
                                  " --total-num-mbufs=65536";
  auto testpmd = [&](const std::vector<int>& c, const std::string& vdevs, const std::string& app) {
    std::vector<std::string> a = words(tp + " " + eal_base(c, o.hugepages, zero_copy) + " " + vdevs + " -- " + app + testpmd_app);
    return std::make_unique<Child>(a, c);
  };
  auto sink = testpmd(sink_cpus, p.sink, "--forward-mode=rxonly --port-topology=loop");
  if (!sink->wait_for("Rx-pps", 20)) {
    r.error = "the sink did not start: " + sink->tail(6);
    return r;
  }
  // Over veth the receiving sockets are spread by flow hash (AF_PACKET fanout): one flow would
  // reach one queue, so the generator varies the source address. memif queues are rings of their
  // own, one per generator core.
  std::unique_ptr<Child> gen;
  const auto start_generator = [&] {
    gen = testpmd(gen_cpus, p.gen,
                  "--forward-mode=txonly --port-topology=loop --txpkts=" + std::to_string(size) +
                      " --tx-ip=198.18.0.1," + o.dst + (backend == "veth" ? " --txonly-multi-flow" : ""));
    if (gen->wait_for("Tx-pps", 20)) return true;
    r.error = "the generator did not start: " + gen->tail(6);
    return false;
  };
  // A memif client needs its server's socket: in zero-copy mode the generator serves the
  // forwarder's input and starts first (its frames are lost until the forwarder connects, before
  // the measurement starts).
  if (zero_copy && !start_generator()) return r;
  std::unique_ptr<Child> f;
  if (fwd == "testpmd") {
    f = testpmd(fwd_cpus, p.fwd, "--forward-mode=io --port-topology=paired");
    if (!f->wait_for("Rx-pps", 20)) r.error = "testpmd did not start: " + f->tail(6);
  } else {
    const std::vector<std::string> extra = words(o.tandem_args);
    const bool device_given = std::find(extra.begin(), extra.end(), "--device") != extra.end();
    std::vector<std::string> a = {"/proc/self/exe", "run", "--app", "ipv4", "--fib", o.fib, "--workers", qs,
                                  "--cores", join_cpus(workers), "--stats", "off", "--rx", p.tandem_rx,
                                  "--tx", p.tandem_tx};
    if (!device_given) a.insert(a.end(), {"--device", "cpu"});
    if (p.tandem_dpdk) {
      a.push_back("--dpdk");
      a.push_back(eal_base({fwd_cpus.front()}, o.hugepages, zero_copy) + " " + p.fwd);
    }
    for (const std::string& w : extra) a.push_back(w);
    f = std::make_unique<Child>(a, fwd_cpus);
    if (!f->wait_for("input:", 120)) r.error = "Tandem did not start: " + f->tail(6);
  }
  if (!r.error.empty()) return r;
  if (!zero_copy && !start_generator()) return r;
  std::this_thread::sleep_for(std::chrono::duration<double>(o.warmup));
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  const auto t1 = Clock::now();
  for (double v : sink->values("Rx-pps:", t0, t1)) r.mpps.push_back(v / 1e6);
  for (double v : gen->values("Tx-pps:", t0, t1)) r.offered.push_back(v / 1e6);
  // A peer that ended early says how (a memif peer that faults on the forwarder's buffers).
  if (r.mpps.empty()) {
    r.error = "no samples from the sink (" + sink->status() + "; the generator " + gen->status() + "): " + sink->tail(6);
  }
  // The forwarder stops while its peers are up: DPDK's memif driver unmaps a departed peer's
  // shared memory from its interrupt thread while a polling thread may be reading it (a race in
  // the driver, which testpmd meets as well), and the process measured must not meet it.
  f->stop();
  gen->stop();
  sink->stop();
  for (const char* k : {"packets:", "dropped per reason:", "live ports:", "latency per packet", "stages,"}) {
    for (const std::string& l : f->starting(k)) r.report.push_back(l);
  }
  if (fwd == "tandem" && (f->status() != "exit 130" || r.report.empty())) {
    // A fatal signal comes with Tandem's stack (cli/crash_report.h): enough lines to hold it.
    r.error = "Tandem ended with " + f->status() + " after SIGINT (130 expected): " +
              f->tail(f->status().rfind("signal", 0) == 0 ? 48 : 8);
  }
  return r;
}

std::string memif_mode(const BenchIoOptions& o) {
  return o.memif_zero_copy ? "zero copy (the forwarder the client of both links)" : "copy";
}

int run_bench_io(const BenchIoOptions& o) {
  std::string tp = o.testpmd;
  if (tp.empty()) tp = std::filesystem::exists(".deps/testpmd/testpmd") ? ".deps/testpmd/testpmd" : "dpdk-testpmd";
  if (tp.find('/') != std::string::npos) tp = std::filesystem::absolute(tp).lexically_normal().string();
  std::vector<int> cpus;
  if (!o.cores.empty()) {
    cpus = parse_cpu_list(o.cores);
  } else {
    cpu_set_t set;
    sched_getaffinity(0, sizeof set, &set);
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
    cpus = physical_cores_first(cpus);
  }
  std::vector<int> sizes, queues;
  for (const std::string& s : bench::split_list(o.sizes)) sizes.push_back(std::stoi(s));
  for (const std::string& s : bench::split_list(o.queues)) queues.push_back(std::stoi(s));
  const std::vector<std::string> fwds = bench::split_list(o.forwarders);
  bool veth = false;
  for (const std::string& b : bench::split_list(o.backends)) {
    if (b != "memif" && b != "veth") throw UsageError("bench io --backends: " + b + ": not one bench io has (memif, veth)");
    veth |= b == "veth";
  }
  for (const std::string& f : fwds) {
    if (f != "tandem" && f != "testpmd") throw UsageError("bench io --forwarders: " + f + ": tandem or testpmd");
  }
  int most = 0;
  for (int q : queues) most = std::max(most, 2 * (1 + q) + 1 + q);
  if (static_cast<int>(cpus.size()) < most) {
    std::fprintf(stderr, "bench io: %d CPUs given, the largest row takes %d (generator, sink, forwarder): rows share CPUs, "
                 "which lowers their rates\n", static_cast<int>(cpus.size()), most);
    const std::vector<int> given = cpus;
    while (static_cast<int>(cpus.size()) < most) cpus.push_back(given[cpus.size() % given.size()]);
  }
  if (o.memif_zero_copy && !o.hugepages) {
    throw UsageError("bench io --memif-zero-copy: needs --hugepages (a zero-copy memif client shares its EAL memory "
                     "with the server by file, which 4 KiB --no-huge memory has not)");
  }
  // Three processes at a time, each reserving its EAL memory up front.
  if (o.hugepages) {
    const long need = 3 * kEalMiB / 2, have = free_hugepages_2m();
    if (have < need) {
      throw UsageError("bench io --hugepages: " + std::to_string(need) + " free 2 MiB hugepages needed, the machine has " +
                       (have < 0 ? std::string("none of that size") : std::to_string(have)) +
                       " (as root: echo " + std::to_string(need) + " > /proc/sys/vm/nr_hugepages)");
    }
  }
  // Without a namespace of its own (no root, no ip command) the veth rows fail, the others run.
  std::string veth_error;
  if (veth) {
    try {
      make_veth_namespace();
    } catch (const std::exception& e) {
      veth_error = e.what();
      std::fprintf(stderr, "%s\n", e.what());
    }
  }
  char tmpl[] = "/tmp/tandem-bench-io-XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("bench io: mkdtemp");
  const std::string dir = tmpl;
  // The forwarders take turns, repetition by repetition, so that a slow spell of the machine falls
  // on both rather than on whichever row ran then.
  std::vector<Row> results;
  for (const std::string& b : bench::split_list(o.backends)) {
    for (int size : sizes) {
      for (int q : queues) {
        const size_t first = results.size();
        for (const std::string& f : fwds) results.push_back(Row{b, f, size, q, {}});
        for (int rep = 0; rep < o.repeat; ++rep) {
          for (size_t k = 0; k < fwds.size(); ++k) {
            Row& row = results[first + k];
            if (b == "veth" && !veth_error.empty()) {
              Result failed{b, row.forwarder, size, q, {}, {}, {}};
              failed.error = veth_error;
              row.reps.push_back(failed);
              continue;
            }
            row.reps.push_back(measure(o, tp, b, size, q, row.forwarder, cpus, dir));
            const Result& r = row.reps.back();
            if (!r.error.empty()) {
              std::fprintf(stderr, "bench io: %s %d B %d queue(s) %s: %s\n", b.c_str(), size, q, row.forwarder.c_str(),
                           r.error.c_str());
            }
          }
        }
      }
    }
  }
  std::filesystem::remove_all(dir);
  // A row's ratio to testpmd: the median of the ratios of repetitions run one after the other.
  const auto ratio = [&](const Row& r) -> double {
    for (const Row& a : results) {
      if (a.forwarder != "testpmd" || a.backend != r.backend || a.size != r.size || a.queues != r.queues) continue;
      std::vector<double> q;
      for (size_t i = 0; i < r.reps.size() && i < a.reps.size(); ++i) {
        if (a.reps[i].median() > 0) q.push_back(r.reps[i].median() / a.reps[i].median());
      }
      return q.empty() ? 0 : bench::median(q);
    }
    return 0;
  };

  std::printf("bench io: forwarding between processes, generator -> forwarder -> sink (testpmd txonly / rxonly), "
              "the sink's rate: median of %d repetitions (the forwarders in turn), each the median of %g s of 1 s "
              "samples after %g s; ratio: median of the repetitions' ratios; EAL memory on %s; memif %s\n", o.repeat, o.seconds,
              o.warmup, o.hugepages ? "2 MiB hugepages" : "4 KiB pages (--no-huge)", memif_mode(o).c_str());
  std::printf("%-7s %6s %6s  %-28s %10s %10s %8s  %s\n", "backend", "bytes", "queues", "forwarder", "Mpps", "offered",
              "ratio", "repetitions (Mpps)");
  nlohmann::json rows = nlohmann::json::array();
  for (const Row& r : results) {
    const double rt = ratio(r);
    const std::string name = r.forwarder == "tandem" ? "tandem ipv4 (" + std::filesystem::path(o.fib).filename().string() + ")"
                                                     : "testpmd io";
    std::vector<double> offered;
    for (const Result& x : r.reps) {
      if (!x.offered.empty()) offered.push_back(bench::median(x.offered));
    }
    const double off = offered.empty() ? 0 : bench::median(offered);
    std::string reps;
    for (double m : r.medians()) reps += (reps.empty() ? "" : " ") + std::to_string(m).substr(0, 5);
    std::printf("%-7s %6d %6d  %-28.28s %10.2f %10.2f %8s  %s\n", r.backend.c_str(), r.size, r.queues, name.c_str(),
                r.median(), off, rt > 0 ? std::to_string(rt).substr(0, 5).c_str() : "-", reps.c_str());
    nlohmann::json jreps = nlohmann::json::array();
    for (const Result& x : r.reps) {
      jreps.push_back({{"mpps", x.median()}, {"samples_mpps", x.mpps}, {"offered_mpps", x.offered},
                       {"forwarder_report", x.report},
                       {"error", x.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(x.error)}});
    }
    rows.push_back({{"backend", r.backend}, {"size", r.size}, {"queues", r.queues}, {"forwarder", r.forwarder},
                    {"mpps", r.median()}, {"offered_mpps", off},
                    {"ratio_to_testpmd", rt > 0 ? nlohmann::json(rt) : nlohmann::json(nullptr)}, {"repetitions", jreps}});
  }
  // The acceptance: memif, 64 B, one queue, Tandem's router at 80% of testpmd's io forwarding or more.
  for (const Row& r : results) {
    if (r.forwarder != "tandem" || r.size != 64 || r.queues != 1) continue;
    for (const Row& a : results) {
      if (a.forwarder == "testpmd" && a.backend == r.backend && a.size == 64 && a.queues == 1 && a.median() > 0) {
        std::printf("%s, 64 B, 1 queue: Tandem %.2f Mpps, testpmd io %.2f Mpps: %.0f%% (median of the repetitions' "
                    "ratios)\n", r.backend.c_str(), r.median(), a.median(), 100 * ratio(r));
      }
    }
  }
  for (const Row& r : results) {
    if (r.reps.empty()) continue;
    for (const std::string& l : r.reps.back().report) {
      std::printf("  tandem %s %d B %d q (last repetition): %s\n", r.backend.c_str(), r.size, r.queues, l.c_str());
    }
  }
  if (!o.json.empty()) {
    bench::write_json(o.json, {{"bench", "io"}, {"machine", bench::machine_json()}, {"fib", o.fib}, {"dst", o.dst},
                               {"testpmd", tp}, {"eal_memory", o.hugepages ? "2 MiB hugepages" : "4 KiB pages (--no-huge)"},
                               {"memif_mode", memif_mode(o)},
                               {"seconds", o.seconds}, {"warmup", o.warmup}, {"repeat", o.repeat},
                               {"cpus", cpus}, {"rows", rows}});
  }
  bool failed = false;
  for (const Row& r : results) {
    for (const Result& x : r.reps) failed |= !x.error.empty();
  }
  return failed ? 1 : 0;
}

}  // namespace

void register_bench_io(CLI::App& bench) {
  auto o = std::make_shared<BenchIoOptions>();
  CLI::App* c = bench.add_subcommand(
      "io", "live ports between processes: Tandem's IPv4 router on dpdk: ports against testpmd io forwarding, "
            "generator and sink testpmd (memif, veth)");
  c->add_option("--fib", o->fib, "the routes Tandem forwards on")->capture_default_str();
  c->add_option("--dst", o->dst, "the generated packets' destination (routed by --fib)")->capture_default_str();
  c->add_option("--testpmd", o->testpmd, "testpmd to run (default: .deps/testpmd/testpmd from scripts/fetch-testpmd.sh, "
                "else dpdk-testpmd)");
  c->add_option("--backends", o->backends, "memif (DPDK's memif links; Tandem on dpdk: ports), veth (veth pairs in a "
                "network namespace of the bench's own, needs root; testpmd on DPDK's af_packet driver, Tandem on its "
                "af_packet: ports)")->capture_default_str();
  c->add_option("--sizes", o->sizes, "frame sizes in bytes")->capture_default_str();
  c->add_option("--queues", o->queues, "queues per port (and forwarding cores) to measure")->capture_default_str();
  c->add_option("--forwarders", o->forwarders, "tandem, testpmd")->capture_default_str();
  c->add_option("--tandem-args", o->tandem_args, "more flags for Tandem's run, after the others (e.g. \"--burst 32\"; "
                "a second --app replaces ipv4; the forwarder runs with --device cpu unless these name --device, e.g. "
                "\"--device gpu --gpu-path resident\")");
  c->add_option("--cores", o->cores, "CPUs to use (generator, sink, then forwarder; default: every CPU allowed)");
  c->add_option("--seconds", o->seconds, "measured seconds per row (1 s samples)")->capture_default_str()
      ->check(CLI::Range(1.0, 3600.0));
  c->add_option("--repeat", o->repeat, "repetitions of each row, the forwarders taking turns")
      ->capture_default_str()->check(CLI::Range(1, 100));
  c->add_option("--warmup", o->warmup, "seconds before the measurement")->capture_default_str()->check(CLI::Range(0.0, 600.0));
  c->add_flag("--hugepages", o->hugepages, "every process's EAL memory (the mbufs) on 2 MiB hugepages, which the "
              "machine must have reserved (/proc/sys/vm/nr_hugepages); default: 4 KiB pages (--no-huge)");
  c->add_flag("--memif-zero-copy", o->memif_zero_copy, "memif links in zero-copy mode: the forwarder (Tandem or "
              "testpmd) is the client of both links with zero-copy=yes, so its mbufs are the links' buffers and only the "
              "generator and the sink copy frames; needs --hugepages. Default: copy mode, the forwarder serving the "
              "generator's link");
  c->add_option("--json", o->json, "write the report here");
  c->callback([o] {
    const int rc = run_bench_io(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
