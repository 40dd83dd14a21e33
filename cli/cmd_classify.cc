// `tandem classify --rules FILE --keys FILE`: the 5-tuple firewall's first matching rule for each
// header of a ClassBench trace ("src dst sport dport proto ..." as integers, extra columns
// ignored), one line per header in input order: the rule's 1-based index in the file's rule
// order, or 0 when none matches.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "apps/acl/acl_gpu.h"
#include "apps/acl/acl_rules.h"
#include "apps/acl/hypersplit.h"
#include "cli/commands.h"
#include "cli/table_setup.h"
#include "core/table_reader.h"

namespace tandem::cli {

namespace {

struct ClassifyOptions {
  std::string rules;
  std::string keys;
  std::string algo = "hypersplit";
  std::string device = "cpu";
  bool skip_bad = false;
};

void run_classify(const ClassifyOptions& o) {
  acl::RuleSet set;
  std::vector<acl::Header> hdr;
  try {
    acl::LoadOptions lo;
    lo.skip_bad = o.skip_bad;
    set = acl::load_rules(o.rules, lo);
    hdr = acl::load_trace(o.keys);
  } catch (const TableError& e) {
    throw UsageError(e.what());
  }
  for (const std::string& e : set.errors) std::fprintf(stderr, "skipped: %s\n", e.c_str());
  std::vector<uint32_t> out(hdr.size());
  const Device dev = choose_device(o.device, /*quiet=*/true);
  if (o.algo == "linear") {
    if (dev == Device::kGpu) throw UsageError("--algo linear runs on the CPU only: use --device cpu or --algo hypersplit");
    for (size_t i = 0; i < hdr.size(); ++i) {
      out[i] = acl::classify_linear(set.rules.data(), static_cast<uint32_t>(set.rules.size()), hdr[i]);
    }
  } else {
    const acl::HyperSplit tree = acl::HyperSplit::build(set.rules);
    if (dev == Device::kGpu) {
      acl::AclGpuTable g(tree);
      g.classify(hdr.data(), out.data(), hdr.size());
    } else {
      tree.classify_batch(hdr.data(), out.data(), hdr.size());
    }
  }
  std::string text;
  text.reserve(out.size() * 6);
  for (uint32_t r : out) {
    text += std::to_string(r == acl::kNoMatch ? 0 : r + 1);
    text += '\n';
  }
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    throw UsageError("cannot write the results to standard output");
  }
  if (!set.errors.empty()) std::fprintf(stderr, "%zu bad rule line(s) skipped\n", set.errors.size());
}

}  // namespace

void register_classify(CLI::App& app) {
  auto o = std::make_shared<ClassifyOptions>();
  CLI::App* c = app.add_subcommand("classify", "5-tuple firewall: the first matching rule (1-based, 0 = none) per trace line");
  c->add_option("--rules", o->rules, "rules: a ClassBench filter file, or Tandem's syntax (`accept src 10.0.0.0/8 dport 80`), .gz ok")
      ->required()->check(CLI::ExistingFile);
  c->add_option("--keys", o->keys, "ClassBench trace: src dst sport dport proto (integers) per line, extra columns ignored")
      ->required()->check(CLI::ExistingFile);
  c->add_option("--algo", o->algo, "hypersplit (a decision tree) or linear (every rule in order)")
      ->capture_default_str()->check(CLI::IsMember({"hypersplit", "linear"}));
  c->add_option("--device", o->device, "cpu, gpu or auto")->capture_default_str()->check(CLI::IsMember({"cpu", "gpu", "auto"}));
  c->add_flag("--skip-bad", o->skip_bad, "report malformed rule lines and load the rest (default: fail on the first)");
  c->callback([o] { run_classify(*o); });
}

}  // namespace tandem::cli
