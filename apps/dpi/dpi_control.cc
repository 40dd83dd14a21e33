#include "apps/dpi/dpi_control.h"

#include <climits>
#include <map>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "apps/dpi/dpi_program.h"
#include "core/rcu.h"

namespace tandem::dpi {

namespace {

// The first word of a line and the rest after it.
std::string_view first_word(std::string_view line, std::string_view* rest) {
  const size_t b = std::min(line.find_first_not_of(" \t"), line.size());
  const size_t e = std::min(line.find_first_of(" \t", b), line.size());
  *rest = line.substr(e);
  return line.substr(b, e - b);
}

std::string_view trimmed(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// A sid as rules write it: a decimal integer from 1 to 2^31 - 1.
bool parse_sid(std::string_view s, uint32_t* sid) {
  if (s.empty() || s.size() > 10) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v == 0 || v > INT32_MAX) return false;
  *sid = static_cast<uint32_t>(v);
  return true;
}

struct Op {
  bool add = false;
  IdsRule rule;  // add
  uint32_t sid = 0;
  std::map<std::string, uint64_t> ignored;  // options of the rule that are counted, not applied
  uint64_t unknown_vars = 0;
};

bool parse(const std::string& line, Op* op, std::string* why) {
  std::string_view rest;
  const std::string_view verb = first_word(line, &rest);
  if (verb == "add") {
    op->add = true;
    const std::string text(trimmed(rest));
    if (!parse_ids_rule(text, &op->rule, why, &op->ignored, &op->unknown_vars)) {
      *why = "add: " + *why;
      return false;
    }
    if (text.back() != ')') {
      *why = "add: text after the rule's option list";
      return false;
    }
    if (action_bit(op->rule.action) == 0) {
      *why = "add: action `" + op->rule.action +
             "` (alert, log, drop, sdrop, reject, rejectsrc, rejectdst, rejectboth or pass)";
      return false;
    }
    if (op->rule.contents.size() > kMaxRuleContents) {
      *why = "add: " + std::to_string(op->rule.contents.size()) + " contents, over the " +
             std::to_string(kMaxRuleContents) + " a rule may have";
      return false;
    }
    op->rule.file = "ctl";
    op->sid = op->rule.sid;
    return true;
  }
  if (verb != "del") {
    *why = "unknown command '" + std::string(verb.substr(0, 32)) + "' (add RULE | del SID)";
    return false;
  }
  const std::string_view sid = first_word(rest, &rest);
  if (sid.empty()) {
    *why = "del: missing SID";
    return false;
  }
  if (!parse_sid(sid, &op->sid)) {
    *why = "del: bad sid '" + std::string(sid.substr(0, 32)) + "' (an integer 1.." + std::to_string(INT32_MAX) + ")";
    return false;
  }
  if (!trimmed(rest).empty()) {
    *why = "del: unexpected words after the sid";
    return false;
  }
  return true;
}

}  // namespace

RuleControl::RuleControl(const DpiTables& loaded, std::atomic<const DpiTables*>& current)
    : current_(current), live_(&loaded) {
  current_.store(live_, std::memory_order_release);
}

RuleControl::~RuleControl() = default;

void RuleControl::with_tables(const std::function<void(const DpiTables&, uint64_t)>& f) {
  std::lock_guard<std::mutex> lock(mu_);
  f(*live_, version());
}

std::vector<std::string> RuleControl::apply(const std::vector<std::string>& lines) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> result(lines.size());
  std::vector<Op> ops;
  std::vector<size_t> line_of;
  for (size_t i = 0; i < lines.size(); ++i) {
    Op op;
    if (parse(lines[i], &op, &result[i])) {
      ops.push_back(std::move(op));
      line_of.push_back(i);
    }
  }
  if (ops.empty()) return result;

  // The rules as the batch leaves them: those of the published tables, less the deleted ones
  // (marked, then dropped at once), then the added ones in order.
  IdsRuleSet next = live_->rules();
  std::vector<char> alive(next.rules.size(), 1);
  std::unordered_map<uint32_t, std::vector<size_t>> at;  // sid -> its rules there now
  for (size_t i = 0; i < next.rules.size(); ++i) at[next.rules[i].sid].push_back(i);
  std::vector<size_t> applied;
  for (size_t k = 0; k < ops.size(); ++k) {
    Op& op = ops[k];
    std::vector<size_t>& there = at[op.sid];
    std::string& why = result[line_of[k]];
    if (op.add) {
      if (!there.empty()) {
        why = "add: sid " + std::to_string(op.sid) + " is there already";
        continue;
      }
      there.push_back(next.rules.size());
      next.rules.push_back(std::move(op.rule));
      alive.push_back(1);
      for (const auto& [name, n] : op.ignored) next.ignored_options[name] += n;
      next.unknown_port_variables += op.unknown_vars;
    } else {
      if (there.empty()) {
        why = "del: no rule with sid " + std::to_string(op.sid);
        continue;
      }
      for (const size_t r : there) alive[r] = 0;
      there.clear();
    }
    applied.push_back(line_of[k]);
  }
  if (applied.empty()) return result;
  size_t kept = 0;
  for (size_t i = 0; i < next.rules.size(); ++i) {
    if (!alive[i]) continue;
    if (kept != i) next.rules[kept] = std::move(next.rules[i]);
    ++kept;
  }
  next.rules.resize(kept);
  number_patterns(&next);

  std::unique_ptr<DpiTables> built;
  try {
    built = std::make_unique<DpiTables>(std::move(next), live_->engine().stage1());
  } catch (const std::exception& e) {
    // Each line was checked on its own; what is left is the whole set not fitting the tables.
    for (const size_t i : applied) result[i] = std::string("not applied: the batch's rules do not build: ") + e.what();
    return result;
  }
  const uint64_t v = next_version(applied.size());
  // The device copy first: a GPU batch never runs a program older than a packet saw on receipt.
  announce(v);
  if (const std::string why = device_.publish(*built, v); !why.empty()) {
    for (const size_t i : applied) result[i] = why;
    return result;
  }
  publish(v, [&] { current_.store(built.get(), std::memory_order_seq_cst); });
  std::unique_ptr<DpiTables> old = std::move(owned_);
  owned_ = std::move(built);
  live_ = owned_.get();
  ++builds_;
  // The tables replaced are freed once no worker can be reading them.
  wait_for_readers();
  old.reset();
  return result;
}

}  // namespace tandem::dpi
