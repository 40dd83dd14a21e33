// `tandem run`: forward packets from a capture or the generator through an app, on the CPU or the
// GPU, and account for every one of them. A capture is streamed a window at a time unless
// --preload asks for it whole in memory (RunInput below). SIGINT or SIGTERM stops it early: the
// workers finish what they have in flight, the output gets whole records of what was forwarded,
// the summary is printed, and the exit code is 128 + the signal's number.
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_report.h"
#include "cli/app_setup.h"
#include "cli/commands.h"
#include "cli/table_setup.h"
#include "core/latency_histogram.h"
#include "core/machine_info.h"
#include "core/stop_signal.h"
#include "gpu/offload.h"
#include "gpu/gpu_runtime.h"
#include "gpu/offload_engine.h"
#include "io/pcap_io.h"
#include "io/traffic_gen.h"
#include "cli/control_server.h"
#include "gpu/table_updates.h"
#include "cli/run_live.h"
#include "cli/stage_report.h"
#include "apps/table_control.h"
#include "cli/run_resident.h"
#include "cli/run_schedule.h"
#include "sched/resident.h"
#include "sched/workers.h"

namespace tandem::cli {

namespace {

struct RunOptions {
  AppOptions table;
  std::string pcap;
  std::string gen;
  std::string out;
  std::string device = "auto";
  std::string cpu_path = "batched";
  uint64_t repeat = 1;
  bool preload = false;
  int workers = 1;
  uint32_t burst = 256;
  double rate_mpps = 0;
  uint32_t batch = 8192;
  double max_wait_us = 50;
  int gpu_slots = 4;
  int persistent_blocks = 0;
  uint64_t inject_gpu_fault = 0;
  std::string cores;
  std::string gpus;
  bool flush_when_idle = false;
  double rx_hold_us = 4;
  std::string engine = "staged";
  std::string gpu_mode = "async";
  std::string gpu_path = "offload";
  ResidentFlags resident;
  ScheduleFlags schedule;
  LiveFlags live;
  uint64_t packets = 0;
  std::string control;
  bool verify = false;
  bool stage_times = false;  // the CPU workers' stages timed (core/stage_times.h) and reported
  std::string json;
  std::vector<std::string> gpu_flags;  // flags only the GPU path reads, given on the command line
};

constexpr const char* kGpuOnlyFlags[] = {"--batch",      "--max-wait-us",       "--flush-when-idle",
                                         "--engine",     "--rx-hold-us",        "--gpu-slots",
                                         "--gpu-mode",   "--persistent-blocks", "--inject-gpu-fault",
                                         "--gpu-path",   "--frame-layout",      "--ring-slots",
                                         "--gpus",       "--zero-copy"};

bool given(const RunOptions& o, const char* flag) {
  return std::find(o.gpu_flags.begin(), o.gpu_flags.end(), flag) != o.gpu_flags.end();
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// "0-3,6": the CPUs of a set, as ranges.
std::string format_cpus(const cpu_set_t& set) {
  std::string s;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    int e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set)) ++e;
    s += (s.empty() ? "" : ",") + std::to_string(c) + (e > c ? "-" + std::to_string(e) : "");
    c = e;
  }
  return s;
}

