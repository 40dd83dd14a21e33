// IPv6 forwarding table with the rte_lpm6 layout (the control plane: add, delete, and the arrays
// the data plane reads; lpm6_core.h is the lookup). Not thread-safe for concurrent writers. Readers
// on other threads see each entry update atomically (32-bit stores, new groups filled before they
// are published), as in rte_lpm6; a group freed by delete is reused at once (no RCU grace period).
//
// Memory: tbl24 is 64 MiB. The tbl8 group pool reserves address space for max_groups once (16 GiB
// of it by default, nothing committed), so tbl8() never moves while the table grows; memory is
// touched 2 MiB (2048 groups) at a time as groups are first needed, and 2 MiB-aligned with
// hugepages advised, as core/huge_memory.h does for tbl24.
//
// Costs: add and delete touch the 2^(end - depth) slots of the prefix's range at its level, plus
// the groups below extended slots of that range whose background the route is (a short route added
// over many long ones rewrites their groups' background slots; ::/0 may touch the whole table).
// Delete finds the replacement, the longest shorter rule covering the prefix, with one hash look-up
// per shorter depth (<= 128), and folds groups that stop holding anything of their own back into
// their parent entry, up the path. Measured on the development VM: the real table's 160k routes
// add in 0.06-0.2 s and delete (shuffled) in ~0.55 s; the random 200k /48../64 table adds in
// ~0.25 s once its 0.9 GiB has been faulted in (the first touch of fresh memory can cost seconds
// on a VM) and deletes in ~0.75 s. Adding never rebuilds anything; deleting everything leaves no
// group allocated.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "apps/ipv6/lpm6_core.h"
#include "core/huge_memory.h"

namespace tandem::ipv6 {

using Addr6 = std::array<uint8_t, 16>;  // an IPv6 address, network byte order

// The batched lookups, all equal in result (ipv6_lpm_test checks each against the reference trie).
enum class Lpm6Lookup {
  kWindow,  // lpm6_lookup_window: kBatchWindow lookups in flight, one access each; any CPU
  kAvx512,  // lpm6_lookup_avx512: 16 lookups per gather, levels walked under a mask; AVX-512 F+BW
};
const char* lpm6_lookup_name(Lpm6Lookup kind);
bool lpm6_avx512_supported();  // this CPU runs kAvx512
// The fastest lookup this CPU runs (docs/RESULTS.md, "IPv6 lookups against rte_fib6").
Lpm6Lookup default_lookup();

class Lpm6 {
 public:
  static constexpr uint32_t kTbl24Entries = 1u << 24;
  static constexpr uint32_t kGroupEntries = 256;
  static constexpr uint32_t kMaxGroups = 1u << 24;  // group indices fill the 24-bit value field
  static constexpr uint32_t kGroupsPerChunk = 2048;  // the pool is touched 2 MiB at a time

  enum class Status { kOk, kBadDepth, kBadNextHop, kNoTbl8Space, kNotFound };

  // `max_groups` caps the pool (tests use small caps to exercise kNoTbl8Space). Where the address
  // space cannot be reserved (vm.overcommit_memory=2, ulimit -v), the cap is halved until it can.
  // Throws std::runtime_error if not even one chunk can be.
  explicit Lpm6(uint32_t max_groups = kMaxGroups);
  Lpm6(const Lpm6&) = delete;
  Lpm6& operator=(const Lpm6&) = delete;

  // Adds (or replaces the next hop of) prefix/depth, depth 0..128; host bits are ignored.
  // kNoTbl8Space (the pool cap) leaves the table unchanged.
  Status add(const uint8_t prefix[16], uint8_t depth, uint32_t next_hop);
  // Deletes prefix/depth; addresses it covered fall back to the next shorter covering prefix.
  Status remove(const uint8_t prefix[16], uint8_t depth);

  uint32_t lookup(const uint8_t addr[16]) const { return lpm6_lookup(tbl24_, tbl8_, addr); }
  // hops[i] = lookup(addrs[i]), by the selected lookup (below). The paths the benchmarks measure
  // against it are in bench/variants/ipv6_variants.h.
  void lookup_batch(const uint8_t (*addrs)[16], uint32_t* hops, size_t n) const;
  // Chooses lookup_batch's algorithm (DPDK's rte_fib6_select_lookup); false, and the choice
  // unchanged, where this CPU cannot run it. A new table starts on default_lookup(). Not while
  // other threads look up in the table (the choice is a plain field).
  bool select_lookup(Lpm6Lookup kind);
  Lpm6Lookup selected_lookup() const { return lookup_kind_; }

