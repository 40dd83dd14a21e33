#include "apps/ipsec/sa_control.h"

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "core/rcu.h"

namespace tandem::ipsec {

namespace {

const char* dir_name(SaDir d) { return d == SaDir::kIn ? "inbound" : "outbound"; }

// The first word of a line and the rest after it.
std::string_view first_word(std::string_view line, std::string_view* rest) {
  const size_t b = std::min(line.find_first_not_of(" \t"), line.size());
  const size_t e = std::min(line.find_first_of(" \t", b), line.size());
  *rest = line.substr(e);
  return line.substr(b, e - b);
}

// A word quoted in a message only when it cannot be key material typed in the wrong place.
std::string quoted(std::string_view w) {
  const bool wordlike = !w.empty() && w.size() <= 24 &&
                        w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_") ==
                            std::string_view::npos;
  return wordlike ? " '" + std::string(w) + "'" : "";
}

}  // namespace

SaControl::SaControl(SaTable& table, std::function<void(uint32_t)> forget)
    : table_(table), forget_(std::move(forget)), second_(std::make_unique<SaIndex>(table.built_index())) {
  copies_[0] = &table.built_index();
  copies_[1] = second_.get();
  table_.current_index().store(copies_[0], std::memory_order_release);
  for (uint32_t i = 0; i < table_.size(); ++i) {
    if (!table_.occupied(i)) continue;
    const Sa& sa = table_.sa(i);
    slot_of_.emplace(id(sa.dir, sa.spi), i);
    aead_.insert(sa, i);
  }
}

SaControl::~SaControl() = default;

bool SaControl::parse(const std::string& line, Op* op, std::string* why) {
  std::string_view rest;
  const std::string_view verb = first_word(line, &rest);
  if (verb == "add") {
    op->add = true;
    if (!parse_sa_line(sa_line_text(rest), &op->sa, why)) {
      *why = "add: " + *why;
      return false;
    }
    return true;
  }
  if (verb != "del") {
    *why = "unknown command" + quoted(verb) + " (add SA-LINE | del in|out SPI)";
    return false;
  }
  std::string_view spi;
  const std::string_view dir = first_word(rest, &rest);
  spi = first_word(rest, &rest);
  if (dir == "in") {
    op->dir = SaDir::kIn;
  } else if (dir == "out") {
    op->dir = SaDir::kOut;
  } else {
    *why = dir.empty() ? "del: missing direction (del in|out SPI)" : "del: direction must be in or out";
    return false;
  }
  if (spi.empty()) {
    *why = "del: missing SPI (del in|out SPI)";
    return false;
  }
  if (!parse_sa_spi(spi, &op->spi, why)) {
    *why = "del: " + *why;
    return false;
  }
  if (rest.find_first_not_of(" \t") != std::string_view::npos) {
    *why = "del: unexpected words after the SPI";
    return false;
  }
  return true;
}

std::string SaControl::run(SaIndex& index, Op& op, uint32_t* slot) {
  const SaDir dir = op.add ? op.sa.dir : op.dir;
  const uint32_t spi = op.add ? op.sa.spi : op.spi;
  const auto it = slot_of_.find(id(dir, spi));
  if (!op.add) {
    if (it == slot_of_.end()) return "del: no " + std::string(dir_name(dir)) + " SA with spi " + std::to_string(spi);
    *slot = it->second;
    aead_.erase(table_.sa(*slot), *slot);
    slot_of_.erase(it);
    index.unlink(table_, *slot);
    return "";
  }
  if (it != slot_of_.end()) {
    return "add: an " + std::string(dir_name(dir)) + " SA with spi " + std::to_string(spi) + " is there already";
  }
  if (const uint32_t other = aead_.find(table_, op.sa); other != kNoSa) {
    return "add: outbound SA spi " + std::to_string(spi) + " has the key of outbound SA spi " +
           std::to_string(table_.sa(other).spi) + ": the sequence numbers are the IVs, which must not repeat under one key";
  }
  *slot = table_.occupy(std::move(op.sa));
  if (*slot == kNoSa) {
    return "add: spi " + std::to_string(spi) + ": no free slot (" + std::to_string(table_.capacity()) +
           " in all, --sa-room sets how many beyond the file's; a deleted SA's slot is free from the next batch on)";
  }
  slot_of_.emplace(id(dir, spi), *slot);
  aead_.insert(table_.sa(*slot), *slot);
  index.link(table_, *slot);
  return "";
}

void SaControl::undo(SaIndex& index, const std::vector<std::pair<bool, uint32_t>>& done) {
  for (auto it = done.rbegin(); it != done.rend(); ++it) {
    const auto [link, slot] = *it;
    const Sa& sa = table_.sa(slot);
    if (link) {
      index.unlink(table_, slot);
      slot_of_.erase(id(sa.dir, sa.spi));
      aead_.erase(sa, slot);
      table_.release(slot);  // never published: no reader holds it
    } else {
      index.link(table_, slot);
      slot_of_.emplace(id(sa.dir, sa.spi), slot);
      aead_.insert(sa, slot);
    }
  }
}

std::vector<uint32_t> SaControl::linked() const {
  std::vector<uint32_t> v;
  v.reserve(slot_of_.size());
  for (const auto& [key, slot] : slot_of_) v.push_back(slot);
  std::sort(v.begin(), v.end());
  return v;
}

void SaControl::connect_device(SaDeviceCopy* device,
                               const std::function<void(const std::vector<uint32_t>& linked)>& start) {
  std::lock_guard<std::mutex> hold(mu_);
  if (device && device_) throw std::logic_error("SaControl: a device copy is connected already");
  if (device && start) start(linked());
  device_ = device;
}

std::vector<std::string> SaControl::apply(const std::vector<std::string>& lines) {
  std::lock_guard<std::mutex> hold(mu_);
  std::vector<std::string> result(lines.size());
  SaIndex& standby = *copies_[1 - active_];
  SaIndex& old = *copies_[active_];
  // The index operations the standby copy took, in order (true: link), for the other copy.
  std::vector<std::pair<bool, uint32_t>> done;
  std::vector<uint32_t> removed;
  for (size_t i = 0; i < lines.size(); ++i) {
    Op op;
    if (parse(lines[i], &op, &result[i])) {
      uint32_t slot = kNoSa;
      result[i] = run(standby, op, &slot);
      if (result[i].empty()) {
        done.emplace_back(op.add, slot);
        if (!op.add) removed.push_back(slot);
      }
    }
    wipe_keys(&op.sa);  // a refused add's keys (an accepted one's moved into the table)
  }
  if (done.empty()) return result;
  const uint64_t next = next_version(done.size());
  if (device_) {
    // The GPU's batches read the new index before the host's lookups do: announced first.
    announce(next);
    std::vector<uint32_t> added;
    for (const auto& [link, slot] : done) {
      if (link) added.push_back(slot);
    }
    const std::string why = device_->publish(linked(), added, device_stats_);
    if (!why.empty()) {
      undo(standby, done);
      announce(version());  // nothing of `next` is read anywhere: publishing() comes back down
      for (std::string& r : result) {
        if (r.empty()) r = why;
      }
      return result;
    }
  }
  publish(next, [&] { table_.current_index().store(&standby, std::memory_order_seq_cst); });
  // Nobody reads `old` once every worker has passed a quiescent state: it takes the batch too, and
  // no worker holds a removed SA's slot any more.
  wait_for_readers();
  for (const auto& [link, slot] : done) {
    if (link) {
      old.link(table_, slot);
    } else {
      old.unlink(table_, slot);
    }
  }
  active_ = 1 - active_;
  for (const uint32_t slot : removed) {
    forget_(slot);
    if (device_) device_->forget(slot);
    table_.release(slot);
  }
  return result;
}

}  // namespace tandem::ipsec