// The CPUs of --cores, each one this process may run on.
std::vector<int> parse_cores(const std::string& list) {
  if (list.empty()) return {};
  std::vector<int> cores;
  try {
    cores = parse_cpu_list(list);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--cores: ") + e.what());
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return cores;
  for (const int c : cores) {
    if (c >= CPU_SETSIZE || !CPU_ISSET(c, &allowed)) {
      throw UsageError("--cores " + list + ": CPU " + std::to_string(c) +
                       " is not one this process can run on (it can use CPUs " + format_cpus(allowed) + ")");
    }
  }
  return cores;
}

// Says how workers (and the GPU master thread) are placed when --cores lists fewer CPUs than there
// are threads to pin.
void explain_cores(const std::string& list, size_t listed, int workers, bool gpu_master) {
  const size_t threads = size_t(workers) + (gpu_master ? 1 : 0);
  if (listed == 0 || listed >= threads) return;
  std::string how;
  if (listed < size_t(workers)) {
    how = "workers share them (worker w runs on the (w mod " + std::to_string(listed) + ")-th listed)";
  }
  if (gpu_master) how += std::string(how.empty() ? "" : "; ") + "the GPU master thread is not pinned";
  std::fprintf(stderr, "note: --cores %s lists %zu CPU(s) for %d worker(s)%s: %s\n", list.c_str(), listed, workers,
               gpu_master ? " and the GPU master thread" : "", how.c_str());
}

// A streamed capture is read this many frame bytes at a time (a window), so that memory does not
// grow with it.
constexpr uint64_t kWindowBytes = uint64_t{64} << 20;

// Whether a run's live updates (`control`) reach the copy of the table that its GPU path reads.
bool control_reaches_gpu(const TableControl* control, const std::string& gpu_path, size_t gpus) {
  if (!control || gpus > 1) return false;
  return gpu_path == "offload" ? control->reaches_gpu_offload() : control->reaches_gpu_resident();
}

// Why a run's live updates (`control`, of the app named `app`) miss the copy of the table that the
// chosen GPU path reads, when control_reaches_gpu says they do not.
std::string why_control_misses_gpu(const TableControl* control, const std::string& app, size_t gpus) {
  const std::string a = "the " + app + " app";
  if (!control) return a + " (with these flags) takes no live updates";
  if (gpus > 1) return "live updates reach one GPU's copy; give one GPU (--gpus)";
  if (control->reaches_gpu_offload()) {
    return a + "'s live updates reach the offload path's device copy, not the resident path's (--gpus, --gpu-path "
               "resident); use --device cpu or the offload path";
  }
  if (control->reaches_gpu_resident()) {
    return a + "'s live updates reach the resident path's device copy (--gpu-path resident)";
  }
  return a + "'s live updates reach its CPU paths only; use --device cpu";
}

// The window size. TANDEM_TEST_WINDOW_BYTES overrides it so that tests can make a small capture
// span several windows; it is for tests, not a setting users are meant to tune.
uint64_t window_bytes() {
  const char* v = std::getenv("TANDEM_TEST_WINDOW_BYTES");
  if (v == nullptr || *v == '\0') return kWindowBytes;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (errno != 0 || *end != '\0' || n == 0 || n > (uint64_t{1} << 40) || *v == '-') {
    throw UsageError(std::string("TANDEM_TEST_WINDOW_BYTES=") + v + ": want a byte count from 1 to 2^40");
  }
  return n;
}

// The packets a run forwards, and how it holds them:
//   generated (--gen): made in memory before the run;
//   preloaded (--pcap with --preload): the whole capture loaded before the run, replayed from
//     memory; memory grows with the capture;
//   streamed (--pcap): read a window at a time, the workers forwarding each window before the next
//     is read; every pass of --repeat reads the capture again. A capture that fits in its first
//     window is read once and replayed from that window: memory is one window either way.
class RunInput {
 public:
  enum class Mode { kGenerated, kPreloaded, kStreamed, kLive };

  RunInput(const RunOptions& o, const LoadedApp& a, const GenSpec& gen, const LiveRun* live) {
    const auto t0 = std::chrono::steady_clock::now();
    if (live) {
      mode_ = Mode::kLive;  // the ports' traffic: nothing is held
      desc_ = live->describe();
    } else if (o.pcap.empty()) {
      mode_ = Mode::kGenerated;
      desc_ = "generator " + format_gen_spec(gen);
      try {
        store_ = a.generate(gen);
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--gen: ") + e.what());
      }
    } else if (o.preload) {
      mode_ = Mode::kPreloaded;
      desc_ = o.pcap + " (preloaded: the whole capture in memory, replayed from there)";
      store_ = load_pcap(o.pcap);
    } else {
      mode_ = Mode::kStreamed;
      path_ = o.pcap;
      window_ = window_bytes();
      reader_ = std::make_unique<PcapReader>(path_);
      if (read_window(*reader_, store_, window_)) windows_ = 1;
      // read_window stops short of a full window only at the end of the file.
      one_window_ = store_.total_caplen() < window_;
      if (one_window_) reader_.reset();
      desc_ = o.pcap + " (streamed: " + format_bytes(window_) + " of frames at a time)";
    }
    read_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  Mode mode() const { return mode_; }
  bool streamed() const { return mode_ == Mode::kStreamed; }
  // Streamed over several windows: run_workers is called once per window, each for one pass.
  bool windowed() const { return streamed() && !one_window_; }
  PacketStore& store() { return store_; }  // the whole input, or the window to forward now
  const std::string& desc() const { return desc_; }
  uint64_t pass() const { return pass_; }       // windowed: the pass the current window belongs to
  uint64_t windows() const { return windows_; } // streamed: windows read, over every pass
  uint64_t window_in_pass() const { return window_in_pass_; }  // windowed: the current one's number
  double read_seconds() const { return read_seconds_; }  // reading, loading or generating it all

  // Windowed: reads the next window into store(), going on to the next of `passes` passes at the
  // end of the file (reopened, so read afresh). False once the last pass has ended.
  bool next_window(uint64_t passes) {
    const auto t0 = std::chrono::steady_clock::now();
    bool more = read_window(*reader_, store_, window_);
    while (!more && pass_ < passes) {
      reader_.reset();  // one reader's buffers at a time
      reader_ = std::make_unique<PcapReader>(path_);
      ++pass_;
      window_in_pass_ = 0;
      more = read_window(*reader_, store_, window_);
    }
    if (more) {
      ++windows_;
      ++window_in_pass_;
    }
    read_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return more;
  }

 private:
  static std::string format_bytes(uint64_t n) {
    if (n % (uint64_t{1} << 20) == 0) return std::to_string(n >> 20) + " MiB";
    if (n % 1024 == 0) return std::to_string(n >> 10) + " KiB";
    return std::to_string(n) + " bytes";
  }

  Mode mode_ = Mode::kGenerated;
  PacketStore store_;
  std::string desc_;
  std::string path_;
  uint64_t window_ = 0;
  std::unique_ptr<PcapReader> reader_;
  bool one_window_ = false;
  uint64_t pass_ = 1;
  uint64_t windows_ = 0;
  uint64_t window_in_pass_ = 1;
  double read_seconds_ = 0;
};

int run(const RunOptions& o) {
  // Flags that cannot work together are refused before anything is read or written.
  const bool scheduled = !o.schedule.schedule.empty();
  if (!scheduled && o.device != "cpu" && o.device != "gpu" && o.device != "auto") {
    throw UsageError("--device " + o.device + ": expected cpu, gpu or auto (a list of devices needs --schedule)");
  }
  if (scheduled) {
    if (given(o, "--gpu-path") && o.gpu_path != "resident") {
      throw UsageError("--schedule: the GPU takes its share through the resident path (--gpu-path resident)");
    }
    if (o.cpu_path == "scalar") throw UsageError("--schedule: CPU groups run the batched path");
    if (given(o, "--gpu-mode") && o.gpu_mode != "persistent") {
      throw UsageError("--schedule: the GPU runs the persistent kernel (--gpu-mode persistent)");
    }
    if (!o.schedule.rate_schedule.empty() && o.rate_mpps > 0) {
      throw UsageError("--rate-schedule replaces --rate-mpps: give one of them");
    }
    if (!o.schedule.rate_schedule.empty() && !o.pcap.empty() && !o.preload) {
      throw UsageError("--rate-schedule: a streamed capture restarts the schedule at every window; use --preload");
    }
  } else if (!o.schedule.rate_schedule.empty()) {
    throw UsageError("--rate-schedule is for --schedule runs");
  } else if (!o.schedule.table_file.empty()) {
    throw UsageError("--schedule-table is for --schedule runs");
  }
  if (o.device == "cpu" && !o.gpu_flags.empty()) {
    throw UsageError(join(o.gpu_flags) + (o.gpu_flags.size() > 1 ? ": these flags are" : ": this flag is") +
                     " for the GPU and would do nothing with --device cpu");
  }
  if (!o.out.empty() && o.workers > 1) throw UsageError("--out: writing a capture needs --workers 1");
  const bool is_live = !o.live.rx.empty();
  if (is_live) {
    if (!o.pcap.empty() || !o.gen.empty()) throw UsageError("--rx receives from live ports: give it instead of --pcap or --gen");
    if (scheduled) throw UsageError("--rx: --schedule shares captures and generated traffic among devices, not live ports yet");
    if (o.repeat != 1 || o.preload || o.rate_mpps > 0) {
      throw UsageError("--rx: --repeat, --preload and --rate-mpps are for captures and generated traffic; "
                       "live traffic comes at its own rate (--duration and --packets end the run)");
    }
    if (!o.out.empty() && !o.live.tx.empty()) {
      throw UsageError("--out with --tx: capture on the far side of --tx instead, or leave out --tx to write to --out "
                       "what would be sent");
    }
  }
  if (!o.control.empty()) {
    if (scheduled) {
      throw UsageError("--control: live table updates reach the CPU paths and one GPU's copy, not the scheduler's "
                       "device copies");
    }
    if (given(o, "--gpu-mode") && o.gpu_mode == "persistent" && !(given(o, "--gpu-path") && o.gpu_path == "resident") &&
        !resident_only(o.table)) {
      throw UsageError("--control: the offload path's persistent kernel runs through table updates; use --gpu-mode "
                       "async, graph or mapped");
    }
    if (o.verify) throw UsageError("--control: --verify checks against the table as loaded, which updates change");
  }
  if (!is_live && (o.live.duration_s > 0 || o.packets || !o.live.stats_json.empty() || !o.live.metrics.empty())) {
    throw UsageError("--duration, --packets, --stats-json and --metrics are for live ports (--rx)");
  }
  if (!is_live && !o.live.tx.empty()) {
    // A capture or generated traffic sent out of live ports (a traffic source, as tcpreplay).
    if (scheduled || (given(o, "--gpu-path") && o.gpu_path == "resident") || given(o, "--gpus") ||
        resident_only(o.table) || !o.out.empty()) {
      throw UsageError("--tx with --pcap or --gen: the workers' paths send (not --schedule, the resident path or --out)");
    }
  }
  if (!o.live.tx_dst_mac.empty() && o.live.tx.empty()) {
    throw UsageError("--tx-dst-mac rewrites what leaves through --tx: give --tx");
  }
  if (!o.live.dpdk.empty() && o.live.rx.rfind("dpdk:", 0) != 0 && o.live.tx.rfind("dpdk:", 0) != 0) {
    throw UsageError("--dpdk starts DPDK for dpdk:PORT ports: give --rx or --tx dpdk:PORT");
  }
  // An app whose flags leave it without a GPU path (the ipv4 app's Poptrie) runs on the CPU.
  const std::string no_gpu = no_gpu_path(o.table);
  if (o.device == "gpu" && !no_gpu.empty()) throw UsageError("--device gpu: " + no_gpu + ": use --device cpu");
  if (scheduled && !no_gpu.empty() && o.device.find("gpu") != std::string::npos) {
    throw UsageError("--device " + o.device + ": " + no_gpu + ": schedule among CPU groups (e.g. --device cpu,cpu)");
  }
  // An app the GPU runs through the resident path only (ipsec) takes that path unless told otherwise.
  const bool resident_app = resident_only(o.table);
  if (resident_app && given(o, "--gpu-path") && o.gpu_path != "resident") {
    throw UsageError("--gpu-path " + o.gpu_path + ": the " + o.table.app +
                     " app runs on the GPU through the resident path only (--gpu-path resident)");
  }
  // --gpus: the GPUs a GPU run uses; each takes its own receive threads' traffic (resident path)
  // or the scheduler's shards (--schedule with the device "gpu").
  std::vector<int> gpus;
  if (given(o, "--gpus")) {
    try {
      gpus = parse_cpu_list(o.gpus);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--gpus ") + o.gpus + ": " + e.what());
    }
    std::vector<int> seen = gpus;
    std::sort(seen.begin(), seen.end());
    if (gpus.empty() || std::adjacent_find(seen.begin(), seen.end()) != seen.end()) {
      throw UsageError("--gpus " + o.gpus + ": expected distinct GPU numbers, e.g. 0,1");
    }
    if (seen.front() < 0 || seen.back() > 63) throw UsageError("--gpus " + o.gpus + ": GPU numbers are 0..63");
    if (given(o, "--gpu-path") && o.gpu_path != "resident") {
      throw UsageError("--gpus: the offload path runs on GPU 0 only; other and several GPUs take --gpu-path resident");
    }
    if (!scheduled && gpus.size() > size_t(o.workers)) {
      throw UsageError("--gpus " + o.gpus + ": each GPU needs its own receive threads (--workers " +
                       std::to_string(gpus.size()) + " or more)");
    }
    if (!scheduled && gpus.size() > 1 && resident_app) {
      throw UsageError("--gpus " + o.gpus + ": the " + o.table.app +
                       " app keeps per-SA state on its GPU; several GPUs share its SAs under the scheduler "
                       "(--schedule throughput --device gpu --gpus " + o.gpus + ")");
    }
    // Last, so that the checks above say the same on every host.
    const int have = gpu::device_count();
    if (have > 0 && seen.back() >= have) {
      throw UsageError("--gpus " + o.gpus + ": this host has " + std::to_string(have) + " GPU" + (have > 1 ? "s" : "") +
                       " (0.." + std::to_string(have - 1) + ")");
    }
  }
  const std::string gpu_path = resident_app || scheduled || !gpus.empty() ? "resident" : o.gpu_path;
  // The resident path's own defaults (a resident kernel, batches of 1,024 frames), checked now.
  const std::string resident_mode = given(o, "--gpu-mode") ? o.gpu_mode : "persistent";
  const uint32_t resident_batch = given(o, "--batch") ? o.batch : 1024;
  if (gpu_path == "resident") {
    resident_options(o.resident, resident_mode, resident_batch, o.persistent_blocks, o.inject_gpu_fault,
                     PacketPool::kDefaultCellSize);
  }
  if (o.burst > o.batch && gpu_path == "offload") {
    throw UsageError("--burst " + std::to_string(o.burst) + " must not exceed --batch " + std::to_string(o.batch));
  }
  const std::vector<int> cores = parse_cores(o.cores);
  GenSpec gen;
  if (!o.gen.empty()) {
    gen = parse_gen_flag("--gen", o.gen);
    try {
      validate_gen_spec(gen);  // e.g. a count whose frames would not fit in memory
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--gen: ") + e.what());
    }
  }
  install_stop_handler();
  // Live ports are opened before the table loads, so that a missing interface or permission is
  // reported at once; their rings hold what arrives meanwhile.
  std::unique_ptr<LiveRun> live;
  if (is_live) live = std::make_unique<LiveRun>(o.live, o.workers, o.packets);
  std::unique_ptr<PcapSink> sink;
  std::vector<std::unique_ptr<PacketSink>> tx_ports;  // --tx with --pcap or --gen
  std::string tx_desc;
  if (!is_live && !o.live.tx.empty()) tx_ports = open_tx_ports(o.live, o.workers, &tx_desc);
  if (!o.out.empty()) sink = std::make_unique<PcapSink>(o.out, capture_format("--out", o.out));

  LoadedApp a = load_app(o.table);
  ForwardApp& app = *a.app;
  std::printf("app: %s; table: %s\n", app.name(), a.table_desc.c_str());
  RunInput in(o, a, gen, live.get());
  const std::string& input_desc = in.desc();
  if (live) {
    std::printf("input: %s\n", input_desc.c_str());
    std::fflush(stdout);  // the ports are open: whoever starts the traffic may wait for this line
  } else {
    std::printf("input: %s: %zu packets, %.1f MB%s, ready in %.2f s\n", input_desc.c_str(), in.store().size(),
                in.store().total_caplen() / 1e6,
                in.windowed() ? " in the first window" : in.streamed() ? " (all of it, in one window)" : "",
                in.read_seconds());
    if (in.store().size() == 0) throw UsageError(input_desc + ": no packets");
  }

  Device dev = Device::kCpu;
  if (scheduled) {
    dev = Device::kCpu;  // the devices are the scheduler's (below)
  } else if (!o.control.empty() && !control_reaches_gpu(app.table_control(), gpu_path, gpus.size())) {
    if (o.device == "gpu") {
      throw UsageError("--control: " + why_control_misses_gpu(app.table_control(), app.name(), gpus.size()));
    }
    if (o.device == "auto" && gpu::available()) std::fprintf(stderr, "device auto: --control: running on the CPU\n");
  } else if (no_gpu.empty()) {
    dev = choose_device(o.device, false);
  } else if (o.device == "auto" && gpu::available()) {
    std::fprintf(stderr, "device auto: %s: running on the CPU\n", no_gpu.c_str());
  }
  if (!scheduled && dev == Device::kCpu && !o.gpu_flags.empty()) {
    std::fprintf(stderr, "warning: %s: GPU flag(s) ignored, running on the CPU\n", join(o.gpu_flags).c_str());
  }
  if (!scheduled) explain_cores(o.cores, cores.size(), o.workers, dev == Device::kGpu);
  if (o.verify) app.build_reference();
  // Live table updates: the control socket, and the workers' grace periods.
  std::unique_ptr<Rcu> rcu;
  std::unique_ptr<ControlServer> control;
  if (!o.control.empty()) {
    TableControl* tc = app.table_control();
    if (!tc) throw UsageError("--control: the " + std::string(app.name()) + " app (with these flags) takes no live updates");
    rcu = std::make_unique<Rcu>(o.workers + 1);  // the workers, and the GPU engine's CPU fallback
    tc->set_rcu(rcu.get());
    control = std::make_unique<ControlServer>(o.control, *tc);
    if (live) live->set_control(tc);
    std::printf("control: table updates on %s (tandem ctl --socket %s; %s)\n", o.control.c_str(), o.control.c_str(),
                tc->syntax().c_str());
    std::fflush(stdout);
  }

  // Cells hold the largest frame of the input whole (jumbo frames, GRO/TSO captures), so that no
  // frame is cut and then dropped as if it were malformed; frames beyond 0xFFFF bytes are dropped
  // as oversize (sched/workers.h).
  auto cell_size = [](const PacketStore& s) {
    uint32_t max_frame = 0;
    for (size_t i = 0; i < s.size(); ++i) max_frame = std::max(max_frame, s.caplen[i]);
    return std::max<uint32_t>(PacketPool::kDefaultCellSize,
                              (std::min<uint32_t>(max_frame, 0xFFFF) + PacketPool::kHeadroom + 63) / 64 * 64);
  };
  // The GPU rings of the resident path and the scheduler. A resident-only app's batches hold a GPU
  // block through their crypto: twice the batches in flight keep the GPU's blocks busy.
  const auto gpu_ring_options = [&] {
    gpu::ResidentOptions r = resident_options(o.resident, resident_mode, resident_batch, o.persistent_blocks,
                                              o.inject_gpu_fault, cell_size(in.store()));
    if (resident_app && !given(o, "--ring-slots")) r.slots_per_producer = 32;
    // DPDK ports with the frames in their mbufs: a slot holds no bytes, and a live port's batches
    // are mostly partial (a burst or two), so the slots, not the GPU, would bound the frames in
    // flight; more cost only the slots' small arrays.
    if (is_live && o.live.rx.rfind("dpdk:", 0) == 0 && o.resident.zero_copy == "on" && !given(o, "--ring-slots")) {
      r.slots_per_producer = std::max<uint32_t>(r.slots_per_producer, 64);
    }
    return r;
  };
  WorkersConfig wc;
  wc.workers = o.workers;
  wc.burst = o.burst;
  wc.rate_pps = o.rate_mpps * 1e6;
  wc.repeat = o.repeat;
  wc.ports = app.ports();
  if (!cores.empty()) wc.cores.assign(cores.begin(), cores.begin() + std::min<size_t>(cores.size(), o.workers));
  wc.verify = o.verify;
  wc.sink = sink.get();
  wc.stop = &stop_flag();
  wc.rcu = rcu.get();
  for (auto& s : tx_ports) wc.sinks.push_back(s.get());
  const std::string threads = std::to_string(o.workers) + " worker thread" + (o.workers > 1 ? "s" : "");
  std::string dev_desc;
  if (o.stage_times && (scheduled || dev != Device::kCpu)) {
    throw UsageError("--stage-times times the CPU workers' stages: it needs the CPU path (--device cpu, no --schedule)");
  }
  GpuEngine engine;
  const bool resident = dev == Device::kGpu && gpu_path == "resident";
  ResidentConfig rc;
  std::unique_ptr<ScheduledRun> sr;
  if (scheduled) {
    const std::string list = o.device == "auto" && !no_gpu.empty() ? "cpu,cpu" : o.device;
    if (list != o.device) std::fprintf(stderr, "device auto: %s: scheduling among 2 CPU worker groups\n", no_gpu.c_str());
    ScheduleFlags sf = o.schedule;
    sf.gpus = gpus;
    sr = std::make_unique<ScheduledRun>(sf, list, app, o.workers, cores, o.rate_mpps);
    if (!sr->note().empty()) std::printf("%s\n", sr->note().c_str());
    // The app's flags name its table (paths, sizes, seeds): the load report would differ in its times.
    std::string app_flags;
    for (const auto& [flag, value] : o.table.args.values()) app_flags += (app_flags.empty() ? "--" : " --") + flag + " " + value;
    sr->use_table(app.name(), app_flags, input_desc);
    HeteroConfig& hc = sr->config();
    hc.gpu_ring = gpu_ring_options();
    for (DeviceSpec& d : hc.devices) {  // an injected fault breaks the first GPU device named
      if (d.kind == sched::DeviceKind::kGpu) {
        d.fault_at_batch = o.inject_gpu_fault;
        break;
      }
    }
    hc.repeat = wc.repeat;
    hc.hold_ns = given(o, "--rx-hold-us") ? static_cast<uint64_t>(o.rx_hold_us * 1000) : 20000;
    hc.verify = o.verify;
    hc.ports = wc.ports;
    hc.stop = wc.stop;
    sr->prepare_profile(app, in.store());
    dev_desc = sr->describe();
  } else if (resident) {
    rc.producers = o.workers;
    rc.ring = gpu_ring_options();
    rc.rate_pps = wc.rate_pps;
    rc.repeat = wc.repeat;
    rc.rx_hold_ns = given(o, "--rx-hold-us") ? static_cast<uint64_t>(o.rx_hold_us * 1000) : 20000;
    rc.cores = wc.cores;
    rc.verify = o.verify;
    rc.ports = wc.ports;
    rc.stop = wc.stop;
    rc.rcu = rcu.get();
    rc.gpus = gpus;
    if (is_live && given(o, "--burst")) rc.burst = o.burst;  // else DPDK's customary 32, as the CPU paths take
    rc.zero_copy = o.resident.zero_copy == "on";
    if (gpus.size() > 1) {
      dev_desc = "gpus";
      for (size_t g = 0; g < gpus.size(); ++g) {
        dev_desc += (g ? ", " : " ") + std::to_string(gpus[g]) + " (" + gpu::device_info(gpus[g]).name + ")";
      }
      dev_desc += ", ";
    } else {
      const int g = gpus.empty() ? 0 : gpus[0];
      dev_desc = (gpus.empty() ? "gpu (" : "gpu " + std::to_string(g) + " (") + gpu::device_info(g).name + "), ";
    }
  } else if (dev == Device::kCpu) {
    wc.path = o.cpu_path == "scalar" ? LookupPath::kScalar : LookupPath::kBatched;
    // Live ports: DPDK's customary burst, whose frames, buffers and descriptors stay in the L1
    // cache from receipt to transmission (256 spill it: measured slower on memif; 64 and 128 not
    // measurably better: docs/RESULTS.md).
    if (is_live && !given(o, "--burst")) wc.burst = 32;
    if (o.stage_times) wc.stage_times = StageTiming::kAll;
    dev_desc = (o.cpu_path == "scalar" ? "cpu (scalar: one packet at a time), "
                                       : "cpu (batched: keys extracted per burst, looked up with prefetching), ") + threads;
  } else {
    const gpu::DeviceInfo info = gpu::device_info();
    gpu::OffloadOptions oo;
    oo.mode = gpu::parse_gpu_mode(o.gpu_mode);
    oo.capacity = o.batch;
    oo.slots = o.gpu_slots;
    oo.persistent_blocks = o.persistent_blocks;
    oo.fault_at_batch = o.inject_gpu_fault;
    auto runner = app.make_gpu_runner(oo);
    const int slots = runner->slots();
    // Enough bursts in flight per worker to fill every slot's batch, twice over.
    wc.max_bursts_in_flight = bursts_in_flight(o.batch, o.burst, o.workers);
    gpu::EngineConfig ec;
    if (cores.size() > size_t(o.workers)) ec.master_core = cores[o.workers];
    ec.max_batch = o.batch;
    ec.max_wait_ns = static_cast<uint64_t>(o.max_wait_us * 1000);
    ec.flush_when_idle = o.flush_when_idle;
    wc.rx_hold_ns = static_cast<uint64_t>(o.rx_hold_us * 1000);
    engine = attach_gpu_engine(wc, app, std::move(runner), ec, o.engine == "staged");
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s mode, %d slot(s), batches of up to %u keys or %.0f us%s, ",
                  o.gpu_mode.c_str(), slots, o.batch, o.max_wait_us,
                  o.flush_when_idle ? " (sooner when the GPU is idle)" : "");
    dev_desc = "gpu (" + info.name + "), " + o.engine + " engine, " + buf + threads + " + 1 GPU master thread";
  }
  if (const int sig = stop_signal()) {
    std::fprintf(stderr, "tandem: interrupted by %s before forwarding started: nothing written\n", stop_signal_name(sig));
    return 128 + sig;  // the sink, not closed, leaves --out as it was
  }
  // A capture streamed over several windows goes through the workers a window at a time, pass
  // after pass; the run's figures add up. Anything else is one run of the workers over memory.
  WorkersResult res;
  res.counters = Counters(app.ports());
  ResidentResult rres;
  HeteroResult hres;
  if (in.windowed()) wc.repeat = rc.repeat = 1;
  if (sr && in.windowed()) sr->config().repeat = 1;
  if (sr) sr->start_energy();
  for (;;) {
    wc.sink = !in.windowed() || in.pass() == 1 ? sink.get() : nullptr;  // --out: the first pass
    wc.cell_size = cell_size(in.store());
    if (live && resident) {
      rc.ring.cell_size = wc.cell_size;
      rres = live->run_resident(app, rc, sink.get());
      res = rres.run;
      break;
    }
    if (live) {
      res = live->run(app, wc, sink.get());
      break;
    }
    if (sr) {
      HeteroConfig& hc = sr->config();
      hc.sink = wc.sink;
      hc.cell_size = wc.cell_size;
      hc.gpu_ring.cell_size = wc.cell_size;
      const HeteroResult r = run_hetero(app, in.store(), hc);
      res.add(r.run);
      add_hetero(hres, r);
    } else if (resident) {
      rc.sink = wc.sink;
      rc.ring.cell_size = wc.cell_size;
      const ResidentResult r = run_resident(app, in.store(), rc);
      res.add(r.run);
      add_resident(rres, r);
    } else {
      res.add(run_workers(app, in.store(), wc));
    }
    if (stop_signal()) res.stopped = true;
    if (!in.windowed() || res.stopped || !in.next_window(o.repeat)) break;
  }
  gpu::EngineStats es;
  bool ended_on_gpu = false;
  if (wc.engine) {
    ended_on_gpu = engine.on_gpu();
    es = engine.stats();  // every request was answered before the workers returned: final
    engine = {};
  }
  if (sr) sr->stop_energy();
  if (sink) sink->close();
  if (resident) dev_desc += describe_resident(rc, rres.describe);
  const Counters& c = res.counters;
  const double seconds = res.seconds;
  const uint64_t rx = c.rx_packets, fwd = c.tx_packets, drop = c.dropped();
  // Stopped early, the run received fewer packets than planned; what it received must balance.
  const bool balanced = c.balanced() && (rx == res.expected || res.stopped);
  const int sig = stop_signal();
  const double mpps = rx / seconds / 1e6;
  const double gbps = res.wire_bytes * 8.0 / seconds / 1e9;
  std::printf("device: %s\n", dev_desc.c_str());
  std::printf("packets: received %llu, forwarded %llu, dropped %llu: accounting %s\n",
              static_cast<unsigned long long>(rx), static_cast<unsigned long long>(fwd),
              static_cast<unsigned long long>(drop), balanced ? "OK (received = forwarded + dropped)" : "MISMATCH");
  std::printf("throughput: %.2f Mpps, %.2f Gbps on the wire (+24 B/frame), %.3f s wall clock, %llu pass(es)%s\n",
              mpps, gbps, seconds, static_cast<unsigned long long>(o.repeat),
              o.verify ? " (verification included)" : "");
  std::printf("forwarded per port:");
  for (size_t p = 0; p < c.tx_per_port.size(); ++p) {
    if (c.tx_per_port[p]) std::printf(" %zu:%llu", p, static_cast<unsigned long long>(c.tx_per_port[p]));
  }
  if (c.tx_flooded) std::printf(" flooded:%llu", static_cast<unsigned long long>(c.tx_flooded));
  std::printf("%s\ndropped per reason:", fwd ? "" : " none");
  for (int r = 1; r < kDropReasonCount; ++r) {
    if (c.drops[r]) std::printf(" %s:%llu", app.drop_reason_name(static_cast<DropReason>(r)), static_cast<unsigned long long>(c.drops[r]));
  }
  std::printf("%s\n", drop ? "" : " none");
  // How the input's reading is counted: apart from the throughput above, which times the workers
  // only, whatever held the input; and, where reading came between the workers' runs, both together.
  const double total_seconds = seconds + in.read_seconds();
  switch (in.mode()) {
    case RunInput::Mode::kStreamed: {
      const std::string passes = std::to_string(o.repeat) + " pass(es)";
      std::printf("input streamed in %llu window(s), %s; reading took %.2f s, not counted in the throughput above "
                  "(as loading a whole input is not); reading included: %.2f Mpps over %.3f s\n",
                  static_cast<unsigned long long>(in.windows()),
                  (in.windowed() ? passes + (o.repeat > 1 ? ", each reading the capture again" : "")
                                 : "read once and replayed from memory for " + passes).c_str(),
                  in.read_seconds(), total_seconds > 0 ? rx / total_seconds / 1e6 : 0.0, total_seconds);
      break;
    }
    case RunInput::Mode::kPreloaded:
      std::printf("input preloaded: loading it took %.2f s before the run, not counted in the throughput above\n",
                  in.read_seconds());
      break;
    case RunInput::Mode::kLive:
      live->print();
      break;
    case RunInput::Mode::kGenerated:
      std::printf("input generated in memory: generating it took %.2f s before the run, not counted in the throughput above\n",
                  in.read_seconds());
      break;
  }
  const LatencyHistogram& lat = res.latency;
  std::printf("latency per packet, arrival to verdict: p50 %.1f us, p99 %.1f us, p99.9 %.1f us, max %.1f us\n",
              lat.percentile(0.5) / 1e3, lat.percentile(0.99) / 1e3, lat.percentile(0.999) / 1e3,
              lat.max() / 1e3);
  if (wc.engine) {
    std::printf("gpu engine: %llu batches (%llu on the GPU, %llu on the CPU), %.0f keys per batch on average, "
                "up to %llu in flight; back-pressure: %llu refused submissions%s\n",
                static_cast<unsigned long long>(es.batches), static_cast<unsigned long long>(es.gpu_batches),
                static_cast<unsigned long long>(es.cpu_batches), es.batches ? double(es.items) / es.batches : 0.0,
                static_cast<unsigned long long>(es.max_in_flight), static_cast<unsigned long long>(es.backpressure),
                ended_on_gpu ? "" : "; finished on the CPU after a GPU failure");
    if (!es.gpu_error.empty()) std::printf("gpu error: %s\n", es.gpu_error.c_str());
  }
  if (o.stage_times) {
    std::printf("stages, ns of a worker per packet (time-stamp counter): %s\n",
                res.stages.packets ? stages_line(res.stages).c_str() : "nothing timed (no packets)");
  }
  if (resident) print_resident(rres, seconds);
  if (sr) sr->print(hres, seconds);
  if (o.verify) {
    std::printf("verify: %llu lookup decisions checked against the %s app's reference: %llu differ; the workers "
                "spent %.3f s verifying, which slows the run (leave out --verify to measure forwarding alone)\n",
                static_cast<unsigned long long>(res.verify_checked), app.name(),
                static_cast<unsigned long long>(res.verify_mismatches), res.verify_seconds);
  }
  if (sink) std::printf("output: %s: %llu packets\n", o.out.c_str(), static_cast<unsigned long long>(sink->written()));
  if (!tx_ports.empty()) {
    std::printf("output: %s: %llu frames sent\n", tx_desc.c_str(), static_cast<unsigned long long>(frames_sent(tx_ports)));
  }
  if (control) {
    std::printf("control: %llu command(s) in %llu batch(es), %llu refused; table version %llu\n",
                static_cast<unsigned long long>(control->commands()), static_cast<unsigned long long>(control->batches()),
                static_cast<unsigned long long>(control->errors()),
                static_cast<unsigned long long>(app.table_control()->version()));
    // Only a run on the GPU has a device copy that takes the updates.
    const gpu::DeviceTableUpdates* dc = dev == Device::kGpu ? app.table_control()->device_copy() : nullptr;
    if (dc) {
      std::printf("control: device copy at version %llu: %llu update(s) applied between batches, %llu KiB copied, "
                  "%.1f ms waiting for batches in flight and copying\n",
                  static_cast<unsigned long long>(dc->device_version()), static_cast<unsigned long long>(dc->applies()),
                  static_cast<unsigned long long>(dc->bytes_copied() / 1024), dc->apply_ns() / 1e6);
      if (dc->abandoned()) {
        std::printf("control: the device copy was abandoned when the GPU failed; later updates reached the CPU's "
                    "copies, which the engine's fallback reads\n");
      }
      if (dc->uploads() > 0) {
        std::printf("control: %llu table version(s) uploaded whole by the control thread (%.1f MiB, %.1f ms), off the "
                    "data path\n",
                    static_cast<unsigned long long>(dc->uploads()), dc->uploaded_bytes() / 1048576.0, dc->upload_ns() / 1e6);
      }
    }
    if (const ResidentCopyStats* rs = resident ? app.table_control()->resident_copy() : nullptr) {
      std::printf("control: the GPU's copy (resident path): %llu version(s) published by the control thread (%.1f KiB "
                  "uploaded in %.1f ms), then %.1f ms waiting until no GPU batch read the version before\n",
                  static_cast<unsigned long long>(rs->versions.load()), rs->bytes.load() / 1024.0,
                  rs->upload_ns.load() / 1e6, rs->wait_ns.load() / 1e6);
      if (rs->abandoned.load()) {
        std::printf("control: later updates reached the CPU's copy only (the GPU failed, or the run was ending), which "
                    "the receive threads read after a GPU failure\n");
      }
    }
  }
  if (sig && in.windowed()) {
    // The capture's size is known only once it has been read: no "of" count.
    std::printf("interrupted by %s: stopped after receiving %llu packets, in window %llu of pass %llu of %llu over "
                "the streamed capture\n", stop_signal_name(sig), static_cast<unsigned long long>(rx),
                static_cast<unsigned long long>(in.window_in_pass()), static_cast<unsigned long long>(in.pass()),
                static_cast<unsigned long long>(o.repeat));
  } else if (sig && live) {
    std::printf("interrupted by %s: stopped after receiving %llu packets\n", stop_signal_name(sig),
                static_cast<unsigned long long>(rx));
  } else if (sig) {
    std::printf("interrupted by %s: stopped after receiving %llu of %llu packets\n", stop_signal_name(sig),
                static_cast<unsigned long long>(rx), static_cast<unsigned long long>(res.expected));
  }

  if (!o.json.empty()) {
    nlohmann::json drops = nlohmann::json::object();
    // Every app's reasons, so that reports of different apps have the same names; the running
    // app's own are counted, the others' are 0.
    for (const auto& [name, code] : drop_reason_report(app.name())) {
      if (code >= 0 || !drops.contains(name)) drops[name] = code >= 0 ? c.drops[code] : 0;
    }
    nlohmann::json ports = nlohmann::json::object();
    for (size_t p = 0; p < c.tx_per_port.size(); ++p) {
      if (c.tx_per_port[p]) ports[std::to_string(p)] = c.tx_per_port[p];
    }
    if (c.tx_flooded) ports["flood"] = c.tx_flooded;
    nlohmann::json report = {
        {"command", "run"}, {"app", app.name()}, {"table", a.table_desc},
        {"input", input_desc}, {"repeat", o.repeat}, {"device", dev_desc},
        {"machine", bench::machine_json()},
        {"received", rx}, {"forwarded", fwd}, {"dropped", drop}, {"balanced", balanced},
        {"drops", drops}, {"forwarded_per_port", ports}, {"seconds", seconds}, {"mpps", mpps},
        {"gbps_wire", gbps},
        {"latency_ns", {{"p50", lat.percentile(0.5)}, {"p99", lat.percentile(0.99)},
                        {"p999", lat.percentile(0.999)}, {"max", lat.max()}, {"min", lat.min()}}}};
    if (wc.engine) {
      report["engine"] = {{"batches", es.batches}, {"gpu_batches", es.gpu_batches}, {"cpu_batches", es.cpu_batches},
                          {"items", es.items}, {"max_in_flight", es.max_in_flight},
                          {"backpressure", es.backpressure}, {"gpu_error", es.gpu_error},
                          {"ended_on_gpu", ended_on_gpu}};
    }
    if (o.stage_times) report["stages_ns_per_packet"] = stages_json(res.stages);
    if (resident) report["resident"] = resident_json(rres, rc);
    if (sr) report["schedule"] = sr->json(hres, seconds);
    report["workers"] = o.workers;
    report["offered_mpps"] = o.rate_mpps;
    if (o.verify) {
      report["verify"] = {{"checked", res.verify_checked}, {"mismatches", res.verify_mismatches},
                          {"worker_seconds", res.verify_seconds}};
    }
    report["expected"] = res.expected;  // streamed and interrupted: the packets of the windows read so far
    report["input_mode"] = in.mode() == RunInput::Mode::kStreamed    ? "streamed"
                           : in.mode() == RunInput::Mode::kPreloaded ? "preloaded"
                           : in.mode() == RunInput::Mode::kLive      ? "live"
                                                                     : "generated";
    report["input_seconds"] = in.read_seconds();
    if (in.streamed()) report["windows"] = in.windows();
    if (live) report["live"] = live->json();
    if (!tx_ports.empty()) report["tx"] = {{"ports", o.live.tx}, {"sent", frames_sent(tx_ports)}};
    if (control) {
      report["control"] = {{"commands", control->commands()}, {"batches", control->batches()},
                           {"refused", control->errors()}, {"version", app.table_control()->version()}};
      if (const gpu::DeviceTableUpdates* dc = dev == Device::kGpu ? app.table_control()->device_copy() : nullptr) {
        report["control"]["device_copy"] = {{"version", dc->device_version()}, {"applies", dc->applies()},
                                            {"bytes", dc->bytes_copied()}, {"apply_seconds", dc->apply_ns() / 1e9},
                                            {"abandoned", dc->abandoned()},
                                            {"uploads", dc->uploads()}, {"uploaded_bytes", dc->uploaded_bytes()},
                                            {"upload_seconds", dc->upload_ns() / 1e9}};
      }
      if (const ResidentCopyStats* rs = resident ? app.table_control()->resident_copy() : nullptr) {
        report["control"]["device_copy"] = {{"path", "resident"}, {"uploads", rs->versions.load()},
                                            {"uploaded_bytes", rs->bytes.load()},
                                            {"upload_seconds", rs->upload_ns.load() / 1e9},
                                            {"wait_seconds", rs->wait_ns.load() / 1e9},
                                            {"abandoned", rs->abandoned.load()}};
      }
    }
    report["interrupted"] = sig ? nlohmann::json(stop_signal_name(sig)) : nlohmann::json(nullptr);
    bench::write_json(o.json, report);
  }
  if (sr && !sig) sr->save_table(hres, seconds);  // an interrupted run's figures are not a profile
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) throw UsageError("cannot write to standard output");
  if (!balanced) return 3;
  if (sig) return 128 + sig;
  if (o.verify && res.verify_mismatches) return 4;
  if (sr && (hres.reordered || hres.lost)) return 5;  // the scheduler broke a flow: always a bug
  return 0;
}

}  // namespace

