#include "apps/fwrouter/fw_rule_control.h"

#include <exception>
#include <sstream>

#include "apps/acl/hypersplit.h"
#include "core/rcu.h"
#include "core/table_reader.h"

namespace tandem::fwrouter {

// A rule set made by a batch, and what the data path reads of it.
struct RuleControl::Built {
  acl::RuleSet rules;
  acl::HyperSplit tree;
  std::unique_ptr<FwRouterTables> tables;
};

RuleControl::RuleControl(const FwRouterTables& loaded, std::atomic<const FwRouterTables*>& current)
    : loaded_(loaded), current_(current) {
  current_.store(&loaded, std::memory_order_release);
}

RuleControl::~RuleControl() = default;

const acl::RuleSet& RuleControl::rules() const { return published_ ? published_->rules : *loaded_.rules; }

namespace {

// POS of `verb`'s line, 1..last; false with *why set when it is not a number in that range.
bool parse_position(const std::string& verb, const std::string& text, size_t last, size_t* pos, std::string* why) {
  if (last == 0) {
    *why = verb + ": there are no rules";
    return false;
  }
  uint64_t v = 0;
  if (!parse_decimal(text, RuleControl::kMaxRules + 1, &v) || v < 1 || v > last) {
    *why = verb + ": position '" + text + "': want a number from 1 to " + std::to_string(last);
    if (verb == "add") *why += " (" + std::to_string(last) + " appends)";
    return false;
  }
  *pos = static_cast<size_t>(v);
  return true;
}

}  // namespace

std::string RuleControl::run(const std::string& line, acl::RuleSet* set) {
  std::istringstream in(line);
  std::string verb, arg, extra;
  in >> verb >> arg;
  std::vector<acl::Rule>& rules = set->rules;
  std::string why;
  if (verb == "add") {
    std::string text;
    std::getline(in, text);
    size_t pos = 0;
    if (arg.empty()) return "add: missing POS RULE";
    if (!parse_position(verb, arg, rules.size() + 1, &pos, &why)) return why;
    if (text.find_first_not_of(" \t") == std::string::npos) return "add: missing RULE after the position";
    acl::Rule rule;
    if (!acl::parse_rule(text, &rule, &why)) return "add: " + why;
    if (rules.size() >= kMaxRules) return "add: already " + std::to_string(kMaxRules) + " rules, the most updates allow";
    rules.insert(rules.begin() + static_cast<std::ptrdiff_t>(pos - 1), rule);
    return "";
  }
  if (verb != "del" && verb != "default") {
    return "unknown command '" + verb + "' (add POS RULE | del POS | default accept|drop)";
  }
  if (in >> extra) return "unexpected '" + extra + "' at the end";
  if (verb == "default") {
    if (arg != "accept" && arg != "drop") return "default: want accept or drop, not '" + arg + "'";
    set->default_action = arg == "drop" ? acl::kDrop : acl::kAccept;
    return "";
  }
  size_t pos = 0;
  if (arg.empty()) return "del: missing POS";
  if (!parse_position(verb, arg, rules.size(), &pos, &why)) return why;
  rules.erase(rules.begin() + static_cast<std::ptrdiff_t>(pos - 1));
  return "";
}

void RuleControl::with_tables(const std::function<void(const FwRouterTables&, uint64_t)>& f) {
  std::lock_guard<std::mutex> lock(mu_);
  f(*current_.load(std::memory_order_acquire), version());
}

std::vector<std::string> RuleControl::apply(const std::vector<std::string>& lines) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> result(lines.size());
  auto next = std::make_unique<Built>();
  const acl::RuleSet& now = rules();
  next->rules.rules = now.rules;
  next->rules.default_action = now.default_action;
  next->rules.path = loaded_.rules->path;
  uint64_t applied = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    result[i] = run(lines[i], &next->rules);
    applied += result[i].empty();
  }
  if (applied == 0) return result;
  // The rebuild, off the data path: the workers go on with the published set meanwhile.
  try {
    next->tree = acl::HyperSplit::build(next->rules.rules);
    next->tables = std::make_unique<FwRouterTables>(next->rules, next->tree, *loaded_.table, *loaded_.fib);
  } catch (const std::exception& e) {
    for (std::string& r : result) {
      if (r.empty()) r = std::string("not applied: the batch's classifier could not be built (") + e.what() + ")";
    }
    return result;
  }
  const uint64_t v = next_version(applied);
  // The device copy first: a GPU batch never reads rules older than a packet saw on receipt.
  announce(v);
  if (const std::string why = device_.publish(*next->tables, v); !why.empty()) {
    for (std::string& r : result) {
      if (r.empty()) r = why;
    }
    return result;
  }
  ++rebuilds_;
  publish(v, [&] { current_.store(next->tables.get(), std::memory_order_seq_cst); });
  // Nobody reads the set replaced once every worker has passed a quiescent state: it is freed.
  wait_for_readers();
  published_ = std::move(next);
  return result;
}

}  // namespace tandem::fwrouter
