// `tandem bench gpu-path`: an app's data path through `tandem run`'s machinery, side by side in one
// run: the CPU batched path on N workers, the offload path (workers parse and apply, the GPU looks
// keys up; N workers + 1 master), and the resident path (receive threads put frames in GPU-
// registered memory, the GPU does the whole per-packet work) in each mode and layout, against
// ceilings measured in the same run by kernels that do no app work (bench/gpu_path_ceilings.h).
//
// The in-memory receive side stands in for a NIC on every path: its copy of each frame into a cell
// or a slot is timed apart (receive cores) from the rest (processing cores), so that paths are
// compared on the work a NIC would not do for them. Before timing, every row forwards the input
// once with --verify and must give the CPU scalar path's counters with no decision differing.
// Each repetition forwards enough packets to last at least --min-seconds; medians are reported.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_report.h"
#include "bench/gpu_path_ceilings.h"
#include "cli/app_setup.h"
#include "cli/commands.h"
#include "cli/table_setup.h"
#include "core/machine_info.h"
#include "gpu/gpu_runtime.h"
#include "io/traffic_gen.h"
#include "sched/resident.h"
#include "sched/workers.h"

namespace tandem::cli {

namespace {

struct GpuPathOptions {
  AppOptions table;
  std::string gen = "count=2000000,dst=fib,flows=100000,size=64,seed=3";
  std::string sizes;  // frame sizes, each replacing the spec's (empty: the spec's own)
  std::string cpu_workers = "1,15";
  std::string offload_workers = "15";
  std::string rx_threads = "1,2,4";
  std::string resident = "persistent-cells,persistent-packed,async-packed";
  std::string gpus = "1";  // resident rows: GPU counts (N: GPUs 0..N-1)
  uint32_t batch = 1024;
  uint32_t dma_batch = 16384;
  uint32_t ring_slots = 16;
  int blocks = 0;
  std::string cores;
  int reps = 3;
  double min_seconds = 0.5;
  bool no_ceilings = false;
  std::string json;
};

struct Row {
  std::string path;
  std::string threads;
  std::vector<double> mpps;
  double rx_cores = 0;    // receive threads' busy share (the NIC's stand-in), last repetition
  double proc_cores = 0;  // the rest of the CPU work, last repetition
  double p99_us = 0;
  bool checked = false;   // the verified pass matched the scalar path
  std::string error;
  int gpus = 1;           // resident rows: GPUs used
  std::string size;       // the traffic's frame size
  double mean_bytes = 0;  // captured bytes per frame on average
};

// One measured run: packets, seconds, and the CPU time split.
struct Run {
  WorkersResult r;
  double proc_cores = 0;
};

std::vector<int> int_list(const std::string& flag, const std::string& s, int lo, int hi) {
  std::vector<int> v;
  for (const std::string& x : bench::split_list(s)) {
    if (x.empty() || x.find_first_not_of("0123456789") != std::string::npos || std::stoi(x) < lo || std::stoi(x) > hi) {
      throw UsageError(flag + ": '" + x + "' is not a number from " + std::to_string(lo) + " to " + std::to_string(hi));
    }
    v.push_back(std::stoi(x));
  }
  return v;
}

bool same_counters(const Counters& a, const Counters& b) {
  return a.rx_packets == b.rx_packets && a.tx_per_port == b.tx_per_port && a.drops == b.drops &&
         a.tx_flooded == b.tx_flooded;
}

// Runs `once(packets, verify)` verified over one pass, then times it: a warm-up sizes the run so
// that each repetition lasts at least min_seconds.
template <class F>
void measure(Row& row, const GpuPathOptions& o, const PacketStore& s, const Counters& want, F&& once) {
  try {
    const Run check = once(0, true);
    row.checked = same_counters(check.r.counters, want) && check.r.verify_mismatches == 0 && check.r.verify_checked > 0;
    if (!row.checked) row.error = "differs from the scalar path";
    const Run warm = once(s.size() * 4, false);
    const double rate = warm.r.counters.rx_packets / warm.r.seconds;
    const auto packets = static_cast<uint64_t>(std::max<double>(double(s.size()), rate * o.min_seconds * 1.2));
    for (int k = 0; k < o.reps; ++k) {
      const Run run = once(packets, false);
      if (!run.r.counters.balanced() || run.r.counters.rx_packets != packets) row.error = "accounting";
      row.mpps.push_back(run.r.counters.rx_packets / run.r.seconds / 1e6);
      row.rx_cores = run.r.rx_seconds / run.r.seconds;
      row.proc_cores = run.proc_cores;
      row.p99_us = run.r.latency.percentile(0.99) / 1e3;
    }
  } catch (const std::exception& e) {
    row.error = e.what();
  }
}

// The rows of one traffic: CPU batched, offload, resident, each checked against the scalar path.
template <class First>
void add_rows(const GpuPathOptions& o, ForwardApp& app, const PacketStore& s, bool have_gpu, const First& first,
              const std::vector<int>& cores, std::vector<Row>& rows) {
  Counters want(app.ports());
  {
    WorkersConfig wc;
    wc.path = LookupPath::kScalar;
    wc.ports = app.ports();
    want = run_workers(app, s, wc).counters;
  }
  for (const int w : int_list("--cpu-workers", o.cpu_workers, 1, 256)) {
    Row row{"CPU batched", std::to_string(w) + " workers"};
    measure(row, o, s, want, [&](uint64_t packets, bool verify) {
      WorkersConfig wc;
      wc.path = LookupPath::kBatched;
      wc.workers = w;
      wc.ports = app.ports();
      wc.packets = packets;
      wc.verify = verify;
      wc.cores = first(w);
      wc.stage_times = StageTiming::kReceive;  // rx_seconds: two counter reads a burst
      Run run{run_workers(app, s, wc)};
      run.proc_cores = w - run.r.rx_seconds / run.r.seconds;
      return run;
    });
    rows.push_back(std::move(row));
  }
  // An app the GPU runs through the resident path only (ipsec) has no offload rows.
  const bool offload = have_gpu && !resident_only(o.table);
  for (const int w : offload ? int_list("--offload-workers", o.offload_workers, 1, 256) : std::vector<int>{}) {
    Row row{"GPU offload (async, 4 slots, staged)", std::to_string(w) + " workers + 1 master"};
    measure(row, o, s, want, [&](uint64_t packets, bool verify) {
      WorkersConfig wc;
      wc.workers = w;
      wc.ports = app.ports();
      wc.packets = packets;
      wc.verify = verify;
      wc.cores = first(w);
      gpu::OffloadOptions oo;
      oo.slots = 4;
      gpu::EngineConfig ec;
      if (cores.size() > size_t(w)) ec.master_core = cores[w];
      wc.max_bursts_in_flight = bursts_in_flight(uint32_t(oo.capacity), wc.burst, w);
      GpuEngine engine = attach_gpu_engine(wc, app, app.make_gpu_runner(oo), ec, true);
      Run run{run_workers(app, s, wc)};
      run.proc_cores = w + 1 - run.r.rx_seconds / run.r.seconds;
      return run;
    });
    rows.push_back(std::move(row));
  }
  for (const std::string& way : have_gpu ? bench::split_list(o.resident) : std::vector<std::string>{}) {
    const size_t dash = way.find('-');
    if (dash == std::string::npos) throw UsageError("--resident: '" + way + "' is not MODE-LAYOUT");
    const std::string mode = way.substr(0, dash), layout = way.substr(dash + 1);
    for (const int ng : int_list("--gpus", o.gpus, 1, 64))
    for (const int t : int_list("--rx-threads", o.rx_threads, 1, 32)) {
      if (ng > gpu::device_count()) {
        throw UsageError("--gpus: " + std::to_string(ng) + " GPUs asked, this host has " + std::to_string(gpu::device_count()));
      }
      if (t < ng) continue;  // each GPU needs its own receive threads
      Row row{"GPU resident (" + mode + ", " + layout + ")" + (ng > 1 ? " x " + std::to_string(ng) + " GPUs" : ""),
              std::to_string(t) + " receive + " + std::to_string(ng) + " housekeeping"};
      row.gpus = ng;
      measure(row, o, s, want, [&](uint64_t packets, bool verify) {
        ResidentConfig rc;
        rc.producers = t;
        for (int g = 0; g < ng; ++g) rc.gpus.push_back(g);
        rc.ring.mode = gpu::parse_gpu_mode(mode);
        rc.ring.layout = gpu::parse_frame_layout(layout);
        rc.ring.batch = rc.ring.mode == gpu::GpuMode::kAsync ? o.dma_batch : o.batch;
        rc.ring.slots_per_producer = o.ring_slots;
        rc.ring.blocks = o.blocks;
        rc.ports = app.ports();
        rc.packets = packets;
        rc.verify = verify;
        rc.cores = first(t);
        const ResidentResult r = run_resident(app, s, rc);
        if (r.gpu_failed) throw gpu::GpuError(r.gpu_error);
        Run run{r.run};
        // The housekeeping thread: a busy loop in the DMA variant, asleep beside the persistent kernel.
        run.proc_cores = r.finish_seconds / r.run.seconds + (rc.ring.mode == gpu::GpuMode::kAsync ? 1 : 0);
        return run;
      });
      rows.push_back(std::move(row));
    }
  }
}

int run_bench(const GpuPathOptions& o) {
  std::string why;
  const bool have_gpu = gpu::available(&why);
  if (const std::string no = no_gpu_path(o.table); !no.empty()) throw UsageError(no);
  LoadedApp a = load_app(o.table);
  ForwardApp& app = *a.app;
  app.build_reference();
  std::vector<int> cores;
  if (!o.cores.empty()) cores = parse_cpu_list(o.cores);
  const auto first = [&](int n) {
    return std::vector<int>(cores.begin(), cores.begin() + std::min<size_t>(cores.size(), size_t(n)));
  };
  for (const int g : int_list("--gpus", o.gpus, 1, 64)) {
    if (have_gpu && g > gpu::device_count()) {
      throw UsageError("--gpus: " + std::to_string(g) + " GPUs asked, this host has " + std::to_string(gpu::device_count()));
    }
  }
  const GenSpec base = parse_gen_flag("--gen", o.gen);  // checked whole, and its own size
  std::vector<std::string> sizes = bench::split_list(o.sizes);
  if (sizes.empty()) sizes.push_back(base.size_mode == GenSpec::Size::kImix ? "imix" : std::to_string(base.frame_size));
  std::vector<Row> rows;
  size_t frames = 0;
  for (const std::string& size : sizes) {
    PacketStore s;
    try {
      std::string spec;  // --gen with its size replaced
      for (const std::string& kv : bench::split_list(o.gen)) {
        if (kv.rfind("size=", 0) != 0) spec += kv + ",";
      }
      s = a.generate(parse_gen_flag("--sizes", spec + "size=" + size));
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--gen/--sizes: ") + e.what());
    }
    if (s.size() == 0) throw UsageError("--gen: no packets");
    frames = s.size();
    const size_t first_row = rows.size();
    add_rows(o, app, s, have_gpu, first, cores, rows);
    for (size_t k = first_row; k < rows.size(); ++k) {
      rows[k].size = size;
      rows[k].mean_bytes = double(s.total_caplen()) / s.size();
    }
  }
  std::vector<bench::Ceiling> ceilings;
  if (have_gpu && !o.no_ceilings) {
    ceilings = bench::measure_gpu_path_ceilings(o.reps, o.min_seconds);
    // With several GPUs in the rows, the same probes on all of them at once.
    int most = 1;
    for (const int g : int_list("--gpus", o.gpus, 1, 64)) most = std::max(most, g);
    if (most > 1) {
      for (bench::Ceiling& c : bench::measure_gpu_path_ceilings(o.reps, o.min_seconds, most)) ceilings.push_back(std::move(c));
    }
  }

  const MachineInfo m = machine_info();
  std::printf("bench gpu-path: app %s, %s (sizes: %s): %zu frames; %s%s\n", app.name(), o.gen.c_str(),
              o.sizes.empty() ? "the spec's" : o.sizes.c_str(), frames, m.cpu_model.c_str(),
              have_gpu ? (", " + gpu::device_info().name + (gpu::device_count() > 1 ? " x " + std::to_string(gpu::device_count()) : "")).c_str()
                       : (", no GPU: " + why).c_str());
  std::printf("medians of %d repetitions of at least %.2f s; cores: receive (the NIC's copy, timed apart) + "
              "processing (the rest, GPU threads included)\n\n", o.reps, o.min_seconds);
  std::printf("%-6s %-40s %-30s %10s %9s %9s %11s %9s %s\n", "size", "path", "threads", "Mpps", "Gbps", "rx cores",
              "proc cores", "p99 us", "checked");
  nlohmann::json jrows = nlohmann::json::array();
  for (const Row& r : rows) {
    const double mpps = r.mpps.empty() ? 0 : bench::median(r.mpps);
    // On the wire: the frame, its FCS and the 20 bytes of preamble and gap.
    const double gbps = mpps * (r.mean_bytes + 24) * 8 / 1e3;
    std::printf("%-6s %-40s %-30s %10.2f %9.1f %9.2f %11.2f %9.1f %s\n", r.size.c_str(), r.path.c_str(),
                r.threads.c_str(), mpps, gbps, r.rx_cores, r.proc_cores, r.p99_us,
                r.error.empty() ? "same as scalar" : r.error.c_str());
    jrows.push_back({{"size", r.size}, {"mean_bytes", r.mean_bytes}, {"gbps_wire", gbps}, {"path", r.path}, {"threads", r.threads}, {"gpus", r.gpus}, {"mpps", mpps}, {"mpps_reps", r.mpps},
                     {"rx_cores", r.rx_cores}, {"proc_cores", r.proc_cores}, {"p99_us", r.p99_us},
                     {"checked", r.checked}, {"error", r.error}});
  }
  // Several GPUs against one: the same size, mode, layout and receive threads.
  nlohmann::json jscale = nlohmann::json::array();
  for (const Row& r : rows) {
    if (r.gpus < 2 || r.mpps.empty()) continue;
    const std::string base = r.path.substr(0, r.path.find(" x "));
    const std::string threads = r.threads.substr(0, r.threads.find(" + "));
    for (const Row& one : rows) {
      if (one.gpus != 1 || one.size != r.size || one.path != base || one.mpps.empty() ||
          one.threads.substr(0, one.threads.find(" + ")) != threads) {
        continue;
      }
      const double ratio = bench::median(r.mpps) / bench::median(one.mpps);
      if (jscale.empty()) std::printf("\nscaling (several GPUs against one, same receive threads):\n");
      std::printf("  %-6s %-40s %-12s %d GPUs / 1 GPU: %.2fx\n", r.size.c_str(), base.c_str(), threads.c_str(), r.gpus, ratio);
      jscale.push_back({{"size", r.size}, {"path", base}, {"receive_threads", threads}, {"gpus", r.gpus}, {"ratio", ratio}});
    }
  }
  nlohmann::json jceil = nlohmann::json::array();
  if (!ceilings.empty()) std::printf("\nceilings (64 B frames unless named, no app work: read, 8 B rewritten, 4 B verdict):\n");
  for (const bench::Ceiling& c : ceilings) {
    std::printf("  %-90s %10.2f Mpps\n", c.name.c_str(), c.mpps);
    jceil.push_back({{"name", c.name}, {"mpps", c.mpps}});
  }
  if (!o.json.empty()) {
    bench::write_json(o.json, {{"command", "bench gpu-path"}, {"app", app.name()}, {"gen", o.gen},
                               {"frames", frames}, {"machine", bench::machine_json()}, {"reps", o.reps},
                               {"min_seconds", o.min_seconds}, {"rows", jrows}, {"scaling", jscale}, {"ceilings", jceil}});
  }
  for (const Row& r : rows) {
    if (!r.error.empty()) return 1;
  }
  return 0;
}

}  // namespace

void register_bench_gpu_path(CLI::App& bench) {
  auto o = std::make_shared<GpuPathOptions>();
  CLI::App* c = bench.add_subcommand("gpu-path", "an app through the CPU, offload and resident GPU paths, against PCIe ceilings");
  add_app_options(c, o->table);
  c->add_option("--gen", o->gen, "the traffic (tandem gen spec)")->capture_default_str();
  c->add_option("--sizes", o->sizes, "frame sizes, each a run of every row (e.g. 64,512,1518,imix; default: --gen's)");
  c->add_option("--cpu-workers", o->cpu_workers, "CPU batched rows: worker counts")->capture_default_str();
  c->add_option("--offload-workers", o->offload_workers, "offload rows: worker counts")->capture_default_str();
  c->add_option("--rx-threads", o->rx_threads, "resident rows: receive thread counts")->capture_default_str();
  c->add_option("--resident", o->resident, "resident rows: MODE-LAYOUT, MODE persistent or async, LAYOUT cells or packed")
      ->capture_default_str();
  c->add_option("--gpus", o->gpus, "resident rows: GPU counts, each a row (N uses GPUs 0..N-1; receive thread t feeds GPU t mod N)")
      ->capture_default_str();
  c->add_option("--batch", o->batch, "resident persistent: frames per batch")->capture_default_str()->check(CLI::Range(32u, 2048u));
  c->add_option("--dma-batch", o->dma_batch, "resident async: frames per batch")->capture_default_str()->check(CLI::Range(32u, 1u << 20));
  c->add_option("--ring-slots", o->ring_slots, "resident: batches in flight per receive thread")->capture_default_str()->check(CLI::Range(2u, 1024u));
  c->add_option("--blocks", o->blocks, "resident persistent: worker blocks (0: one per SM)")->capture_default_str()->check(CLI::Range(0, 1024));
  c->add_option("--cores", o->cores, "pin each row's threads to these CPUs in order (e.g. 1-15)");
  c->add_option("--reps", o->reps, "repetitions (median reported)")->capture_default_str()->check(CLI::Range(1, 100));
  c->add_option("--min-seconds", o->min_seconds, "least duration of a repetition")->capture_default_str()->check(FiniteRange(0.0, 600.0));
  c->add_flag("--no-ceilings", o->no_ceilings, "leave out the ceiling kernels");
  c->add_option("--json", o->json, "write the report here");
  c->callback([o] {
    const int rc = run_bench(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
