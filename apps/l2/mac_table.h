// The L2 switch's MAC table: MAC (48 bits) -> port, a 2-8 cuckoo hash table (CuckooSwitch, Zhou et
// al. CoNEXT'13). Layout, hashes and the per-key lookup are in apps/l2/cuckoo_core.h; this is the
// control plane (insert, erase, sizing), the CPU lookup paths and the learning-switch semantics.
//
// Insert: update in place if the MAC is in either bucket; else the first free slot of bucket 1,
// then bucket 2; else a cuckoo path found by breadth-first search (as CuckooSwitch / MemC3's
// optimistic cuckoo hashing): from the two full buckets, each slot's entry could move to its other
// bucket; the search looks for the shortest chain of at most kMaxPathLength moves ending in a free
// slot, examining at most kMaxSearchBuckets buckets. The search only reads; if it finds nothing
// insert returns kFull and the table is exactly as before (no entry lost, none moved).
//
// Concurrency: one writer (insert/erase/learn; callers serialize writers, e.g. one control thread
// or a mutex) and any number of readers on other threads without locks. Every slot changes by one
// aligned 64-bit store, so a reader sees an entry entirely or not at all (plain aligned 8-byte
// loads are single-copy atomic on x86-64 and on GPUs; DPDK's rte_hash relies on the same).
// A cuckoo path is applied from its end: the last entry is first copied into the free slot, then
// the one before it into the slot just copied from, and so on; the new entry is stored last, into
// the first slot. So every key is in the table at every instant (briefly twice, never zero times)
// and the new key appears with one store. That alone cannot stop a reader from probing bucket 1
// before a key moves in and bucket 2 after it has moved out; the writer therefore brackets each
// path with a sequence counter (odd while moving), and a reader that missed re-reads the counter
// and retries if a move overlapped its probes (MemC3's version counters; one for the whole table,
// as only a miss that overlaps a path's few stores retries). Hits need no check: a slot read is
// always a real entry.
//
// Memory: buckets = next power of two >= capacity / (max_load * 8), at least 2; 64 bytes each, in
// a HugeRegion (2 MiB-aligned, transparent hugepages). E.g. 1M entries -> 2^18 buckets = 16 MiB;
// 16M entries -> 2^22 buckets = 256 MiB.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>
#include <memory>
#include <string>
#include <string_view>

#include "apps/l2/cuckoo_core.h"
#include "core/huge_memory.h"

namespace tandem::l2 {

class MacTable {
 public:
  // Highest load (entries / slots) the sizing plans for. The bounded search below fills a 2-8
  // table to 99.4-99.7% before its first kFull (random MACs, 8K-8M slots; with at most 1 move:
  // 80-85%, 2 moves: 97%, 3 moves and 256 buckets: 98%), so 0.9 leaves a wide margin: no insert
  // up to 0.9 needed more than 2 moves.
  static constexpr double kDefaultMaxLoad = 0.9;
  // Bounds of one insert's path search. With 2048 buckets the budget binds before the length (the
  // longest path seen is 4 moves); 8192 buckets reach 99.7% at half the insert rate near full.
  static constexpr uint32_t kMaxPathLength = 5;        // moves in one cuckoo path
  static constexpr uint32_t kMaxSearchBuckets = 2048;  // buckets the path search may examine

  enum class Status {
    kInserted,  // a new entry
    kUpdated,   // the MAC was there: its port replaced (or already equal; then nothing is written)
    kFull,      // no free slot reachable by a bounded cuckoo path; the table is unchanged
    kBadMac,    // above 48 bits (or, for learn(), a group address)
    kBadPort,   // above kMaxPort
  };

  // A table for `capacity` entries at a load of at most `max_load` (0 < max_load <= 1).
  // Throws std::invalid_argument for a bad max_load, std::runtime_error if memory cannot be mapped.
  explicit MacTable(size_t capacity, double max_load = kDefaultMaxLoad);
  MacTable(const MacTable&) = delete;
  MacTable& operator=(const MacTable&) = delete;
  // A copy slot for slot (same buckets, entries in the same slots). Insert and erase depend only on
  // the slots, so two such copies given the same operations stay equal, cuckoo paths and kFull
  // included: what the live updates' second copy needs (mac_control.h). Not safe against a
  // concurrent writer.
  std::unique_ptr<MacTable> clone() const;

  Status insert(uint64_t mac, uint32_t port);
  // Removes `mac`; false if it was not there.
  bool erase(uint64_t mac);

  // The port of `mac`, or kMiss. Safe against a concurrent writer (see above).
  uint32_t lookup(uint64_t mac) const;
  // ports[i] = lookup(macs[i]), with both buckets of each key prefetched kBatchDistance keys ahead
  // (mac_lookup_pipeline below: 4-6x one key at a time on the development machine).
  void lookup_batch(const uint64_t* macs, uint32_t* ports, size_t n) const;

  size_t size() const { return size_; }
  // Entries the table was sized for: slots * max_load. Inserts beyond it usually still succeed
  // (up to the load a bounded search reaches) but may return kFull.
  size_t capacity() const { return capacity_; }
  size_t bucket_count() const { return static_cast<size_t>(mask_) + 1; }
  size_t slot_count() const { return bucket_count() * kSlotsPerBucket; }
  double load_factor() const { return static_cast<double>(size_) / static_cast<double>(slot_count()); }
  double max_load() const { return max_load_; }
  size_t memory_bytes() const { return slot_count() * sizeof(uint64_t); }

