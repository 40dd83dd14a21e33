// `tandem bench dpi --rules FILES`: DPI rates (G-Opt Fig. 12, Koromilas et al.), each for match-free
// traffic (generated packets whose payloads are random bytes in which no pattern occurs) and
// match-heavy traffic (the same with patterns spliced over a fraction of the payload bytes), in
// one run:
//   stage1_baseline   one packet at a time through the Aho-Corasick DFA of every pattern;
//   stage1_batched    the G-Opt paper's optimizations: batches of 8192 sorted by length, 32 payloads
//                     walked in lockstep (AhoCorasick::patterns_in_batch);
//   stage1_literal    the literal filter (apps/dpi/literal_filter.h): shift-or, then confirmation;
//   stage1_literal_hybrid  the filter, with payloads dense in candidates handed to the batched walk;
//   hyperscan         the same literals in Hyperscan, block mode (where Hyperscan was built);
//   gpu               the Aho-Corasick kernel (dpi_gpu.h), host to host: packing, copies, kernels
//                     and unpacking (gpu_kernels: the kernels alone), where a GPU is usable;
//   rules             stages 1 and 2 with port groups (the sids of matching rules), one at a time;
//   rules_batched     the same, batched (DpiEngine::match_batch: sorted by automaton and length);
//   rules_batched_literal, rules_batched_hyperscan  the same through the dpi app's other stages 1
//                     (--dpi-engine literal, hyperscan): every pattern once, then stage 2 from the ids;
//   rules_gpu         stage 1 over every pattern on the GPU, stage 2 on one CPU thread from its ids;
// on one core, and (--threads) on T cores splitting the packets. Every stage-1 variant must give
// every packet the same pattern ids as the baseline, every rules variant the same sids as `rules`.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "apps/dpi/aho_corasick.h"
#include "apps/dpi/dpi_gpu.h"
#include "apps/dpi/dpi_match.h"
#include "apps/dpi/hyperscan_patterns.h"
#include "apps/dpi/ids_rules.h"
#include "apps/dpi/literal_filter.h"
#include "bench/bench_report.h"
#include "cli/commands.h"
#include "cli/table_setup.h"
#include "core/machine_info.h"
#include "io/traffic_gen.h"

