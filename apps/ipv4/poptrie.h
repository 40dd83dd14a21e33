// Poptrie IPv4 forwarding table (Asai & Ohara, SIGCOMM 2015; layout in poptrie_core.h): a
// compressed multiway trie of a few MiB that stays in the CPU caches, where DIR-24-8's 64 MiB
// tbl24 makes most random lookups a DRAM access.
//
// Built in one pass from a route list and immutable afterwards: there is no incremental update.
// A change to the routes means building a new Poptrie (well under a second for a full BGP table)
// and swapping it in for the old one once no reader uses the old one any more.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "apps/ipv4/fib_loader.h"
#include "apps/ipv4/poptrie_core.h"
#include "core/huge_memory.h"

namespace tandem::ipv4 {

// A route list the Poptrie cannot represent (bad prefix length, too many distinct next hops) or a
// bad build parameter.
class PoptrieError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Poptrie {
 public:
  static constexpr int kDefaultDirectBits = 18;  // the paper's s = 18: a 1 MiB direct table
  static constexpr int kMinDirectBits = 8;
  static constexpr int kMaxDirectBits = 24;
  // Leaves are 16-bit and leaf 0 means "no route": at most 65535 distinct next hops.
  static constexpr size_t kMaxNextHops = 65535;

  // Builds from `routes` (host bits are ignored; for a prefix listed twice the later one wins, as in
  // RefTrie). Throws PoptrieError for a prefix length over 32, more than kMaxNextHops distinct next
  // hops, or direct_bits outside kMinDirectBits..kMaxDirectBits.
  static Poptrie build(const std::vector<Route>& routes, int direct_bits = kDefaultDirectBits);

  Poptrie(Poptrie&&) noexcept = default;
  Poptrie& operator=(Poptrie&&) noexcept = default;
  Poptrie(const Poptrie&) = delete;
  Poptrie& operator=(const Poptrie&) = delete;

  // Next hop of the longest prefix containing `ip` (host byte order), or kNoRoute.
  uint32_t lookup(uint32_t ip) const;
  // next_hops[i] = lookup(ips[i]) for i < n: the fast path (see poptrie.cc for how it was chosen).
  void lookup_batch(const uint32_t* ips, uint32_t* next_hops, size_t n) const;

  // The arrays, for other lookup paths (a GPU copy, benches).
  const PoptrieView& view() const { return view_; }
  int direct_bits() const { return static_cast<int>(view_.direct_bits); }
  size_t direct_entries() const { return size_t{1} << view_.direct_bits; }
  size_t node_count() const { return node_count_; }
  size_t leaf_count() const { return leaf_count_; }
  size_t next_hop_count() const { return next_hop_count_; }  // distinct next hops, plus "no route"
  // Bytes of the four arrays (each padded to 64 bytes), what a lookup may touch.
  size_t memory_bytes() const { return memory_bytes_; }

 private:
  Poptrie() = default;

  HugeRegion memory_;  // the four arrays, each 64-byte aligned, in one hugepage-backed region
  PoptrieView view_{};
  size_t node_count_ = 0;
  size_t leaf_count_ = 0;
  size_t next_hop_count_ = 0;
  size_t memory_bytes_ = 0;
  bool have_popcnt_ = false;  // the CPU has a popcount instruction: use the loops compiled for it
};

}  // namespace tandem::ipv4
