#include "apps/dpi/dpi_tables.h"

#include <map>
#include <stdexcept>

namespace tandem::dpi {

uint32_t action_bit(const std::string& a) {
  static const std::map<std::string, uint32_t> kBits = {
      {"alert", kActAlert},    {"log", kActAlert},        {"drop", kActDrop},       {"sdrop", kActDrop},
      {"reject", kActDrop},    {"rejectsrc", kActDrop},   {"rejectdst", kActDrop},  {"rejectboth", kActDrop},
      {"pass", kActPass}};
  const auto it = kBits.find(a);
  return it == kBits.end() ? 0 : it->second;
}

namespace {

// The protocol keywords that name one IP protocol: their class (other IP) would admit any.
uint8_t exact_proto(const std::string& p) {
  if (p == "icmp") return 1;
  if (p == "icmpv6") return 58;
  return 0;
}

std::string where(const IdsRule& r) {
  return r.file + ":" + std::to_string(r.line) + " (sid " + std::to_string(r.sid) + ")";
}

}  // namespace

DpiTables::DpiTables(IdsRuleSet rules, Stage1 stage1) : set_(std::move(rules)) {
  engine_ = std::make_unique<DpiEngine>(set_, stage1);
  const AhoCorasick& ac = engine_->all_patterns();
  std::vector<std::vector<uint32_t>> trig(set_.patterns.size() + 1);
  auto add_ports = [this](const PortSet& s) {
    FlatPortSet f{};
    f.begin = static_cast<uint32_t>(ranges_.size());
    f.any = s.any;
    for (const auto& [lo, hi] : s.include) ranges_.push_back({lo, hi});
    for (const auto& [lo, hi] : s.exclude) ranges_.push_back({lo, hi});
    f.includes = static_cast<uint16_t>(s.include.size());
    f.excludes = static_cast<uint16_t>(s.exclude.size());
    if (s.include.size() > UINT16_MAX || s.exclude.size() > UINT16_MAX) throw std::invalid_argument("port list too long");
    port_sets_.push_back(f);
    return static_cast<uint32_t>(port_sets_.size() - 1);
  };
  for (uint32_t i = 0; i < set_.rules.size(); ++i) {
    const IdsRule& r = set_.rules[i];
    const uint32_t act = action_bit(r.action);
    if (act == 0) {
      throw std::invalid_argument(where(r) + ": action `" + r.action +
                                  "` (alert, log, drop, sdrop, reject, rejectsrc, rejectdst, rejectboth or pass)");
    }
    actions_.push_back(act);
    if (r.contents.empty()) continue;  // DpiEngine never matches such a rule (pcre-only, ...)
    if (r.contents.size() > kMaxRuleContents) {
      throw std::invalid_argument(where(r) + ": " + std::to_string(r.contents.size()) + " contents, over the " +
                                  std::to_string(kMaxRuleContents) + " a rule may have");
    }
    FlatRule fr{};
    fr.index = i;
    fr.first_content = static_cast<uint32_t>(contents_.size());
    fr.contents = static_cast<uint32_t>(r.contents.size());
    fr.classes = static_cast<uint8_t>(protocol_classes(r.proto));
    fr.exact_proto = exact_proto(r.proto);
    fr.bidirectional = r.bidirectional;
    fr.action = static_cast<uint8_t>(act);
    fr.src_ports = add_ports(r.src_ports);
    fr.dst_ports = add_ports(r.dst_ports);
    uint32_t trigger = 0;  // the longest positive content's pattern
    size_t trigger_len = 0;
    fr.first_need = static_cast<uint32_t>(need_ids_.size());
    for (const Content& c : r.contents) {
      FlatContent fc{};
      fc.begin = static_cast<uint32_t>(bytes_.size());
      fc.len = static_cast<uint32_t>(c.bytes.size());
      fc.offset = c.offset;
      fc.depth = c.depth;
      fc.distance = c.distance;
      fc.within = c.within;
      fc.nocase = c.nocase;
      fc.negated = c.negated;
      bytes_.insert(bytes_.end(), c.bytes.begin(), c.bytes.end());
      contents_.push_back(fc);
      if (c.negated) continue;
      if (c.bytes.size() > trigger_len) {
        trigger = c.pattern;
        trigger_len = c.bytes.size();
      }
      bool listed = false;
      for (uint32_t q = fr.first_need; q < need_ids_.size(); ++q) listed |= need_ids_[q] == c.pattern;
      if (!listed) need_ids_.push_back(c.pattern);
    }
    fr.needs = static_cast<uint32_t>(need_ids_.size()) - fr.first_need;
    const uint32_t index = static_cast<uint32_t>(rules_.size());
    rules_.push_back(fr);
    if (trigger == 0) {
      always_.push_back(index);
    } else {
      trig[trigger].push_back(index);
    }
  }
  trigger_begin_.push_back(0);
  for (const auto& t : trig) {
    triggers_.insert(triggers_.end(), t.begin(), t.end());
    trigger_begin_.push_back(static_cast<uint32_t>(triggers_.size()));
  }
  // Every array gets at least one element, so that a device copy of an empty one is valid; an
  // empty `always` holds one index no rule has (flat_match skips it).
  if (always_.empty()) always_.push_back(UINT32_MAX);
  if (rules_.empty()) rules_.push_back(FlatRule{});
  if (contents_.empty()) contents_.push_back(FlatContent{});
  if (bytes_.empty()) bytes_.push_back(0);
  if (port_sets_.empty()) port_sets_.push_back(FlatPortSet{});
  if (ranges_.empty()) ranges_.push_back(FlatRange{});
  if (triggers_.empty()) triggers_.push_back(0);
  if (need_ids_.empty()) need_ids_.push_back(0);

  DpiProgram& p = program_;
  p.ac = ac.view();
  p.ac_delta_entries = ac.delta_entries();
  p.ac_rep_begin_entries = ac.report_begin().size();
  p.ac_rep_entries = ac.reports().size();
  p.ac_pattern_entries = ac.pattern_records().size();
  p.ac_pattern_bytes = ac.pattern_bytes().size();
  p.rules = rules_.data();
  p.rule_count = rules_.size();
  p.contents = contents_.data();
  p.content_count = contents_.size();
  p.bytes = bytes_.data();
  p.byte_count = bytes_.size();
  p.port_sets = port_sets_.data();
  p.port_set_count = port_sets_.size();
  p.ranges = ranges_.data();
  p.range_count = ranges_.size();
  p.trigger_begin = trigger_begin_.data();
  p.trigger_begin_count = trigger_begin_.size();
  p.triggers = triggers_.data();
  p.trigger_count = triggers_.size();
  p.always = always_.data();
  p.always_count = always_.size();
  p.need_ids = need_ids_.data();
  p.need_count = need_ids_.size();
}

DpiTables::~DpiTables() = default;

size_t DpiTables::program_bytes() const {
  return engine_->all_patterns().memory_bytes() + rules_.size() * sizeof(FlatRule) +
         contents_.size() * sizeof(FlatContent) + bytes_.size() + port_sets_.size() * sizeof(FlatPortSet) +
         ranges_.size() * sizeof(FlatRange) + (trigger_begin_.size() + triggers_.size() + always_.size() + need_ids_.size()) * 4;
}

}  // namespace tandem::dpi
