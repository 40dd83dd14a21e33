// `tandem bench gopt`: the G-Opt paper's microbenchmarks (NSDI'15, Fig. 8/9) on one core. For each
// workload, lookups/s of five ways to run a batch of independent lookups:
//   naive   one lookup at a time (the annotated example compiled as is);
//   group   hand-written group prefetching (paper sec. 3.1): for a group of G lookups, prefetch all
//           first addresses, then go stage by stage over the whole group, prefetching the next one;
//   gopt    the G-Opt transformer's output (tools/gopt, checked in under bench/gopt/), called on
//           chunks of G lookups;
//   gopt_refill  the transformer's --refill output: G slots over the whole batch, a finished
//           lookup's slot starting the next lookup at once (no chunk boundaries);
//   amac    asynchronous memory access chaining: a ring of G per-lookup state machines; each step
//           does one stage of one lookup, issues its next prefetch and moves to the next slot, and a
//           finished lookup's slot takes the next one at once.
// Workloads: pointer chasing (D = 100 dependent hops over a single-cycle random permutation of
// 64-byte nodes), a 2-8 cuckoo hash table (lookups of stored keys) and IPv6 longest prefix match
// (the paper's 200,000 random /48-/64 prefixes, on apps/ipv6's table). Every variant's results
// must equal the naive version's, or the command exits with 4. Each row also gets cycles,
// instructions and IPC per lookup from one more run (bench/perf_counters.h), or TSC ticks.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_report.h"
#include "apps/ipv6/fib6_loader.h"
#include "apps/ipv6/lpm6.h"
#include "bench/cuckoo_bench.h"
#include "bench/lpm6_variants.h"
#include "bench/gopt/gopt_bench.h"
#include "bench/perf_counters.h"
#include "cli/commands.h"
#include "core/huge_memory.h"
#include "core/machine_info.h"

// The mirrored structs must match the examples' (tools/gopt/examples/*.c).
static_assert(sizeof(ChaseNode) == 64 && offsetof(ChaseNode, next) == 0 && offsetof(ChaseNode, val) == 8);
static_assert(sizeof(Bucket) == 128 && alignof(Bucket) == 64 && offsetof(Bucket, vals) == 64);

