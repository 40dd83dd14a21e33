// Live rule updates for the dpi app (apps/table_control.h):
//   add RULE    one rule in the syntax the app loads (ids_rules.h), e.g.
//               add alert tcp any any -> any 80 (msg:"x"; content:"evil"; nocase; sid:9000001;)
//   del SID     removes the rules with that sid (a loaded rule set may have a sid twice)
// To change a rule, delete it and add it again (both lines may go in one batch).
//
// The tables (the rules, the port groups' Aho-Corasick automata, the flat program) are never
// changed in place: a batch builds new tables from the rules as the batch leaves them, once for the
// whole batch, on the control thread, and publishes them with an atomic pointer store; the tables
// they replace are freed once every worker has passed a quiescent state (core/rcu.h). A lookup
// thus runs on the tables before or after a batch, never in between, and a batch costs one build
// (about as long as loading the rule set: the control server applies the lines that arrive
// together, up to a few thousand, as one batch) and, while it runs, the memory of a second set
// of tables.
//
// On the GPU's offload path (dpi_item_gpu.h), each batch's program is also uploaded whole to the
// device, in buffers of its own, before the tables are published on the host; the runners take it
// between batches (gpu::DeviceTableVersions), so a GPU batch too runs one program whole, at least
// the one each of its packets saw on receipt. A batch whose device copy cannot be made (device
// memory) is not applied.
//
// Refused lines (a refused line changes nothing and does not stop the rest of the batch): a rule
// that does not parse, text after its option list, an action the app does not know, more contents
// than a rule may have, a sid there already (add), a sid that is not there (del), a malformed sid.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "apps/dpi/dpi_tables.h"
#include "apps/table_control.h"

namespace tandem::dpi {

class RuleControl final : public PublishingControl {
 public:
  // `loaded`: the tables the app was made over (they outlive it); `current`: the tables lookups
  // read, pointed at `loaded` here.
  RuleControl(const DpiTables& loaded, std::atomic<const DpiTables*>& current);
  ~RuleControl() override;

  std::string syntax() const override { return "add RULE (a Snort/Suricata rule) | del SID"; }
  std::vector<std::string> apply(const std::vector<std::string>& lines) override;
  // The tables published last (this thread's view; tests).
  const DpiTables& tables() const { return *live_; }
  // Tables built so far: one per batch that changed something.
  uint64_t builds() const { return builds_; }

  // The GPU's device copy: each batch's tables go there before they are published.
  DeviceCopyHook<DpiTables>& device_hook() { return device_; }
  bool reaches_gpu_offload() const override { return true; }
  const gpu::DeviceTableUpdates* device_copy() const override { return device_.updates(); }
  // Calls f(the tables published last, their version) with no batch being applied (the device
  // copy is made so).
  void with_tables(const std::function<void(const DpiTables&, uint64_t version)>& f);

 private:
  std::atomic<const DpiTables*>& current_;
  const DpiTables* live_;
  std::unique_ptr<DpiTables> owned_;  // live_, once a batch has built it
  std::mutex mu_;  // one batch at a time, and none while the device copy is made
  DeviceCopyHook<DpiTables> device_;
  uint64_t builds_ = 0;
};

}  // namespace tandem::dpi
