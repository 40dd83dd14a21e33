#include "apps/dpi/aho_corasick.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "apps/dpi/id_set.h"

namespace tandem::dpi {

namespace {

uint8_t lower(uint8_t c) { return c >= 'A' && c <= 'Z' ? static_cast<uint8_t>(c + 32) : c; }

}  // namespace

AhoCorasick AhoCorasick::build(const std::vector<Pattern>& patterns) {
  AhoCorasick a;
  a.patterns_ = patterns;
  // Input classes: one per distinct (lowercased) pattern byte; class 0 for every other byte.
  bool used[256] = {};
  for (const Pattern& p : patterns) {
    for (char ch : p.bytes) used[lower(static_cast<uint8_t>(ch))] = true;
  }
  uint8_t cls_of_folded[256] = {};
  uint32_t k = 1;
  for (int b = 0; b < 256; ++b) {
    if (used[b]) cls_of_folded[b] = static_cast<uint8_t>(k++);
  }
  if (k > 256) throw std::logic_error("aho-corasick: more than 255 input classes");
  a.classes_ = k;
  for (int b = 0; b < 256; ++b) a.cls_[b] = cls_of_folded[lower(static_cast<uint8_t>(b))];
  const uint32_t C = a.classes_;
  // The trie: goto in delta_ (kNone where absent), outputs per state.
  constexpr uint32_t kNone = 0xFFFFFFFFu;
  std::vector<uint32_t> delta;
  delta.assign(C, kNone);
  std::vector<std::vector<uint32_t>> outs(1);
  for (uint32_t id = 1; id <= patterns.size(); ++id) {
    uint32_t s = 0;
    for (char ch : patterns[id - 1].bytes) {
      const uint32_t c = a.cls_[static_cast<uint8_t>(ch)];
      uint32_t& next = delta[size_t{s} * C + c];
      if (next == kNone) {
        next = static_cast<uint32_t>(outs.size());
        outs.emplace_back();
        delta.resize(delta.size() + C, kNone);
      }
      s = delta[size_t{s} * C + c];
    }
    outs[s].push_back(id);
  }
  const size_t n = outs.size();
  std::vector<uint32_t> fail(n, 0), order;
  order.reserve(n);
  std::vector<uint32_t> dict_link(n, 0);  // the next state with outputs along the failure chain, 0: none
  // Breadth first: the failure of a child is where the parent's failure goes on the same class;
  // absent gotos become the failure state's transition (a full DFA).
  for (uint32_t c = 0; c < C; ++c) {
    uint32_t& t = delta[c];
    if (t == kNone) {
      t = 0;
    } else {
      fail[t] = 0;
      order.push_back(t);
    }
  }
  for (size_t q = 0; q < order.size(); ++q) {
    const uint32_t s = order[q];
    const uint32_t f = fail[s];
    dict_link[s] = !outs[f].empty() ? f : dict_link[f];
    for (uint32_t c = 0; c < C; ++c) {
      uint32_t& t = delta[size_t{s} * C + c];
      const uint32_t via_fail = delta[size_t{f} * C + c];
      if (t == kNone) {
        t = via_fail;
      } else {
        fail[t] = via_fail;
        order.push_back(t);
      }
    }
  }
  // Each state's reports: its outputs, then those of the states its dictionary-suffix chain visits
  // (the chain is walked here, once, instead of at every report).
  a.rep_begin_.assign(n + 1, 0);
  for (size_t s = 0; s < n; ++s) {
    size_t count = 0;
    for (uint32_t t = static_cast<uint32_t>(s);; t = dict_link[t]) {
      count += outs[t].size();
      if (dict_link[t] == 0) break;
    }
    if (a.rep_begin_[s] + count > 0xFFFFFFFFu) throw std::length_error("aho-corasick: over 2^32 reported ids");
    a.rep_begin_[s + 1] = a.rep_begin_[s] + static_cast<uint32_t>(count);
    a.max_reports_ = std::max(a.max_reports_, static_cast<uint32_t>(count));
  }
  a.rep_.reserve(a.rep_begin_[n] + kAcRepPad);
  for (size_t s = 0; s < n; ++s) {
    for (uint32_t t = static_cast<uint32_t>(s);; t = dict_link[t]) {
      a.rep_.insert(a.rep_.end(), outs[t].begin(), outs[t].end());
      if (dict_link[t] == 0) break;
    }
  }
  a.rep_.insert(a.rep_.end(), kAcRepPad, 0);
  // Entries become row offsets with the "reports" bit (ac_core.h).
  if (n * size_t{C} > kAcRowMask) throw std::length_error("aho-corasick: the DFA has over 2^31 entries");
  std::vector<uint32_t> entry(n);
  for (size_t s = 0; s < n; ++s) {
    entry[s] = static_cast<uint32_t>(s * C) | (a.rep_begin_[s + 1] != a.rep_begin_[s] ? kAcOutput : 0);
  }
  for (uint32_t& t : delta) t = entry[t];
  a.delta_entries_ = delta.size();
  if (delta.size() * sizeof(uint32_t) >= (size_t{8} << 20)) {
    a.delta_ = HugeRegion(delta.size() * sizeof(uint32_t));
    std::memcpy(a.delta_.data(), delta.data(), delta.size() * sizeof(uint32_t));
  } else {
    a.delta_small_ = std::move(delta);
  }
  a.pats_.push_back(AcPattern{});  // id 0: no pattern (the padding's ids)
  for (size_t k = 0; k < patterns.size(); ++k) {
    const std::string& b = patterns[k].bytes;
    if (b.empty() || b.size() > 0xFFFF) throw std::length_error("aho-corasick: a pattern of 0 or over 65535 bytes");
    AcPattern r{};
    r.begin = static_cast<uint32_t>(a.pat_bytes_.size());
    r.len = static_cast<uint16_t>(b.size());
    r.nocase = patterns[k].nocase ? 1 : 0;
    const size_t m = std::min<size_t>(b.size(), 8);
    for (size_t i = 0; i < m; ++i) r.tail |= static_cast<uint64_t>(static_cast<uint8_t>(b[b.size() - m + i])) << (8 * i);
    a.pats_.push_back(r);
    a.pat_bytes_.insert(a.pat_bytes_.end(), b.begin(), b.end());
  }
  a.make_view();
  return a;
}

AhoCorasick& AhoCorasick::operator=(AhoCorasick&& o) noexcept {
  std::memcpy(cls_, o.cls_, sizeof cls_);
  classes_ = o.classes_;
  delta_ = std::move(o.delta_);
  delta_small_ = std::move(o.delta_small_);
  delta_entries_ = o.delta_entries_;
  rep_begin_ = std::move(o.rep_begin_);
  rep_ = std::move(o.rep_);
  o.rep_begin_.assign(1, 0);  // the moved-from automaton: no states, reports nothing
  max_reports_ = o.max_reports_;
  pats_ = std::move(o.pats_);
  pat_bytes_ = std::move(o.pat_bytes_);
  patterns_ = std::move(o.patterns_);
  make_view();
  o.make_view();
  return *this;
}

void AhoCorasick::make_view() {
  const auto* delta = delta_.data() ? static_cast<const uint32_t*>(delta_.data()) : delta_small_.data();
  view_ = AcView{delta,       cls_, rep_begin_.data(), rep_.data(), pats_.data(), pat_bytes_.data(),
                 classes_, ac_row_magic(classes_)};
}

namespace {

// Per-thread id sets, one per payload walked at once (kMaxGroup in the batched walk); each is
// empty between calls. Should an exception leave one part-filled, the guard empties them all.
constexpr size_t kMaxGroup = 64;
thread_local IdSets t_sets;

struct IdSetsGuard {
  bool done = false;
  ~IdSetsGuard() {
    if (!done) t_sets.clear();
  }
};

}  // namespace

void AhoCorasick::patterns_in(const uint8_t* p, size_t n, std::vector<uint32_t>* out) const {
  out->clear();
  IdSets& sets = t_sets;
  sets.reserve(1, patterns_.size());
  IdSetsGuard guard;
  auto seen = [&sets](uint32_t id) { return sets.contains(0, id); };
  auto add = [&sets](uint32_t id) { sets.insert(0, id); };
  const AcView& v = view_;
  uint32_t x = 0;
  for (size_t i = 0; i < n; ++i) {
    x = ac_step(v, x, p[i]);
    if (x & kAcOutput) ac_report(v, x, p, static_cast<uint32_t>(i + 1), seen, add);
  }
  sets.drain(0, out);
  guard.done = true;
}

namespace {

// A step of the lockstep walk whose entry reports: resolved after the walk of a stretch of bytes,
// so that the walk's loop stays a tight run of independent table reads (no call, no branch). Eight
// bytes, written by one store at every step (kept only when the entry reports): with 12 the
// stores cost a third of the walk.
struct Pending {
  uint32_t entry;
  uint32_t at;  // (end - from) << 6 | j: the match ends at byte end - 1 of the group's payload j
};
static_assert(kMaxGroup <= 64, "Pending::at keeps the slot in 6 bits");

constexpr uint32_t kStretch = 64;  // bytes walked between two resolutions of the pending steps

// Walks bytes [from, to) of the group's payloads (all at least `to` long) in lockstep. G is the
// group size when known at compile time, 0 for a run-time size g. The loops over the group are
// unrolled (GCC leaves a 16-step body rolled at -O3), so that the states stay in registers.
template <size_t G>
size_t walk_lockstep(const AcView& v, const uint8_t* const* q, uint32_t* x, size_t g, uint32_t from, uint32_t to,
                     Pending* pend) {
  constexpr size_t kG = G ? G : kMaxGroup;
  const size_t n = G ? G : g;
  uint32_t s[kG];
#pragma GCC unroll 64
  for (size_t j = 0; j < n; ++j) s[j] = x[j];
  size_t np = 0;
  for (uint32_t k = from; k < to; ++k) {
    const uint32_t at = (k + 1 - from) << 6;
#pragma GCC unroll 64
    for (size_t j = 0; j < n; ++j) {
      const uint32_t e = ac_step(v, s[j], q[j][k]);
      s[j] = e;
      pend[np] = Pending{e, at | static_cast<uint32_t>(j)};
      np += e >> 31;
    }
  }
#pragma GCC unroll 64
  for (size_t j = 0; j < n; ++j) x[j] = s[j];
  return np;
}

}  // namespace

void AhoCorasick::patterns_in_batch(const uint8_t* const* p, const uint32_t* len, size_t n, std::vector<uint32_t>* out,
                                    size_t batch, size_t group) const {
  for (size_t i = 0; i < n; ++i) out[i].clear();
  if (batch == 0 || group == 0) throw std::invalid_argument("patterns_in_batch: batch and group must be > 0");
  group = std::min(group, kMaxGroup);
  IdSets& sets = t_sets;
  sets.reserve(group, patterns_.size());
  IdSetsGuard guard;
  const AcView& v = view_;
  // Scratch per thread, grown to fit and never cleared (every entry is written before it is read):
  // the dpi app calls this per burst and group, a few payloads at a time, where allocating and
  // zeroing them each call cost more than the walk.
  thread_local std::vector<uint32_t> order;
  thread_local std::vector<Pending> pend;
  if (pend.size() < kStretch * kMaxGroup + 1) pend.resize(kStretch * kMaxGroup + 1);
  uint32_t x[kMaxGroup];
  const uint8_t* q[kMaxGroup];
  std::vector<uint32_t>* o[kMaxGroup];
  // Reports are resolved in passes over a chunk of pending steps, each pass a run of independent
  // loads and branch-free filters (group prefetching, as the walk itself does for the table): the
  // states' report ranges; their ids, kept where the payload has not reported them yet; those
  // ids' confirmation (one word compare for most); the survivors. Resolved one by one, each report
  // is a chain of dependent loads and unpredictable branches (a third of the ids seen already,
  // half of the confirmations failing) that costs more than walking the bytes around it.
  constexpr size_t kChunk = 128;
  uint32_t rb[kChunk], re[kChunk];
  struct Candidate {
    uint32_t id;
    uint32_t i;  // the pending step, in the chunk
  };
  thread_local std::vector<Candidate> cand, head;
  if (const size_t need = kChunk * std::max<size_t>(max_reports_, kAcRepPad) + kAcRepPad; cand.size() < need) {
    cand.resize(need);
    head.resize(need);
  }
  auto resolve = [&](size_t np, uint32_t from) {
    for (size_t c0 = 0; c0 < np; c0 += kChunk) {
      const size_t c = std::min(kChunk, np - c0);
      Pending* r = pend.data() + c0;
      for (size_t i = 0; i < c; ++i) {
        const uint32_t st = ac_state(v, r[i].entry);
        r[i].entry = st;
        prefetch_read(&v.rep_begin[st]);
      }
      for (size_t i = 0; i < c; ++i) {
        rb[i] = v.rep_begin[r[i].entry];
        re[i] = v.rep_begin[r[i].entry + 1];
        prefetch_read(&v.rep[rb[i]]);
      }
      // A range's first kAcRepPad ids are taken with a fixed, unrolled loop (the padding makes the
      // reads safe; ids past the range are dropped), so the loop's exit is not a branch to
      // mispredict at every report: most ranges hold one or two ids. Four cost match-free traffic
      // more than they saved (build VM: 2.10 against 1.92 ns/byte).
      size_t nc = 0;
      for (size_t i = 0; i < c; ++i) {
        const size_t j = r[i].at & 63;
        const uint32_t* ids = v.rep + rb[i];
        const uint32_t m = re[i] - rb[i];
#pragma GCC unroll 2
        for (uint32_t t = 0; t < kAcRepPad; ++t) {
          const uint32_t id = ids[t];
          prefetch_read(&v.pats[id]);  // for the confirmation pass
          cand[nc] = Candidate{id, static_cast<uint32_t>(i)};
          nc += (t < m) & !sets.contains(j, id);
        }
        for (uint32_t t = kAcRepPad; t < m; ++t) {
          const uint32_t id = ids[t];
          prefetch_read(&v.pats[id]);
          cand[nc] = Candidate{id, static_cast<uint32_t>(i)};
          nc += !sets.contains(j, id);
        }
      }
      // Confirmation: nocase ids need none; a case-sensitive one's last (up to) 8 bytes are one word
      // compare. Those longer than 8 bytes whose tail matched compare the rest in a last pass, after
      // a prefetch of their bytes (pat_bytes is read nowhere else, so it is seldom cached).
      size_t nk = 0, nh = 0;
      for (size_t u = 0; u < nc; ++u) {
        const Candidate cd = cand[u];
        const uint32_t at = r[cd.i].at, end = from + (at >> 6);
        const AcPattern& a = v.pats[cd.id];
        const bool tail = ac_tail(q[at & 63], end, a.len < 8 ? a.len : 8) == a.tail;
        const bool cased = a.nocase == 0, longer = a.len > 8;
        head[nh] = cd;
        nh += tail & cased & longer;
        prefetch_read(v.pat_bytes + a.begin);
        cand[nk] = cd;
        nk += !cased | (tail & !longer);
      }
      for (size_t u = 0; u < nk; ++u) sets.insert(r[cand[u].i].at & 63, cand[u].id);
      for (size_t u = 0; u < nh; ++u) {
        const Candidate cd = head[u];
        const uint32_t at = r[cd.i].at;
        if (ac_confirm_head(v, v.pats[cd.id], q[at & 63], from + (at >> 6))) sets.insert(at & 63, cd.id);
      }
    }
  };
  for (size_t base = 0; base < n; base += batch) {
    const size_t b = std::min(batch, n - base);
    order.resize(b);
    for (size_t i = 0; i < b; ++i) order[i] = static_cast<uint32_t>(base + i);
    std::sort(order.begin(), order.end(), [len](uint32_t a, uint32_t c) { return len[a] < len[c]; });
    for (size_t g0 = 0; g0 < b; g0 += group) {
      const size_t g = std::min(group, b - g0);
      const uint32_t* idx = order.data() + g0;
      for (size_t j = 0; j < g; ++j) {
        x[j] = 0;
        q[j] = p[idx[j]];
        o[j] = &out[idx[j]];
      }
      // Sorted by length: every payload of the group has at least the first one's bytes, so the
      // common part needs no bounds checks; the tails follow, one payload at a time.
      const uint32_t shortest = len[idx[0]];
      for (uint32_t k = 0; k < shortest; k += kStretch) {
        const uint32_t to = std::min(shortest, k + kStretch);
        size_t np;
        switch (g) {
          case 8: np = walk_lockstep<8>(v, q, x, g, k, to, pend.data()); break;
          case 16: np = walk_lockstep<16>(v, q, x, g, k, to, pend.data()); break;
          case 32: np = walk_lockstep<32>(v, q, x, g, k, to, pend.data()); break;
          default: np = walk_lockstep<0>(v, q, x, g, k, to, pend.data()); break;
        }
        resolve(np, k);
      }
      for (size_t j = 0; j < g; ++j) {
        auto seen = [&sets, j](uint32_t id) { return sets.contains(j, id); };
        auto add = [&sets, j](uint32_t id) { sets.insert(j, id); };
        uint32_t e = x[j];
        for (uint32_t k = shortest; k < len[idx[j]]; ++k) {
          e = ac_step(v, e, q[j][k]);
          if (e & kAcOutput) ac_report(v, e, q[j], k + 1, seen, add);
        }
        sets.drain(j, o[j]);
      }
    }
  }
  guard.done = true;
}

std::vector<uint32_t> naive_patterns_in(const std::vector<Pattern>& patterns, const uint8_t* p, size_t n) {
  std::vector<uint32_t> ids;
  std::string folded(reinterpret_cast<const char*>(p), n);
  for (char& ch : folded) ch = static_cast<char>(lower(static_cast<uint8_t>(ch)));
  const std::string raw(reinterpret_cast<const char*>(p), n);
  for (uint32_t id = 1; id <= patterns.size(); ++id) {
    const Pattern& pat = patterns[id - 1];
    if (pat.nocase) {
      std::string fp = pat.bytes;
      for (char& ch : fp) ch = static_cast<char>(lower(static_cast<uint8_t>(ch)));
      if (folded.find(fp) != std::string::npos) ids.push_back(id);
    } else if (raw.find(pat.bytes) != std::string::npos) {
      ids.push_back(id);
    }
  }
  return ids;
}

}  // namespace tandem::dpi