namespace tandem::cli {

namespace {

struct BenchGoptOptions {
  size_t chase_mib = 1024;
  size_t cuckoo_mib = 1024;  // well beyond the device machine's 300 MiB L3, as the paper's DRAM-bound table
  size_t ipv6_prefixes = 200'000;  // the paper's IPv6 table: random prefixes of length 48..64
  size_t lookups = 0;  // 0: 2^16 for pointer chasing, 2^22 for cuckoo and IPv6
  std::vector<int> batches = {8, 16, 32, 64};
  int reps = 5;
  int core = -1;
  uint64_t seed = 1;
  std::string json;
};

using bench::seconds_since;
using bench::time_reps;

using bench::Rng;
using bench::cuckoo_amac;
using bench::cuckoo_group;

inline void prefetch(const void* p) { __builtin_prefetch(p); }

// ---- pointer chasing: the hand-written variants of tools/gopt/examples/pointer_chase.c ----

void chase_group(const ChaseNode* const* starts, uint64_t* out, int n, int g_max) {
  const ChaseNode* p[64];
  uint64_t sum[64];
  for (int base = 0; base < n; base += g_max) {
    const int g = std::min(g_max, n - base);
    for (int j = 0; j < g; ++j) {
      p[j] = starts[base + j];
      sum[j] = 0;
      prefetch(p[j]);
    }
    for (int d = 0; d < CHASE_DEPTH; ++d) {
      for (int j = 0; j < g; ++j) {
        sum[j] += p[j]->val;
        p[j] = p[j]->next;
        prefetch(p[j]);
      }
    }
    for (int j = 0; j < g; ++j) out[base + j] = sum[j] ^ p[j]->val;
  }
}

void chase_amac(const ChaseNode* const* starts, uint64_t* out, int n, int ring) {
  struct Slot {
    const ChaseNode* p;
    uint64_t sum;
    int hops;  // done so far; -1: empty
    int i;     // the lookup
  };
  Slot s[64];
  int next = 0, active = 0;
  for (int k = 0; k < ring; ++k) {
    if (next < n) {
      s[k] = {starts[next], 0, 0, next};
      prefetch(s[k].p);
      ++next;
      ++active;
    } else {
      s[k].hops = -1;
    }
  }
  for (int k = 0; active > 0; k = k + 1 == ring ? 0 : k + 1) {
    Slot& x = s[k];
    if (x.hops < 0) continue;
    if (x.hops < CHASE_DEPTH) {  // one hop; the next node is prefetched
      x.sum += x.p->val;
      x.p = x.p->next;
      ++x.hops;
      prefetch(x.p);
      continue;
    }
    out[x.i] = x.sum ^ x.p->val;  // done: the slot takes the next lookup
    if (next < n) {
      x = {starts[next], 0, 0, next};
      prefetch(x.p);
      ++next;
    } else {
      x.hops = -1;
      --active;
    }
  }
}

// ---- the benchmark ----

// The --refill G-Opt output is compiled for these slot counts (bench/gopt/refill_b*.c).
bool refill_compiled(int b) { return b == 8 || b == 16 || b == 32 || b == 64; }

template <typename Fn8, typename Fn16, typename Fn32, typename Fn64>
auto pick_refill(int b, Fn8 f8, Fn16 f16, Fn32 f32, Fn64 f64) {
  return b == 8 ? f8 : b == 16 ? f16 : b == 32 ? f32 : f64;
}

struct Workload {
  std::string name;
  std::string title;
  nlohmann::json config;
  std::vector<bench::Row> rows;
  size_t mismatched_rows = 0;
};

// Times naive once and {group, gopt, amac} for every batch size. run(variant, batch) fills the
// workload's output; same_as_naive() compares it with the saved naive output.
// Cycles (or TSC ticks), instructions and IPC per lookup of one more run of f, into the row's
// JSON and note (the paper's Table 3 view: latency hiding raises IPC).
template <typename F>
void count(bench::PerfCounters& pc, size_t n, bench::Row& row, F&& f) {
  const bench::CounterSample c = pc.measure(f);
  const double per = 1.0 / double(n);
  char buf[96];
  if (c.have_pmu) {
    row.extra = {{"cycles_per_lookup", c.cycles * per}, {"instructions_per_lookup", c.instructions * per},
                 {"ipc", c.ipc()}, {"counters", "pmu"}};
    std::snprintf(buf, sizeof buf, "; %.0f cyc, %.0f ins, IPC %.2f", c.cycles * per, c.instructions * per, c.ipc());
  } else {
    row.extra = {{"tsc_ticks_per_lookup", c.cycles * per}, {"counters", "tsc"}};
    std::snprintf(buf, sizeof buf, "; %.0f TSC ticks", c.cycles * per);
  }
  row.note += buf;
}

template <typename Run, typename Save, typename Same>
void measure(const BenchGoptOptions& o, size_t n, Workload& w, Run&& run, Save&& save_naive, Same&& same_as_naive) {
  bench::PerfCounters pc;
  w.rows.push_back({"naive", "one lookup at a time (the example compiled as is)", double(n),
                    time_reps(o.reps, [&] { run("naive", 0); })});
  count(pc, n, w.rows.back(), [&] { run("naive", 0); });
  save_naive();
  struct V {
    const char* name;
    const char* note;
  };
  const V variants[] = {{"group", "group prefetching (G-Opt paper sec. 3.1), group of "},
                        {"gopt", "tools/gopt output, chunks of "},
                        {"gopt_refill", "tools/gopt --refill output, slots: "},
                        {"amac", "AMAC, ring of "}};
  for (int b : o.batches) {
    for (const V& v : variants) {
      if (std::string(v.name) == "gopt_refill" && !refill_compiled(b)) continue;
      const std::string name = std::string(v.name) + "_b" + std::to_string(b);
      bench::Row row{name, v.note + std::to_string(b), double(n),
                     time_reps(o.reps, [&] { run(v.name, b); })};
      count(pc, n, row, [&] { run(v.name, b); });
      if (!same_as_naive()) {
        std::fprintf(stderr, "bench gopt: %s: %s: results differ from the naive version\n", w.name.c_str(),
                     name.c_str());
        row.note += " [RESULTS DIFFER]";
        ++w.mismatched_rows;
      }
      w.rows.push_back(std::move(row));
    }
  }
}

Workload bench_chase(const BenchGoptOptions& o) {
  Workload w{"pointer_chase", "", {}, {}, 0};
  const auto t0 = std::chrono::steady_clock::now();
  const size_t nn = (o.chase_mib << 20) / sizeof(ChaseNode);
  if (nn < 2 || nn > (size_t{1} << 32)) throw UsageError("--chase-mib: out of range");
  // Zeroed, 2 MiB-aligned, hugepages advised (as the paper's hugepages).
  HugeRegion nodes_mem(nn * sizeof(ChaseNode));
  auto* nodes = static_cast<ChaseNode*>(nodes_mem.data());
  Rng rng{o.seed};
  {  // a single cycle through all nodes in random order: link a random permutation in a ring
    std::vector<uint32_t> perm(nn);
    for (size_t j = 0; j < nn; ++j) perm[j] = static_cast<uint32_t>(j);
    for (size_t j = nn - 1; j > 0; --j) std::swap(perm[j], perm[rng.next() % (j + 1)]);
    for (size_t j = 0; j < nn; ++j) nodes[perm[j]].next = &nodes[perm[j + 1 == nn ? 0 : j + 1]];
  }
  for (size_t j = 0; j < nn; ++j) nodes[j].val = rng.next();
  const size_t n = o.lookups ? o.lookups : size_t{1} << 16;
  std::vector<const ChaseNode*> starts(n);
  for (auto& s : starts) s = &nodes[rng.next() % nn];
  std::printf("pointer chasing: %zu nodes of 64 B (%zu MiB) in one random cycle, D = %d hops, %zu lookups; "
              "built in %.2f s\n", nn, (nn * sizeof(ChaseNode)) >> 20, CHASE_DEPTH, n, seconds_since(t0));
  std::fflush(stdout);
  w.title = "pointer chasing, D = " + std::to_string(CHASE_DEPTH) + ", " +
            std::to_string((nn * sizeof(ChaseNode)) >> 20) + " MiB";
  w.config = {{"nodes", nn}, {"table_mib", (nn * sizeof(ChaseNode)) >> 20}, {"depth", CHASE_DEPTH}, {"lookups", n}};

  std::vector<uint64_t> want(n), got(n);
  const int ni = static_cast<int>(n);
  const ChaseNode* const* st = starts.data();
  measure(o, n, w,
          [&](const std::string& v, int b) {
            if (v == "naive") {
              tandem_gopt_chase_naive(st, got.data(), ni);
            } else if (v == "group") {
              chase_group(st, got.data(), ni, b);
            } else if (v == "gopt") {
              for (int j = 0; j < ni; j += b) tandem_gopt_chase_gopt(st + j, got.data() + j, std::min(b, ni - j));
            } else if (v == "gopt_refill") {
              pick_refill(b, tandem_gopt_chase_refill_b8, tandem_gopt_chase_refill_b16, tandem_gopt_chase_refill_b32,
                          tandem_gopt_chase_refill_b64)(st, got.data(), ni);
            } else {
              chase_amac(st, got.data(), ni, b);
            }
          },
          [&] { want = got; std::fill(got.begin(), got.end(), 0xABABABABABABABABULL); },
          [&] {
            const bool same = want == got;
            std::fill(got.begin(), got.end(), 0xABABABABABABABABULL);
            return same;
          });
  return w;
}

Workload bench_cuckoo(const BenchGoptOptions& o) {
  Workload w{"cuckoo", "", {}, {}, 0};
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t nb = 1;
  while (nb * 2 * sizeof(Bucket) <= (o.cuckoo_mib << 20)) nb *= 2;
  const bench::CuckooBench cb(nb, o.seed + 1);
  const CuckooTable& t = cb.table;
  const std::vector<uint64_t>& stored = cb.stored;
  const size_t n = o.lookups ? o.lookups : size_t{1} << 22;
  const std::vector<uint64_t> keys = cb.sample_keys(n, o.seed + 2);
  std::printf("cuckoo hashing: %llu buckets of 8 slots (%zu MiB), %zu keys, %zu lookups of stored keys; "
              "built in %.2f s\n", static_cast<unsigned long long>(nb), (nb * sizeof(Bucket)) >> 20, stored.size(), n,
              seconds_since(t0));
  std::fflush(stdout);
  w.title = "cuckoo hashing (2-8), " + std::to_string((nb * sizeof(Bucket)) >> 20) + " MiB";
  w.config = {{"buckets", nb}, {"table_mib", (nb * sizeof(Bucket)) >> 20}, {"keys", stored.size()}, {"lookups", n}};

  std::vector<uint32_t> want(n), got(n);
  const int ni = static_cast<int>(n);
  const uint64_t* ks = keys.data();
  measure(o, n, w,
          [&](const std::string& v, int b) {
            if (v == "naive") {
              tandem_gopt_cuckoo_naive(&t, ks, got.data(), ni);
            } else if (v == "group") {
              cuckoo_group(&t, ks, got.data(), ni, b);
            } else if (v == "gopt") {
              for (int j = 0; j < ni; j += b) tandem_gopt_cuckoo_gopt(&t, ks + j, got.data() + j, std::min(b, ni - j));
            } else if (v == "gopt_refill") {
              pick_refill(b, tandem_gopt_cuckoo_refill_b8, tandem_gopt_cuckoo_refill_b16, tandem_gopt_cuckoo_refill_b32,
                          tandem_gopt_cuckoo_refill_b64)(&t, ks, got.data(), ni);
            } else {
              cuckoo_amac(&t, ks, got.data(), ni, b);
            }
          },
          [&] { want = got; std::fill(got.begin(), got.end(), 0xABABABABu); },
          [&] {
            const bool same = want == got;
            std::fill(got.begin(), got.end(), 0xABABABABu);
            return same;
          });
  // The naive results themselves: every looked-up key is stored, so none may be missing.
  if (std::count(want.begin(), want.end(), CUCKOO_NOT_FOUND) != 0) {
    std::fprintf(stderr, "bench gopt: cuckoo: naive lookups missed stored keys\n");
    ++w.mismatched_rows;
  }
  return w;
}

// The G-Opt paper's IPv6 lookup (Table 1: 200,000 random prefixes of length 48..64, addresses
// inside them) on Tandem's rte_lpm6-style table (apps/ipv6): tbl24, then one 256-entry group per
// further address byte, so 4 to 6 dependent accesses per lookup into about 1 GiB of groups.
Workload bench_ipv6(const BenchGoptOptions& o) {
  Workload w{"ipv6", "", {}, {}, 0};
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<ipv6::Route6> routes = ipv6::random_table(o.ipv6_prefixes, 48, 64, o.seed + 3);
  ipv6::Lpm6 table;
  for (const auto& r : routes) {
    const auto st = table.add(r.prefix.data(), r.len, r.next_hop);
    if (st != ipv6::Lpm6::Status::kOk) throw UsageError(std::string("ipv6 table: ") + ipv6::Lpm6::status_name(st));
  }
  const size_t n = o.lookups ? o.lookups : size_t{1} << 22;
  const std::vector<ipv6::Addr6> addrs = ipv6::sample_addresses(routes, n, o.seed + 4);
  std::printf("ipv6: %zu random prefixes /48../64, %u groups (%zu MiB), %zu lookups of addresses inside them; "
              "built in %.2f s\n", routes.size(), table.groups_in_use(), table.memory_bytes_in_use() >> 20, n,
              seconds_since(t0));
  std::fflush(stdout);
  w.title = "IPv6 LPM, " + std::to_string(routes.size()) + " random /48-/64 prefixes, " +
            std::to_string(table.memory_bytes_in_use() >> 20) + " MiB";
  w.config = {{"prefixes", routes.size()}, {"min_len", 48}, {"max_len", 64}, {"groups", table.groups_in_use()},
              {"table_mib", table.memory_bytes_in_use() >> 20}, {"lookups", n}};
  std::vector<uint32_t> want(n), got(n);
  const int ni = static_cast<int>(n);
  const uint32_t* t24 = table.tbl24();
  const uint32_t* t8 = table.tbl8();
  const uint8_t(*a)[16] = ipv6::addr_rows(addrs.data());
  measure(o, n, w,
          [&](const std::string& v, int b) {
            if (v == "naive") {
              tandem_gopt_lpm6_naive(t24, t8, a, got.data(), ni);
            } else if (v == "group") {
              bench::lpm6_group(t24, t8, a, got.data(), ni, b);
            } else if (v == "gopt") {
              for (int j = 0; j < ni; j += b) tandem_gopt_lpm6_gopt(t24, t8, a + j, got.data() + j, std::min(b, ni - j));
            } else if (v == "gopt_refill") {
              pick_refill(b, tandem_gopt_lpm6_refill_b8, tandem_gopt_lpm6_refill_b16, tandem_gopt_lpm6_refill_b32,
                          tandem_gopt_lpm6_refill_b64)(t24, t8, a, got.data(), ni);
            } else {
              bench::lpm6_amac(t24, t8, a, got.data(), ni, b);
            }
          },
          [&] { want = got; std::fill(got.begin(), got.end(), 0xABABABABu); },
          [&] {
            const bool same = want == got;
            std::fill(got.begin(), got.end(), 0xABABABABu);
            return same;
          });
  // The naive results themselves against the table's own scalar lookup (tested against the trie).
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += want[i] != table.lookup(addrs[i].data());
  if (wrong) {
    std::fprintf(stderr, "bench gopt: ipv6: %zu naive results differ from Lpm6::lookup\n", wrong);
    ++w.mismatched_rows;
  }
  return w;
}

int run_bench(const BenchGoptOptions& o) {
  if (o.core >= 0) {
    if (!pin_this_thread(o.core)) throw UsageError("--core " + std::to_string(o.core) + ": cannot pin to that CPU");
  }
  std::printf("G-Opt microbenchmarks, 1 thread; batch sizes");
  for (int b : o.batches) std::printf(" %d", b);
  std::printf("; %d repetitions\n", o.reps);
  {
    const bench::PerfCounters pc;
    std::printf("counters: %s\n", bench::counters_description(pc).c_str());
  }
  std::vector<Workload> ws;
  ws.push_back(bench_chase(o));
  bench::print_table(ws.back().title, "lookups", ws.back().rows, "naive");
  std::fflush(stdout);
  ws.push_back(bench_cuckoo(o));
  bench::print_table(ws.back().title, "lookups", ws.back().rows, "naive");
  std::fflush(stdout);
  if (o.ipv6_prefixes > 0) {
    ws.push_back(bench_ipv6(o));
    bench::print_table(ws.back().title, "lookups", ws.back().rows, "naive");
  }

  size_t bad = 0;
  for (const auto& w : ws) bad += w.mismatched_rows;
  std::printf("results: %s\n", bad ? "MISMATCH (see above)" : "every variant agrees with the naive version");

  if (!o.json.empty()) {
    nlohmann::json results = nlohmann::json::array(), mism = nlohmann::json::object(),
                   configs = nlohmann::json::object();
    for (const auto& w : ws) {
      for (auto r : bench::rows_json(w.rows)) {
        r["workload"] = w.name;
        results.push_back(r);
      }
      mism[w.name] = w.mismatched_rows;
      configs[w.name] = w.config;
    }
    nlohmann::json report = {
        {"bench", "gopt"},
        {"machine", bench::machine_json()},
        {"config",
         {{"chase_mib", o.chase_mib}, {"cuckoo_mib", o.cuckoo_mib}, {"ipv6_prefixes", o.ipv6_prefixes}, {"batches", o.batches}, {"reps", o.reps},
          {"core", o.core}, {"seed", o.seed}, {"threads", 1}, {"workloads", configs}}},
        {"results", results},
        {"mismatched_rows", mism},
        {"all_agree", bad == 0}};
    bench::write_json(o.json, report);
    std::printf("wrote %s\n", o.json.c_str());
  }
  return bad ? 4 : 0;
}

}  // namespace

void register_bench_gopt(CLI::App& bench) {
  auto o = std::make_shared<BenchGoptOptions>();
  CLI::App* c = bench.add_subcommand(
      "gopt", "G-Opt microbenchmarks (pointer chasing, cuckoo hashing, IPv6 LPM): naive, group prefetching, "
      "G-Opt, AMAC");
  c->add_option("--chase-mib", o->chase_mib, "pointer-chasing table size in MiB")
      ->capture_default_str()->check(CLI::Range(size_t{1}, size_t{1} << 18));
  c->add_option("--cuckoo-mib", o->cuckoo_mib, "cuckoo table size in MiB (rounded down to a power of two)")
      ->capture_default_str()->check(CLI::Range(size_t{1}, size_t{1} << 18));
  c->add_option("--ipv6-prefixes", o->ipv6_prefixes, "IPv6 workload: random /48-/64 prefixes (0: skip it)")
      ->capture_default_str()->check(CLI::Range(size_t{0}, size_t{4} << 20));
  c->add_option("--lookups", o->lookups, "lookups per repetition, every workload (default: 65536 pointer "
                "chases, 4194304 cuckoo and IPv6 lookups)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 30));
  c->add_option("--batch", o->batches, "group / chunk / ring sizes (1..64), e.g. --batch 8,16")
      ->delimiter(',')->capture_default_str()->check(CLI::Range(1, 64));
  c->add_option("--reps", o->reps, "repetitions (the median is reported)")->capture_default_str()->check(CLI::Range(1, 1000));
  c->add_option("--core", o->core, "pin the benchmark thread to this CPU")->capture_default_str();
  c->add_option("--seed", o->seed, "table and input generator seed")->capture_default_str();
  c->add_option("--json", o->json, "write the report here");
  c->callback([o] {
    const int rc = run_bench(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
