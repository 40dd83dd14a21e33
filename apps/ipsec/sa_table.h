// The gateway's security association database at run time, built from an SA file
// (apps/ipsec/sa_file.h): outbound SAs found by selector, inbound ones by SPI, and the state that
// changes per packet (outbound sequence numbers, inbound anti-replay windows), safe to share
// between worker threads.
//
// Selection: the first outbound SA in file order whose selector holds the packet's source and
// destination (RFC 4301's ordered SPD). Selectors of one host pair each (the Koromilas et al.
// workload, an SA per connection) are found in a hash map; prefixes are tried in order, only up to
// the exact match, so file order decides as it would for a plain scan.
//
// Sequence numbers: one atomic counter per outbound SA; workers sending on one SA take numbers
// from it, so each number is sent once. Replay windows: a spinlock per inbound SA; a packet is
// checked before its ICV is verified and checked again when the window is updated, so two copies
// of one packet on two workers cannot both pass.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
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

class SaTable {
 public:
  // Throws TableError (naming the file and the lines) for two outbound AEAD SAs with the same key
  // and salt: their IVs (the sequence numbers) would repeat under one key.
  explicit SaTable(SaFile file);
  SaTable(const SaTable&) = delete;
  SaTable& operator=(const SaTable&) = delete;

  const SaFile& file() const { return file_; }
  size_t size() const { return file_.sas.size(); }
  const Sa& sa(uint32_t i) const { return file_.sas[i]; }
  const EspTunnel& tunnel(uint32_t i) const { return tunnels_[i]; }
  size_t outbound() const { return outbound_; }
  size_t inbound() const { return size() - outbound_; }

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

 private:
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

  SaFile file_;
  std::vector<EspTunnel> tunnels_;
  size_t outbound_ = 0;
  std::unique_ptr<SeqCounter[]> seq_;
  std::unique_ptr<Window[]> windows_;
  std::unordered_map<uint32_t, uint32_t> by_spi_;
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
  // Host-pair selectors -> the first SA in file order with it.
  std::unordered_map<Pair, uint32_t, PairHash> exact_;
  std::vector<uint32_t> prefixed_;  // outbound SAs with a shorter prefix, in file order
};

}  // namespace tandem::ipsec
