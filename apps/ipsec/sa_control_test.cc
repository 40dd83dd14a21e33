// Live SA updates (sa_control.h): the commands and their errors (never a key in one), a removed
// SA's slot reused with new keys and fresh state on both crypto paths, and random batches checked
// against a reference map: lookups by selector and SPI, both copies of the index, and traffic both
// ways through every SA there is.
#include "apps/ipsec/sa_control.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "apps/ipsec/ipsec_app.h"
#include "apps/ipsec/sa_control_test_util.h"

namespace tandem::ipsec {
namespace {

using sa_test::add_line;
using sa_test::clear_frame;
using sa_test::del_line;
using sa_test::make_sa;
using sa_test::prefix;

// The frame through the app, by OpenSSL (process) or the burst path (process_burst: intel-ipsec-mb
// where the build has it): its verdict, the frame as left.
uint32_t run(const IpsecApp& app, std::vector<uint8_t>& f, bool burst) {
  const size_t n = f.size();
  f.resize(n + kMaxEspGrowth);
  uint32_t len = static_cast<uint32_t>(n), v = 0;
  const uint32_t cap = static_cast<uint32_t>(f.size());
  if (burst) {
    uint8_t* p = f.data();
    app.process_burst(&p, &len, cap, 1, &v);
  } else {
    v = app.process(f.data(), &len, cap);
  }
  f.resize(Verdict::is_drop(v) ? n : len);
  return v;
}

std::string hex(const std::vector<uint8_t>& v) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t b : v) s += {d[b >> 4], d[b & 15]};
  return s;
}