namespace tandem::cli {

namespace {

struct BenchDpiOptions {
  std::vector<std::string> rules;
  std::string gen = "count=200000,size=512,proto=tcp,flows=10000,seed=9";
  double heavy = 0.2;
  std::string threads = "1";
  int core = 0;
  int reps = 3;
  size_t batch = 8192;
  size_t group = 32;
  std::string device = "auto";
  std::string json;
};

// Runs f(begin, end) over [0, n) split into `threads` contiguous parts, thread t pinned to CPU
// core + t; returns the wall time.
template <class F>
double parallel(size_t n, int threads, int core, F&& f) {
  if (threads <= 1) {
    pin_this_thread(core);  // --core holds for one thread too (the calling thread, from now on)
    const auto t0 = std::chrono::steady_clock::now();
    f(size_t{0}, n);
    return bench::seconds_since(t0);
  }
  std::vector<std::thread> ts;
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) {
    const size_t b = n * t / threads, e = n * (t + 1) / threads;
    ts.emplace_back([&, t, b, e] {
      pin_this_thread(core + t);
      f(b, e);
    });
  }
  for (auto& th : ts) th.join();
  return bench::seconds_since(t0);
}

// One timed repetition: passes `pass()` (returning its wall seconds) until bench::min_rep_seconds()
// have gone by; the seconds of one pass.
template <class F>
double rep_seconds(F&& pass) {
  bench::min_rep_seconds_used() = true;
  double total = 0;
  uint64_t passes = 0;
  do {
    total += pass();
    ++passes;
  } while (total < bench::min_rep_seconds());
  return total / static_cast<double>(passes);
}

int run_bench(const BenchDpiOptions& o) {
  dpi::IdsRuleSet set;
  try {
    dpi::IdsLoadOptions lo;
    lo.skip_bad = true;
    set = dpi::load_ids_rules(o.rules, lo);
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
  if (set.patterns.empty()) throw UsageError("bench dpi: the rules have no content patterns");
  const auto t_build = std::chrono::steady_clock::now();
  const dpi::DpiEngine engine(set);
  const double build_s = bench::seconds_since(t_build);
  const dpi::AhoCorasick& ac = engine.all_patterns();
  std::printf("rules: %zu enabled, %zu patterns, %zu skipped; automaton %zu states, %u classes, %.1f MiB; %zu port groups "
              "(%.1f MiB of automata in all), built in %.1f s\n", set.rules.size(), set.patterns.size(), set.errors.size(),
              ac.states(), ac.classes(), ac.memory_bytes() / 1048576.0, engine.groups(), engine.memory_bytes() / 1048576.0,
              build_s);
  // The batched walk's misses overlap only as far as the TLB lets them: a table on 4 KiB pages
  // (THP refused on a fragmented machine) would slow it, so each run says where it stood.
  const size_t table = ac.delta_entries() * sizeof(uint32_t), huge = std::min(ac.table_huge_bytes(), table);
  std::printf("transition table: %.1f of %.1f MiB on 2 MiB pages (THP %s)\n", huge / 1048576.0, table / 1048576.0,
              transparent_hugepage_mode());
  const auto t_filter = std::chrono::steady_clock::now();
  const dpi::LiteralFilter filter = dpi::LiteralFilter::build(set.patterns);
  std::printf("literal filter: %.1f MiB, built in %.2f s\n", filter.memory_bytes() / 1048576.0,
              bench::seconds_since(t_filter));
  std::unique_ptr<dpi::HyperscanPatterns> hs;
  if (dpi::hyperscan_built()) {
    try {
      hs = std::make_unique<dpi::HyperscanPatterns>(set.patterns);
      std::printf("hyperscan %s: database %.1f MiB, compiled in %.1f s\n", hs->version().c_str(),
                  hs->database_bytes() / 1048576.0, hs->compile_seconds());
    } catch (const std::exception& e) {
      std::printf("hyperscan: skipped: %s\n", e.what());
    }
  }
  // The dpi app's other CPU stages 1, whole (stages 1 and 2) beside the port groups' automata.
  std::vector<std::pair<std::string, std::unique_ptr<dpi::DpiEngine>>> other_engines;
  other_engines.emplace_back("literal", std::make_unique<dpi::DpiEngine>(set, dpi::Stage1::kLiteral));
  if (hs) other_engines.emplace_back("hyperscan", std::make_unique<dpi::DpiEngine>(set, dpi::Stage1::kHyperscan));
  std::unique_ptr<dpi::AhoCorasickGpu> gpu_ac;
  std::string gpu_why = "--device cpu";
  if (o.device != "cpu") {
    try {
      gpu_ac = dpi::AhoCorasickGpu::create(ac);
      std::printf("gpu: %s, automaton and buffers %.1f MiB on the device\n", gpu::device_info().name.c_str(),
                  gpu_ac->device_bytes() / 1048576.0);
    } catch (const gpu::GpuError& e) {
      if (o.device == "gpu") throw UsageError(std::string("--device gpu: ") + e.what());
      gpu_why = e.what();
      std::printf("gpu: skipped: %s\n", gpu_why.c_str());
    }
  }
  std::vector<int> thread_counts;
  try {
    thread_counts = parse_cpu_list(o.threads);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--threads: ") + e.what());
  }
  nlohmann::json traffic_json = nlohmann::json::array();
  bool all_ok = true;
  for (const bool heavy : {false, true}) {
    PacketStore store = generate(parse_gen_flag("--gen", o.gen));
    dpi::make_match_free(store, ac);
    if (heavy) dpi::make_match_heavy(store, set.patterns, o.heavy);
    std::vector<dpi::PacketInfo> info(store.size());
    std::vector<const uint8_t*> ptr(store.size());
    std::vector<uint32_t> len(store.size());
    uint64_t bytes = 0;
    for (size_t i = 0; i < store.size(); ++i) {
      info[i] = dpi::packet_info(store.frame(i), store.caplen[i]);
      ptr[i] = info[i].bytes();
      len[i] = info[i].len;
      bytes += len[i];
    }
    const size_t n = store.size();
    std::vector<std::vector<uint32_t>> want(n), got(n), want_sids(n);
    for (size_t i = 0; i < n; ++i) ac.patterns_in(ptr[i], len[i], &want[i]);
    for (size_t i = 0; i < n; ++i) engine.match(info[i], &want_sids[i]);
    size_t with_match = 0;
    for (const auto& w : want) with_match += !w.empty();
    const std::string name = heavy ? "match-heavy" : "match-free";
    std::printf("\n%s traffic: %zu packets, %.1f MB of payload, %.1f%% of packets with a pattern\n", name.c_str(), n,
                bytes / 1e6, 100.0 * with_match / std::max<size_t>(n, 1));
    std::vector<bench::Row> rows;
    nlohmann::json checks = nlohmann::json::object();
    auto check = [&](const std::string& row, const std::vector<std::vector<uint32_t>>& ref) {
      size_t diff = 0;
      for (size_t i = 0; i < n; ++i) diff += got[i] != ref[i];
      checks[row] = diff;
      if (diff) {
        std::fprintf(stderr, "bench dpi: %s: %zu packets differ from the one-at-a-time path\n", row.c_str(), diff);
        all_ok = false;
      }
    };
    for (int t : thread_counts) {
      const std::string sfx = "_t" + std::to_string(t);
      const std::string on = ", " + std::to_string(t) + " thread" + (t > 1 ? "s" : "");
      std::vector<double> secs;
      // A row: o.reps repetitions of `range` over the packets split among t threads, each packet's
      // output checked against `ref` (the baseline's ids, or `rules`'s sids).
      const auto timed_row = [&](const std::string& path, const std::string& note,
                                 const std::vector<std::vector<uint32_t>>& ref, const auto& range) {
        secs.clear();
        for (int r = 0; r < o.reps; ++r) {
          secs.push_back(rep_seconds([&] { return parallel(n, t, o.core, range); }));
        }
        check(path + sfx, ref);
        rows.push_back({path + sfx, note + on, double(n), secs});
      };
      const auto stage1_row = [&](const std::string& path, const std::string& note, const auto& range) {
        timed_row(path, note, want, range);
      };
      const auto rules_row = [&](const std::string& path, const std::string& note, const auto& range) {
        timed_row(path, note, want_sids, range);
      };
      stage1_row("stage1_baseline", "Aho-Corasick, one packet at a time", [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) ac.patterns_in(ptr[i], len[i], &got[i]);
      });
      stage1_row("stage1_batched",
                 "batches of " + std::to_string(o.batch) + " sorted by length, " + std::to_string(o.group) + " in lockstep",
                 [&](size_t b, size_t e) {
                   ac.patterns_in_batch(ptr.data() + b, len.data() + b, e - b, got.data() + b, o.batch, o.group);
                 });
      stage1_row("stage1_literal", "literal filter: shift-or over eight-byte blocks, then confirmation",
                 [&](size_t b, size_t e) {
                   for (size_t i = b; i < e; ++i) filter.patterns_in(ptr[i], len[i], &got[i]);
                 });
      stage1_row("stage1_literal_hybrid", "literal filter; payloads with many candidates to the batched walk",
                 [&](size_t b, size_t e) {
                   dpi::patterns_in_hybrid(filter, ac, ptr.data() + b, len.data() + b, e - b, got.data() + b, o.batch,
                                           o.group);
                 });
      if (hs) {
        stage1_row("hyperscan", "Hyperscan block mode, the same literals", [&](size_t b, size_t e) {
          const dpi::HyperscanPatterns::Scratch scratch(*hs);
          for (size_t i = b; i < e; ++i) hs->patterns_in(ptr[i], len[i], scratch, &got[i]);
        });
      } else if (!dpi::hyperscan_built()) {
        rows.push_back({"hyperscan" + sfx, "skipped: built without Hyperscan", double(n), {}});
      }
      if (t == thread_counts.front()) {
        if (gpu_ac) {
          std::vector<double> kernel_secs;
          secs.clear();
          for (int r = 0; r < o.reps; ++r) {
            double kernel_s = 0;
            uint64_t passes = 0;
            secs.push_back(rep_seconds([&] {
              const double t = parallel(n, 1, o.core, [&](size_t, size_t) {
                gpu_ac->patterns_in_batch(ptr.data(), len.data(), n, got.data());
              });
              kernel_s += gpu_ac->stats().kernel_ms / 1e3;  // this call's kernels
              ++passes;
              return t;
            }));
            kernel_secs.push_back(kernel_s / static_cast<double>(passes));
          }
          check("gpu", want);
          rows.push_back({"gpu", "GPU kernel, batches of 16 MiB, host to host (1 host thread); " +
                                     std::to_string(gpu_ac->stats().cpu_fallbacks) + " payloads redone on the CPU",
                          double(n), secs});
          rows.push_back({"gpu_kernels", "the GPU kernels alone (CUDA events)", double(n), kernel_secs});
        } else {
          rows.push_back({"gpu", "skipped: " + gpu_why, double(n), {}});
        }
      }
      rules_row("rules", "stages 1 and 2: port groups, content conditions, one at a time", [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) engine.match(info[i], &got[i]);
      });
      rules_row("rules_batched", "stages 1 and 2, batches sorted by automaton and length", [&](size_t b, size_t e) {
        engine.match_batch(info.data() + b, e - b, got.data() + b, o.batch, o.group);
      });
      for (const auto& [name, other] : other_engines) {
        rules_row("rules_batched_" + name, "stages 1 and 2, --dpi-engine " + name + " (every pattern, then stage 2 from its ids)",
                  [&, &other = other](size_t b, size_t e) {
                    other->match_batch(info.data() + b, e - b, got.data() + b, o.batch, o.group);
                  });
      }
      if (t == thread_counts.front() && gpu_ac) {
        std::vector<std::vector<uint32_t>> ids(n);
        secs.clear();
        for (int r = 0; r < o.reps; ++r) {
          secs.push_back(rep_seconds([&] { return parallel(n, 1, o.core, [&](size_t, size_t) {
            gpu_ac->patterns_in_batch(ptr.data(), len.data(), n, ids.data());
            for (size_t i = 0; i < n; ++i) engine.match_from_patterns(info[i], ids[i], &got[i]);
          }); }));
        }
        check("rules_gpu", want_sids);
        rows.push_back({"rules_gpu", "stage 1 on the GPU (every pattern), stage 2 on 1 CPU thread from its ids", double(n), secs});
      }
    }
    bench::print_table("DPI, " + name + " traffic (" + std::to_string(set.patterns.size()) + " patterns)", "packets", rows,
                       "stage1_baseline_t" + std::to_string(thread_counts.front()));
    for (const bench::Row& r : rows) {
      if (!r.seconds.empty()) {
        std::printf("  %-24s %8.2f Gbps of payload\n", r.name.c_str(), bytes * 8.0 / bench::median(r.seconds) / 1e9);
      }
    }
    traffic_json.push_back({{"traffic", name}, {"packets", n}, {"payload_bytes", bytes}, {"packets_with_pattern", with_match},
                            {"results", bench::rows_json(rows)}, {"mismatches_vs_baseline", checks}});
  }
  std::printf("results: %s\n", all_ok ? "every stage-1 variant agrees with the baseline, every rules variant with rules"
                                      : "MISMATCH (see above)");
  if (!o.json.empty()) {
    nlohmann::json report = {{"bench", "dpi"},
                             {"machine", bench::machine_json()},
                             {"config", {{"rules", o.rules}, {"gen", o.gen}, {"heavy_fraction", o.heavy}, {"threads", o.threads},
                                         {"core", o.core}, {"reps", o.reps}, {"batch", o.batch}, {"group", o.group}, {"device", o.device}}},
                             {"automaton", {{"states", ac.states()}, {"classes", ac.classes()}, {"bytes", ac.memory_bytes()},
                                            {"port_groups", engine.groups()}, {"build_seconds", build_s},
                                            {"table_bytes_on_2mib_pages", huge}}},
                             {"patterns", set.patterns.size()},
                             {"traffic", traffic_json}};
    bench::write_json(o.json, report);
    std::printf("wrote %s\n", o.json.c_str());
  }
  return all_ok ? 0 : 4;
}

}  // namespace

