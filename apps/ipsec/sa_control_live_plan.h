// Test support for live SA updates under traffic (sa_control_live_test.cc on the CPU's workers,
// esp_resident_control_test.cc on the GPU's resident path): a plan of SA batches made before the
// run (SAs that stay, channels whose SAs come and go), the record of each frame from its receipt
// to its transmission, and the check of every frame against the SA sets it could have seen (those
// published between its receipt and its transmission).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "apps/ipsec/ipsec_app.h"
#include "apps/ipsec/sa_control_test_util.h"

namespace tandem::ipsec::sa_test {

constexpr uint32_t kStay = 16;     // SA pairs there all along
constexpr uint32_t kChannels = 24; // selectors (outbound) and peers (inbound) whose SAs come and go
constexpr Cipher kCiphers[] = {Cipher::kAes128Cbc, Cipher::kAes128Gcm, Cipher::kAes256Gcm, Cipher::kChacha20Poly1305};

// Churned outbound channel m's selector and an address pair inside it: a host pair for even m, a
// pair of prefixes for odd m (disjoint from each other and from the staying SAs' pairs).
inline std::pair<IpPrefix, IpPrefix> channel_selector(uint32_t m) {
  if (m % 2 == 0) return {prefix(0x0A010000 + m, 32), prefix(0xAC110000 + m, 32)};
  return {prefix(0x0A010000 + (m << 8), 24), prefix(0xAC110000, 16)};
}
inline std::pair<uint32_t, uint32_t> channel_addresses(uint32_t m, uint32_t r) {
  if (m % 2 == 0) return {0x0A010000 + m, 0xAC110000 + m};
  return {0x0A010000 + (m << 8) + (r & 0xFF), 0xAC110000 + (r >> 8 & 0xFFFF)};
}

// One SA of a churned channel, from the batch that adds it to the batch that deletes it.
struct Incarnation {
  Sa sa;
  uint32_t channel = 0;
  size_t added = 0;            // boundary index from which it is there
  size_t removed = SIZE_MAX;   // boundary index from which it is not
  bool there(size_t b) const { return added <= b && b < removed; }
};

// The whole update plan, made before the run: batches of lines, the SAs each adds, and the
// version after each batch (boundary[b + 1]; boundary[0] = 0).
struct Plan {
  std::vector<Sa> stay_out, stay_in;
  std::vector<Incarnation> incarnations;
  std::vector<std::vector<uint32_t>> of_out_channel, of_in_channel;  // incarnations, in order
  std::vector<std::vector<std::string>> batches;
  std::vector<uint64_t> boundary{0};
  std::map<uint32_t, const Sa*> outbound_by_spi;
  // The boundary index of a published version.
  size_t index_of(uint64_t v) const { return std::lower_bound(boundary.begin(), boundary.end(), v) - boundary.begin(); }
};

inline Plan make_plan(uint32_t updates, uint64_t seed) {
  Plan p;
  std::mt19937_64 rng(seed);
  for (uint32_t k = 0; k < kStay; ++k) {
    p.stay_out.push_back(make_sa(SaDir::kOut, 0x10000 + k, kCiphers[k % 4], rng, prefix(0x0A000001 + k, 32),
                                 prefix(0xAC100001 + k, 32)));
    p.stay_in.push_back(make_sa(SaDir::kIn, 0x20000 + k, kCiphers[(k + 1) % 4], rng));
  }
  p.of_out_channel.resize(kChannels);
  p.of_in_channel.resize(kChannels);
  std::vector<int64_t> live_out(kChannels, -1), live_in(kChannels, -1);
  uint32_t next_spi = 0x300000, made = 0;
  while (made < updates) {
    const size_t b = p.batches.size();
    std::vector<std::string> lines;
    const uint32_t n = 1 + static_cast<uint32_t>(rng() % 20);
    while (lines.size() < n && made < updates) {
      const bool out = rng() % 2;
      const uint32_t ch = static_cast<uint32_t>(rng() % kChannels);
      int64_t& live = (out ? live_out : live_in)[ch];
      if (live >= 0) {  // delete it, and half the time put a new SA in its place in the same batch
        Incarnation& was = p.incarnations[live];
        lines.push_back(sa_test::del_line(was.sa));
        was.removed = b + 1;
        live = -1;
        ++made;
        if (rng() % 2) continue;
      }
      Incarnation inc;
      const auto sel = channel_selector(ch);
      inc.sa = make_sa(out ? SaDir::kOut : SaDir::kIn, next_spi++, kCiphers[rng() % 4], rng, sel.first, sel.second);
      inc.channel = ch;
      inc.added = b + 1;
      lines.push_back(sa_test::add_line(inc.sa));
      live = static_cast<int64_t>(p.incarnations.size());
      (out ? p.of_out_channel : p.of_in_channel)[ch].push_back(static_cast<uint32_t>(p.incarnations.size()));
      p.incarnations.push_back(std::move(inc));
      ++made;
    }
    p.boundary.push_back(p.boundary.back() + lines.size());
    p.batches.push_back(std::move(lines));
  }
  for (const Sa& sa : p.stay_out) p.outbound_by_spi[sa.spi] = &sa;
  for (const Incarnation& i : p.incarnations) {
    if (i.sa.dir == SaDir::kOut) p.outbound_by_spi[i.sa.spi] = &i.sa;
  }
  return p;
}

// Spare slots for the plan's churned SAs: at most one per channel and direction at a time, and a
// deleted SA's slot is free only from the batch after its deletion.
constexpr uint32_t kPlanRoom = 4 * kChannels + 40;

// The SA file a run starts from: the staying SAs, outbound and inbound in turns.
inline SaFile plan_file(const Plan& plan) {
  SaFile file;
  file.path = "test";
  for (uint32_t k = 0; k < kStay; ++k) {
    file.sas.push_back(plan.stay_out[k]);
    file.sas.push_back(plan.stay_in[k]);
  }
  return file;
}

enum class Kind : uint8_t { kStayOut, kStayIn, kChurnOut, kChurnIn };

// A frame as its source made it: what it is for, and the version published before its receipt.
struct Sent {
  Kind kind;
  uint32_t target;  // stay SA k, outbound channel m, or incarnation g
  uint64_t seq;     // inbound: the number the peer gave it
  uint64_t lo;
};
// The same frame at transmission: the version a lookup of it may have seen at most, its verdict,
// and for ESP sent into the tunnel its SPI and number, and whether it opens under that SA's keys.
struct Seen {
  Sent sent;
  uint64_t hi;
  uint32_t verdict;
  uint32_t spi = 0;
  uint64_t seq = 0;
  bool opens = false;
};


// The traffic of a peer and of the protected hosts, a frame at a time: cleartext for the staying
// and the churned selectors, ESP from the staying inbound SAs' peers and the churned ones', each
// peer's numbers from 1 in order (no reordering for the windows). A source that shares the peers
// with others (`stride` sources, this one `first`) sends only to every stride-th of them, so that
// no two sources number one SA's frames.
class FrameMaker {
 public:
  FrameMaker(const Plan& plan, uint64_t seed, uint32_t stride = 1, uint32_t first = 0)
      : plan_(plan), rng_(seed), stride_(stride), first_(first), stay_seq_(kStay, 0),
        inc_seq_(plan.incarnations.size(), 0) {}

