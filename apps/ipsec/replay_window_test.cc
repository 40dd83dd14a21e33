// The anti-replay window against a plain model (a set of received numbers and the highest one),
// on reordered, duplicated, forged and far-jumping sequence numbers; ESN inference across the
// 2^32 boundary (RFC 4303 A2.1).
#include "apps/ipsec/replay_window.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

namespace tandem::ipsec {
namespace {

using Check = ReplayWindow::Check;

// RFC 4303 3.4.3 written out: numbers left of [top - size + 1, top] are too old, numbers in it are
// replays when received before.
struct Model {
  uint32_t size;
  uint64_t top = 0;
  std::set<uint64_t> seen;
  Check check(uint64_t s) const {
    if (s == 0) return Check::kTooOld;
    if (s > top) return Check::kOk;
    if (top - s >= size) return Check::kTooOld;
    return seen.count(s) ? Check::kReplayed : Check::kOk;
  }
  void update(uint64_t s) {
    seen.insert(s);
    top = std::max(top, s);
  }
};

TEST(ReplayWindow, InOrderReorderedDuplicatedAndOld) {
  ReplayWindow w(64);
  EXPECT_EQ(w.check(0), Check::kTooOld);
  for (uint64_t s = 1; s <= 100; ++s) {
    ASSERT_EQ(w.check(s), Check::kOk) << s;
    w.update(s);
  }
  EXPECT_EQ(w.top(), 100u);
  EXPECT_EQ(w.check(100), Check::kReplayed);
  EXPECT_EQ(w.check(37), Check::kReplayed);  // the oldest number still in the window
  EXPECT_EQ(w.check(36), Check::kTooOld);
  w.update(200);  // a jump: everything before 137 leaves the window
  EXPECT_EQ(w.check(137), Check::kOk);
  EXPECT_EQ(w.check(136), Check::kTooOld);
  EXPECT_EQ(w.check(100), Check::kTooOld);
  EXPECT_EQ(w.check(199), Check::kOk);
  w.update(199);
  EXPECT_EQ(w.check(199), Check::kReplayed);
}

TEST(ReplayWindow, AFailedIcvDoesNotMoveTheWindow) {
  ReplayWindow w(64);
  w.update(10);
  // A forged packet far ahead is checked (new) but never updated: the window stays put.
  EXPECT_EQ(w.check(1'000'000), Check::kOk);
  EXPECT_EQ(w.top(), 10u);
  EXPECT_EQ(w.check(9), Check::kOk);
}

TEST(ReplayWindow, SizesOutOfRangeAreRefused) {
  EXPECT_THROW(ReplayWindow(31), std::invalid_argument);
  EXPECT_THROW(ReplayWindow(ReplayWindow::kMaxSize + 1), std::invalid_argument);
  EXPECT_NO_THROW(ReplayWindow(32));
  EXPECT_NO_THROW(ReplayWindow(ReplayWindow::kMaxSize));
}

// Random traffic: mostly new numbers with reordering of up to twice the window, duplicates,
// forged packets whose ICV fails, and jumps of up to a few windows, for sizes that fill the last
// block exactly or not at all.
TEST(ReplayWindow, AgreesWithTheModelOnRandomTraffic) {
  for (uint32_t size : {32u, 64u, 100u, 128u, 1000u, 4096u}) {
    std::mt19937_64 rng(size);
    ReplayWindow w(size);
    Model m{size};
    uint64_t next = 1;
    std::deque<uint64_t> recent;
    size_t ok = 0, replayed = 0, old = 0;
    for (int i = 0; i < 200'000; ++i) {
      uint64_t s;
      const unsigned kind = rng() % 100;
      if (kind < 60) {
        s = next++;
      } else if (kind < 85) {  // reordered: behind the newest by up to twice the window
        const uint64_t back = rng() % (2 * size);
        s = next > back ? next - back : 1;
      } else if (kind < 95) {  // a duplicate of one of the last numbers accepted (or of 0)
        s = recent.empty() ? 0 : recent[rng() % recent.size()];
      } else {  // a jump ahead
        next += rng() % (3 * size);
        s = next++;
      }
      const Check want = m.check(s);
      ASSERT_EQ(w.check(s), want) << "size " << size << " step " << i << " seq " << s << " top " << m.top;
      const bool icv_ok = rng() % 20 != 0;
      if (want == Check::kOk && icv_ok) {
        w.update(s);
        m.update(s);
        recent.push_back(s);
        if (recent.size() > 64) recent.pop_front();
      }
      ok += want == Check::kOk;
      replayed += want == Check::kReplayed;
      old += want == Check::kTooOld;
    }
    EXPECT_GT(ok, 10'000u) << size;
    EXPECT_GT(replayed, 1'000u) << size;
    EXPECT_GT(old, 1'000u) << size;
  }
}

// ESN: the receiver sees only the low 32 bits; for every packet inside the window or ahead of it
// (by less than 2^31 - size), the inferred number is the sender's.
TEST(ReplayWindow, EsnInfersTheHighHalfAcrossTheBoundary) {
  const uint64_t k32 = uint64_t{1} << 32;
  for (uint32_t size : {64u, 1000u}) {
    for (uint64_t top : {uint64_t{5}, uint64_t{size - 2}, k32 - 10, k32 + 5, k32 + size - 2, 7 * k32 + 3,
                         9 * k32 - 1}) {
      ReplayWindow w(size, /*esn=*/true);
      w.update(top);
      const uint64_t lo = top >= size ? top - size + 1 : 1;
      for (uint64_t s = lo; s < top + 3 * size; ++s) {
        ASSERT_EQ(w.infer(static_cast<uint32_t>(s)), s) << "size " << size << " top " << top;
      }
      for (uint64_t ahead : {uint64_t{1} << 20, (uint64_t{1} << 31) - size - 1}) {
        ASSERT_EQ(w.infer(static_cast<uint32_t>(top + ahead)), top + ahead) << "top " << top << " + " << ahead;
      }
    }
  }
  // Early in an SA the window reaches below 0: the low halves there belong to no subspace.
  ReplayWindow early(64, /*esn=*/true);
  early.update(5);
  EXPECT_EQ(early.infer(0xFFFFFFF0u), 0u);
  EXPECT_EQ(early.check(early.infer(0xFFFFFFF0u)), Check::kTooOld);
  EXPECT_EQ(early.infer(3), 3u);
  EXPECT_EQ(early.infer(1000), 1000u);
  // Without ESN the number is the low half itself.
  ReplayWindow plain(64);
  plain.update(uint64_t{0xFFFFFFF0});
  EXPECT_EQ(plain.infer(3), 3u);
  EXPECT_EQ(plain.check(plain.infer(3)), Check::kTooOld);
}

// A sender crossing 2^32 with ESN, packets reordered within the window: every packet accepted
// once, every duplicate refused.
TEST(ReplayWindow, EsnStreamAcrossTheBoundaryIsAcceptedOnce) {
  const uint64_t k32 = uint64_t{1} << 32;
  ReplayWindow w(128, /*esn=*/true);
  w.update(k32 - 1000);
  std::mt19937_64 rng(7);
  std::vector<uint64_t> sent;
  for (uint64_t s = k32 - 999; s < k32 + 1000; ++s) sent.push_back(s);
  for (size_t i = 0; i < sent.size(); i += 32) {  // reordered within blocks of 32
    std::shuffle(sent.begin() + i, sent.begin() + std::min(sent.size(), i + 32), rng);
  }
  for (uint64_t s : sent) {
    const uint64_t got = w.infer(static_cast<uint32_t>(s));
    ASSERT_EQ(got, s);
    ASSERT_EQ(w.check(got), Check::kOk) << s;
    w.update(got);
    ASSERT_EQ(w.check(w.infer(static_cast<uint32_t>(s))), Check::kReplayed) << s;
  }
  EXPECT_EQ(w.top(), k32 + 999);
}

}  // namespace
}  // namespace tandem::ipsec