  // The arrays a bench or a GPU copy reads: tbl24 has kTbl24Entries entries; tbl8 holds
  // groups_high_water() groups of kGroupEntries entries (the part a copy needs).
  const uint32_t* tbl24() const { return tbl24_; }
  const uint32_t* tbl8() const { return tbl8_; }
  uint32_t groups_high_water() const { return high_water_; }
  uint32_t groups_in_use() const { return high_water_ - static_cast<uint32_t>(free_groups_.size()); }
  uint32_t group_capacity() const { return capacity_; }  // groups touched so far
  uint32_t max_groups() const { return max_groups_; }
  // Bytes of table memory touched (tbl24 + the group pool's capacity), and the part in use.
  size_t memory_bytes() const;
  size_t memory_bytes_in_use() const;
  size_t rule_count() const { return rule_count_; }
  // Incremented by every successful add/remove: lets copies (GPU tables) know they are stale.
  uint64_t version() const { return version_; }

  static const char* status_name(Status s);

 private:
  struct PrefixKey {
    uint64_t hi, lo;
    bool operator==(const PrefixKey&) const = default;
  };
  struct PrefixKeyHash {
    size_t operator()(const PrefixKey& k) const;
  };
  static PrefixKey key_of(const uint8_t* prefix);

  uint32_t* group(uint32_t g) const { return tbl8_ + size_t{g} * kGroupEntries; }
  bool reserve_groups(uint32_t needed);
  uint32_t alloc_group();
  void free_group(uint32_t g);
  void extend(uint32_t* slot);
  void set_background(uint32_t g, uint32_t background);
  bool find_covering(const uint8_t* prefix, int below_depth, uint32_t* next_hop, int* depth) const;

  // Address space reserved with mmap (PROT_READ|PROT_WRITE, MAP_NORESERVE), unmapped on destruction.
  struct Reservation {
    void* map = nullptr;
    size_t bytes = 0;
    Reservation() = default;
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    ~Reservation();
  };

  HugeRegion tbl24_mem_;
  Reservation tbl8_reserved_;
  uint32_t* tbl24_ = nullptr;
  uint32_t* tbl8_ = nullptr;
  uint32_t max_groups_;
  uint32_t capacity_ = 0;
  uint32_t high_water_ = 0;
  std::vector<uint32_t> free_groups_;  // freed group indices below high_water_ (a stack)
  // The rules, by depth: what delete needs to find the next shorter covering prefix.
  std::array<std::unordered_map<PrefixKey, uint32_t, PrefixKeyHash>, 129> rules_;
  size_t rule_count_ = 0;
  uint64_t version_ = 0;
  Lpm6Lookup lookup_kind_ = default_lookup();
};

// The batched lookup, measured against the benchmarks' variants (bench/variants/ipv6_variants.h).
// On the 2-core AMD EPYC development VM (4 M addresses; speed-ups over one address at a time): the
// window of 128 gains ~4x on uniform addresses (almost all stop at tbl24), ~1.7x inside the real
// table's prefixes (3-4 accesses, much of the 100 MiB table cached) and ~10x on the random 48..64
// table (5-6 accesses, 0.9 GiB); prefetching tbl24 only is as good on uniform addresses and
// useless past tbl24; group prefetching by level reaches half to 70% of the window, as it waits
// for the slowest lookup of each level. Windows of 16 and 32 keep too few misses in flight; 256
// is no better than 128.
//
// A window of `window` lookups in flight (rounded up to a power of two, 4..256; round robin): each
// step loads the entry a lookup prefetched on its previous step, then prefetches the next group's
// slot, or finishes and starts the next address in its place (AMAC-style). Every lookup always
// has one access in flight, whatever its depth. The window is a parameter so that the benchmarks
// can sweep it.
inline constexpr uint32_t kBatchWindow = 128;
void lpm6_lookup_window(const Lpm6& t, const uint8_t (*addrs)[16], uint32_t* hops, size_t n,
                        uint32_t window);

// Lookups in sets of 16 lanes: the tbl24 entries of a set in one gather, then, while any lane is
// extended, one masked gather per level for the lanes still walking. 128 addresses at a time walk
// as eight sets whose gathers of a level are in flight together, the rest as two (32) or one set,
// the last 0-15 one at a time. lpm6_lookup_window where the CPU has no AVX-512 F+BW.
void lpm6_lookup_avx512(const Lpm6& t, const uint8_t (*addrs)[16], uint32_t* hops, size_t n);
// The same on bare arrays of the layout (tbl24: kTbl24Entries entries; tbl8: the groups any entry
// points to), for tests that lay out groups the pool would reach only with gigabytes of routes.
void lpm6_lookup_avx512(const uint32_t* tbl24, const uint32_t* tbl8, const uint8_t (*addrs)[16], uint32_t* hops,
                        size_t n);

// Views an array of addresses as the rows the lookups take.
inline const uint8_t (*addr_rows(const Addr6* a))[16] {
  static_assert(sizeof(Addr6) == 16 && alignof(Addr6) == 1);
  return reinterpret_cast<const uint8_t(*)[16]>(a);
}

}  // namespace tandem::ipv6
