// `tandem bench gpu-stream`: IPv4 lookup throughput through the GPU when the work is large
// batches back to back (addresses in, next hops out), against the PCIe bound measured in the same
// run with plain cudaMemcpyAsync. Two levels:
//   runner: batches go straight from the engine's pinned slot buffers, slots pipelined, so copies
//           and kernels of consecutive batches overlap: the GPU data path on its own;
//   engine: worker threads submit requests through the offload engine's queues, and the master
//           gathers them into those buffers and hands the results back: the whole engine.
// Every result of the last batch of each slot (runner) or of every request (engine) is checked
// against the CPU lookup.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "apps/ipv4/ipv4_cpu.h"
#include "apps/ipv4/ipv4_gpu.h"
#include "bench/bench_report.h"
#include "cli/commands.h"
#include "cli/table_setup.h"
#include "gpu/gpu_runtime.h"
#include "gpu/offload_engine.h"
#include "gpu/staged_engine.h"

namespace tandem::cli {

namespace {

struct GpuStreamOptions {
  std::string fib;
  std::string modes = "async,graph,mapped,persistent";
  std::string batches = "262144,1048576,4194304";
  int slots = 4;
  uint64_t items = uint64_t{1} << 27;  // per repetition at least; more where a repetition would last under --min-seconds
  int reps = 5;
  int engine_workers = 4;
  uint32_t engine_request = 8192;
  std::string json;
};

using bench::seconds_since;

// Runner level: `total` items in batches of `batch`, round robin over the runner's slots.
double stream_runner(gpu::OffloadRunner& r, size_t batch, uint64_t total) {
  const int slots = r.slots();
  const uint64_t nb = std::max<uint64_t>(1, total / batch);
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t k = 0; k < nb; ++k) {
    const int s = static_cast<int>(k % slots);
    if (k >= static_cast<uint64_t>(slots)) r.wait(s);
    r.submit(s, batch);
  }
  for (int s = 0; s < slots; ++s) r.wait(s);
  return nb * batch / seconds_since(t0);
}

// Engine level: `workers` threads each keep `depth` requests of `req` items outstanding.
double stream_engine(gpu::OffloadEngine& e, int workers, uint32_t req, uint64_t total, const std::vector<uint32_t>& ips,
                     const std::vector<uint32_t>& want, size_t* wrong) {
  constexpr int kDepth = 32;
  std::atomic<size_t> bad{0};
  std::vector<std::thread> ts;
  const uint64_t per_worker = total / workers / req;
  const auto t0 = std::chrono::steady_clock::now();
  for (int w = 0; w < workers; ++w) {
    ts.emplace_back([&, w] {
      std::vector<gpu::OffloadRequest> rq(kDepth);
      std::vector<std::vector<uint32_t>> out(kDepth, std::vector<uint32_t>(req));
      std::vector<size_t> off(kDepth);
      size_t my_bad = 0;
      const size_t span = ips.size() / req;
      for (uint64_t k = 0; k < per_worker + kDepth; ++k) {
        const int d = static_cast<int>(k % kDepth);
        if (k >= static_cast<uint64_t>(kDepth)) {
          while (!rq[d].done()) std::this_thread::yield();
          for (uint32_t i = 0; i < req; ++i) my_bad += out[d][i] != want[off[d] + i];
        }
        if (k >= per_worker) continue;
        off[d] = ((k * workers + w) % span) * req;
        rq[d].in = ips.data() + off[d];
        rq[d].out = out[d].data();
        rq[d].n = req;
        e.submit(w, &rq[d]);
      }
      bad += my_bad;
    });
  }
  for (auto& t : ts) t.join();
  *wrong += bad;
  return double(per_worker) * workers * req / seconds_since(t0);
}

// The staged engine: each worker writes its addresses straight into the batch and reads its next
// hops in place, keeping up to kDepth tickets. With `check`, every next hop is compared with the
// CPU's answer; without, each is only read (summed), as a worker reading its verdicts would, so
// that the timed runs do not also stream the answer array through memory.
double stream_staged(gpu::StagedEngine& e, int workers, uint32_t req, uint64_t total, const std::vector<uint32_t>& ips,
                     const std::vector<uint32_t>& want, bool check, size_t* wrong) {
  // Enough tickets in flight to keep every slot's batch full: batches leave full, not by deadline.
  constexpr size_t kDepth = 128;
  std::atomic<size_t> bad{0};
  std::atomic<uint32_t> sink{0};
  std::vector<std::thread> ts;
  const uint64_t per_worker = total / workers / req;
  const auto t0 = std::chrono::steady_clock::now();
  for (int w = 0; w < workers; ++w) {
    ts.emplace_back([&, w] {
      std::vector<gpu::StagedTicket> q(kDepth);
      std::vector<size_t> off(kDepth);
      const size_t span = ips.size() / req;
      size_t head = 0, tail = 0, my_bad = 0;
      uint32_t sum = 0;
      auto finish_oldest = [&] {
        const size_t d = head % kDepth;
        const auto* out = static_cast<const uint32_t*>(q[d].out);
        if (check) {
          for (uint32_t i = 0; i < req; ++i) my_bad += out[i] != want[off[d] + i];
        } else {
          for (uint32_t i = 0; i < req; ++i) sum += out[i];
        }
        e.release(q[d]);
        ++head;
      };
      for (uint64_t k = 0; k < per_worker; ++k) {
        if (tail - head == kDepth) {
          while (!e.done(q[head % kDepth])) std::this_thread::yield();
          finish_oldest();
        }
        const size_t d = tail % kDepth;
        while (!e.try_reserve(req, &q[d])) {
          if (head != tail && e.done(q[head % kDepth])) finish_oldest();
        }
        off[d] = ((k * workers + w) % span) * req;
        std::memcpy(q[d].in, ips.data() + off[d], size_t{req} * 4);
        e.commit(q[d]);
        ++tail;
      }
      while (head != tail) {
        while (!e.done(q[head % kDepth])) std::this_thread::yield();
        finish_oldest();
      }
      bad += my_bad;
      sink += sum;
    });
  }
  for (auto& t : ts) t.join();
  const double secs = seconds_since(t0);
  *wrong += bad;
  if (sink.load() == 0xFFFFFFFF) std::printf(" ");  // keeps the reads
  return double(per_worker) * workers * req / secs;
}

int run_bench(const GpuStreamOptions& o) {
  std::string why;
  if (!gpu::available(&why)) throw UsageError("bench gpu-stream needs a GPU: " + why);
  const LoadedTable t = load_table(o.fib, true);
  auto gtable = ipv4::Ipv4GpuTable::create(*t.table);
  const gpu::OffloadEngine::CpuFallback cpu_fallback = [&t](const void* in, void* out, size_t n) {
    ipv4::lookup_batched(*t.table, static_cast<const uint32_t*>(in), static_cast<uint32_t*>(out), n);
  };
  std::vector<size_t> batches;
  for (const auto& b : bench::split_list(o.batches)) batches.push_back(std::stoull(b));
  const size_t cap = *std::max_element(batches.begin(), batches.end());

  const gpu::PcieBandwidth bw = gpu::measure_pcie_bandwidth(size_t{64} << 20, 9);
  const double in_bytes = 4, out_bytes = 4;
  // Items per second the link allows: each direction alone at its measured rate, or both at once.
  const double bound_each = std::min(bw.h2d_gbs * 1e9 / in_bytes, bw.d2h_gbs * 1e9 / out_bytes);
  const double bound_both = std::min(bw.both_h2d_gbs * 1e9 / in_bytes, bw.both_d2h_gbs * 1e9 / out_bytes);
  std::printf("PCIe, pinned cudaMemcpyAsync of 64 MiB: host->device %.1f GB/s, device->host %.1f GB/s; "
              "both at once: %.1f + %.1f GB/s\n", bw.h2d_gbs, bw.d2h_gbs, bw.both_h2d_gbs, bw.both_d2h_gbs);
  std::printf("IPv4 moves 4 B in and 4 B out per address: bound %.2f G/s (each direction at its own rate), "
              "%.2f G/s (at the rates both directions reach together)\n", bound_each / 1e9, bound_both / 1e9);

  // Addresses and the CPU's answers; every slot holds a different slice.
  std::vector<uint32_t> ips(cap * o.slots), want(ips.size());
  fill_uniform_addresses(ips.data(), ips.size(), 11);
  ipv4::lookup_batched(*t.table, ips.data(), want.data(), ips.size());

  // Items for a row's repetitions of at least --min-seconds, from a run giving its rate.
  bench::min_rep_seconds_used() = true;
  const auto window = [](uint64_t items, const auto& rate_of) {
    return bench::items_for_window(items, bench::min_rep_seconds(),
                                   [&](uint64_t n) { return static_cast<double>(n) / rate_of(n); });
  };
  size_t wrong = 0;
  nlohmann::json runner_rows = nlohmann::json::array();
  std::printf("\n%-12s %10s %6s %12s %10s %10s\n", "mode", "batch", "slots", "G lookups/s", "of bound", "of both");
  for (const std::string& mode : bench::split_list(o.modes)) {
    for (size_t b : batches) {
      gpu::OffloadOptions oo;
      oo.mode = gpu::parse_gpu_mode(mode);
      oo.capacity = b;
      oo.slots = o.slots;
      auto r = gtable->make_runner(oo);
      for (int s = 0; s < r->slots(); ++s) std::copy_n(ips.data() + s * b, b, static_cast<uint32_t*>(r->in(s)));
      stream_runner(*r, b, std::min<uint64_t>(o.items, 8 * b));  // warm-up (graphs, caches)
      const uint64_t items = window(o.items, [&](uint64_t n) { return stream_runner(*r, b, n); });
      std::vector<double> rates;
      for (int k = 0; k < o.reps; ++k) rates.push_back(stream_runner(*r, b, items));
      size_t bad = 0;
      for (int s = 0; s < r->slots(); ++s) {
        const auto* out = static_cast<const uint32_t*>(r->out(s));
        for (size_t i = 0; i < b; ++i) bad += out[i] != want[s * b + i];
      }
      wrong += bad;
      const double rate = bench::median(rates);
      std::printf("%-12s %10zu %6d %12.2f %9.0f%% %9.0f%%%s\n", mode.c_str(), b, r->slots(), rate / 1e9,
                  100 * rate / bound_each, 100 * rate / bound_both, bad ? "  WRONG RESULTS" : "");
      std::fflush(stdout);
      runner_rows.push_back({{"mode", mode}, {"batch", b}, {"slots", r->slots()}, {"items_per_rep", items}, {"rates", rates},
                             {"median_rate", rate}, {"of_bound_each", rate / bound_each},
                             {"of_bound_both", rate / bound_both}, {"wrong_results", bad}});
    }
  }

  // The whole engine: requests from worker threads, gathered by the master.
  std::printf("\nthrough the engine: %d worker threads, requests of %u addresses, batches of up to %zu, %d slot(s)\n",
              o.engine_workers, o.engine_request, cap, o.slots);
  nlohmann::json engine_rows = nlohmann::json::array();
  for (const std::string& mode : {std::string("async"), std::string("persistent")}) {
    gpu::OffloadOptions oo;
    oo.mode = gpu::parse_gpu_mode(mode);
    oo.capacity = cap;
    oo.slots = o.slots;
    gpu::EngineConfig ec;
    ec.max_batch = cap;
    ec.max_wait_ns = 100000;
    ec.queue_depth = 64;
    gpu::OffloadEngine e(gtable->make_runner(oo), cpu_fallback, ec, o.engine_workers);
    std::vector<double> rates;
    size_t bad = 0;
    const uint64_t items = window(o.items / 4, [&](uint64_t n) {
      return stream_engine(e, o.engine_workers, o.engine_request, n, ips, want, &bad);
    });
    for (int k = 0; k < o.reps; ++k) {
      rates.push_back(stream_engine(e, o.engine_workers, o.engine_request, items, ips, want, &bad));
    }
    wrong += bad;
    const gpu::EngineStats st = e.stats();
    const double rate = bench::median(rates);
    std::printf("%-12s %12.2f G lookups/s (%.0f%% of bound), %.0f addresses per batch, %s%s\n", mode.c_str(),
                rate / 1e9, 100 * rate / bound_each, st.batches ? double(st.items) / st.batches : 0.0,
                e.on_gpu() ? "on the GPU" : "FELL BACK TO THE CPU", bad ? ", WRONG RESULTS" : "");
    engine_rows.push_back({{"mode", mode}, {"items_per_rep", items}, {"rates", rates}, {"median_rate", rate}, {"of_bound_each", rate / bound_each},
                           {"avg_batch", st.batches ? double(st.items) / st.batches : 0.0}, {"wrong_results", bad}});
  }
  // The staged engine: no copies on the master.
  std::printf("\nthrough the staged engine (workers write addresses into the batch and read next hops in place;\n"
              "a first pass checks every result, the timed ones only read them):\n");
  nlohmann::json staged_rows = nlohmann::json::array();
  for (const std::string& mode : {std::string("async"), std::string("graph"), std::string("persistent")}) {
    for (int workers : {o.engine_workers, 2 * o.engine_workers, 3 * o.engine_workers}) {
      gpu::OffloadOptions oo;
      oo.mode = gpu::parse_gpu_mode(mode);
      oo.capacity = size_t{1} << 20;
      oo.slots = o.slots;
      gpu::EngineConfig ec;
      ec.max_batch = oo.capacity;
      ec.max_wait_ns = 2000000;  // a throughput run: batches leave full (1 Mi addresses, ~0.1 ms)
      gpu::StagedEngine e(gtable->make_runner(oo), cpu_fallback, ec);
      std::vector<double> rates;
      size_t bad = 0;
      stream_staged(e, workers, o.engine_request, o.items / 4, ips, want, true, &bad);  // every result checked
      const uint64_t items = window(o.items, [&](uint64_t n) {
        return stream_staged(e, workers, o.engine_request, n, ips, want, false, &bad);
      });
      for (int k = 0; k < o.reps; ++k) {
        rates.push_back(stream_staged(e, workers, o.engine_request, items, ips, want, false, &bad));
      }
      wrong += bad;
      const gpu::EngineStats st = e.stats();
      const double rate = bench::median(rates);
      std::printf("%-12s %2d workers %8.2f G lookups/s (%.0f%% of bound, %.0f%% of both), %.0f addresses per batch, %s%s\n",
                  mode.c_str(), workers, rate / 1e9, 100 * rate / bound_each, 100 * rate / bound_both,
                  st.batches ? double(st.items) / st.batches : 0.0, e.on_gpu() ? "on the GPU" : "FELL BACK TO THE CPU",
                  bad ? ", WRONG RESULTS" : "");
      std::fflush(stdout);
      staged_rows.push_back({{"mode", mode}, {"workers", workers}, {"batch", oo.capacity}, {"items_per_rep", items}, {"rates", rates},
                             {"median_rate", rate}, {"of_bound_each", rate / bound_each}, {"of_bound_both", rate / bound_both},
                             {"avg_batch", st.batches ? double(st.items) / st.batches : 0.0}, {"wrong_results", bad}});
    }
  }
  std::printf("results: %s\n", wrong ? "SOME RESULTS WRONG" : "every checked result correct");
  if (!o.json.empty()) {
    nlohmann::json report = {
        {"bench", "gpu-stream"}, {"machine", bench::machine_json()},
        {"config", {{"fib", o.fib}, {"items_per_rep", o.items}, {"reps", o.reps}, {"slots", o.slots},
                    {"engine_workers", o.engine_workers}, {"engine_request", o.engine_request}}},
        {"pcie", {{"bytes", bw.bytes}, {"h2d_gbs", bw.h2d_gbs}, {"d2h_gbs", bw.d2h_gbs},
                  {"both_h2d_gbs", bw.both_h2d_gbs}, {"both_d2h_gbs", bw.both_d2h_gbs}}},
        {"bound_items_per_s", {{"each", bound_each}, {"both", bound_both}}},
        {"runner", runner_rows}, {"engine", engine_rows}, {"staged_engine", staged_rows}};
    bench::write_json(o.json, report);
    std::printf("wrote %s\n", o.json.c_str());
  }
  return wrong ? 4 : 0;
}

}  // namespace