void register_bench_dpi(CLI::App& bench) {
  auto o = std::make_shared<BenchDpiOptions>();
  CLI::App* c = bench.add_subcommand("dpi", "DPI: Aho-Corasick baseline vs batched vs Hyperscan, match-free and match-heavy");
  c->add_option("--rules", o->rules, "Snort/Suricata rule files (.gz ok)")->required()->check(CLI::ExistingFile);
  c->add_option("--gen", o->gen, "the traffic (tandem gen spec)")->capture_default_str();
  c->add_option("--heavy", o->heavy, "match-heavy traffic: the fraction of payload bytes covered by patterns")
      ->capture_default_str()->check(FiniteRange(0.0, 1.0));
  c->add_option("--threads", o->threads, "thread counts, e.g. 1,16 (thread t on CPU core + t)")->capture_default_str();
  c->add_option("--core", o->core, "the first CPU to pin to")->capture_default_str();
  c->add_option("--reps", o->reps, "repetitions (the median is reported)")->capture_default_str()->check(CLI::Range(1, 100));
  c->add_option("--batch", o->batch, "the batched walk: payloads sorted per batch")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  c->add_option("--group", o->group, "the batched walk: payloads walked in lockstep")->capture_default_str()->check(CLI::Range(1, 64));
  c->add_option("--device", o->device, "auto: the GPU rows where a GPU is usable; cpu; gpu: fail without one")
      ->capture_default_str()->check(CLI::IsMember({"auto", "cpu", "gpu"}));
  c->add_option("--json", o->json, "write the report here");
  c->callback([o] {
    const int rc = run_bench(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
