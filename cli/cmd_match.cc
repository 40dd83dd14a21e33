// `tandem match --rules FILES (--pcap IN | --gen SPEC) [--patterns-only]`: DPI over packets, one
// line per packet on standard output: the packet's number (from 1), then the sorted ids that
// matched, space-separated. With --patterns-only the ids are pattern ids (stage 1, every pattern
// searched in every payload); without it they are the sids of the rules that match (stages 1 and
// 2, port groups). A summary of the rules (options ignored, rules skipped) goes to standard error.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

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
};

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
  PacketStore store;
  if (!o.pcap.empty()) {
    store = load_pcap(o.pcap);
  } else {
    store = generate(parse_gen_flag("--gen", o.gen));
  }
  if (o.match_heavy > 0) dpi::make_match_heavy(store, set.patterns, o.match_heavy);
  const dpi::DpiEngine engine(set);
  std::fprintf(stderr, "rules: %zu enabled (%llu disabled, %llu without content, %zu skipped as malformed), %zu patterns, "
               "%zu port groups, automata %.1f MiB\n", set.rules.size(), static_cast<unsigned long long>(set.disabled),
               static_cast<unsigned long long>(set.without_content), set.errors.size(), set.patterns.size(), engine.groups(),
               engine.memory_bytes() / 1048576.0);
  std::string ignored;
  for (const auto& [name, n] : set.ignored_options) ignored += " " + name + ":" + std::to_string(n);
  if (!ignored.empty()) std::fprintf(stderr, "options not applied (rules using each):%s\n", ignored.c_str());
  std::string out;
  std::vector<uint32_t> ids;
  uint64_t with_match = 0;
  for (size_t i = 0; i < store.size(); ++i) {
    const dpi::PacketInfo info = dpi::packet_info(store.frame(i), store.caplen[i]);
    if (o.patterns_only) {
      engine.patterns_in(info, &ids);
    } else {
      engine.match(info, &ids);
    }
    with_match += !ids.empty();
    out += std::to_string(i + 1);
    for (uint32_t id : ids) {
      out += ' ';
      out += std::to_string(id);
    }
    out += '\n';
    if (out.size() > (1u << 20)) {
      if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size()) throw UsageError("cannot write to standard output");
      out.clear();
    }
  }
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
    throw UsageError("cannot write to standard output");
  }
  std::fprintf(stderr, "packets: %zu, with a match: %llu\n", store.size(), static_cast<unsigned long long>(with_match));
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
      ->check(CLI::Range(0.0, 1.0));
  c->add_flag("--skip-bad", o->skip_bad, "report malformed rules and load the rest (default: fail on the first)");
  c->callback([o] {
    if (o->pcap.empty() && o->gen.empty()) throw UsageError("match: give --pcap FILE or --gen SPEC");
    run_match(*o);
  });
}

}  // namespace tandem::cli