void register_bench_gpu_stream(CLI::App& bench) {
  auto o = std::make_shared<GpuStreamOptions>();
  CLI::App* c = bench.add_subcommand("gpu-stream", "IPv4 lookup throughput through the GPU vs the measured PCIe bound");
  c->add_option("--fib", o->fib, "forwarding table")->required()->check(CLI::ExistingFile);
  c->add_option("--modes", o->modes, "comma-separated: async, graph, mapped, persistent")->capture_default_str();
  c->add_option("--batches", o->batches, "comma-separated batch sizes (addresses)")->capture_default_str();
  c->add_option("--slots", o->slots, "batches in flight (persistent: 1)")->capture_default_str()->check(CLI::Range(1, 8));
  c->add_option("--items", o->items, "addresses per repetition")->capture_default_str()->check(CLI::Range(uint64_t{1} << 16, uint64_t{1} << 34));
  c->add_option("--reps", o->reps, "repetitions (median reported)")->capture_default_str()->check(CLI::Range(1, 1000));
  c->add_option("--engine-workers", o->engine_workers, "worker threads for the engine run")->capture_default_str()->check(CLI::Range(1, 64));
  c->add_option("--engine-request", o->engine_request, "addresses per worker request")->capture_default_str()->check(CLI::Range(1u, 1u << 20));
  c->add_option("--json", o->json, "write the report here");
  c->callback([o] {
    for (const auto& m : bench::split_list(o->modes)) {
      try {
        gpu::parse_gpu_mode(m);
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--modes: ") + e.what());
      }
    }
    if (bench::split_list(o->batches).empty()) throw UsageError("--batches: empty");
    const int rc = run_bench(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
