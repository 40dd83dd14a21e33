// `tandem bench memory`: how many random memory accesses per second can one CPU core, all cores
// and the GPU do (the G-Opt paper's Table 1 / Fig. 8 question). Every access reads 8 bytes from a
// random 64-byte cell of a table far larger than the caches.
//   dependent    pointer chasing through one random cycle over all cells: each load's address is
//                the previous load's value, so a core has one miss in flight (latency-bound);
//   independent  reads of precomputed random cell indexes: out-of-order execution overlaps misses
//                (up to the core's miss buffers);
//   prefetch     as independent, with a software prefetch kPrefetchDistance accesses ahead.
// Each pattern runs on 1 thread (the first listed core) and on one thread per listed core. The GPU
// row (when a GPU is usable) is random 8-byte reads over a device table of the same size.
// Checksums: every independent / prefetch pass must sum to the value computed at setup, and every
// pointer chase must end where the first one did, or the command exits with 4.
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_report.h"
#include "cli/commands.h"
#include "core/huge_memory.h"
#include "core/machine_info.h"
#include "gpu/gpu_runtime.h"
#include "gpu/memory_probe.h"

namespace tandem::cli {

namespace {

constexpr int kPrefetchDistance = 16;

struct BenchMemoryOptions {
  size_t mib = 1024;
  std::string cores;  // empty: every CPU this process may run on
  int reps = 5;
  uint64_t accesses = uint64_t{1} << 22;      // per thread per repetition
  uint64_t gpu_accesses = uint64_t{1} << 28;  // per repetition, all GPU threads together
  uint64_t seed = 1;
  std::string json;
};

struct alignas(64) Cell {
  uint64_t next;  // dependent: the next cell of the cycle; independent: the 8 bytes read
  uint64_t pad[7];
};
static_assert(sizeof(Cell) == 64);

using bench::Rng;

// `hops` dependent loads from cell `start`; returns the last cell reached.
__attribute__((noinline)) uint64_t chase(const Cell* cells, uint64_t start, uint64_t hops) {
  uint64_t i = start;
  for (uint64_t k = 0; k < hops; ++k) i = cells[i].next;
  return i;
}

__attribute__((noinline)) uint64_t read_indexed(const Cell* cells, const uint64_t* idx, uint64_t from, uint64_t to) {
  uint64_t sum = 0;
  for (uint64_t k = from; k < to; ++k) sum += cells[idx[k]].next;
  return sum;
}

// idx has kPrefetchDistance entries of padding past its end, so idx[k + distance] is always valid.
__attribute__((noinline)) uint64_t read_prefetched(const Cell* cells, const uint64_t* idx, uint64_t from,
                                                   uint64_t to) {
  uint64_t sum = 0;
  for (uint64_t k = from; k < to; ++k) {
    __builtin_prefetch(&cells[idx[k + kPrefetchDistance]]);
    sum += cells[idx[k]].next;
  }
  return sum;
}

enum class Pattern { dependent, independent, prefetch };
const char* pattern_name(Pattern p) {
  return p == Pattern::dependent ? "dependent" : p == Pattern::independent ? "independent" : "prefetch";
}

struct Table {
  HugeRegion region;
  Cell* cells = nullptr;
  uint64_t ncells = 0;
  std::vector<uint64_t> idx;  // `accesses` random cell indexes, then kPrefetchDistance copied from the front
  uint64_t n = 0;             // accesses per thread
  uint64_t idx_sum = 0;       // sum of cells[idx[k]].next over k < n: every full pass must give it
};

// One thread's share: the whole index array, rotated to start at `offset` (so that threads do not
// read the same cells at the same time), or `n` hops of the cycle from cell idx[offset].
uint64_t run_pattern(const Table& t, Pattern p, uint64_t offset) {
  switch (p) {
    case Pattern::dependent:
      return chase(t.cells, t.idx[offset], t.n);
    case Pattern::independent:
      return read_indexed(t.cells, t.idx.data(), offset, t.n) + read_indexed(t.cells, t.idx.data(), 0, offset);
    case Pattern::prefetch:
      return read_prefetched(t.cells, t.idx.data(), offset, t.n) + read_prefetched(t.cells, t.idx.data(), 0, offset);
  }
  return 0;
}

struct Result {
  Pattern pattern;
  int threads;
  std::vector<double> seconds;
  uint64_t accesses_per_rep;
  bool sums_ok = true;
  double rate() const { return accesses_per_rep / bench::median(seconds); }
};

using bench::seconds_since;

// One timed pass: a thread per core, pinned, released together; returns the wall time from the
// release to the last thread's end. Each thread's result goes to out[thread].
double timed_pass(const Table& t, Pattern p, const std::vector<int>& cores, std::vector<uint64_t>& out) {
  const int nt = static_cast<int>(cores.size());
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<int> pin_failed{-1};
  std::vector<std::thread> ths;
  for (int k = 0; k < nt; ++k) {
    ths.emplace_back([&, k] {
      if (!pin_this_thread(cores[k])) pin_failed = cores[k];
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      out[k] = run_pattern(t, p, t.n * k / nt);
    });
  }
  while (ready.load() < nt) std::this_thread::yield();
  const auto t0 = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  for (auto& th : ths) th.join();
  const double s = seconds_since(t0);
  if (pin_failed >= 0) throw UsageError("--cores: cannot pin a thread to CPU " + std::to_string(pin_failed.load()));
  return s;
}

Result measure(const Table& t, Pattern p, const std::vector<int>& cores, int reps) {
  Result r{p, static_cast<int>(cores.size()), {}, t.n * cores.size()};
  std::vector<uint64_t> out(cores.size()), first;
  for (int rep = -1; rep < reps; ++rep) {  // rep -1: warm-up (TLB, caches, thread start)
    const double s = timed_pass(t, p, cores, out);
    if (rep >= 0) r.seconds.push_back(s);
    if (p == Pattern::dependent) {
      // Thread k starts at the same cell every time, so it must end at the same cell.
      if (rep == -1) first = out;
      else if (out != first) r.sums_ok = false;
    } else {
      for (uint64_t v : out) r.sums_ok = r.sums_ok && v == t.idx_sum;
    }
  }
  return r;
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> v;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) v.push_back(c);
    }
  }
  if (v.empty()) {
    const unsigned n = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned c = 0; c < n; ++c) v.push_back(static_cast<int>(c));
  }
  return v;
}