void register_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* c = app.add_subcommand("run", "forward packets through an app and account for each of them");
  add_app_options(c, o->table);
  auto* pcap = c->add_option("--pcap", o->pcap, "input capture (pcap or pcapng, Ethernet)")->check(CLI::ExistingFile);
  auto* gen = c->add_option("--gen", o->gen,
                            "generated input, e.g. count=1000000,dst=fib,flows=10000,zipf=1.1,size=imix,proto=udp,seed=1 "
                            "(dst=fib: keys from the app's table; seq=1: a per-flow sequence trailer after each IP datagram)");
  pcap->excludes(gen);
  gen->excludes(pcap);
  add_live_flags(c, o->live);
  c->add_option("--control", o->control,
                "take live table updates on this Unix socket while forwarding (tandem ctl --socket PATH; ipv4: "
                "add PREFIX/LEN NEXTHOP, del PREFIX/LEN); CPU paths; every burst sees a batch whole or not at all");
  c->add_option("--packets", o->packets, "--rx: stop once this many packets have been received")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 62));
  c->add_option("--out", o->out,
                "write forwarded packets here (.pcap or .pcapng; first pass only), replaced only once complete");
  c->add_option("--device", o->device,
                "cpu, gpu, or auto (the GPU when one is usable); with --schedule, the devices to share the traffic: "
                "a list such as cpu,gpu or cpu:4,cpu:4 (THREADS each), gpu0,gpu1 (CUDA devices; gpu: each GPU of --gpus) "
                "or sim:A_US/NS_PER_BYTE (a simulated device)")
      ->capture_default_str();
  c->add_option("--cpu-path", o->cpu_path, "scalar (one packet at a time) or batched (tbl24 prefetched while the batch is parsed)")
      ->capture_default_str()->check(CLI::IsMember({"scalar", "batched"}));
  c->add_option("--repeat", o->repeat,
                "passes over the input. A --pcap capture streamed (no --preload) is read again for each pass, "
                "64 MiB of frames at a time, unless it fits in one such window: then it is read once and "
                "replayed from that window. --preload and --gen replay from memory")
      ->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  c->add_flag("--preload", o->preload,
              "--pcap: load the whole capture into memory before the run and replay it from there, for peak-rate "
              "runs (memory grows with the capture). Without it the capture is streamed, 64 MiB of frames at a "
              "time, and memory stays flat. Refused with --gen, whose traffic is made in memory anyway");
  c->add_option("--workers", o->workers, "worker threads, each with its own receive queue (RSS by flow hash)")
      ->capture_default_str()->check(CLI::Range(1, 256));
  c->add_option("--burst", o->burst, "frames per receive burst (live ports on the CPU and the resident path: 32 unless given)")
      ->capture_default_str()->check(CLI::Range(1u, 256u));
  c->add_option("--rate-mpps", o->rate_mpps,
                "offered load in Mpps over all workers, released on a schedule (0: as fast as possible)")
      ->capture_default_str()->check(FiniteRange(0.0, 1e5));
  c->add_option("--batch,--gpu-batch", o->batch, "GPU: addresses per batch (at most)")
      ->capture_default_str()->check(CLI::Range(1u, 1u << 24));
  c->add_option("--max-wait-us", o->max_wait_us, "GPU: a partial batch leaves this long after its first address")
      ->capture_default_str()->check(FiniteRange(0.0, 1e7));
  c->add_flag("--flush-when-idle", o->flush_when_idle,
              "GPU: send a batch at once when none is in flight (batch only while the GPU is busy)");
  c->add_option("--engine", o->engine,
                 "GPU: staged (workers write keys into the batch and read results in place) or gather "
                 "(the master copies keys in and results out)")
      ->capture_default_str()->check(CLI::IsMember({"staged", "gather"}));
  c->add_option("--rx-hold-us", o->rx_hold_us,
                 "GPU: a worker holds a partial burst this long for more packets before handing it over (the "
                 "resident path: a paced or live receive thread, its partial batch; 20 unless given)")
      ->capture_default_str()->check(FiniteRange(0.0, 1e6));
  c->add_option("--gpu-slots", o->gpu_slots, "GPU: batches in flight at once (persistent mode: 1)")
      ->capture_default_str()->check(CLI::Range(1, 8));
  c->add_option("--gpus", o->gpus,
                "the GPUs to use, e.g. 0,1: receive thread t feeds GPU t mod N on the resident path (a flow stays on "
                "one GPU); with --schedule, the device gpu stands for each of them (--inject-gpu-fault breaks the first)");
  c->add_option("--persistent-blocks", o->persistent_blocks, "GPU persistent mode: resident blocks (0: one per SM)")
      ->capture_default_str()->check(CLI::Range(0, 1024));
  c->add_option("--cores", o->cores,
                "pin worker w to the w-th CPU of this list (e.g. 2-5), the GPU master to the next one");
  c->add_option("--inject-gpu-fault", o->inject_gpu_fault,
                "GPU: break the GPU with a trapping kernel at this batch (1-based), to test the CPU fallback")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  c->add_option("--gpu-mode", o->gpu_mode,
                 "how batches reach the GPU: async (copies on streams), graph (CUDA graph), mapped "
                 "(zero-copy), persistent (resident kernel, no launches)")
      ->capture_default_str()->check(CLI::IsMember({"async", "graph", "mapped", "persistent"}));
  c->add_option("--gpu-path", o->gpu_path,
                "GPU: offload (workers parse and apply, the GPU looks keys up) or resident (receive threads put "
                "frames in GPU-registered memory, the GPU does the whole per-packet work, no worker touches a "
                "packet; --gpu-mode persistent or async, --batch frames per batch, default 1024)")
      ->capture_default_str()->check(CLI::IsMember({"offload", "resident"}));
  add_resident_flags(c, o->resident);
  add_schedule_flags(c, o->schedule);
  c->add_flag("--verify", o->verify, "check every lookup decision against the app's reference (trie, map)");
  c->add_flag("--stage-times", o->stage_times, "CPU path: time each burst's stages with the time-stamp counter and "
              "report nanoseconds of a worker per packet in each (receive, parse, lookup, apply, counters, latency, "
              "transmit, loop); costs about 2 ns a packet");
  c->add_option("--json", o->json, "write a JSON summary here");
  c->callback([o, c] {
    if (o->pcap.empty() && o->gen.empty() && o->live.rx.empty()) {
      throw UsageError("run: give an input: --pcap FILE, --gen SPEC or --rx PORTS");
    }
    if (o->preload && o->pcap.empty()) {
      throw UsageError("--preload is for --pcap: traffic from --gen is made in memory and replayed from there anyway");
    }
    for (const char* flag : kGpuOnlyFlags) {
      if (c->count(flag) > 0) o->gpu_flags.push_back(flag);
    }
    const int rc = run(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