  // The arrays a GPU copy or a bench reads (cuckoo_core.h): bucket_count() * 8 slots, and the mask.
  const uint64_t* slots() const { return slots_; }
  uint64_t bucket_mask() const { return mask_; }
  // Incremented by every insert or erase that changed the table: lets copies know they are stale.
  uint64_t version() const { return version_; }
  // Entries moved by cuckoo paths so far, and the longest path applied (in moves).
  uint64_t cuckoo_moves() const { return cuckoo_moves_; }
  uint32_t longest_path() const { return longest_path_; }

  static const char* status_name(Status s);

  // While set, every slot written is appended to `log` (its index; repeats possible): what a
  // device copy must take after a batch of changes (mac_control.h). Null: none kept.
  void set_change_log(std::vector<uint64_t>* log) { change_log_ = log; }

 private:
  struct Buckets {
    uint64_t count;  // a power of two, at least 2
  };
  MacTable(Buckets buckets, double max_load);
  struct PathStep {
    uint64_t bucket;
    uint32_t slot;
  };
  // Fills path[0..len] (path[0] in one of the MAC's buckets, path[len] a free slot); false if none.
  bool find_cuckoo_path(uint64_t b1, uint64_t b2, PathStep* path, uint32_t* len) const;
  void store(uint64_t index, uint64_t value);
  int free_slot(uint64_t bucket) const;
  uint64_t other_bucket(uint64_t slot_value, uint64_t bucket) const;

  // Read by every lookup: on a line of their own, away from the writer's counters.
  alignas(64) uint64_t* slots_ = nullptr;
  uint64_t mask_ = 0;
  // Odd while a cuckoo path is being applied (see above).
  alignas(64) std::atomic<uint64_t> move_seq_{0};
  alignas(64) HugeRegion mem_;
  size_t size_ = 0;
  size_t capacity_ = 0;
  double max_load_ = kDefaultMaxLoad;
  uint64_t version_ = 0;
  uint64_t cuckoo_moves_ = 0;
  uint32_t longest_path_ = 0;
  std::vector<uint64_t>* change_log_ = nullptr;
};

// ---- the batched lookup ----
//
//   pipeline: prefetch both buckets of key i + distance, then look up key i (bucket addresses kept
//             in a ring, so each key is hashed once).
// Measured against the benchmarks' variants (bench/variants/l2_variants.h):
//   groups:   for `group` keys at a time, hash and prefetch all their buckets, then probe them.
// Both probe bucket 1, then bucket 2 on a miss (mac_lookup_buckets). Measured on the 2-core AMD
// EPYC development VM (one core, 8M random lookups, M lookups/s, median of 5; tables sized by
// MacTable(N), load 0.5; all keys present / half absent):
//                        1M entries (16 MiB)   16M entries (256 MiB)
//   scalar lookup()          24 / 15               15 / 10
//   pipeline 16             107 / 82               68 / 58
//   pipeline 32             136 / 85               87 / 65    <- lookup_batch
//   pipeline 64             146 / 80               86 / 64
//   groups 32 / 64      114-143 / 73-76         67-75 / 54-59
//   both buckets, AND    89-104 / 91-113         46-59 / 58
// (groups of 8 and pipelines of 4-8 keep too few misses in flight: 30-55.) Probing both buckets
// without a branch wins only with many absent keys on a cache-resident table; a switch's
// destinations are mostly known. At load 0.9 (13% of entries in bucket 2) pipeline 32 gives
// 107 / 82 (1M) and 77 / 64 (16M). The distance is a parameter so that the benchmarks can sweep
// it.
inline constexpr uint32_t kBatchDistance = 32;
void mac_lookup_pipeline(const MacTable& t, const uint64_t* macs, uint32_t* ports, size_t n,
                         uint32_t distance);

// ---- learning switch ----
//
// learn(): on every frame, the source MAC is bound to the port it came in on (insert or update;
// a station that moved is re-bound at once). A group source MAC is not a station: not learned
// (kBadMac). forward(): the destination's port; kFlood for an unknown destination (the frame goes
// out of every port but the one it came in on, and the reply teaches the switch where the station
// is) and for group (multicast/broadcast) destinations, which this switch always floods. Dropping
// a frame whose destination port is its input port (802.1D filtering) is the caller's apply step.
// No aging: entries stay until erased or re-learned.
MacTable::Status learn(MacTable& table, uint64_t src_mac, uint32_t in_port);
uint32_t forward(const MacTable& table, uint64_t dst_mac);
// ports[i] = forward(table, dst_macs[i]), through lookup_batch.
void forward_batch(const MacTable& table, const uint64_t* dst_macs, uint32_t* ports, size_t n);

// ---- MAC text ----

// Parses "aa:bb:cc:dd:ee:ff" strictly: exactly six groups of exactly two hex digits (either case)
// separated by ':' and nothing else (no spaces, no '-', no "a:b:..."). False if malformed.
bool parse_mac(std::string_view text, uint64_t* mac);
// "aa:bb:cc:dd:ee:ff", lower case, from the low 48 bits of `mac`.
std::string format_mac(uint64_t mac);

}  // namespace tandem::l2