  // The next frame (`index` in its payload), made when the plan's batches up to boundary index
  // `at` are published; its Sent into *sent (`lo` left 0). A churned peer sends to the SA its
  // channel has at `at`, one time in eight to the one before it (gone), one in eight to the next
  // (not there yet).
  std::vector<uint8_t> make(size_t at, uint64_t index, Sent* sent) {
    const uint32_t len = 64 + static_cast<uint32_t>(rng_() % 400);
    const uint32_t r = static_cast<uint32_t>(rng_());
    for (;;) {
      switch (rng_() % 4) {
        case 0: {
          const uint32_t k = r % kStay;
          *sent = {Kind::kStayOut, k, 0, 0};
          return clear_frame(0x0A000001 + k, 0xAC100001 + k, len, index);
        }
        case 1: {
          const uint32_t k = mine(r, kStay);
          *sent = {Kind::kStayIn, k, ++stay_seq_[k], 0};
          return peer_seal(plan_.stay_in[k], clear_frame(0xAC100001 + k, 0x0A000001 + k, len, index), stay_seq_[k]);
        }
        case 2: {
          const uint32_t m = r % kChannels;
          const auto [src, dst] = channel_addresses(m, r >> 5);
          *sent = {Kind::kChurnOut, m, 0, 0};
          return clear_frame(src, dst, len, index);
        }
        default: {
          const uint32_t j = mine(r, kChannels);
          const std::vector<uint32_t>& incs = plan_.of_in_channel[j];
          if (incs.empty()) continue;  // no SA ever: another kind of frame
          size_t pick = 0;
          while (pick + 1 < incs.size() && plan_.incarnations[incs[pick + 1]].added <= at) ++pick;
          const uint32_t roll = (r >> 8) % 8;
          if (roll == 0 && pick > 0) --pick;
          if (roll == 1 && pick + 1 < incs.size()) ++pick;
          const uint32_t g = incs[pick];
          *sent = {Kind::kChurnIn, g, ++inc_seq_[g], 0};
          return peer_seal(plan_.incarnations[g].sa, clear_frame(0xAC110000 + j, 0x0A010000 + j, len, index),
                           inc_seq_[g]);
        }
      }
    }
  }

 private:
  // One of n peers that are this source's.
  uint32_t mine(uint32_t r, uint32_t n) const { return (r % (n / stride_)) * stride_ + first_; }