TEST(SaControl, CommandsAndErrorsNeverQuoteAKey) {
  std::mt19937_64 rng(1);
  SaFile f;
  f.path = "test";
  const Sa a = make_sa(SaDir::kOut, 0x1001, Cipher::kAes128Gcm, rng, prefix(0x0A010000, 16), prefix(0, 0));
  const Sa b = make_sa(SaDir::kIn, 0x2001, Cipher::kAes128Gcm, rng);
  f.sas = {a, b};
  SaTable table(f, 4);
  IpsecApp app(table);
  auto* tc = dynamic_cast<SaControl*>(app.table_control());
  ASSERT_NE(tc, nullptr);
  EXPECT_EQ(app.table_control(), tc) << "made once";

  // SA a has carried traffic on both crypto paths: its slot's contexts exist.
  for (bool burst : {false, true}) {
    std::vector<uint8_t> fr = clear_frame(0x0A010203, 0xAC100001, 200, 1);
    ASSERT_EQ(run(app, fr, burst), Verdict::port(kPortTunnel));
  }
  const Sa c = make_sa(SaDir::kIn, 0x3001, Cipher::kChacha20Poly1305, rng);
  const Sa c2 = make_sa(SaDir::kIn, 0x3001, Cipher::kAes128Gcm, rng);
  Sa short_key = make_sa(SaDir::kIn, 0x3002, Cipher::kAes128Gcm, rng);
  short_key.salt.clear();  // 16 bytes where 20 are due
  Sa same_key = make_sa(SaDir::kOut, 0x4001, Cipher::kAes128Gcm, rng, prefix(0x0A090000, 16), prefix(0, 0));
  same_key.key = a.key;
  same_key.salt = a.salt;
  const Sa a2 = make_sa(SaDir::kOut, 0x1001, Cipher::kAes128Cbc, rng, prefix(0x0A010000, 16), prefix(0, 0));
  const std::vector<std::string> lines = {
      add_line(c),                                     // 0
      add_line(c2),                                    // 1: the SPI is taken
      add_line(short_key),                             // 2
      "del in 0x9999",                                 // 3
      "del sideways 0x3001",                           // 4
      "del in",                                        // 5
      "del in 0x3001 extra",                           // 6
      "del in 12",                                     // 7
      "frob 1",                                        // 8
      add_line(same_key),                              // 9
      del_line(a),                                     // 10
      add_line(a2),                                    // 11: the same SPI again, after its del
      "add",                                           // 12
      "del out 0xzz",                                  // 13
      "add dir=out spi=0x5001 src=1.1.1.1 dst=2.2.2.2 cipher=aes-128-gcm key=" + hex(std::vector<uint8_t>(20, 7)),  // 14
      add_line(c) + "zz",                              // 15: the key is its last field
      "add " + hex(a.key) + "=1 " + format_sa_line(c).substr(0, 30),  // 16
      hex(a.key) + " frob",                            // 17
      "add dir=in spi=0x3003 src=1.1.1.1 dst=2.2.2.2 cipher=aes-128-gcm key=" + hex(std::vector<uint8_t>(20, 9)) +
          " # a comment",                              // 18
  };
  const auto r = tc->apply(lines);
  ASSERT_EQ(r.size(), lines.size());
  EXPECT_EQ(r[0], "");
  EXPECT_NE(r[1].find("an inbound SA with spi 12289 is there already"), std::string::npos) << r[1];
  EXPECT_NE(r[2].find("key of 16 bytes: aes-128-gcm takes 20"), std::string::npos) << r[2];
  EXPECT_NE(r[3].find("no inbound SA with spi 39321"), std::string::npos) << r[3];
  EXPECT_NE(r[4].find("direction must be in or out"), std::string::npos) << r[4];
  EXPECT_NE(r[5].find("missing SPI"), std::string::npos) << r[5];
  EXPECT_NE(r[6].find("unexpected words"), std::string::npos) << r[6];
  EXPECT_NE(r[7].find("reserved"), std::string::npos) << r[7];
  EXPECT_NE(r[8].find("unknown command 'frob'"), std::string::npos) << r[8];
  EXPECT_NE(r[9].find("outbound SA spi 16385 has the key of outbound SA spi 4097"), std::string::npos) << r[9];
  EXPECT_EQ(r[10], "");
  EXPECT_EQ(r[11], "");
  EXPECT_NE(r[12].find("add: missing field dir"), std::string::npos) << r[12];
  EXPECT_NE(r[13].find("spi is not"), std::string::npos) << r[13];
  EXPECT_NE(r[14].find("missing field selector"), std::string::npos) << r[14];
  EXPECT_NE(r[15].find("not a hex string"), std::string::npos) << r[15];
  EXPECT_EQ(r[16], "add: unknown field") << "a key-like name is not quoted";
  EXPECT_EQ(r[17].rfind("unknown command (", 0), 0u) << r[17];
  EXPECT_EQ(r[18], "");
  for (const std::string& e : r) {
    for (const Sa* s : std::initializer_list<const Sa*>{&a, &b, &c, &c2, &short_key, &same_key, &a2}) {
      EXPECT_EQ(e.find(hex(s->key).substr(0, 8)), std::string::npos) << "key material in: " << e;
    }
    EXPECT_EQ(e.find("07070707"), std::string::npos) << e;
  }
  EXPECT_EQ(tc->version(), 4u);
  EXPECT_TRUE(tc->copies_equal());
  EXPECT_EQ(table.outbound(), 1u);
  EXPECT_EQ(table.inbound(), 3u);

  // The new inbound SA opens its peer's frames; the outbound one seals with its own keys, from 1.
  for (bool burst : {false, true}) {
    std::vector<uint8_t> fr = sa_test::peer_seal(c, clear_frame(0xAC100001, 0x0A010203, 300, 2), 1 + burst);
    ASSERT_FALSE(fr.empty());
    EXPECT_EQ(run(app, fr, burst), Verdict::port(kPortDecrypted)) << burst;
    fr = clear_frame(0x0A010203, 0xAC100001, 200, 3);
    ASSERT_EQ(run(app, fr, burst), Verdict::port(kPortTunnel));
    uint32_t spi = 0;
    uint64_t seq = 0;
    ASSERT_TRUE(sa_test::esp_header(fr.data(), static_cast<uint32_t>(fr.size()), &spi, &seq));
    EXPECT_EQ(spi, 0x1001u);
    EXPECT_EQ(seq, 1u + burst) << "a re-added SA numbers from 1";
    EXPECT_TRUE(sa_test::opens(a2, fr, seq));
    EXPECT_FALSE(sa_test::opens(a, fr, seq));
  }

  // Slots: 4 beyond the file's, three taken, a's (slot 0) free again and taken first. g takes
  // slot 0, whose crypto contexts were a's: it must seal under g's keys on both paths.
  const Sa g = make_sa(SaDir::kOut, 0x1002, Cipher::kAes128Gcm, rng, prefix(0x0A070000, 16), prefix(0, 0));
  const Sa h = make_sa(SaDir::kIn, 0x3004, Cipher::kAes128Gcm, rng);
  const Sa i = make_sa(SaDir::kIn, 0x3005, Cipher::kAes128Gcm, rng);
  auto r2 = tc->apply({add_line(g), add_line(h), add_line(i)});
  EXPECT_EQ(r2[0], "");
  EXPECT_EQ(r2[1], "");
  EXPECT_NE(r2[2].find("add: spi 12293: no free slot (6 in all"), std::string::npos) << r2[2];
  ParsedPacket pp;
  const std::vector<uint8_t> probe = clear_frame(0x0A070001, 0xAC100001, 100, 0);
  ASSERT_EQ(parse_frame(probe.data(), static_cast<uint32_t>(probe.size()), &pp), DropReason::kNone);
  EXPECT_EQ(table.select(pp.tuple), 0u) << "g took a's slot";
  for (bool burst : {false, true}) {
    std::vector<uint8_t> fr = clear_frame(0x0A070001, 0xAC100001, 500, 4);
    ASSERT_EQ(run(app, fr, burst), Verdict::port(kPortTunnel));
    EXPECT_TRUE(sa_test::opens(g, fr, 1 + burst)) << "slot 0 sealed under g's keys, burst " << burst;
  }
  // A slot freed by a batch is free for the next one, not within it.
  r2 = tc->apply({del_line(h), add_line(i)});
  EXPECT_EQ(r2[0], "");
  EXPECT_NE(r2[1].find("no free slot"), std::string::npos) << r2[1];
  r2 = tc->apply({add_line(i), del_line(c)});
  EXPECT_EQ(r2[0], "");
  EXPECT_EQ(r2[1], "");
  std::vector<uint8_t> fr = sa_test::peer_seal(c, clear_frame(0xAC100001, 0x0A010203, 300, 5), 9);
  EXPECT_EQ(run(app, fr, false), Verdict::drop(kUnknownSpi)) << "a deleted SA is gone";
  fr = sa_test::peer_seal(b, clear_frame(0xAC100001, 0x0A010203, 300, 6), 1);
  EXPECT_EQ(run(app, fr, true), Verdict::port(kPortDecrypted)) << "the file's inbound SA is still there";
  EXPECT_EQ(tc->version(), 9u);
  EXPECT_TRUE(tc->copies_equal());
}

