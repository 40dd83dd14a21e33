// The dpi app: an IDS/IPS over Snort/Suricata rules (dpi_app.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/dpi/dpi_app.h"
#include "apps/dpi/hyperscan_patterns.h"
#include "apps/registry.h"
#include "io/flow_traffic.h"

namespace tandem::dpi {
namespace {

struct DpiState : AppState {
  std::unique_ptr<DpiTables> tables;
};

bool is_rule_file(const std::filesystem::path& p) {
  const std::string n = p.filename().string();
  auto ends = [&n](const std::string& s) { return n.size() > s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0; };
  return ends(".rules") || ends(".rules.gz");
}

// A file, or every *.rules and *.rules.gz file of a directory in name order.
std::vector<std::string> rule_files(const std::string& path) {
  std::vector<std::string> v;
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return {path};
  for (const auto& e : std::filesystem::directory_iterator(path, ec)) {
    if (e.is_regular_file() && is_rule_file(e.path())) v.push_back(e.path().string());
  }
  if (ec) throw UsageError("--ids-rules " + path + ": " + ec.message());
  if (v.empty()) throw UsageError("--ids-rules " + path + ": no *.rules or *.rules.gz file in the directory");
  std::sort(v.begin(), v.end());
  return v;
}

// The destination ports of generated flows: the ports the rules name (a destination list of a few
// ports), each as often as rules name it, so that generated traffic reaches the port-specific
// rules as real traffic to those services would; random ports when no rule names one.
std::vector<uint16_t> rule_ports(const IdsRuleSet& set) {
  std::map<uint16_t, uint32_t> n;
  for (const IdsRule& r : set.rules) {
    const PortSet& d = r.dst_ports;
    if (d.any || !d.exclude.empty() || d.include.size() > 8) continue;
    for (const auto& [lo, hi] : d.include) {
      if (hi - lo < 8) {
        for (uint32_t p = lo; p <= hi; ++p) ++n[static_cast<uint16_t>(p)];
      }
    }
  }
  std::vector<uint16_t> v;
  for (const auto& [port, count] : n) v.insert(v.end(), count, port);
  return v;
}

LoadedApp load(const AppArgs& args) {
  if (!args.has("ids-rules")) throw UsageError("--app dpi needs --ids-rules FILE|DIR (Snort/Suricata rules, .gz ok)");
  IdsLoadOptions lo;
  lo.skip_bad = args.text("ids-skip-bad") == "on";
  DpiPolicy policy;
  policy.drop_alerts = args.text("on-match") == "drop";
  policy.forward_uninspected = args.text("uninspected") == "forward";
  const double heavy = args.real("match-heavy", 0);
  const std::string by_default = stage1_name(default_stage1());
  const Stage1 stage1 = parse_stage1(args.text("dpi-engine", by_default), "--dpi-engine");

  auto st = std::make_unique<DpiState>();
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<std::string> files = rule_files(args.text("ids-rules"));
  try {
    st->tables = std::make_unique<DpiTables>(load_ids_rules(files, lo), stage1);
  } catch (const std::exception& e) {
    throw UsageError(std::string("--app dpi: ") + e.what());
  }
  const DpiTables& t = *st->tables;
  const IdsRuleSet& set = t.rules();
  char desc[512];
  std::snprintf(desc, sizeof desc,
                "%zu rules from %zu file(s) of %s (%zu patterns, %llu malformed and skipped, %llu without content, "
                "%llu duplicate sids), %zu port groups, program %.1f MiB, built in %.2f s; CPU stage 1: %s; on a match: %s; "
                "uninspected: %s",
                set.rules.size(), files.size(), args.text("ids-rules").c_str(), set.patterns.size(),
                static_cast<unsigned long long>(set.errors.size()), static_cast<unsigned long long>(set.without_content),
                static_cast<unsigned long long>(set.duplicate_sids), t.engine().groups(), t.program_bytes() / 1048576.0,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), stage1_name(stage1),
                policy.drop_alerts ? "drop" : "the rule's action (alert: port 1)",
                policy.forward_uninspected ? "port 2" : "dropped");
  LoadedApp a;
  a.table_desc = desc;
  a.app = make_dpi_app(t, policy);
  const DpiTables* tables = st->tables.get();
  const std::vector<uint16_t> ports = rule_ports(set);
  a.generate = [tables, ports, heavy](const GenSpec& spec) {
    PacketStore s = generate_flows(spec, 4, [&ports](Rng& rng, GenFlow& f) {
      if (!ports.empty()) f.dport = ports[rng.next() % ports.size()];
    });
    // Payloads free of every pattern (the paper's match-free case), then, with --match-heavy F,
    // patterns spliced over about F of their bytes; the same verdicts with sequence trailers.
    make_dpi_payloads(s, tables->engine().all_patterns(), tables->rules().patterns, heavy, spec.seed ^ 0xd1,
                      spec.seq ? 0 : kSeqTrailerLen);
    return s;
  };
  a.state = std::move(st);
  return a;
}

AppSpec spec() {
  AppSpec s;
  s.name = "dpi";
  s.description =
      "DPI IDS/IPS over Snort/Suricata rules (a literal filter or automata find the patterns, then each rule's contents "
      "are checked): port 0 clean, 1 alert, "
      "dropped on a drop rule or with --on-match drop";
  s.flags = {
      {"ids-rules", AppFlag::Kind::kPath, "Snort/Suricata rules: a file, or a directory's *.rules and *.rules.gz"},
      {"ids-skip-bad", AppFlag::Kind::kChoice, "on: skip malformed rules (counted); off: refuse the rule set", 0, 0,
       "off|on", "off"},
      {"on-match", AppFlag::Kind::kChoice, "alert: the rule's action (alert: port 1); drop: drop on any match (IPS)",
       0, 0, "alert|drop", "alert"},
      {"uninspected", AppFlag::Kind::kChoice,
       "later fragments and malformed transport headers, whose bytes DPI cannot see: drop, or forward to port 2", 0, 0,
       "drop|forward", "drop"},
      {"dpi-engine", AppFlag::Kind::kChoice,
       "the CPU paths' stage 1: Hyperscan over every pattern, our literal filter over every pattern, or the port "
       "groups' Aho-Corasick automata (the GPU runs its automaton either way; the verdicts are the same)",
       0, 0, "aho-corasick|hyperscan|literal", stage1_name(default_stage1())},
      {"match-heavy", AppFlag::Kind::kShare,
       "generated payloads: patterns spliced over this share of their bytes; 0: free of every pattern", 0, 1, "", "0"},
  };
  s.bench_flags = "--ids-rules data/ids/et_open_2019-04-15 --ids-skip-bad on";
  s.load = load;
  for (DropReason r : {kDpiRuleDrop, kDpiNotInspected}) s.drop_reasons.emplace_back(r, dpi_drop_reason_name(r));
  s.test_cases = [](const auto& data) {
    std::vector<AppTestCase> v;
    const std::string rules = data("data/ids/et_open_2019-04-15/emerging-current_events.rules.gz");
    if (rules.empty()) return v;
    AppArgs alert;
    alert.set("ids-rules", rules);
    alert.set("ids-skip-bad", "on");
    alert.set("match-heavy", "0.3");
    AppArgs ips = alert;
    ips.set("on-match", "drop");
    ips.set("uninspected", "forward");
    ips.set("match-heavy", "0.05");
    ips.set("dpi-engine", "aho-corasick");  // the alert case takes the default (the literal filter)
    AppArgs hyperscan = alert;
    hyperscan.set("dpi-engine", "hyperscan");
    hyperscan.set("match-heavy", "0.2");
    v.push_back({"dpi-alert", alert, "count=20000,flows=2000,proto=tcp,size=imix,seed=31"});
    v.push_back({"dpi-ips", ips, "count=20000,flows=0,proto=tcp,size=imix,seed=32"});
    if (hyperscan_built()) v.push_back({"dpi-hyperscan", hyperscan, "count=20000,flows=2000,proto=udp,size=imix,seed=33"});
    return v;
  };
  return s;
}

}  // namespace
}  // namespace tandem::dpi

TANDEM_REGISTER_APP(tandem::dpi::spec)
