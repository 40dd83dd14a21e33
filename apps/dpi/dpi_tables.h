// The dpi app's tables: the rule set, DpiEngine over it (the CPU paths), and the flat program
// (dpi_program.h) the GPU paths and single frames run, built from the same rules and automaton.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "apps/dpi/dpi_match.h"
#include "apps/dpi/dpi_program.h"
#include "apps/dpi/ids_rules.h"

namespace tandem::dpi {

// The action bit of a rule's action keyword; 0 for one Tandem does not know.
uint32_t action_bit(const std::string& action);

class DpiTables {
 public:
  // Takes the rules; the CPU paths' stage 1 is `stage1`. Throws std::invalid_argument naming the
  // rule (file:line, sid) for an action it does not know or more than kMaxRuleContents contents,
  // std::runtime_error where Hyperscan is asked for and not built or cannot compile the patterns.
  explicit DpiTables(IdsRuleSet rules, Stage1 stage1 = Stage1::kAhoCorasick);
  ~DpiTables();
  DpiTables(const DpiTables&) = delete;
  DpiTables& operator=(const DpiTables&) = delete;

  const IdsRuleSet& rules() const { return set_; }
  const DpiEngine& engine() const { return *engine_; }
  // The program over host arrays (valid while this lives).
  const DpiProgram& program() const { return program_; }
  // A rule's action bit (kAct*), by index into rules().rules.
  uint32_t action(uint32_t rule) const { return actions_[rule]; }
  // The action bits of a list of rule indices.
  uint32_t action_bits(const std::vector<uint32_t>& rules) const {
    uint32_t b = 0;
    for (uint32_t r : rules) b |= actions_[r];
    return b;
  }
  size_t program_bytes() const;

 private:
  IdsRuleSet set_;
  std::unique_ptr<DpiEngine> engine_;
  std::vector<uint32_t> actions_;
  std::vector<FlatRule> rules_;
  std::vector<FlatContent> contents_;
  std::vector<uint8_t> bytes_;
  std::vector<FlatPortSet> port_sets_;
  std::vector<FlatRange> ranges_;
  std::vector<uint32_t> trigger_begin_, triggers_, always_, need_ids_;
  DpiProgram program_{};
};

}  // namespace tandem::dpi
