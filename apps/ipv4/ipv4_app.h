// The IPv4 router as a ForwardApp (apps/forward_app.h): parse and validate, drop martians and
// expiring TTLs (ipv4_frame_core.h), DIR-24-8 lookup (scalar; software-pipelined prefetch over the
// burst; or the GPU kernel), then TTL decrement, incremental checksum and the next hop's port.
#pragma once

#include <memory>

#include "apps/forward_app.h"
#include "apps/forward_app_impl.h"
#include "apps/ipv4/dir24_8.h"
#include "apps/ipv4/fib_loader.h"
#include "apps/ipv4/ref_trie.h"

namespace tandem::ipv4 {

class Ipv4GpuTable;

struct Ipv4Traits {
  using Key = uint32_t;   // destination address, host order
  using Item = uint32_t;
  static constexpr const char* kName = "ipv4";

  // `table` and `fib` (the routes it was built from, for the reference) must outlive the app.
  Ipv4Traits(const Dir24_8& table, const Fib& fib);
  ~Ipv4Traits();
  Ipv4Traits(Ipv4Traits&&) noexcept;

  size_t ports() const { return size_t{fib->max_next_hop} + 1; }
  DropReason classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off, uint32_t* flow) const;
  void prefetch(Key k) const { prefetch_read(&table->tbl24()[dir24_8_tbl24_index(k)]); }
  uint32_t lookup(Key k) const { return table->lookup(k); }
  void lookup_batch(const Key* keys, uint32_t* results, size_t n) const;
  void to_item(Key k, Item* item) const { *item = k; }
  void lookup_items(const Item* items, uint32_t* results, size_t n) const { lookup_batch(items, results, n); }
  uint32_t lookup_item(Item k) const { return lookup(k); }
  uint32_t apply(uint8_t* frame, uint32_t len, uint16_t l3_off, uint32_t result) const;
  std::unique_ptr<gpu::OffloadRunner> make_gpu_runner(const gpu::OffloadOptions& opts);
  void build_reference();
  uint32_t reference_verdict(const uint8_t* frame, uint32_t len, uint16_t l3_off) const;

  const Dir24_8* table;
  const Fib* fib;
  std::unique_ptr<RefTrie> ref;
  std::unique_ptr<Ipv4GpuTable> gpu;  // made by the first make_gpu_runner
};

using Ipv4App = ForwardAppImpl<Ipv4Traits>;

}  // namespace tandem::ipv4
