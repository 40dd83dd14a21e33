// Live SA updates while workers forward (sa_control.h): thousands of SAs added and deleted in
// batches while two workers (sched/workers.h, with RCU) carry traffic both ways, every packet
// checked against the SA sets it could have seen (those published between its receipt and its
// transmission): none lost; none sealed or opened by an SA that was not there at one of them, so
// none by an SA after its removal was published and synchronized; every SA's sequence numbers,
// those of the SAs that stay and of each SA added, exactly 1, 2, 3, ... (fresh state, no number
// used twice); and every added inbound SA's window fresh (its peer's first numbers accepted).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "apps/ipsec/ipsec_app.h"
#include "apps/ipsec/sa_control_test_util.h"
#include "core/rcu.h"
#include "sched/workers.h"

namespace tandem::ipsec {
namespace {

using sa_test::clear_frame;
using sa_test::make_sa;
using sa_test::prefix;

constexpr int kWorkers = 2;
constexpr uint32_t kStay = 16;     // SA pairs there all along
constexpr uint32_t kChannels = 24; // selectors (outbound) and peers (inbound) whose SAs come and go
constexpr Cipher kCiphers[] = {Cipher::kAes128Cbc, Cipher::kAes128Gcm, Cipher::kAes256Gcm, Cipher::kChacha20Poly1305};

// Churned outbound channel m's selector and an address pair inside it: a host pair for even m, a
// pair of prefixes for odd m (disjoint from each other and from the staying SAs' pairs).
std::pair<IpPrefix, IpPrefix> channel_selector(uint32_t m) {
  if (m % 2 == 0) return {prefix(0x0A010000 + m, 32), prefix(0xAC110000 + m, 32)};
  return {prefix(0x0A010000 + (m << 8), 24), prefix(0xAC110000, 16)};
}
std::pair<uint32_t, uint32_t> channel_addresses(uint32_t m, uint32_t r) {
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

Plan make_plan(uint32_t updates, uint64_t seed) {
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

// A worker's traffic: cleartext for the staying and the churned selectors, ESP from the peers of
// the staying inbound SAs and of the churned ones this worker owns (channel % kWorkers), each
// peer's numbers from 1 in order, so that windows see no reordering. Each frame's Sent goes into
// `log`, which the worker's sink reads in the same order.
class PeerSource final : public PacketSource {
 public:
  PeerSource(const Plan& plan, const SaControl& rc, int w, std::deque<Sent>& log, const std::atomic<bool>& quiet)
      : plan_(plan), rc_(rc), w_(w), rng_(100 + w), log_(log), quiet_(quiet), stay_seq_(kStay, 0),
        inc_seq_(plan.incarnations.size(), 0) {}
  uint32_t rx_burst(PacketPool& pool, PacketBatch& b) override {
    if (quiet_.load()) return 0;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    const uint32_t want = std::min<uint32_t>(PacketBatch::kCapacity - b.size, 24);
    const uint32_t got = pool.alloc_bulk(&b.cell[b.size], want);
    const uint64_t lo = rc_.version();
    // Every other burst is held until the next publish (or 5 ms), so that its lookups run on an
    // index newer than its stamp on every machine.
    if (++bursts_ % 2 == 0) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
      while (rc_.publishing() == lo && !quiet_.load() && std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
    }
    const size_t at = plan_.index_of(lo);
    for (uint32_t k = 0; k < got; ++k) {
      const uint32_t i = b.size + k;
      const std::vector<uint8_t> f = make(at, lo);
      std::copy(f.begin(), f.end(), pool.data(b.cell[i]));
      b.len[i] = static_cast<uint16_t>(f.size());
      b.wire_len[i] = static_cast<uint32_t>(f.size());
      b.ts_ns[i] = 0;
      b.verdict[i] = Verdict::kUnset;
    }
    b.size += got;
    return got;
  }
  std::string describe() const override { return "ipsec peer source"; }
  bool live() const override { return true; }

 private:
  std::vector<uint8_t> make(size_t at, uint64_t lo) {
    const uint32_t len = 64 + static_cast<uint32_t>(rng_() % 400);
    const uint32_t r = static_cast<uint32_t>(rng_());
    const uint64_t index = ++frames_;
    switch (rng_() % 4) {
      case 0: {
        const uint32_t k = r % kStay;
        log_.push_back({Kind::kStayOut, k, 0, lo});
        return clear_frame(0x0A000001 + k, 0xAC100001 + k, len, index);
      }
      case 1: {
        const uint32_t k = (r % (kStay / kWorkers)) * kWorkers + w_;
        log_.push_back({Kind::kStayIn, k, ++stay_seq_[k], lo});
        return sa_test::peer_seal(plan_.stay_in[k], clear_frame(0xAC100001 + k, 0x0A000001 + k, len, index), stay_seq_[k]);
      }
      case 2: {
        const uint32_t m = r % kChannels;
        const auto [src, dst] = channel_addresses(m, r >> 5);
        log_.push_back({Kind::kChurnOut, m, 0, lo});
        return clear_frame(src, dst, len, index);
      }
      default: {
        // A churned peer of this worker's: mostly its SA there now, else the one before it (gone)
        // or the next (not there yet).
        const uint32_t j = (r % (kChannels / kWorkers)) * kWorkers + w_;
        const std::vector<uint32_t>& incs = plan_.of_in_channel[j];
        if (incs.empty()) return make(at, lo);
        size_t pick = 0;
        while (pick + 1 < incs.size() && plan_.incarnations[incs[pick + 1]].added <= at) ++pick;
        const uint32_t roll = (r >> 8) % 8;
        if (roll == 0 && pick > 0) --pick;
        if (roll == 1 && pick + 1 < incs.size()) ++pick;
        const uint32_t g = incs[pick];
        log_.push_back({Kind::kChurnIn, g, ++inc_seq_[g], lo});
        return sa_test::peer_seal(plan_.incarnations[g].sa, clear_frame(0xAC110000 + j, 0x0A010000 + j, len, index),
                               inc_seq_[g]);
      }
    }
  }

  const Plan& plan_;
  const SaControl& rc_;
  int w_;
  std::mt19937_64 rng_;
  std::deque<Sent>& log_;
  const std::atomic<bool>& quiet_;
  std::vector<uint64_t> stay_seq_, inc_seq_;
  uint64_t bursts_ = 0, frames_ = 0;
};

// Records every frame at transmission, drops included, with its Sent from the source's log.
class CheckingSink final : public PacketSink {
 public:
  CheckingSink(const Plan& plan, const SaControl& rc, std::deque<Sent>& log) : plan_(plan), rc_(rc), log_(log) {}
  void tx_burst(const PacketPool& pool, const PacketBatch& b, Counters&) override {
    const uint64_t hi = rc_.publishing();
    for (uint32_t i = 0; i < b.size; ++i) {
      Seen s{log_.front(), hi, b.verdict[i]};
      log_.pop_front();
      if (s.verdict == Verdict::port(kPortTunnel)) {
        const uint8_t* f = pool.data(b.cell[i]);
        if (sa_test::esp_header(f, b.len[i], &s.spi, &s.seq)) {
          const auto it = plan_.outbound_by_spi.find(s.spi);
          s.opens = it != plan_.outbound_by_spi.end() && sa_test::opens(*it->second, std::vector<uint8_t>(f, f + b.len[i]), s.seq);
        }
      }
      seen.push_back(s);
    }
  }
  std::vector<Seen> seen;

 private:
  const Plan& plan_;
  const SaControl& rc_;
  std::deque<Sent>& log_;
};

void updates_while_forwarding(LookupPath path, uint32_t updates, uint64_t seed) {
  const Plan plan = make_plan(updates, seed);
  SaFile file;
  file.path = "test";
  for (uint32_t k = 0; k < kStay; ++k) {
    file.sas.push_back(plan.stay_out[k]);
    file.sas.push_back(plan.stay_in[k]);
  }
  SaTable table(file, 4 * kChannels + 40);
  IpsecApp app(table);
  auto* rc = dynamic_cast<SaControl*>(app.table_control());
  ASSERT_NE(rc, nullptr);
  Rcu rcu(kWorkers);
  rc->set_rcu(&rcu);

  std::atomic<bool> quiet{false};
  std::atomic<int> stop{0};
  std::deque<Sent> logs[kWorkers];
  std::vector<std::unique_ptr<PacketSource>> sources;
  std::vector<std::unique_ptr<PacketSink>> sinks;
  std::vector<CheckingSink*> rec;
  for (int w = 0; w < kWorkers; ++w) {
    sources.push_back(std::make_unique<PeerSource>(plan, *rc, w, logs[w], quiet));
    auto s = std::make_unique<CheckingSink>(plan, *rc, logs[w]);
    rec.push_back(s.get());
    sinks.push_back(std::move(s));
  }
  std::vector<uint64_t> published{0};
  std::thread control([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (const auto& batch : plan.batches) {
      for (const std::string& e : rc->apply(batch)) ASSERT_EQ(e, "");
      published.push_back(rc->version());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    quiet = true;
    stop = 1;
  });
  WorkersConfig wc;
  wc.workers = kWorkers;
  wc.path = path;
  wc.ports = app.ports();
  wc.stop = &stop;
  wc.rcu = &rcu;
  const WorkersResult r = run_workers_live(app, sources, sinks, wc);
  control.join();
  ASSERT_EQ(published, plan.boundary);
  ASSERT_TRUE(rc->copies_equal());

  // Allowed: any boundary whose version lies between the two stamps.
  uint64_t checked = 0, wrong = 0, during = 0, churn_sealed = 0, bypassed = 0, opened = 0, unknown = 0;
  std::map<uint32_t, std::vector<uint64_t>> seqs;  // outbound SPI -> the numbers it sent
  auto fail = [&](const Seen& s, const char* what) {
    if (++wrong <= 5) {
      ADD_FAILURE() << what << ": kind " << int(s.sent.kind) << " target " << s.sent.target << " verdict " << s.verdict
                    << " spi " << s.spi << ", seen between versions " << s.sent.lo << " and " << s.hi;
    }
  };
  for (const CheckingSink* sink : rec) {
    for (const Seen& s : sink->seen) {
      ++checked;
      ASSERT_LE(s.sent.lo, s.hi);
      during += s.hi > s.sent.lo;
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
            ++churn_sealed;
            const auto it = std::find_if(incs.begin(), incs.end(),
                                         [&](uint32_t g) { return plan.incarnations[g].sa.spi == s.spi; });
            if (it == incs.end() || !some([&](size_t b) { return plan.incarnations[*it].there(b); })) {
              fail(s, "sealed by an SA that was not there");
            }
          } else if (s.verdict == Verdict::port(kPortBypass)) {
            ++bypassed;
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
            ++opened;
            if (!some([&](size_t b) { return inc.there(b); })) fail(s, "opened by an SA that was not there");
          } else if (s.verdict == Verdict::drop(kUnknownSpi)) {
            ++unknown;
            if (!some([&](size_t b) { return !inc.there(b); })) fail(s, "unknown SPI while its SA was there");
          } else {
            fail(s, "a churned peer's packet dropped for another reason");
          }
          break;
        }
      }
    }
  }
  EXPECT_EQ(wrong, 0u);
  // Every SA's numbers: 1, 2, 3, ... whatever its slot held before, none twice.
  uint64_t fresh = 0;
  for (auto& [spi, v] : seqs) {
    std::sort(v.begin(), v.end());
    for (size_t i = 0; i < v.size(); ++i) {
      ASSERT_EQ(v[i], i + 1) << "spi " << spi << ": numbers not 1, 2, 3, ...";
    }
    fresh += spi >= 0x300000;
  }
  EXPECT_TRUE(r.counters.balanced());
  EXPECT_EQ(r.counters.dropped(), unknown) << "no drop but unknown SPIs";
  EXPECT_EQ(checked, r.counters.rx_packets) << "every packet received was seen";
  EXPECT_GT(checked, 5000u);
  EXPECT_GT(during, 500u) << "packets in flight while the SAs changed";
  EXPECT_GT(churn_sealed, 300u);
  EXPECT_GT(bypassed, 100u);
  EXPECT_GT(opened, 300u);
  EXPECT_GT(unknown, 50u);
  EXPECT_GT(fresh, 50u) << "added outbound SAs that sealed";
  std::printf("%llu packets checked (%llu while SAs changed): %llu sealed by churned SAs, %llu bypassed, %llu opened "
              "by churned SAs, %llu to unknown SPIs; %llu added SAs numbered from 1\n",
              (unsigned long long)checked, (unsigned long long)during, (unsigned long long)churn_sealed,
              (unsigned long long)bypassed, (unsigned long long)opened, (unsigned long long)unknown,
              (unsigned long long)fresh);
}

TEST(SaControlLive, UpdatesWhileForwardingBatched) { updates_while_forwarding(LookupPath::kBatched, 3000, 21); }
TEST(SaControlLive, UpdatesWhileForwardingScalar) { updates_while_forwarding(LookupPath::kScalar, 3000, 22); }

}  // namespace
}  // namespace tandem::ipsec
