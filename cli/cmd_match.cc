// `tandem match --rules FILES (--pcap IN | --gen SPEC) [--patterns-only]`: DPI over packets, one
// line per packet on standard output: the packet's number (from 1), then the sorted ids that
// matched, space-separated. With --patterns-only the ids are pattern ids (stage 1, every pattern
// searched in every payload); without it they are the sids of the rules that match (stages 1 and
// 2, port groups). A summary of the rules (options ignored, rules skipped) goes to standard error.
//
// Paths (the answers are the same on each): --device gpu runs stage 1 over every pattern on the
// GPU (dpi_gpu.h) and stage 2 on the CPU from its ids; on the CPU, --cpu-path batched (the
// default) takes packets in batches sorted by automaton and length and walks them in lockstep
// (the G-Opt paper's optimizations), --cpu-path scalar one packet at a time; that is the port
// groups' automata (--dpi-engine aho-corasick). --dpi-engine literal (the default) runs stage 1
// through the literal filter (literal_filter.h) over every pattern; payloads dense in candidates
// take the port groups' automata (with --patterns-only, the automaton of every pattern), batched
// or one at a time as --cpu-path says;
// --dpi-engine hyperscan through Hyperscan, one payload at a time.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "apps/dpi/dpi_gpu.h"
#include "apps/dpi/dpi_match.h"
#include "apps/dpi/ids_rules.h"
#include "cli/commands.h"
#include "cli/table_setup.h"
#include "core/flow_hash.h"
#include "io/pcap_io.h"
#include "io/traffic_gen.h"

