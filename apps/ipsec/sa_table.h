// The gateway's security association database at run time, built from an SA file
// (apps/ipsec/sa_file.h): outbound SAs found by selector, inbound ones by SPI, and the state that
// changes per packet (outbound sequence numbers, inbound anti-replay windows), safe to share
// between worker threads.
//
// Selection: the first outbound SA in file order whose selector holds the packet's source and
// destination (RFC 4301's ordered SPD). Selectors of one host pair each (the Koromilas et al.
// workload, an SA per connection) are found in a hash map; prefixes are tried in order, only up to
// the exact match, so file order decides as it would for a plain scan. SAs added while running
// (sa_control.h) come after every SA there is, in the order they were added.
//
// Sequence numbers: one atomic counter per outbound SA; workers sending on one SA take numbers
// from it, so each number is sent once. Replay windows: a spinlock per inbound SA; a packet is
// checked before its ICV is verified and checked again when the window is updated, so two copies
// of one packet on two workers cannot both pass.
//
// Storage: each SA, with its state, lives in a slot that it keeps as long as it exists (the SA
// index `i` of every method below): the file's SAs fill slots 0.. in file order, and `room`
// further slots take SAs added while running. What changes with live updates is only the index
// from selectors and SPIs to slots (SaIndex), of which the control keeps two copies (left-right);
// a removed SA's slot is wiped and reused only once no worker can hold it (sa_control.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "apps/ipsec/esp_frame.h"
#include "apps/ipsec/replay_window.h"
#include "apps/ipsec/sa_file.h"
#include "core/parse.h"

namespace tandem::ipsec {

inline constexpr uint32_t kNoSa = 0xFFFFFFFFu;

// Whether SA's selector holds a packet's source and destination (false for another family).
bool selector_holds(const Sa& sa, const FiveTuple& t);

class SaTable;

// Selectors and SPIs to slots: what lookups read. Every operation is a function of the index and
// the slot's SA alone, so two copies given the same operations in the same order stay equal.
class SaIndex {
 public:
  // Slot i's SA becomes findable (its SPI must not be in the index yet), at its place in the SPD
  // order (SaTable::rank).
  void link(const SaTable& t, uint32_t i);
  // Slot i's SA (linked) is no longer found; an SA of the same host pair after it takes its place.
  void unlink(const SaTable& t, uint32_t i);
  bool operator==(const SaIndex& o) const;

 private:
  friend class SaTable;
  // A host pair: family, source, destination.
  struct Pair {
    uint8_t family = 0;
    uint8_t src[16] = {};
    uint8_t dst[16] = {};
    bool operator==(const Pair& o) const;
  };
  struct PairHash {
    size_t operator()(const Pair& p) const;
  };
  struct Ranked {
    uint64_t rank = UINT64_MAX;
    uint32_t slot = kNoSa;
    bool operator==(const Ranked&) const = default;
  };
  static bool host_pair(const Sa& sa, Pair* p);

  std::unordered_map<uint32_t, uint32_t> by_spi_;           // inbound SPI -> slot
  std::unordered_map<Pair, Ranked, PairHash> exact_;         // host pair -> its first SA
  std::vector<Ranked> prefixed_;                            // outbound SAs with a shorter prefix, by rank
  // Later SAs of a host pair that exact_ holds an earlier one of, by rank: read by unlink() only.
  std::unordered_map<Pair, std::vector<Ranked>, PairHash> shadowed_;
};

class SaTable {
 public:
  // Throws TableError (naming the file and the lines) for two outbound AEAD SAs with the same key
  // and salt: their IVs (the sequence numbers) would repeat under one key. `room`: slots for SAs
  // added while running, beyond the file's.
  explicit SaTable(SaFile file, uint32_t room = 0);
  ~SaTable();  // wipes every key
  SaTable(const SaTable&) = delete;
  SaTable& operator=(const SaTable&) = delete;

  const std::string& path() const { return path_; }
  // Slots up to the highest one used so far: the file's SAs, then added ones. A slot whose SA was
  // removed holds an empty SA (no key) until it is reused (occupied() tells them apart); the
  // resident GPU path's copy takes the control's batches (esp_resident.h), and the reference
  // (--verify) runs on tables no control changed.
  size_t size() const { return used_.load(std::memory_order_relaxed); }
  size_t capacity() const { return sas_.size(); }
  const Sa& sa(uint32_t i) const { return sas_[i]; }
  const EspTunnel& tunnel(uint32_t i) const { return tunnels_[i]; }
  // SAs there are now, by direction.
  size_t outbound() const { return outbound_.load(std::memory_order_relaxed); }
  size_t inbound() const { return inbound_.load(std::memory_order_relaxed); }

  // The outbound SA protecting a parsed packet, or kNoSa.
  uint32_t select(const FiveTuple& t) const;
  // The inbound SA with this SPI, or kNoSa.
  uint32_t find_inbound(uint32_t spi) const;

