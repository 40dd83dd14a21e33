#include "apps/ipsec/sa_table.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "core/flow_hash.h"
#include "core/table_reader.h"

namespace tandem::ipsec {

bool SaIndex::Pair::operator==(const Pair& o) const {
  return family == o.family && std::memcmp(src, o.src, 16) == 0 && std::memcmp(dst, o.dst, 16) == 0;
}

size_t SaIndex::PairHash::operator()(const Pair& p) const {
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

bool SaIndex::host_pair(const Sa& sa, Pair* p) {
  const uint32_t host = sa.sel_src.addr.family == 4 ? 32 : 128;
  if (sa.sel_src.len != host || sa.sel_dst.len != host) return false;
  p->family = sa.sel_src.addr.family;
  std::memcpy(p->src, sa.sel_src.addr.bytes.data(), 16);
  std::memcpy(p->dst, sa.sel_dst.addr.bytes.data(), 16);
  return true;
}

namespace {
// Inserts r into v, kept sorted by rank.
template <class R>
void insert_ranked(std::vector<R>& v, R r) {
  v.insert(std::upper_bound(v.begin(), v.end(), r, [](const R& a, const R& b) { return a.rank < b.rank; }), r);
}
}  // namespace

void SaIndex::link(const SaTable& t, uint32_t i) {
  const Sa& sa = t.sa(i);
  if (sa.dir == SaDir::kIn) {
    by_spi_.emplace(sa.spi, i);
    return;
  }
  const Ranked r{t.rank(i), i};
  Pair p;
  if (!host_pair(sa, &p)) {
    insert_ranked(prefixed_, r);
    return;
  }
  const auto [it, fresh] = exact_.emplace(p, r);
  if (fresh) return;
  // The earlier SA of the pair is the one found; the other waits for it to go.
  Ranked later = r;
  if (r.rank < it->second.rank) std::swap(later, it->second);
  insert_ranked(shadowed_[p], later);
}

void SaIndex::unlink(const SaTable& t, uint32_t i) {
  const Sa& sa = t.sa(i);
  if (sa.dir == SaDir::kIn) {
    by_spi_.erase(sa.spi);
    return;
  }
  const auto is_i = [i](const Ranked& r) { return r.slot == i; };
  Pair p;
  if (!host_pair(sa, &p)) {
    prefixed_.erase(std::find_if(prefixed_.begin(), prefixed_.end(), is_i));
    return;
  }
  const auto w = shadowed_.find(p);
  if (const auto it = exact_.find(p); it->second.slot == i) {
    if (w == shadowed_.end()) {
      exact_.erase(it);
      return;
    }
    it->second = w->second.front();
    w->second.erase(w->second.begin());
  } else {
    w->second.erase(std::find_if(w->second.begin(), w->second.end(), is_i));
  }
  if (w->second.empty()) shadowed_.erase(w);
}

bool SaIndex::operator==(const SaIndex& o) const {
  return by_spi_ == o.by_spi_ && exact_ == o.exact_ && prefixed_ == o.prefixed_ && shadowed_ == o.shadowed_;
}

SaTable::SaTable(SaFile file, uint32_t room) : path_(std::move(file.path)) {
  const size_t n = file.sas.size();
  const size_t cap = n + room;
  sas_.resize(cap);
  tunnels_.resize(cap);
  rank_.assign(cap, kFree);
  seq_ = std::make_unique<SeqCounter[]>(cap);
  windows_ = std::make_unique<Window[]>(cap);
  for (size_t i = cap; i > n; --i) free_.push_back(static_cast<uint32_t>(i - 1));
  AeadKeys aead;
  for (uint32_t i = 0; i < n; ++i) {
    fill(i, std::move(file.sas[i]), next_rank_++);
    const Sa& sa = sas_[i];
    if (const uint32_t first = aead.find(*this, sa); first != kNoSa) {
      const std::string msg = path_ + ":" + std::to_string(sa.line) + ": outbound SA spi " + std::to_string(sa.spi) +
                              " has the key of line " + std::to_string(sas_[first].line) +
                              ": the sequence numbers are the IVs, which must not repeat under one key";
      for (Sa& s : sas_) wipe_keys(&s);  // the destructor does not run
      for (Sa& s : file.sas) wipe_keys(&s);
      throw TableError(msg);
    }
    aead.insert(sa, i);
    built_.link(*this, i);
  }
  used_ = n;
}

SaTable::~SaTable() {
  for (Sa& sa : sas_) wipe_keys(&sa);
}

void SaTable::fill(uint32_t i, Sa sa, uint64_t rank) {
  EspTunnel& t = tunnels_[i];
  t = EspTunnel{};
  t.spi = sa.spi;
  t.outer_family = sa.src.family;
  std::memcpy(t.src, sa.src.bytes.data(), 16);
  std::memcpy(t.dst, sa.dst.bytes.data(), 16);
  t.shape = esp_shape(sa.cipher);
  seq_[i].next.store(1, std::memory_order_relaxed);
  windows_[i].w.reset();
  windows_[i].lock.clear();
  if (sa.dir == SaDir::kIn) {
    if (sa.replay_window != 0) windows_[i].w = std::make_unique<ReplayWindow>(sa.replay_window, sa.esn);
    inbound_.fetch_add(1, std::memory_order_relaxed);
  } else {
    outbound_.fetch_add(1, std::memory_order_relaxed);
  }
  sas_[i] = std::move(sa);
  rank_[i] = rank;
}

uint32_t SaTable::occupy(Sa sa) {
  if (free_.empty()) {
    wipe_keys(&sa);
    return kNoSa;
  }
  const uint32_t i = free_.back();
  free_.pop_back();
  fill(i, std::move(sa), next_rank_++);
  if (i >= used_.load(std::memory_order_relaxed)) used_.store(i + 1, std::memory_order_relaxed);
  return i;
}

void SaTable::release(uint32_t i) {
  Sa& sa = sas_[i];
  (sa.dir == SaDir::kIn ? inbound_ : outbound_).fetch_sub(1, std::memory_order_relaxed);
  wipe_keys(&sa);
  sa = Sa{};
  tunnels_[i] = EspTunnel{};
  windows_[i].w.reset();
  rank_[i] = kFree;
  free_.push_back(i);
}

uint32_t SaTable::select(const FiveTuple& t) const {
  const SaIndex& x = index();
  SaIndex::Ranked best;
  if (!x.exact_.empty()) {
    SaIndex::Pair p;
    p.family = t.ip_version;
    std::memcpy(p.src, t.src, 16);
    std::memcpy(p.dst, t.dst, 16);
    if (const auto it = x.exact_.find(p); it != x.exact_.end()) best = it->second;
  }
  for (const SaIndex::Ranked& r : x.prefixed_) {
    if (r.rank > best.rank) break;
    if (selector_holds(sas_[r.slot], t)) return r.slot;
  }
  return best.slot;
}

uint32_t SaTable::find_inbound(uint32_t spi) const {
  const SaIndex& x = index();
  const auto it = x.by_spi_.find(spi);
  return it == x.by_spi_.end() ? kNoSa : it->second;
}

bool SaTable::next_seq(uint32_t i, uint64_t* seq) {
  const uint64_t limit = sas_[i].esn ? UINT64_MAX : UINT32_MAX;
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
  if (!w.w) return seq == 0 && !sas_[i].esn ? kTooOld : DropReason::kNone;
  Guard g(w.lock);
  return reason(w.w->check(seq));
}

DropReason SaTable::infer_and_check(uint32_t i, uint32_t low, uint64_t* seq) {
  Window& w = windows_[i];
  if (!w.w) {
    *seq = low;
    return low == 0 && !sas_[i].esn ? kTooOld : DropReason::kNone;
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

uint64_t AeadKeys::hash(const Sa& sa) {
  uint64_t h = mix64(0x243f6a8885a308d3ULL ^ sa.key.size());
  for (const std::vector<uint8_t>* v : {&sa.key, &sa.salt}) {
    for (uint8_t b : *v) h = mix64(h ^ b);
  }
  return h;
}

uint32_t AeadKeys::find(const SaTable& t, const Sa& sa) const {
  if (!applies(sa)) return kNoSa;
  const auto [lo, hi] = slots_.equal_range(hash(sa));
  for (auto it = lo; it != hi; ++it) {
    const Sa& o = t.sa(it->second);
    if (o.key.size() == sa.key.size() && o.salt.size() == sa.salt.size() &&
        CRYPTO_memcmp(o.key.data(), sa.key.data(), sa.key.size()) == 0 &&
        CRYPTO_memcmp(o.salt.data(), sa.salt.data(), sa.salt.size()) == 0) {
      return it->second;
    }
  }
  return kNoSa;
}

void AeadKeys::insert(const Sa& sa, uint32_t slot) {
  if (applies(sa)) slots_.emplace(hash(sa), slot);
}

void AeadKeys::erase(const Sa& sa, uint32_t slot) {
  if (!applies(sa)) return;
  const auto [lo, hi] = slots_.equal_range(hash(sa));
  for (auto it = lo; it != hi; ++it) {
    if (it->second == slot) {
      slots_.erase(it);
      return;
    }
  }
}

}  // namespace tandem::ipsec
