// The IPv4 router as a ForwardApp (apps/forward_app.h): parse and validate, drop martians and
// expiring TTLs (ipv4_frame_core.h), longest-prefix match (scalar; the batched lookup over the
// burst, ipv4_cpu.h; or the GPU kernel), then TTL decrement, incremental checksum and the next hop's
// port. The lookup reads the table chosen by name (ipv4_table.h make_table): DIR-24-8 on every
// path, or Poptrie on the CPU paths.
#pragma once

#include <memory>
#include <string>
#include <type_traits>

#include "apps/forward_app.h"
#include "apps/forward_app_impl.h"
#include "apps/ipv4/dir24_8.h"
#include "apps/ipv4/fib_loader.h"
#include "apps/ipv4/ipv4_frame_core.h"
#include "apps/ipv4/ipv4_table.h"
#include "apps/ipv4/poptrie.h"
#include "apps/ipv4/ref_trie.h"
#include "apps/ipv4/route_control.h"

namespace tandem::ipv4 {

class Ipv4GpuTable;

// Table: Dir24_8 or Poptrie. The per-packet lookup is the table's own, resolved at compile time.
template <class Table>
struct Ipv4Traits {
  using Key = uint32_t;   // destination address, host order
  using Item = uint32_t;
  static constexpr const char* kName = "ipv4";

  // `table` and `fib` (the routes it was built from, for the reference) must outlive the app.
  Ipv4Traits(const Table& table, const Fib& fib, Table* writable = nullptr);
  ~Ipv4Traits();
  Ipv4Traits(Ipv4Traits&&) noexcept;

  size_t ports() const { return size_t{fib->max_next_hop} + 1; }
  // DIR-24-8 only: the GPU reads no other table.
  Ipv4FrameCore frame_core() const
    requires std::is_same_v<Table, Dir24_8>
  {
    return {table->tbl24(), Dir24_8::kTbl24Entries, table->tbl8(),
            uint64_t{table->tbl8_groups_high_water()} * Dir24_8::kTbl8GroupEntries};
  }
  // classify and apply are defined out of line (ipv4_app.cc) so that they stay calls in the burst
  // loops, which is how those loops were measured (ipv4_register.cc).
  DropReason classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off, uint32_t* flow) const;
  void prefetch(Key k) const {
    if constexpr (std::is_same_v<Table, Dir24_8>) {
      prefetch_read(&live().tbl24()[dir24_8_tbl24_index(k)]);
    } else {
      prefetch_read(&live().view().direct[poptrie_direct_index(live().view(), k)]);
    }
  }
  uint32_t lookup(Key k) const { return live().lookup(k); }
  void lookup_batch(const Key* keys, uint32_t* results, size_t n) const;
  void to_item(Key k, Item* item) const { *item = k; }
  void lookup_items(const Item* items, uint32_t* results, size_t n) const { lookup_batch(items, results, n); }
  uint32_t lookup_item(Item k) const { return lookup(k); }
  uint32_t apply(uint8_t* frame, uint32_t len, uint16_t l3_off, uint32_t result) const;
  // DIR-24-8: a runner over a device copy of the table. Poptrie: throws UsageError (no GPU path).
  std::unique_ptr<gpu::OffloadRunner> make_gpu_runner(const gpu::OffloadOptions& opts);
  void build_reference();
  uint32_t reference_verdict(const uint8_t* frame, uint32_t len, uint16_t l3_off) const;

  // The table lookups read: `table`, or with live updates the copy the control last published.
  const Table& live() const { return *current.load(std::memory_order_acquire); }
  // DIR-24-8: live route updates (route_control.h), made on the first call; they reach the offload
  // runners' device copy too (gpu/table_updates.h), not the whole-frame and resident paths' copies.
  // Poptrie: none (nullptr).
  TableControl* table_control();
  // Hands the control the device copy, once both exist.
  void connect_device_copy();

  const Table* table;
  Table* writable = nullptr;  // DIR-24-8: `table`, which the control may change
  std::atomic<const Table*> current;
  std::unique_ptr<RouteControl> control;
  const Fib* fib;
  std::unique_ptr<RefTrie> ref;
  std::unique_ptr<Ipv4GpuTable> gpu;  // made by the first make_gpu_runner
  std::shared_ptr<gpu::DeviceTableUpdates> gpu_updates;  // what the control stages for `gpu`
  bool persistent_runner = false;  // one was made: its kernel would not see updates
};

using Ipv4App = ForwardAppImpl<Ipv4Traits<Dir24_8>>;
using Ipv4PoptrieApp = ForwardAppImpl<Ipv4Traits<Poptrie>>;

// The router over whichever table `table` holds; `table` and `fib` must outlive it.
// With a writable DIR-24-8 table, the app takes live route updates (ForwardApp::table_control).
std::unique_ptr<ForwardApp> make_app(RouteTable& table, const Fib& fib);

// Why the table called `table_name` has no GPU path ("" for DIR-24-8): what --device gpu is
// refused with (AppSpec::no_gpu_path).
std::string no_gpu_path(const std::string& table_name);

}  // namespace tandem::ipv4