int run_bench(const BenchMemoryOptions& o) {
  std::vector<int> cores;
  if (o.cores.empty()) {
    cores = allowed_cpus();
  } else {
    try {
      cores = parse_cpu_list(o.cores);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--cores: ") + e.what());
    }
    if (cores.empty()) throw UsageError("--cores: empty list");
  }

  const auto t0 = std::chrono::steady_clock::now();
  Table t;
  const size_t bytes = o.mib << 20;
  t.region = HugeRegion(bytes);
  t.cells = static_cast<Cell*>(t.region.data());
  t.ncells = bytes / sizeof(Cell);
  // One random cycle through every cell (Sattolo's algorithm); this also touches every page.
  for (uint64_t i = 0; i < t.ncells; ++i) t.cells[i].next = i;
  Rng rng{o.seed};
  for (uint64_t i = t.ncells - 1; i > 0; --i) std::swap(t.cells[i].next, t.cells[rng.below(i)].next);
  t.n = o.accesses;
  t.idx.resize(t.n + kPrefetchDistance);
  for (uint64_t k = 0; k < t.n; ++k) t.idx[k] = rng.below(t.ncells);
  for (int k = 0; k < kPrefetchDistance; ++k) t.idx[t.n + k] = t.idx[k % t.n];
  for (uint64_t k = 0; k < t.n; ++k) t.idx_sum += t.cells[t.idx[k]].next;
  std::printf("random memory accesses: %llu cells of 64 B (%zu MiB), 8 B read per access, %llu accesses per "
              "thread per repetition, %d repetitions, prefetch distance %d; cores %s (%zu); built in %.2f s\n",
              static_cast<unsigned long long>(t.ncells), o.mib, static_cast<unsigned long long>(t.n), o.reps,
              kPrefetchDistance, o.cores.empty() ? "(all allowed)" : o.cores.c_str(), cores.size(), seconds_since(t0));
  std::fflush(stdout);

  std::vector<std::vector<int>> thread_sets = {{cores.front()}};
  if (cores.size() > 1) thread_sets.push_back(cores);
  std::vector<Result> results;
  std::printf("\n%-12s %7s %14s %14s %12s\n", "pattern", "threads", "M accesses/s", "M/s per core", "ns/access");
  for (Pattern p : {Pattern::dependent, Pattern::independent, Pattern::prefetch}) {
    for (const auto& set : thread_sets) {
      results.push_back(measure(t, p, set, o.reps));
      const Result& r = results.back();
      const double rate = r.rate();
      // ns per access as one thread sees it: the thread count over the aggregate rate.
      std::printf("%-12s %7d %14.1f %14.1f %12.2f%s\n", pattern_name(p), r.threads, rate / 1e6,
                  rate / 1e6 / r.threads, 1e9 * r.threads / rate, r.sums_ok ? "" : "  CHECKSUM MISMATCH");
      std::fflush(stdout);
    }
  }

  nlohmann::json gpu_json;
  std::string why;
  if (!gpu::available(&why)) {
    std::printf("%-12s %7s  skipped: %s\n", "gpu", "-", why.c_str());
    gpu_json = {{"skipped", why}};
  } else {
    try {
      double ms = 0;
      const double rate = gpu::gpu_random_read_rate(bytes, o.gpu_accesses, o.reps, &ms);
      std::printf("%-12s %7s %14.1f %14s %12s  (%llu accesses in %.3f ms)\n", "gpu", "many", rate / 1e6, "-", "-",
                  static_cast<unsigned long long>(o.gpu_accesses), ms);
      gpu_json = {{"accesses_per_rep", o.gpu_accesses}, {"median_ms", ms}, {"median_rate_per_s", rate}};
    } catch (const gpu::GpuError& e) {
      std::printf("%-12s %7s  skipped: %s\n", "gpu", "-", e.what());
      gpu_json = {{"skipped", e.what()}};
    }
  }
  std::printf("(median of %d repetitions; ns/access is per thread: threads / aggregate rate)\n", o.reps);

  bool ok = true;
  for (const auto& r : results) ok = ok && r.sums_ok;
  std::printf("checksums: %s\n", ok ? "all agree" : "MISMATCH (see above)");

  if (!o.json.empty()) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& r : results) {
      const double rate = r.rate();
      rows.push_back({{"pattern", pattern_name(r.pattern)},
                      {"threads", r.threads},
                      {"accesses_per_rep", r.accesses_per_rep},
                      {"seconds", r.seconds},
                      {"median_rate_per_s", rate},
                      {"rate_per_core_per_s", rate / r.threads},
                      {"ns_per_access_per_thread", 1e9 * r.threads / rate},
                      {"checksum_ok", r.sums_ok}});
    }
    nlohmann::json report = {
        {"bench", "memory"},
        {"machine", bench::machine_json()},
        {"config",
         {{"mib", o.mib}, {"cell_bytes", sizeof(Cell)}, {"cells", t.ncells}, {"cores", cores},
          {"accesses_per_thread", t.n}, {"gpu_accesses", o.gpu_accesses}, {"reps", o.reps},
          {"prefetch_distance", kPrefetchDistance}, {"seed", o.seed},
          {"transparent_hugepages", transparent_hugepage_mode()}}},
        {"cpu", rows},
        {"gpu", gpu_json},
        {"checksums_ok", ok}};
    bench::write_json(o.json, report);
    std::printf("wrote %s\n", o.json.c_str());
  }
  return ok ? 0 : 4;
}

}  // namespace

void register_bench_memory(CLI::App& bench) {
  auto o = std::make_shared<BenchMemoryOptions>();
  CLI::App* c = bench.add_subcommand(
      "memory", "random memory accesses per second: dependent, independent and prefetched reads on 1 and all "
                "CPU cores, and on the GPU");
  c->add_option("--mib", o->mib, "table size in MiB (CPU and GPU)")
      ->capture_default_str()->check(CLI::Range(size_t{1}, size_t{1} << 18));
  c->add_option("--cores", o->cores, "CPUs to run on, e.g. 0-3,8 (default: every CPU this process may use); "
                "the 1-thread rows use the first");
  c->add_option("--reps", o->reps, "repetitions (the median is reported)")->capture_default_str()->check(CLI::Range(1, 1000));
  c->add_option("--accesses", o->accesses, "CPU accesses per thread per repetition")
      ->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
  c->add_option("--gpu-accesses", o->gpu_accesses, "GPU accesses per repetition")
      ->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  c->add_option("--seed", o->seed, "table and index generator seed")->capture_default_str();
  c->add_option("--json", o->json, "write the report here");
  c->callback([o] {
    const int rc = run_bench(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
