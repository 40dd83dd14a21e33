// Live updates of the fw-router's firewall rules (apps/table_control.h):
//   add POS RULE            insert RULE as rule number POS; the rules from POS on move down one
//   del POS                 delete rule number POS; the rules after it move up one
//   default accept|drop     the policy for a packet no rule matches
// RULE is one line of Tandem's rule syntax, as in the app's rule files (acl_rules.h):
//   accept|drop [src PREFIX] [dst PREFIX] [sport N|N-M] [dport N|N-M] [proto tcp|udp|icmp|N|N/MASK]
// Rules are numbered as the app orders them: by position, 1 first, the first match wins (a rule
// file's order; what `tandem classify` reports as rule N). POS is 1..n+1 for `add` (n+1 appends)
// and 1..n for `del`, n being the rules there are when the line is applied: the lines of a batch
// apply in order, each to the numbering the lines before it left (as iptables -I and -D).
//
// A batch rebuilds the classifier once, whatever its number of lines, on the control thread and
// off the data path: the rule list after the batch, its HyperSplit tree and action bytes (a new
// FwRouterTables over the loaded routes), published with one atomic pointer store that the data
// path reads (FwRouterTraits::live()). Each lookup therefore sees one rule set whole, before or
// after the batch. The set it replaces is freed only after a grace period (rcu->synchronize()):
// once every worker has passed a quiescent state, none holds a pointer into it. Memory: the set
// loaded (which the app keeps) and at most two sets built here, the published one and, during a
// batch, its successor; at most kMaxRules rules.
//
// On the GPU's offload path (fw_router_gpu.h), each rule set a batch makes is also uploaded whole
// to the device, in buffers of its own, before the host copy is published; the runners take it
// between batches (gpu::DeviceTableVersions), so a GPU batch too reads one rule set whole, at
// least the one each of its packets saw on receipt. A batch whose device copy cannot be made
// (device memory) is not applied.
//
// Routes are not updated: every rule set made here reads the router's DIR-24-8 table as loaded.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "apps/acl/acl_rules.h"
#include "apps/fwrouter/fw_router_app.h"
#include "apps/table_control.h"

namespace tandem::fwrouter {

class RuleControl final : public PublishingControl {
 public:
  // The largest rule set updates may make (--acl-random's limit).
  static constexpr size_t kMaxRules = size_t{1} << 22;

  // `loaded` is what the data path reads through `current` (which points at it now): its rules
  // are the ones the first batch changes, and its routes those of every rule set made here. It
  // must outlive the control.
  RuleControl(const FwRouterTables& loaded, std::atomic<const FwRouterTables*>& current);
  ~RuleControl() override;

  std::string syntax() const override { return "add POS RULE | del POS | default accept|drop"; }
  std::vector<std::string> apply(const std::vector<std::string>& lines) override;

  // The rules and the default policy published last (on the control thread).
  const acl::RuleSet& rules() const;
  // Classifiers built so far: one per batch that changed something.
  uint64_t rebuilds() const { return rebuilds_; }

  // The GPU's device copy: each batch's tables go there before they are published.
  DeviceCopyHook<FwRouterTables>& device_hook() { return device_; }
  bool reaches_gpu_offload() const override { return true; }
  const gpu::DeviceTableUpdates* device_copy() const override { return device_.updates(); }
  // Calls f(the tables published last, their version) with no batch being applied (the device
  // copy is made so).
  void with_tables(const std::function<void(const FwRouterTables&, uint64_t version)>& f);

 private:
  struct Built;
  // Applies one line to `set`: "" when done, else why not (`set` unchanged).
  static std::string run(const std::string& line, acl::RuleSet* set);

  const FwRouterTables& loaded_;
  std::atomic<const FwRouterTables*>& current_;
  std::unique_ptr<Built> published_;  // what current_ points at, once a batch has been applied
  std::mutex mu_;  // one batch at a time, and none while the device copy is made
  DeviceCopyHook<FwRouterTables> device_;
  uint64_t rebuilds_ = 0;
};

}  // namespace tandem::fwrouter
