// `tandem classify --rules FILE --keys FILE`: the 5-tuple firewall's first matching rule for each
// header of a ClassBench trace ("src dst sport dport proto ..." as integers, extra columns
// ignored), one line per header in input order: the rule's 1-based number among the file's rule
// lines (a line skipped by --skip-bad keeps its number), or 0 when none matches. The trace is
// streamed: memory does not grow with its length.
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
  std::unique_ptr<acl::TraceReader> trace;
  try {
    acl::LoadOptions lo;
    lo.skip_bad = o.skip_bad;
    set = acl::load_rules(o.rules, lo);
    trace = std::make_unique<acl::TraceReader>(o.keys);
  } catch (const TableError& e) {
    throw UsageError(e.what());
  }
  for (const std::string& e : set.errors) std::fprintf(stderr, "skipped: %s\n", e.c_str());
  const Device dev = choose_device(o.device, /*quiet=*/true);
  if (o.algo == "linear" && dev == Device::kGpu) {
    throw UsageError("--algo linear runs on the CPU only: use --device cpu or --algo hypersplit");
  }
  std::unique_ptr<acl::HyperSplit> tree;
  std::unique_ptr<acl::AclGpuTable> gpu;
  if (o.algo != "linear") {
    tree = std::make_unique<acl::HyperSplit>(acl::HyperSplit::build(set.rules));
    if (dev == Device::kGpu) gpu = acl::AclGpuTable::create(*tree);
  }
  // The trace is classified a chunk at a time: memory stays bounded however long it is.
  constexpr size_t kChunk = 1 << 16;
  std::vector<acl::Header> hdr(kChunk);
  std::vector<uint32_t> out(kChunk);
  std::string text;
  for (;;) {
    size_t n = 0;
    try {
      n = trace->read(hdr.data(), kChunk);
    } catch (const TableError& e) {
      throw UsageError(e.what());
    }
    if (n == 0) break;
    if (!tree) {
      for (size_t i = 0; i < n; ++i) {
        out[i] = acl::classify_linear(set.rules.data(), static_cast<uint32_t>(set.rules.size()), hdr[i]);
      }
    } else if (gpu) {
      gpu->classify(hdr.data(), out.data(), n);
    } else {
      tree->classify_batch(hdr.data(), out.data(), n);
    }
    text.clear();
    for (size_t i = 0; i < n; ++i) {
      // The rule's number in the file (a line skipped by --skip-bad keeps its number).
      const uint32_t r = out[i];
      text += std::to_string(r == acl::kNoMatch ? 0 : r < set.number.size() ? set.number[r] : r + 1);
      text += '\n';
    }
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) {
      throw UsageError("cannot write the results to standard output");
    }
  }
  if (std::fflush(stdout) != 0) throw UsageError("cannot write the results to standard output");
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