  // The next sequence number of outbound SA i (from 1); false once the SA has used them all
  // (2^32 - 1 without ESN: RFC 4303 3.3.3 forbids cycling).
  bool next_seq(uint32_t i, uint64_t* seq);
  // The next number SA i would send (tests; and to start an SA elsewhere than 1).
  uint64_t peek_seq(uint32_t i) const { return seq_[i].next.load(std::memory_order_relaxed); }
  void set_next_seq(uint32_t i, uint64_t next) { seq_[i].next.store(next, std::memory_order_relaxed); }

  // Positions inbound SA i's window as if `top` had been the last number received (an SA resumed
  // where its state was saved). No-op without a window.
  void set_replay_top(uint32_t i, uint64_t top);
  // Inbound SA i's full sequence number for a packet carrying `low` (ESN inference).
  uint64_t infer_seq(uint32_t i, uint32_t low);
  // kNone, kReplayed or kTooOld for a packet not yet authenticated.
  DropReason replay_check(uint32_t i, uint64_t seq);
  // infer_seq and replay_check in one hold of the window's lock (the per-packet inbound step):
  // the full number in *seq, and the check's result.
  DropReason infer_and_check(uint32_t i, uint32_t low, uint64_t* seq);
  // After its ICV was verified: marks seq received; kReplayed (or kTooOld) when another copy
  // got there first.
  DropReason replay_accept(uint32_t i, uint64_t seq);

  // Inbound SA i's window (null: replay checks off), and its state set whole, for a copy of the
  // per-packet state kept elsewhere (the GPU's, apps/ipsec/esp_resident.h). Not while other
  // threads use the window.
  const ReplayWindow* window(uint32_t i) const { return windows_[i].w.get(); }
  void restore_window(uint32_t i, uint64_t top, const uint64_t* blocks) {
    if (windows_[i].w) windows_[i].w->restore(top, blocks);
  }

  // Live changes, from one thread (apps/ipsec/sa_control.h).
  // The index lookups read, and the one the table built (the first copy).
  const SaIndex& index() const { return *current_.load(std::memory_order_acquire); }
  SaIndex& built_index() { return built_; }
  std::atomic<const SaIndex*>& current_index() { return current_; }
  // Puts `sa` into a free slot with fresh state (sequence numbers from 1, an empty window), after
  // every SA there is in the SPD order, not yet linked into any index; kNoSa (the keys wiped)
  // when every slot is taken. Free slots are ones no reader can reach.
  uint32_t occupy(Sa sa);
  // Wipes slot i's SA (unlinked from every index, and no reader holding it) and frees the slot.
  void release(uint32_t i);
  // Slot i's place in the SPD order.
  uint64_t rank(uint32_t i) const { return rank_[i]; }
  // Whether slot i holds an SA.
  bool occupied(uint32_t i) const { return rank_[i] != kFree; }

 private:
  static constexpr uint64_t kFree = UINT64_MAX;
  struct alignas(64) SeqCounter {
    std::atomic<uint64_t> next{1};
  };
  struct alignas(64) Window {
    std::atomic_flag lock;
    std::unique_ptr<ReplayWindow> w;  // null: replay checks off (replay-window=0)
  };
  class Guard {
   public:
    explicit Guard(std::atomic_flag& f) : f_(f) {
      while (f_.test_and_set(std::memory_order_acquire)) {
        while (f_.test(std::memory_order_relaxed)) {
        }
      }
    }
    ~Guard() { f_.clear(std::memory_order_release); }

   private:
    std::atomic_flag& f_;
  };
  static DropReason reason(ReplayWindow::Check c) {
    return c == ReplayWindow::Check::kOk ? DropReason::kNone
                                         : c == ReplayWindow::Check::kReplayed ? kReplayed : kTooOld;
  }
  // Slot i takes `sa` with fresh state.
  void fill(uint32_t i, Sa sa, uint64_t rank);

  std::string path_;
  std::vector<Sa> sas_;  // per slot
  std::vector<EspTunnel> tunnels_;
  std::vector<uint64_t> rank_;  // kFree: a free slot
  std::unique_ptr<SeqCounter[]> seq_;
  std::unique_ptr<Window[]> windows_;
  std::vector<uint32_t> free_;  // free slots, the next to take last
  uint64_t next_rank_ = 0;
  std::atomic<size_t> used_{0}, outbound_{0}, inbound_{0};
  SaIndex built_;
  std::atomic<const SaIndex*> current_{&built_};
};

// The outbound AEAD SAs of a table by key and salt: a second outbound SA under a key in use would
// repeat its IVs (the sequence numbers). Holds hashes of the keys and slots, not the keys.
class AeadKeys {
 public:
  // The slot of an SA in `t` (inserted here) with sa's key and salt, or kNoSa; kNoSa for an SA
  // that is not an outbound AEAD one.
  uint32_t find(const SaTable& t, const Sa& sa) const;
  void insert(const Sa& sa, uint32_t slot);
  void erase(const Sa& sa, uint32_t slot);

 private:
  static bool applies(const Sa& sa) { return sa.dir == SaDir::kOut && sa.cipher != Cipher::kAes128Cbc; }
  static uint64_t hash(const Sa& sa);
  std::unordered_multimap<uint64_t, uint32_t> slots_;
};

}  // namespace tandem::ipsec
