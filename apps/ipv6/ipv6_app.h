// The IPv6 router as a ForwardApp (apps/forward_app.h): parse and validate (core/parse.h), drop
// what a router must not forward, look the destination up in the Lpm6 table (scalar; the windowed
// batch lookup over the burst; or the GPU kernel, ipv6_gpu.h), decrement the hop limit and send to
// the next hop's port. IPv6 has no header checksum to patch.
//
// Dropped before the lookup: IPv4 and non-IP frames (kNotHandled, as the IPv4 app drops IPv6);
// multicast destinations (ff00::/8: not unicast routed, kNotHandled); martians (kMartian): the
// unspecified address :: or loopback ::1 as source or destination, a multicast source, link-local
// fe80::/10 on either side (RFC 4291 2.5.6: never forwarded off the link); a hop limit <= 1
// (kTtlExceeded).
#pragma once

#include <memory>

#include "apps/forward_app.h"
#include "apps/forward_app_impl.h"
#include "apps/ipv6/fib6_loader.h"
#include "apps/ipv6/ipv6_core.h"
#include "apps/ipv6/lpm6.h"
#include "apps/ipv6/ref_trie6.h"

namespace tandem::ipv6 {

class Ipv6GpuTable;

// Adds every route of `fib` to `table`; throws std::runtime_error naming the file and the route
// that did not fit.
void build_table(const Fib6& fib, Lpm6& table);

struct Ipv6Traits {
  using Key = Addr6;  // destination, network order
  using Item = Addr6;
  static constexpr const char* kName = "ipv6";

  Ipv6Traits(const Lpm6& table, const Fib6& fib);
  ~Ipv6Traits();
  Ipv6Traits(Ipv6Traits&&) noexcept;

  size_t ports() const { return size_t{fib->max_next_hop} + 1; }
  Ipv6FrameCore frame_core() const {
    return {table->tbl24(), Lpm6::kTbl24Entries, table->tbl8(), uint64_t{table->groups_high_water()} * Lpm6::kGroupEntries};
  }
  // classify and apply: the frame core's functions, called out of line (ipv6_app.cc) as the burst
  // loops were measured.
  DropReason classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off, uint32_t* flow) const;
  void prefetch(const Key& k) const {
    prefetch_read(&table->tbl24()[(uint32_t{k[0]} << 16) | (uint32_t{k[1]} << 8) | k[2]]);
  }
  uint32_t lookup(const Key& k) const { return table->lookup(k.data()); }
  void lookup_batch(const Key* keys, uint32_t* results, size_t n) const { table->lookup_batch(addr_rows(keys), results, n); }
  void to_item(const Key& k, Item* item) const { *item = k; }
  void lookup_items(const Item* items, uint32_t* results, size_t n) const { lookup_batch(items, results, n); }
  uint32_t lookup_item(const Item& k) const { return lookup(k); }
  uint32_t apply(uint8_t* frame, uint32_t len, uint16_t l3_off, uint32_t result) const;
  std::unique_ptr<gpu::OffloadRunner> make_gpu_runner(const gpu::OffloadOptions& opts);
  void build_reference();
  uint32_t reference_verdict(const uint8_t* frame, uint32_t len, uint16_t l3_off) const;

  const Lpm6* table;
  const Fib6* fib;
  std::unique_ptr<RefTrie6> ref;
  std::unique_ptr<Ipv6GpuTable> gpu;
};

using Ipv6App = ForwardAppImpl<Ipv6Traits>;

}  // namespace tandem::ipv6