// The reference: the SAs there are by (direction, SPI), each with its place in the SPD order and
// the sequence numbers it has used (outbound) or its peer has (inbound).
struct Ref {
  Sa sa;
  uint64_t order = 0;
  uint64_t seq = 0;
};
using RefMap = std::map<std::pair<int, uint32_t>, Ref>;

std::pair<int, uint32_t> key_of(const Sa& sa) { return {sa.dir == SaDir::kIn, sa.spi}; }

// The outbound SA the reference selects for a tuple, or null.
const Ref* ref_select(const RefMap& refs, const FiveTuple& t) {
  const Ref* best = nullptr;
  for (const auto& [k, r] : refs) {
    if (r.sa.dir == SaDir::kOut && selector_holds(r.sa, t) && (!best || r.order < best->order)) best = &r;
  }
  return best;
}

TEST(SaControl, RandomBatchesFollowAReferenceMap) {
  std::mt19937_64 rng(7);
  constexpr Cipher kCiphers[] = {Cipher::kAes128Cbc, Cipher::kAes128Gcm, Cipher::kAes256Gcm, Cipher::kChacha20Poly1305};
  // Selectors that overlap: host pairs (several SAs may have one: the first keeps it) inside
  // prefixes (whose order against them decides).
  std::vector<std::pair<IpPrefix, IpPrefix>> sels;
  for (uint32_t j = 0; j < 6; ++j) sels.push_back({prefix(0x0A050000 + j, 32), prefix(0xAC140000 + j, 32)});
  sels.push_back({prefix(0x0A050000, 24), prefix(0xAC140000, 16)});
  sels.push_back({prefix(0x0A050000, 29), prefix(0, 0)});
  sels.push_back({prefix(0x0A060000, 16), prefix(0, 0)});
  sels.push_back({prefix(0, 0), prefix(0xAC140000, 30)});
  uint32_t next_spi = 0x10000;
  auto new_sa = [&](SaDir dir) {
    const auto& s = sels[rng() % sels.size()];
    return make_sa(dir, next_spi++, kCiphers[rng() % 4], rng, s.first, s.second);
  };
  SaFile f;
  f.path = "test";
  for (int k = 0; k < 8; ++k) f.sas.push_back(new_sa(k % 2 ? SaDir::kIn : SaDir::kOut));
  constexpr uint32_t kRoom = 24;
  SaTable table(f, kRoom);
  IpsecApp app(table);
  auto* tc = dynamic_cast<SaControl*>(app.table_control());
  RefMap refs;
  uint64_t order = 0;
  for (const Sa& sa : f.sas) refs[key_of(sa)] = {sa, order++, 0};
  std::vector<Sa> gone;  // deleted SAs, for lookups that must fail
  // The frames of every probe: host pairs, addresses inside and outside the prefixes.
  std::vector<uint32_t> srcs, dsts;
  for (uint32_t j = 0; j < 8; ++j) {
    srcs.push_back(0x0A050000 + j);
    dsts.push_back(0xAC140000 + j);
  }
  srcs.insert(srcs.end(), {0x0A050080, 0x0A06ABCD, 0x0B000001});
  dsts.insert(dsts.end(), {0xAC140100, 0x08080808});
  uint64_t reused = 0, sealed = 0, opened = 0, refused = 0;
  for (int batch = 0; batch < 80; ++batch) {
    std::vector<std::string> lines, want;
    size_t taken = refs.size();  // slots in use while the batch runs (a deleted SA's until its end)
    const int n = 1 + static_cast<int>(rng() % 12);
    for (int k = 0; k < n; ++k) {
      const unsigned what = static_cast<unsigned>(rng() % 10);
      if (what < 4 && !refs.empty()) {  // del
        auto it = refs.begin();
        std::advance(it, rng() % refs.size());
        lines.push_back(del_line(it->second.sa));
        want.push_back("");
        gone.push_back(it->second.sa);
        refs.erase(it);
      } else if (what == 4 && !gone.empty()) {  // del of an SA that is not there
        lines.push_back(del_line(gone[rng() % gone.size()]));
        want.push_back("del: no");
      } else if (what == 5 && !refs.empty()) {  // add of an SPI that is there
        auto it = refs.begin();
        std::advance(it, rng() % refs.size());
        Sa dup = new_sa(it->second.sa.dir);
        dup.spi = it->second.sa.spi;
        lines.push_back(add_line(dup));
        want.push_back("is there already");
      } else {
        const Sa sa = new_sa(rng() % 2 ? SaDir::kIn : SaDir::kOut);
        lines.push_back(add_line(sa));
        if (taken == table.capacity()) {
          want.push_back("no free slot");
        } else {
          want.push_back("");
          refs[key_of(sa)] = {sa, order++, 0};
          ++taken;
        }
      }
    }
    const std::vector<std::string> got = tc->apply(lines);
    ASSERT_EQ(got.size(), lines.size());
    for (size_t k = 0; k < got.size(); ++k) {
      if (want[k].empty()) {
        ASSERT_EQ(got[k], "") << "batch " << batch << " line " << k;
      } else {
        ASSERT_NE(got[k].find(want[k]), std::string::npos) << got[k] << " (wanted " << want[k] << ")";
        ++refused;
      }
    }
    ASSERT_TRUE(tc->copies_equal()) << "batch " << batch;
    size_t out = 0;
    for (const auto& [k, r] : refs) out += r.sa.dir == SaDir::kOut;
    ASSERT_EQ(table.outbound(), out);
    ASSERT_EQ(table.inbound(), refs.size() - out);
    // By SPI: the SAs there are, with their keys; the deleted ones are not found (SPIs are not reused).
    for (const auto& [k, r] : refs) {
      if (r.sa.dir != SaDir::kIn) continue;
      const uint32_t slot = table.find_inbound(r.sa.spi);
      ASSERT_NE(slot, kNoSa);
      ASSERT_EQ(table.sa(slot).key, r.sa.key);
    }
    for (const Sa& g : gone) {
      if (g.dir == SaDir::kIn) {
        ASSERT_EQ(table.find_inbound(g.spi), kNoSa);
      }
    }
    // By selector, and traffic: every probe's frame sealed by the SA the reference selects (or
    // bypassed), numbered in turn from 1, opening under that SA's keys; every inbound SA opens
    // its peer's frames (the window fresh for a new SA, whatever its slot held before).
    for (uint32_t src : srcs) {
      for (uint32_t dst : dsts) {
        std::vector<uint8_t> fr = clear_frame(src, dst, 64 + static_cast<uint32_t>(rng() % 1200), sealed);
        ParsedPacket pp;
        ASSERT_EQ(parse_frame(fr.data(), static_cast<uint32_t>(fr.size()), &pp), DropReason::kNone);
        const Ref* want_sa = ref_select(refs, pp.tuple);
        const uint32_t slot = table.select(pp.tuple);
        if (!want_sa) {
          ASSERT_EQ(slot, kNoSa);
          ASSERT_EQ(run(app, fr, rng() % 2), Verdict::port(kPortBypass));
          continue;
        }
        ASSERT_NE(slot, kNoSa);
        ASSERT_EQ(table.sa(slot).spi, want_sa->sa.spi) << "batch " << batch;
        ASSERT_EQ(run(app, fr, rng() % 2), Verdict::port(kPortTunnel));
        uint32_t spi = 0;
        uint64_t seq = 0;
        ASSERT_TRUE(sa_test::esp_header(fr.data(), static_cast<uint32_t>(fr.size()), &spi, &seq));
        Ref& r = refs[key_of(want_sa->sa)];
        ASSERT_EQ(spi, r.sa.spi);
        ASSERT_EQ(seq, ++r.seq);
        ASSERT_TRUE(sa_test::opens(r.sa, fr, seq)) << "batch " << batch << " spi " << spi;
        ++sealed;
      }
    }
    for (auto& [k, r] : refs) {
      if (r.sa.dir != SaDir::kIn) continue;
      std::vector<uint8_t> fr = sa_test::peer_seal(r.sa, clear_frame(0xAC140001, 0x0A050001, 300, opened), ++r.seq);
      ASSERT_EQ(run(app, fr, rng() % 2), Verdict::port(kPortDecrypted)) << "batch " << batch << " spi " << r.sa.spi;
      ++opened;
    }
    for (uint32_t i = 0; i < f.sas.size(); ++i) reused += table.occupied(i) && table.rank(i) >= f.sas.size();
  }
  EXPECT_GT(reused, 0u) << "slots of the file's SAs were reused";
  EXPECT_GT(refused, 20u);
  EXPECT_GT(sealed, 500u);
  EXPECT_GT(opened, 200u);
}

}  // namespace
}  // namespace tandem::ipsec

