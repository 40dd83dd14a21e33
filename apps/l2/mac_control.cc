#include "apps/l2/mac_control.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "core/rcu.h"
#include "core/table_reader.h"
#include "gpu/table_updates.h"

namespace tandem::l2 {

MacControl::MacControl(MacTable& live, std::atomic<const MacTable*>& current)
    : second_(live.clone()), current_(current) {
  copies_[0] = &live;
  copies_[1] = second_.get();
  current_.store(&live, std::memory_order_release);
}

MacControl::~MacControl() = default;

bool MacControl::parse(const std::string& line, Op* op, std::string* why) {
  std::istringstream in(line);
  std::string verb, mac, port, extra;
  in >> verb >> mac;
  if (verb == "add") {
    op->add = true;
    in >> port;
  } else if (verb != "del") {
    *why = "unknown command '" + verb + "' (add MAC PORT | del MAC)";
    return false;
  }
  if (in >> extra) {
    *why = "unexpected '" + extra + "' at the end";
    return false;
  }
  if (mac.empty()) {
    *why = verb + ": missing MAC";
    return false;
  }
  // The address itself stays out of the message: the reply answers this line.
  if (!parse_mac(mac, &op->mac)) {
    *why = verb + ": bad MAC address (expected aa:bb:cc:dd:ee:ff)";
    return false;
  }
  if (mac_is_group(op->mac)) {
    *why = verb + ": a group (multicast/broadcast) MAC is never a table entry: it is always flooded";
    return false;
  }
  if (op->add) {
    uint64_t v = 0;
    if (port.empty() || !parse_decimal(port, kMaxPort, &v)) {
      *why = "add: port '" + port + "': want a number from 0 to " + std::to_string(kMaxPort);
      return false;
    }
    op->port = static_cast<uint32_t>(v);
  }
  return true;
}

std::string MacControl::run(MacTable& t, const Op& op) {
  if (!op.add) return t.erase(op.mac) ? "" : "no such MAC";
  switch (t.insert(op.mac, op.port)) {
    case MacTable::Status::kInserted:
    case MacTable::Status::kUpdated:
      return "";
    case MacTable::Status::kFull:
      return "table full: no free slot within a bounded cuckoo path (" + std::to_string(t.size()) + " entries in " +
             std::to_string(t.slot_count()) + " slots)";
    case MacTable::Status::kBadMac:
    case MacTable::Status::kBadPort:
      break;  // parse() refused both
  }
  return "entry refused by the table";
}

std::vector<std::string> MacControl::apply(const std::vector<std::string>& lines) {
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
  MacTable& standby = *copies_[1 - active_];
  MacTable& old = *copies_[active_];
  uint64_t applied = 0;
  written_.clear();
  // Room for every slot the batch may write (a cuckoo path moves up to kMaxPathLength entries), so
  // that store() never allocates while a path is being applied.
  written_.reserve(ops.size() * (MacTable::kMaxPathLength + 1));
  if (device_) standby.set_change_log(&written_);
  for (size_t k = 0; k < ops.size(); ++k) {
    result[line_of[k]] = run(standby, ops[k]);
    applied += result[line_of[k]].empty();
  }
  standby.set_change_log(nullptr);
  // Lines that failed (table full, no such MAC) left the standby copy as it was.
  if (applied == 0) return result;
  const uint64_t next = next_version(applied);
  publish(next, [&] {
    // The device copy's blocks are committed before the host copy is published, so a batch
    // launched after a packet was classified reads a version at least as new as the one the
    // packet saw.
    if (device_) stage_device_blocks(standby, next);
    current_.store(&standby, std::memory_order_seq_cst);
  });
  // Nobody reads `old` once every worker has passed a quiescent state: it takes the batch too,
  // with the same outcome line by line, as it held the same slots.
  wait_for_readers();
  for (const Op& op : ops) run(old, op);
  active_ = 1 - active_;
  return result;
}

void MacControl::with_table(const std::function<void(const MacTable&, uint64_t)>& f) {
  std::lock_guard<std::mutex> lock(mu_);
  f(*current_.load(std::memory_order_acquire), version());
}

void MacControl::set_device_copy(std::shared_ptr<gpu::DeviceTableUpdates> updates, uint64_t* slots) {
  device_ = std::move(updates);
  device_slots_ = slots;
}

// Whole 1 KiB blocks (128 slots, 16 buckets; the last one shorter in a table of fewer slots) of
// `t`, the copy being published, around every slot the batch wrote.
void MacControl::stage_device_blocks(const MacTable& t, uint64_t version) {
  constexpr uint64_t kBlock = 128;
  std::sort(written_.begin(), written_.end());
  uint64_t last = ~uint64_t{0};
  for (uint64_t i : written_) {
    const uint64_t b = i / kBlock;
    if (b == last) continue;
    last = b;
    const uint64_t n = std::min<uint64_t>(kBlock, t.slot_count() - b * kBlock);
    device_->stage(device_slots_ + b * kBlock, t.slots() + b * kBlock, n * sizeof(uint64_t));
  }
  device_->commit(version);
}

bool MacControl::copies_equal() const {
  const MacTable& a = *copies_[0];
  const MacTable& b = *copies_[1];
  return a.size() == b.size() && a.bucket_count() == b.bucket_count() &&
         std::memcmp(a.slots(), b.slots(), a.memory_bytes()) == 0;
}

}  // namespace tandem::l2
