#include "apps/ipv4/route_control.h"

#include <set>
#include <sstream>

#include "apps/ipv4/fib_load_impl.h"
#include "apps/ipv4/ipv4_table.h"
#include "core/rcu.h"
#include "gpu/table_updates.h"

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

void RouteControl::with_table(const std::function<void(const Dir24_8&, uint64_t)>& f) {
  std::lock_guard<std::mutex> lock(mu_);
  f(*current_.load(std::memory_order_acquire), version());
}

void RouteControl::set_device_copy(std::shared_ptr<gpu::DeviceTableUpdates> updates, uint32_t* tbl24, uint32_t* tbl8) {
  device_ = std::move(updates);
  device_tbl24_ = tbl24;
  device_tbl8_ = tbl8;
}

// What an operation can change: the tbl24 entries its prefix covers (one for a prefix longer than
// /24) and the tbl8 groups those entries point to afterwards (a group freed by the batch is read
// by no entry and needs no copy). Whole 1 KiB blocks of `t`, the copy being published, are staged.
void RouteControl::stage_device_blocks(const Dir24_8& t, const std::vector<const Op*>& ops, uint64_t version) {
  constexpr uint32_t kBlock = Dir24_8::kTbl8GroupEntries;  // entries per 1 KiB block
  std::set<uint32_t> tbl24_blocks, groups;
  for (const Op* o : ops) {
    const Op& op = *o;
    const uint32_t lo = dir24_8_tbl24_index(op.prefix);
    const uint32_t hi = op.len <= 24 ? lo + (1u << (24 - op.len)) : lo + 1;
    for (uint32_t b = lo / kBlock; b <= (hi - 1) / kBlock; ++b) tbl24_blocks.insert(b);
    for (uint32_t i = lo; i < hi; ++i) {
      const uint32_t e = t.tbl24()[i];
      if (Dir24_8Entry::ext(e)) groups.insert(Dir24_8Entry::value(e));
    }
  }
  for (uint32_t b : tbl24_blocks) {
    device_->stage(device_tbl24_ + size_t{b} * kBlock, t.tbl24() + size_t{b} * kBlock, kBlock * sizeof(uint32_t));
  }
  for (uint32_t g : groups) {
    device_->stage(device_tbl8_ + size_t{g} * kBlock, t.tbl8() + size_t{g} * kBlock, kBlock * sizeof(uint32_t));
  }
  device_->commit(version);
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
  std::lock_guard<std::mutex> lock(mu_);
  Dir24_8& standby = *copies_[1 - active_];
  Dir24_8& old = *copies_[active_];
  uint64_t applied = 0;
  for (size_t k = 0; k < ops.size(); ++k) {
    result[line_of[k]] = run(standby, ops[k]);
    applied += result[line_of[k]].empty();
  }
  if (applied == 0) return result;
  const uint64_t next = next_version(applied);
  publish(next, [&] {
    // The device copy's blocks are committed before the host copy is published, so a batch
    // launched after a packet was classified reads a version at least as new as the one the
    // packet saw.
    if (device_) {
      std::vector<const Op*> done;  // a refused operation changed nothing
      for (size_t k = 0; k < ops.size(); ++k) {
        if (result[line_of[k]].empty()) done.push_back(&ops[k]);
      }
      stage_device_blocks(standby, done, next);
    }
    current_.store(&standby, std::memory_order_seq_cst);
  });
  // Nobody reads `old` once every worker has passed a quiescent state: it takes the batch too.
  wait_for_readers();
  for (const Op& op : ops) run(old, op);
  active_ = 1 - active_;
  return result;
}

}  // namespace tandem::ipv4
