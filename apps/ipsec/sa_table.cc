#include "apps/ipsec/sa_table.h"

#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "core/flow_hash.h"
#include "core/table_reader.h"

namespace tandem::ipsec {

bool SaTable::Pair::operator==(const Pair& o) const {
  return family == o.family && std::memcmp(src, o.src, 16) == 0 && std::memcmp(dst, o.dst, 16) == 0;
}

size_t SaTable::PairHash::operator()(const Pair& p) const {
  uint64_t h = mix64(0x9e3779b97f4a7c15ULL ^ p.family);
  for (int i = 0; i < 16; i += 8) h = mix64(h ^ load_le64(p.src + i) ^ (load_le64(p.dst + i) * 0xff51afd7ed558ccdULL));
  return static_cast<size_t>(h);
}

bool selector_holds(const Sa& sa, const FiveTuple& t) {
  IpAddr src, dst;
  src.family = dst.family = t.ip_version;
  std::memcpy(src.bytes.data(), t.src, 16);
  std::memcpy(dst.bytes.data(), t.dst, 16);
  return sa.sel_src.contains(src) && sa.sel_dst.contains(dst);
}

SaTable::SaTable(SaFile file) : file_(std::move(file)) {
  const size_t n = file_.sas.size();
  tunnels_.resize(n);
  seq_ = std::make_unique<SeqCounter[]>(n);
  windows_ = std::make_unique<Window[]>(n);
  // An AEAD key and salt -> the first outbound SA with it.
  std::map<std::vector<uint8_t>, const Sa*> aead_keys;
  for (uint32_t i = 0; i < n; ++i) {
    const Sa& sa = file_.sas[i];
    EspTunnel& t = tunnels_[i];
    t.spi = sa.spi;
    t.outer_family = sa.src.family;
    std::memcpy(t.src, sa.src.bytes.data(), 16);
    std::memcpy(t.dst, sa.dst.bytes.data(), 16);
    t.shape = esp_shape(sa.cipher);
    if (sa.dir == SaDir::kIn) {
      by_spi_.emplace(sa.spi, i);
      if (sa.replay_window != 0) windows_[i].w = std::make_unique<ReplayWindow>(sa.replay_window, sa.esn);
      continue;
    }
    ++outbound_;
    if (sa.cipher != Cipher::kAes128Cbc) {
      std::vector<uint8_t> k = sa.key;
      k.insert(k.end(), sa.salt.begin(), sa.salt.end());
      const auto [it, fresh] = aead_keys.emplace(std::move(k), &sa);
      if (!fresh) {
        throw TableError(file_.path + ":" + std::to_string(sa.line) + ": outbound SA spi " + std::to_string(sa.spi) +
                         " has the key of line " + std::to_string(it->second->line) +
                         ": the sequence numbers are the IVs, which must not repeat under one key");
      }
    }
    const uint32_t host = sa.sel_src.addr.family == 4 ? 32 : 128;
    if (sa.sel_src.len == host && sa.sel_dst.len == host) {
      Pair p;
      p.family = sa.sel_src.addr.family;
      std::memcpy(p.src, sa.sel_src.addr.bytes.data(), 16);
      std::memcpy(p.dst, sa.sel_dst.addr.bytes.data(), 16);
      exact_.emplace(p, i);  // an earlier SA of the same pair keeps it
    } else {
      prefixed_.push_back(i);
    }
  }
}

uint32_t SaTable::select(const FiveTuple& t) const {
  uint32_t best = kNoSa;
  if (!exact_.empty()) {
    Pair p;
    p.family = t.ip_version;
    std::memcpy(p.src, t.src, 16);
    std::memcpy(p.dst, t.dst, 16);
    if (const auto it = exact_.find(p); it != exact_.end()) best = it->second;
  }
  for (const uint32_t i : prefixed_) {
    if (i > best) break;
    if (selector_holds(file_.sas[i], t)) return i;
  }
  return best;
}

uint32_t SaTable::find_inbound(uint32_t spi) const {
  const auto it = by_spi_.find(spi);
  return it == by_spi_.end() ? kNoSa : it->second;
}

bool SaTable::next_seq(uint32_t i, uint64_t* seq) {
  const uint64_t limit = file_.sas[i].esn ? UINT64_MAX : UINT32_MAX;
  uint64_t cur = seq_[i].next.load(std::memory_order_relaxed);
  do {
    if (cur == 0 || cur > limit) return false;  // 0: the 64-bit counter wrapped
  } while (!seq_[i].next.compare_exchange_weak(cur, cur + 1, std::memory_order_relaxed));
  *seq = cur;
  return true;
}

uint64_t SaTable::infer_seq(uint32_t i, uint32_t low) {
  Window& w = windows_[i];
  if (!w.w) return low;  // without a window there is no position to infer the high half from
  Guard g(w.lock);
  return w.w->infer(low);
}

void SaTable::set_replay_top(uint32_t i, uint64_t top) {
  Window& w = windows_[i];
  if (!w.w) return;
  Guard g(w.lock);
  w.w->restart_at(top);
}

DropReason SaTable::replay_check(uint32_t i, uint64_t seq) {
  Window& w = windows_[i];
  if (!w.w) return seq == 0 && !file_.sas[i].esn ? kTooOld : DropReason::kNone;
  Guard g(w.lock);
  return reason(w.w->check(seq));
}

DropReason SaTable::infer_and_check(uint32_t i, uint32_t low, uint64_t* seq) {
  Window& w = windows_[i];
  if (!w.w) {
    *seq = low;
    return low == 0 && !file_.sas[i].esn ? kTooOld : DropReason::kNone;
  }
  Guard g(w.lock);
  *seq = w.w->infer(low);
  return reason(w.w->check(*seq));
}

DropReason SaTable::replay_accept(uint32_t i, uint64_t seq) {
  Window& w = windows_[i];
  if (!w.w) return DropReason::kNone;
  Guard g(w.lock);
  const DropReason r = reason(w.w->check(seq));
  if (r == DropReason::kNone) w.w->update(seq);
  return r;
}

}  // namespace tandem::ipsec
