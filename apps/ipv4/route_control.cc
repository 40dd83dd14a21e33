#include "apps/ipv4/route_control.h"

#include <sstream>

#include "apps/ipv4/fib_load_impl.h"
#include "apps/ipv4/ipv4_table.h"
#include "core/rcu.h"

namespace tandem::ipv4 {

RouteControl::RouteControl(Dir24_8& live, const Fib& fib, std::atomic<const Dir24_8*>& current)
    : second_(build_dir24_8(fib)), current_(current) {
  copies_[0] = &live;
  copies_[1] = second_.get();
  current_.store(&live, std::memory_order_release);
}

RouteControl::~RouteControl() = default;

bool RouteControl::parse(const std::string& line, Op* op, std::string* why) {
  std::istringstream in(line);
  std::string verb, prefix, nh, extra;
  in >> verb >> prefix;
  if (verb == "add") {
    op->add = true;
    in >> nh;
  } else if (verb != "del") {
    *why = "unknown command '" + verb + "' (add PREFIX/LEN NEXTHOP | del PREFIX/LEN)";
    return false;
  }
  if (in >> extra) {
    *why = "unexpected '" + extra + "' at the end";
    return false;
  }
  if (prefix.empty()) {
    *why = verb + ": missing PREFIX/LEN";
    return false;
  }
  if (!fib_detail::parse_prefix(prefix.data(), prefix.data() + prefix.size(), parse_ipv4_addr, "IPv4", 32u,
                                &op->prefix, &op->len, why)) {
    *why = prefix + ": " + *why;
    return false;
  }
  op->prefix &= depth_mask(op->len);
  if (op->add) {
    uint64_t v = 0;
    if (nh.empty() || !parse_decimal(nh, Verdict::kMaxPort, &v)) {
      *why = "add: next hop '" + nh + "': want a number from 0 to " + std::to_string(Verdict::kMaxPort);
      return false;
    }
    op->next_hop = static_cast<uint32_t>(v);
  }
  return true;
}

std::string RouteControl::run(Dir24_8& t, const Op& op) {
  const Dir24_8::Status s = op.add ? t.add(op.prefix, op.len, op.next_hop) : t.remove(op.prefix, op.len);
  if (s == Dir24_8::Status::kOk) return "";
  if (s == Dir24_8::Status::kNotFound) return "no such route";
  return Dir24_8::status_name(s);
}

std::vector<std::string> RouteControl::apply(const std::vector<std::string>& lines) {
  std::vector<std::string> result(lines.size());
  std::vector<Op> ops;
  std::vector<size_t> line_of;
  for (size_t i = 0; i < lines.size(); ++i) {
    Op op;
    if (parse(lines[i], &op, &result[i])) {
      ops.push_back(op);
      line_of.push_back(i);
    }
  }
  if (ops.empty()) return result;
  Dir24_8& standby = *copies_[1 - active_];
  Dir24_8& old = *copies_[active_];
  uint64_t applied = 0;
  for (size_t k = 0; k < ops.size(); ++k) {
    result[line_of[k]] = run(standby, ops[k]);
    applied += result[line_of[k]].empty();
  }
  if (applied == 0) return result;
  const uint64_t next = version_.load(std::memory_order_relaxed) + applied;
  publishing_.store(next, std::memory_order_seq_cst);
  current_.store(&standby, std::memory_order_seq_cst);
  version_.store(next, std::memory_order_release);
  // Nobody reads `old` once every worker has passed a quiescent state: it takes the batch too.
  if (rcu_) rcu_->synchronize();
  for (const Op& op : ops) run(old, op);
  active_ = 1 - active_;
  return result;
}

}  // namespace tandem::ipv4
