// `tandem bench gpu-frames`: an app's whole per-packet logic on whole frames, one thread, side by
// side: the CPU scalar and batched paths on one core, and the GPU's whole-frame runner
// (gpu/frame_runner.h: frames packed back to back into a batch, processed in place) in each mode
// and number of batches in flight. The GPU rows are the thread that packs frames into a batch,
// submits it and reads the verdicts back; the CPU rows copy each burst into packet cells and
// forward it. Before timing, each row's verdicts and bytes are checked against the scalar path
// on the same frames. Each repetition makes whole passes over the input until at least
// --min-seconds have passed; the median rate is reported.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_report.h"
#include "cli/app_setup.h"
#include "cli/commands.h"
#include "cli/table_setup.h"
#include "core/clock.h"
#include "core/flow_hash.h"
#include "core/usage_error.h"
#include "gpu/frame_runner.h"
#include "io/traffic_gen.h"

namespace tandem::cli {

namespace {

struct GpuFramesOptions {
  AppOptions table;
  std::string gen = "count=1000000,dst=fib,flows=100000,size=64,seed=3";
  std::string modes = "async,mapped";
  std::string slots = "1,4";
  uint32_t batch = 8192;
  int reps = 3;
  double min_seconds = 0.5;
  std::string json;
};

using Digest = bench::FrameDigest;

// One pass of a CPU path: bursts copied into packet cells, forwarded, counted.
void cpu_pass(const ForwardApp& app, bool batched, const PacketStore& s, PacketPool& pool, Counters& c,
              Digest* d) {
  for (size_t base = 0; base < s.size(); base += PacketBatch::kCapacity) {
    PacketBatch b;
    b.size = static_cast<uint32_t>(std::min<size_t>(PacketBatch::kCapacity, s.size() - base));
    for (uint32_t i = 0; i < b.size; ++i) {
      b.cell[i] = i;
      b.len[i] = static_cast<uint16_t>(s.caplen[base + i]);
      std::memcpy(pool.data(i), s.frame(base + i), s.caplen[base + i]);
    }
    if (batched) {
      app.forward_batched(pool, b, c);
    } else {
      app.forward_scalar(pool, b, c);
    }
    if (d) {
      for (uint32_t i = 0; i < b.size; ++i) d->add(pool.data(i), b.len[i], b.verdict[i]);
    }
  }
}

// One pass through the GPU: slots filled round robin; a slot's previous batch is finished (its
// verdicts read and counted) before the slot is filled again.
void gpu_pass(gpu::FrameRunner& r, const PacketStore& s, Counters& c, Digest* d) {
  const int slots = r.options().slots;
  std::vector<gpu::FramePacker> packers;
  for (int k = 0; k < slots; ++k) packers.emplace_back(r, k);
  std::vector<bool> busy(static_cast<size_t>(slots), false);
  auto finish = [&](int k) {
    if (!busy[k]) return;
    gpu::FramePacker& p = packers[k];
    p.wait();
    for (size_t i = 0; i < p.frames(); ++i) {
      const uint32_t v = p.verdict(i);
      c.received(p.length(i));
      c.verdict(v, p.length(i));
      if (d) d->add(p.frame(i), p.length(i), v);
    }
    p.clear();
    busy[k] = false;
  };
  int k = 0;
  for (size_t i = 0; i < s.size();) {
    gpu::FramePacker& p = packers[k];
    while (i < s.size() && p.add(s.frame(i), s.caplen[i])) ++i;
    if (p.frames() == 0) throw UsageError("--batch: a frame of " + std::to_string(s.caplen[i]) + " bytes does not fit a batch");
    p.submit();
    busy[k] = true;
    k = (k + 1) % slots;
    finish(k);
  }
  for (int j = 0; j < slots; ++j) finish((k + j) % slots);
}

struct Row {
  std::string name;
  std::string mode;
  int slots = 0;
  std::vector<double> rates;
  bool same = false;
  bool balanced = true;
};

int run_bench(const GpuFramesOptions& o) {
  std::string why;
  if (!gpu::available(&why)) throw UsageError("bench gpu-frames needs a GPU: " + why);
  if (const std::string no = no_gpu_path(o.table); !no.empty()) throw UsageError(no);
  LoadedApp a = load_app(o.table);
  const ForwardApp& app = *a.app;
  const GenSpec spec = parse_gen_flag("--gen", o.gen);
  PacketStore store;
  try {
    store = a.generate(spec);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--gen: ") + e.what());
  }
  if (store.size() == 0) throw UsageError("--gen: no packets");
  const double mean_bytes = double(store.total_caplen()) / store.size();

  PacketPool pool(PacketBatch::kCapacity);
  Digest want;
  {
    Counters c(app.ports());
    cpu_pass(app, false, store, pool, c, &want);
  }
  // Passes over the input per repetition, so that each lasts at least min_seconds.
  auto timed = [&](auto&& pass, Row& row) {
    for (int rep = 0; rep < o.reps; ++rep) {
      Counters c(app.ports());
      const uint64_t t0 = now_ns();
      uint64_t passes = 0;
      do {
        pass(c);
        ++passes;
      } while ((now_ns() - t0) / 1e9 < o.min_seconds);
      row.rates.push_back(c.rx_packets / ((now_ns() - t0) / 1e9));
      row.balanced = row.balanced && c.balanced() && c.rx_packets == passes * store.size();
    }
  };

  std::vector<Row> rows;
  for (bool batched : {false, true}) {
    Row row{batched ? "CPU batched, 1 core" : "CPU scalar, 1 core", "-", 0};
    Digest got;
    {
      Counters c(app.ports());
      cpu_pass(app, batched, store, pool, c, &got);
    }
    row.same = got == want;
    timed([&](Counters& c) { cpu_pass(app, batched, store, pool, c, nullptr); }, row);
    rows.push_back(std::move(row));
  }
  for (const std::string& m : bench::split_list(o.modes)) {
    for (const std::string& sl : bench::split_list(o.slots)) {
      gpu::FrameOptions fo;
      fo.mode = gpu::parse_gpu_mode(m);
      fo.slots = std::stoi(sl);
      fo.max_frames = o.batch;
      fo.max_bytes = size_t{o.batch} * 2048;
      auto r = app.make_frame_runner(fo);
      Row row{"GPU whole frames", m, fo.slots};
      Digest got;
      {
        Counters c(app.ports());
        gpu_pass(*r, store, c, &got);
      }
      row.same = got == want;
      timed([&](Counters& c) { gpu_pass(*r, store, c, nullptr); }, row);
      rows.push_back(std::move(row));
    }
  }

  std::printf("%s on whole frames: %s, %zu frames (%.0f bytes on average), one thread; GPU batches of %u frames\n",
              app.name(), format_gen_spec(spec).c_str(), store.size(), mean_bytes, o.batch);
  std::printf("%-22s %8s %6s %10s %10s %12s  %s\n", "path", "mode", "slots", "Mpps", "Gbit/s", "vs scalar",
              "check vs scalar");
  const double scalar = bench::median(rows[0].rates);
  nlohmann::json jrows = nlohmann::json::array();
  int wrong = 0;
  for (const Row& r : rows) {
    const double pps = bench::median(r.rates);
    wrong += !r.same || !r.balanced;
    std::printf("%-22s %8s %6d %10.2f %10.2f %11.2fx  %s\n", r.name.c_str(), r.mode.c_str(), r.slots, pps / 1e6,
                pps * mean_bytes * 8 / 1e9, scalar > 0 ? pps / scalar : 0.0,
                !r.same ? "DIFFERENT" : !r.balanced ? "UNBALANCED" : "identical");
    jrows.push_back({{"path", r.name}, {"mode", r.mode}, {"slots", r.slots}, {"rates_pps", r.rates},
                     {"median_pps", pps}, {"over_scalar", scalar > 0 ? pps / scalar : 0.0},
                     {"identical_to_scalar", r.same}, {"balanced", r.balanced}});
  }
  if (!o.json.empty()) {
    nlohmann::json report = {{"bench", "gpu-frames"}, {"machine", bench::machine_json()}, {"app", app.name()},
                             {"table", a.table_desc}, {"mean_frame_bytes", mean_bytes},
                             {"config", {{"gen", format_gen_spec(spec)}, {"batch", o.batch}, {"reps", o.reps},
                                         {"min_seconds", o.min_seconds}}},
                             {"rows", jrows}};
    bench::write_json(o.json, report);
    std::printf("wrote %s\n", o.json.c_str());
  }
  return wrong ? 4 : 0;
}

}  // namespace

void register_bench_gpu_frames(CLI::App& bench) {
  auto o = std::make_shared<GpuFramesOptions>();
  CLI::App* c = bench.add_subcommand("gpu-frames", "an app's whole per-packet logic on whole frames: CPU vs the GPU's whole-frame runner");
  add_app_options(c, o->table);
  c->add_option("--gen", o->gen, "the traffic (tandem gen spec)")->capture_default_str();
  c->add_option("--modes", o->modes, "GPU modes: async, mapped")->capture_default_str();
  c->add_option("--slots", o->slots, "batches in flight, e.g. 1,4")->capture_default_str();
  c->add_option("--batch", o->batch, "frames per GPU batch")->capture_default_str()->check(CLI::Range(256u, 1u << 20));
  c->add_option("--reps", o->reps, "repetitions (median reported)")->capture_default_str()->check(CLI::Range(1, 100));
  c->add_option("--min-seconds", o->min_seconds, "least duration of a repetition")->capture_default_str()->check(CLI::Range(0.0, 600.0));
  c->add_option("--json", o->json, "write the report here");
  c->callback([o] {
    for (const auto& m : bench::split_list(o->modes)) {
      if (m != "async" && m != "mapped") throw UsageError("--modes: unknown mode '" + m + "' (async, mapped)");
    }
    for (const auto& s : bench::split_list(o->slots)) {
      if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || std::stoi(s) < 1 || std::stoi(s) > 8) {
        throw UsageError("--slots: '" + s + "' is not a number of slots from 1 to 8");
      }
    }
    const int rc = run_bench(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
