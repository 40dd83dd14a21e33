// The L2 switch (CuckooSwitch) as a ForwardApp (apps/forward_app.h): the destination MAC of each
// Ethernet frame is looked up in the 2-8 cuckoo MAC table (scalar; the prefetch pipeline over the
// burst; or the GPU kernel, l2_gpu.h); a known station's frame goes to its port, an unknown or
// group destination is flooded (Verdict::kFloodPort, counted in Counters::tx_flooded). Frames are
// not parsed beyond Ethernet and never rewritten; only a frame shorter than an Ethernet header is
// dropped (kTruncated).
//
// The data path only reads the table: source-MAC learning (l2::learn) is the control plane's,
// done before the run (a static table, as in the G-Opt paper's L2 benchmark), and live updates
// (`add MAC PORT`, `del MAC`: mac_control.h) come from the control thread while the CPU paths
// forward. There are no input ports in an in-memory run, so 802.1D filtering (destination port =
// input port) does not apply.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "apps/forward_app.h"
#include "apps/forward_app_impl.h"
#include "apps/l2/l2_core.h"
#include "apps/l2/mac_control.h"
#include "apps/l2/mac_table.h"

namespace tandem::l2 {

class L2GpuTable;

// A switch's table and the entries it was built from (for the reference and the generator).
struct L2Setup {
  std::unique_ptr<MacTable> table;
  std::vector<std::pair<uint64_t, uint32_t>> entries;  // in insertion order; a later one wins
  uint32_t max_port = 0;
  std::string source;  // the file, or "random N"
  std::string warning;  // duplicate entries in the file (DuplicateKeys::warning), or ""
};

// From a `MAC PORT` file (l2_loader.h); throws L2TableError naming the file and line.
L2Setup load_l2_setup(const std::string& path);
// `n` random unicast MACs on ports 0..ports-1 (the paper's 1M / 16M tables), the same for a seed.
L2Setup random_l2_setup(size_t n, uint32_t ports, uint64_t seed);

struct L2Traits {
  using Key = uint64_t;  // destination MAC (first octet most significant)
  using Item = uint64_t;
  static constexpr const char* kName = "l2";

  // With `writable` (setup.table), the app takes live updates (table_control).
  explicit L2Traits(const L2Setup& setup, MacTable* writable = nullptr);
  ~L2Traits();
  L2Traits(L2Traits&&) noexcept;

  size_t ports() const { return size_t{setup->max_port} + 1; }
  // The whole-frame and resident paths read a device copy of the table as loaded (live updates
  // reach the offload path's copy only).
  L2FrameCore frame_core() const {
    const MacTable& t = *setup->table;
    return {t.slots(), t.slot_count(), t.bucket_mask()};
  }
  // classify and apply: the frame core's functions, called out of line (l2_app.cc) as the burst
  // loops were measured.
  DropReason classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off, uint32_t* flow) const;
  void prefetch(Key mac) const;
  uint32_t lookup(Key mac) const { return forward(live(), mac); }
  void lookup_batch(const Key* keys, uint32_t* results, size_t n) const;
  void to_item(Key k, Item* item) const { *item = k; }
  // Items arrive without classify's prefetches: the table's own pipelined batch lookup.
  void lookup_items(const Item* items, uint32_t* results, size_t n) const { forward_batch(live(), items, results, n); }
  uint32_t lookup_item(Item k) const { return lookup(k); }
  uint32_t apply(uint8_t* frame, uint32_t len, uint16_t l3_off, uint32_t result) const;
  std::unique_ptr<gpu::OffloadRunner> make_gpu_runner(const gpu::OffloadOptions& opts);
  void build_reference();
  uint32_t reference_verdict(const uint8_t* frame, uint32_t len, uint16_t l3_off) const;

  // The table lookups read: setup->table, or with live updates the copy the control last
  // published.
  const MacTable& live() const { return *current.load(std::memory_order_acquire); }
  // Live updates (mac_control.h), made on the first call; nullptr without `writable`. They reach
  // the offload runners' device copy too (gpu/table_updates.h), not the whole-frame and resident
  // paths' copies.
  TableControl* table_control();
  // Hands the control the device copy, once both exist.
  void connect_device_copy();

  const L2Setup* setup;
  MacTable* writable = nullptr;  // setup->table, which the control may change
  std::atomic<const MacTable*> current;
  std::unique_ptr<MacControl> control;
  std::unique_ptr<std::unordered_map<uint64_t, uint32_t>> ref;
  std::unique_ptr<L2GpuTable> gpu;
  std::shared_ptr<gpu::DeviceTableUpdates> gpu_updates;  // what the control stages for `gpu`
  bool persistent_runner = false;  // one was made: its kernel would not see updates
};

using L2App = ForwardAppImpl<L2Traits>;

}  // namespace tandem::l2