namespace tandem::ipsec {
namespace {

// A device copy (the resident path's, sa_control.h) that records what each batch gives it, and
// refuses batches while `refuse` is set.
class RecordingDevice final : public SaDeviceCopy {
 public:
  std::string publish(const std::vector<uint32_t>& linked, const std::vector<uint32_t>& added,
                      ResidentCopyStats& stats) override {
    linked_ = linked;
    added_ = added;
    ++calls;
    if (refuse.empty()) stats.versions.fetch_add(1);
    return refuse;
  }
  void forget(uint32_t slot) override { forgotten.push_back(slot); }
  std::vector<uint32_t> linked_, added_, forgotten;
  int calls = 0;
  std::string refuse;
};

// The SPI that seals a cleartext frame src -> dst (0: not sealed), on the OpenSSL path.
uint32_t sealing_spi(const IpsecApp& app, uint32_t src, uint32_t dst) {
  std::vector<uint8_t> f = clear_frame(src, dst, 120, 1);
  if (run(app, f, false) != Verdict::port(kPortTunnel)) return 0;
  uint32_t spi = 0;
  uint64_t seq = 0;
  return sa_test::esp_header(f.data(), static_cast<uint32_t>(f.size()), &spi, &seq) ? spi : 0;
}

TEST(SaControl, ADeviceCopyTakesEachBatchBeforeTheHostOrTheBatchIsUndone) {
  std::mt19937_64 rng(9);
  SaFile f;
  f.path = "test";
  const Sa a = make_sa(SaDir::kOut, 0x1001, Cipher::kAes128Gcm, rng, prefix(0x0A000001, 32), prefix(0xAC100001, 32));
  const Sa wide = make_sa(SaDir::kOut, 0x1002, Cipher::kAes128Cbc, rng, prefix(0x0B000000, 8), prefix(0, 0));
  const Sa in = make_sa(SaDir::kIn, 0x2001, Cipher::kAes128Gcm, rng);
  f.sas = {a, wide, in};
  SaTable table(f, 4);
  IpsecApp app(table);
  auto* tc = dynamic_cast<SaControl*>(app.table_control());
  ASSERT_NE(tc, nullptr);
  EXPECT_TRUE(tc->reaches_gpu_resident());
  RecordingDevice dev;
  std::vector<uint32_t> at_start;
  tc->connect_device(&dev, [&](const std::vector<uint32_t>& linked) { at_start = linked; });
  EXPECT_EQ(at_start, (std::vector<uint32_t>{0, 1, 2})) << "the device copy starts from the SAs there are";
  EXPECT_THROW(tc->connect_device(&dev, nullptr), std::logic_error) << "one device copy at a time";

  // A batch the device takes: its slots, what it adds, and the removed SA forgotten after it.
  const Sa b = make_sa(SaDir::kOut, 0x1003, Cipher::kChacha20Poly1305, rng, prefix(0x0A000001, 32), prefix(0xAC100001, 32));
  const Sa in2 = make_sa(SaDir::kIn, 0x2002, Cipher::kAes256Gcm, rng);
  auto r = tc->apply({del_line(a), add_line(b), add_line(in2)});
  EXPECT_EQ(r, (std::vector<std::string>{"", "", ""}));
  ASSERT_EQ(dev.calls, 1);
  ASSERT_EQ(dev.added_.size(), 2u);
  const uint32_t slot_b = dev.added_[0], slot_in2 = dev.added_[1];
  EXPECT_EQ(table.sa(slot_b).spi, b.spi);
  EXPECT_EQ(table.sa(slot_in2).spi, in2.spi);
  EXPECT_EQ(dev.linked_, (std::vector<uint32_t>{1, 2, std::min(slot_b, slot_in2), std::max(slot_b, slot_in2)}));
  EXPECT_EQ(dev.forgotten, (std::vector<uint32_t>{0}));
  EXPECT_EQ(tc->version(), 3u);
  EXPECT_EQ(tc->resident_copy()->versions.load(), 1u);
  EXPECT_EQ(sealing_spi(app, 0x0A000001, 0xAC100001), b.spi);

  // A batch the device refuses changes nothing on the host: the lines it applied carry the
  // device's reason, a line refused on its own keeps its own.
  dev.refuse = "not applied: the device says no";
  const Sa c = make_sa(SaDir::kOut, 0x1004, Cipher::kAes128Gcm, rng, prefix(0x0C000001, 32), prefix(0xAC100002, 32));
  const Sa in3 = make_sa(SaDir::kIn, 0x2003, Cipher::kAes128Gcm, rng);
  r = tc->apply({del_line(b), add_line(c), "frob", del_line(wide), add_line(in3), del_line(in3)});
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(r[0], dev.refuse);
  EXPECT_EQ(r[1], dev.refuse);
  EXPECT_NE(r[2].find("unknown command"), std::string::npos) << r[2];
  EXPECT_EQ(r[3], dev.refuse);
  EXPECT_EQ(r[4], dev.refuse);
  EXPECT_EQ(r[5], dev.refuse);
  EXPECT_EQ(dev.calls, 2);
  EXPECT_EQ(tc->version(), 3u) << "nothing published";
  EXPECT_TRUE(tc->copies_equal());
  EXPECT_EQ(dev.forgotten, (std::vector<uint32_t>{0})) << "nothing forgotten";
  EXPECT_EQ(sealing_spi(app, 0x0A000001, 0xAC100001), b.spi);
  EXPECT_EQ(sealing_spi(app, 0x0C000001, 0xAC100002), 0u) << "bypassed: c was never published";
  EXPECT_EQ(sealing_spi(app, 0x0B010203, 0xAC100002), wide.spi);
  EXPECT_EQ(table.outbound(), 2u);
  EXPECT_EQ(table.inbound(), 2u);

  // The same lines again once the device takes them: the SPIs and slots the undone batch had
  // were given back.
  dev.refuse.clear();
  r = tc->apply({del_line(b), add_line(c), del_line(wide), add_line(in3), del_line(in3)});
  EXPECT_EQ(r, (std::vector<std::string>(5, "")));
  EXPECT_EQ(tc->version(), 8u);
  EXPECT_EQ(sealing_spi(app, 0x0C000001, 0xAC100002), c.spi);
  EXPECT_EQ(sealing_spi(app, 0x0A000001, 0xAC100001), 0u);
  EXPECT_EQ(sealing_spi(app, 0x0B010203, 0xAC100002), 0u);
  EXPECT_EQ(dev.forgotten.size(), 4u) << "a, b, wide and in3 (added and removed in one batch)";
  EXPECT_TRUE(tc->copies_equal());

  // Disconnected: later batches reach the host alone.
  tc->connect_device(nullptr, nullptr);
  EXPECT_EQ(tc->apply({del_line(c)}), (std::vector<std::string>{""}));
  EXPECT_EQ(dev.calls, 3);
}

}  // namespace
}  // namespace tandem::ipsec