  const Plan& plan_;
  std::mt19937_64 rng_;
  uint32_t stride_, first_;
  std::vector<uint64_t> stay_seq_, inc_seq_;
};

// Seen for a frame at transmission (`hi`: the control's publishing() then): for ESP sent into the
// tunnel, its SPI and number, and whether it opens under that SA's keys.
inline Seen seen_at_tx(const Plan& plan, const Sent& sent, uint64_t hi, uint32_t verdict, const uint8_t* f, uint32_t len) {
  Seen s{sent, hi, verdict};
  if (verdict == Verdict::port(kPortTunnel) && esp_header(f, len, &s.spi, &s.seq)) {
    const auto it = plan.outbound_by_spi.find(s.spi);
    s.opens = it != plan.outbound_by_spi.end() && opens(*it->second, std::vector<uint8_t>(f, f + len), s.seq);
  }
  return s;
}

// What check_seen counted: frames, those in flight while SAs changed, by outcome; frames wrong
// (each reported as a test failure, the first five in full); added outbound SAs that sealed.
struct Tally {
  uint64_t checked = 0, wrong = 0, during = 0, churn_sealed = 0, bypassed = 0, opened = 0, unknown = 0, fresh = 0;
};

// Every frame against the SA sets of the boundaries between its two stamps; every outbound SA's
// numbers 1, 2, 3, ... whatever its slot held before, none twice.
inline Tally check_seen(const Plan& plan, const std::vector<const std::vector<Seen>*>& lists) {
  Tally t;
  uint64_t& wrong = t.wrong;
  std::map<uint32_t, std::vector<uint64_t>> seqs;  // outbound SPI -> the numbers it sent
  auto fail = [&](const Seen& s, const char* what) {
    if (++wrong <= 5) {
      ADD_FAILURE() << what << ": kind " << int(s.sent.kind) << " target " << s.sent.target << " verdict " << s.verdict
                    << " spi " << s.spi << ", seen between versions " << s.sent.lo << " and " << s.hi;
    }
  };
  for (const std::vector<Seen>* list : lists) {
    for (const Seen& s : *list) {
      ++t.checked;
      if (s.sent.lo > s.hi) {
        fail(s, "stamped after it was seen");
        continue;
      }
      t.during += s.hi > s.sent.lo;
      const size_t b0 = plan.index_of(s.sent.lo), b1 = plan.index_of(s.hi);
      auto some = [&](auto there) {
        for (size_t b = b0; b <= b1; ++b) {
          if (there(b)) return true;
        }
        return false;
      };
      const bool tunnel = s.verdict == Verdict::port(kPortTunnel);
      if (tunnel) {
        seqs[s.spi].push_back(s.seq);
        if (!s.opens) fail(s, "sealed under keys not its SA's");
      }
      switch (s.sent.kind) {
        case Kind::kStayOut:
          if (!tunnel || s.spi != plan.stay_out[s.sent.target].spi) fail(s, "a staying SA's packet");
          break;
        case Kind::kStayIn:
          if (s.verdict != Verdict::port(kPortDecrypted)) fail(s, "a staying SA's peer's packet");
          break;
        case Kind::kChurnOut: {
          const auto& incs = plan.of_out_channel[s.sent.target];
          if (tunnel) {
            ++t.churn_sealed;
            const auto it = std::find_if(incs.begin(), incs.end(),
                                         [&](uint32_t g) { return plan.incarnations[g].sa.spi == s.spi; });
            if (it == incs.end() || !some([&](size_t b) { return plan.incarnations[*it].there(b); })) {
              fail(s, "sealed by an SA that was not there");
            }
          } else if (s.verdict == Verdict::port(kPortBypass)) {
            ++t.bypassed;
            const bool none = some([&](size_t b) {
              return std::none_of(incs.begin(), incs.end(), [&](uint32_t g) { return plan.incarnations[g].there(b); });
            });
            if (!none) fail(s, "bypassed while its selector had an SA");
          } else {
            fail(s, "a churned selector's packet dropped");
          }
          break;
        }
        case Kind::kChurnIn: {
          const Incarnation& inc = plan.incarnations[s.sent.target];
          if (s.verdict == Verdict::port(kPortDecrypted)) {
            ++t.opened;
            if (!some([&](size_t b) { return inc.there(b); })) fail(s, "opened by an SA that was not there");
          } else if (s.verdict == Verdict::drop(kUnknownSpi)) {
            ++t.unknown;
            if (!some([&](size_t b) { return !inc.there(b); })) fail(s, "unknown SPI while its SA was there");
          } else {
            fail(s, "a churned peer's packet dropped for another reason");
          }
          break;
        }
      }
    }
  }
  // Every SA's numbers: 1, 2, 3, ... whatever its slot held before, none twice.
  for (auto& [spi, v] : seqs) {
    std::sort(v.begin(), v.end());
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] != i + 1) {
        ADD_FAILURE() << "spi " << spi << ": numbers not 1, 2, 3, ...";
        ++t.wrong;
        break;
      }
    }
    t.fresh += spi >= 0x300000;
  }
  return t;
}

}  // namespace tandem::ipsec::sa_test