namespace tandem::cli {

namespace {

struct MatchOptions {
  std::vector<std::string> rules;
  std::string pcap;
  std::string gen;
  bool patterns_only = false;
  double match_heavy = 0;
  bool skip_bad = false;
  std::string device = "auto";
  std::string cpu_path = "batched";
  std::string engine = dpi::stage1_name(dpi::default_stage1());
};

constexpr size_t kChunk = 65536;  // packets matched, then written, at a time

void run_match(const MatchOptions& o) {
  dpi::IdsRuleSet set;
  try {
    dpi::IdsLoadOptions lo;
    lo.skip_bad = o.skip_bad;
    set = dpi::load_ids_rules(o.rules, lo);
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
  for (const std::string& e : set.errors) std::fprintf(stderr, "skipped: %s\n", e.c_str());
  for (const std::string& e : set.duplicate_sid_examples) std::fprintf(stderr, "warning: %s\n", e.c_str());
  if (set.duplicate_sids > set.duplicate_sid_examples.size()) {
    std::fprintf(stderr, "warning: %llu rules in all reuse a sid already defined; output lines name sids and cannot tell them apart\n",
                 static_cast<unsigned long long>(set.duplicate_sids));
  }
  // A capture is read a chunk at a time, so that memory does not grow with it; generated traffic
  // is made whole (its size is the spec's count).
  std::unique_ptr<PcapReader> reader;
  PacketStore store;
  if (!o.pcap.empty()) {
    reader = std::make_unique<PcapReader>(o.pcap);
  } else {
    store = generate(parse_gen_flag("--gen", o.gen));
  }
  size_t generated_next = 0;
  uint64_t chunks = 0;
  // The next chunk of at most kChunk packets into `chunk`; false when there are none left.
  auto next_chunk = [&](PacketStore& chunk) {
    chunk = PacketStore{};
    if (reader) {
      const uint8_t* data;
      uint32_t cap, wire;
      uint64_t ts;
      while (chunk.size() < kChunk && reader->next(&data, &cap, &wire, &ts)) chunk.add(data, cap, wire, ts);
    } else {
      for (; chunk.size() < kChunk && generated_next < store.size(); ++generated_next) {
        chunk.add(store.frame(generated_next), store.caplen[generated_next], store.wire_len[generated_next],
                  store.ts_ns[generated_next]);
      }
    }
    if (chunk.size() && o.match_heavy > 0) dpi::make_match_heavy(chunk, set.patterns, o.match_heavy, 0x5eed + chunks);
    ++chunks;
    return chunk.size() > 0;
  };
  const Device dev = choose_device(o.device, /*quiet=*/true);
  // The GPU does stage 1 with its automaton: no Hyperscan database to compile then.
  const dpi::Stage1 stage1 = dev == Device::kGpu ? dpi::Stage1::kAhoCorasick : dpi::parse_stage1(o.engine, "--dpi-engine");
  const dpi::DpiEngine engine(set, stage1);
  std::fprintf(stderr, "rules: %zu enabled (%llu disabled, %llu without content, %zu skipped as malformed), %zu patterns, "
               "%zu port groups, automata %.1f MiB\n", set.rules.size(), static_cast<unsigned long long>(set.disabled),
               static_cast<unsigned long long>(set.without_content), set.errors.size(), set.patterns.size(), engine.groups(),
               engine.memory_bytes() / 1048576.0);
  std::string ignored;
  for (const auto& [name, n] : set.ignored_options) ignored += " " + name + ":" + std::to_string(n);
  if (!ignored.empty()) std::fprintf(stderr, "options not applied (rules using each):%s\n", ignored.c_str());
  std::unique_ptr<dpi::AhoCorasickGpu> gpu_ac;
  if (dev == Device::kGpu) gpu_ac = dpi::AhoCorasickGpu::create(engine.all_patterns());
  // Hyperscan scans one payload at a time: it has no lockstep walk to batch.
  const bool hyperscan = stage1 == dpi::Stage1::kHyperscan;
  const bool batched = o.cpu_path == "batched" && !hyperscan;
  const bool literal = stage1 == dpi::Stage1::kLiteral;
  std::fprintf(stderr, "path: %s\n",
               gpu_ac      ? "GPU stage 1 (every pattern), stage 2 on the CPU"
               : hyperscan ? "CPU, Hyperscan stage 1 (every pattern, one payload at a time), then stage 2"
               : literal   ? (batched ? "CPU, literal filter stage 1 (every pattern; payloads dense in candidates to the "
                                        "automata, batched), then stage 2"
                                      : "CPU, one packet at a time, literal filter stage 1 (every pattern; payloads "
                                        "dense in candidates to the automata), then stage 2")
               : batched   ? "CPU, batched (sorted by automaton and length, lockstep walks)"
                           : "CPU, one packet at a time");
  std::string out;
  std::vector<dpi::PacketInfo> info;
  std::vector<const uint8_t*> ptr;
  std::vector<uint32_t> len;
  std::vector<std::vector<uint32_t>> ids, res;
  uint64_t with_match = 0, cpu_fallbacks = 0, not_inspected = 0;
  PacketStore chunk;
  size_t c0 = 0;
  for (; next_chunk(chunk); c0 += chunk.size()) {
    const size_t n = chunk.size();
    if (ids.size() < n) {
      ids.resize(n);
      res.resize(n);
    }
    info.resize(n);
    ptr.resize(n);
    len.resize(n);
    for (size_t i = 0; i < n; ++i) {
      info[i] = dpi::packet_info(chunk.frame(i), chunk.caplen[i]);
      not_inspected += info[i].not_inspected;
      ptr[i] = info[i].bytes();
      len[i] = info[i].len;
    }
    if (gpu_ac) {
      gpu_ac->patterns_in_batch(ptr.data(), len.data(), n, o.patterns_only ? res.data() : ids.data());
      cpu_fallbacks += gpu_ac->stats().cpu_fallbacks;
      if (!o.patterns_only) {
        for (size_t i = 0; i < n; ++i) engine.match_from_patterns(info[i], ids[i], &res[i]);
      }
    } else if (batched) {
      if (o.patterns_only) {
        engine.patterns_in_batch(ptr.data(), len.data(), n, res.data());
      } else {
        engine.match_batch(info.data(), n, res.data());
      }
    } else {
      for (size_t i = 0; i < n; ++i) {
        if (o.patterns_only) {
          engine.patterns_in(info[i], &res[i]);
        } else {
          engine.match(info[i], &res[i]);
        }
      }
    }
    for (size_t i = 0; i < n; ++i) {
      with_match += !res[i].empty();
      out += std::to_string(c0 + i + 1);
      for (uint32_t id : res[i]) {
        out += ' ';
        out += std::to_string(id);
      }
      out += '\n';
    }
    if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size()) throw UsageError("cannot write to standard output");
    out.clear();
  }
  if (std::fflush(stdout) != 0) throw UsageError("cannot write to standard output");
  std::fprintf(stderr, "packets: %zu, with a match: %llu, not inspected (later fragments, malformed or rejected headers): %llu",
               c0, static_cast<unsigned long long>(with_match), static_cast<unsigned long long>(not_inspected));
  if (gpu_ac) std::fprintf(stderr, "; payloads redone on the CPU (over %u ids): %llu", dpi::AhoCorasickGpu::kMaxIds,
                           static_cast<unsigned long long>(cpu_fallbacks));
  std::fprintf(stderr, "\n");
}

}  // namespace

void register_match(CLI::App& app) {
  auto o = std::make_shared<MatchOptions>();
  CLI::App* c = app.add_subcommand("match", "DPI: the rules (or, with --patterns-only, the patterns) each packet matches");
  c->add_option("--rules", o->rules, "Snort/Suricata rule files, in order (.gz ok)")->required()->check(CLI::ExistingFile);
  auto* pcap = c->add_option("--pcap", o->pcap, "packets from a capture")->check(CLI::ExistingFile);
  auto* gen = c->add_option("--gen", o->gen, "or generated packets (tandem gen spec)");
  pcap->excludes(gen);
  gen->excludes(pcap);
  c->add_flag("--patterns-only", o->patterns_only, "report pattern ids (stage 1, no port groups) instead of sids");
  c->add_option("--match-heavy", o->match_heavy, "splice patterns over this fraction of payload bytes (0..1)")
      ->check(FiniteRange(0.0, 1.0));
  c->add_flag("--skip-bad", o->skip_bad, "report malformed rules and load the rest (default: fail on the first)");
  c->add_option("--device", o->device, "cpu, gpu, or auto (the GPU when one is usable)")
      ->capture_default_str()->check(CLI::IsMember({"cpu", "gpu", "auto"}));
  c->add_option("--cpu-path", o->cpu_path, "batched (sorted by automaton and length, lockstep walks) or scalar (one packet at a time)")
      ->capture_default_str()->check(CLI::IsMember({"batched", "scalar"}));
  c->add_option("--dpi-engine", o->engine,
                "the CPU's stage 1: hyperscan (every pattern, one payload at a time; --cpu-path does not apply), "
                "literal (our literal filter over every pattern) or aho-corasick (the port groups' automata); the same "
                "answers")
      ->capture_default_str()->check(CLI::IsMember({"aho-corasick", "hyperscan", "literal"}));
  c->callback([o] {
    if (o->pcap.empty() && o->gen.empty()) throw UsageError("match: give --pcap FILE or --gen SPEC");
    run_match(*o);
  });
}

}  // namespace tandem::cli
