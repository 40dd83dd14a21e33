#include "apps/dpi/aho_corasick.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

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
  a.delta_.assign(C, kNone);
  std::vector<std::vector<uint32_t>> outs(1);
  for (uint32_t id = 1; id <= patterns.size(); ++id) {
    uint32_t s = 0;
    for (char ch : patterns[id - 1].bytes) {
      const uint32_t c = a.cls_[static_cast<uint8_t>(ch)];
      uint32_t& next = a.delta_[size_t{s} * C + c];
      if (next == kNone) {
        next = static_cast<uint32_t>(outs.size());
        outs.emplace_back();
        a.delta_.resize(a.delta_.size() + C, kNone);
      }
      s = a.delta_[size_t{s} * C + c];
    }
    outs[s].push_back(id);
  }
  const size_t n = outs.size();
  std::vector<uint32_t> fail(n, 0), order;
  order.reserve(n);
  a.dict_link_.assign(n, 0);
  // Breadth first: the failure of a child is where the parent's failure goes on the same class;
  // absent gotos become the failure state's transition (a full DFA).
  for (uint32_t c = 0; c < C; ++c) {
    uint32_t& t = a.delta_[c];
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
    a.dict_link_[s] = !outs[f].empty() ? f : a.dict_link_[f];
    for (uint32_t c = 0; c < C; ++c) {
      uint32_t& t = a.delta_[size_t{s} * C + c];
      const uint32_t via_fail = a.delta_[size_t{f} * C + c];
      if (t == kNone) {
        t = via_fail;
      } else {
        fail[t] = via_fail;
        order.push_back(t);
      }
    }
  }
  a.out_begin_.assign(n + 1, 0);
  for (size_t s = 0; s < n; ++s) a.out_begin_[s + 1] = a.out_begin_[s] + static_cast<uint32_t>(outs[s].size());
  a.out_.reserve(a.out_begin_[n]);
  for (auto& o : outs) a.out_.insert(a.out_.end(), o.begin(), o.end());
  a.has_output_.assign(n, 0);
  for (size_t s = 0; s < n; ++s) a.has_output_[s] = !outs[s].empty() || a.dict_link_[s] != 0;
  return a;
}

bool AhoCorasick::confirm(uint32_t id, const uint8_t* p, size_t end) const {
  const Pattern& pat = patterns_[id - 1];
  if (pat.nocase) return true;  // the automaton matched it case-folded, which is what nocase asks
  return std::memcmp(p + end - pat.bytes.size(), pat.bytes.data(), pat.bytes.size()) == 0;
}

void AhoCorasick::patterns_in(const uint8_t* p, size_t n, std::vector<uint32_t>* out) const {
  out->clear();
  scan(p, n, [out](uint32_t id, size_t) { out->push_back(id); });
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
}

void AhoCorasick::patterns_in_batch(const uint8_t* const* p, const uint32_t* len, size_t n,
                                    std::vector<std::vector<uint32_t>>* out, size_t batch, size_t group) const {
  out->resize(n);
  for (auto& v : *out) v.clear();
  if (batch == 0 || group == 0) throw std::invalid_argument("patterns_in_batch: batch and group must be > 0");
  constexpr size_t kMaxGroup = 64;
  group = std::min(group, kMaxGroup);
  std::vector<uint32_t> order;
  uint32_t st[kMaxGroup];
  for (size_t base = 0; base < n; base += batch) {
    const size_t b = std::min(batch, n - base);
    order.resize(b);
    for (size_t i = 0; i < b; ++i) order[i] = static_cast<uint32_t>(base + i);
    std::sort(order.begin(), order.end(), [len](uint32_t a, uint32_t c) { return len[a] < len[c]; });
    for (size_t g0 = 0; g0 < b; g0 += group) {
      const size_t g = std::min(group, b - g0);
      const uint32_t* idx = order.data() + g0;
      for (size_t j = 0; j < g; ++j) st[j] = 0;
      const uint32_t longest = len[idx[g - 1]];
      for (uint32_t k = 0; k < longest; ++k) {
        for (size_t j = 0; j < g; ++j) {
          const uint32_t i = idx[j];
          if (k >= len[i]) continue;
          const uint32_t s = delta_[size_t{st[j]} * classes_ + cls_[p[i][k]]];
          st[j] = s;
          if (has_output_[s]) {
            std::vector<uint32_t>& o = (*out)[i];
            auto add = [&o](uint32_t id, size_t) { o.push_back(id); };
            report(s, p[i], k + 1, add);
          }
        }
      }
    }
  }
  for (auto& v : *out) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
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
