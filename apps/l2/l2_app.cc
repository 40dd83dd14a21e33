#include "apps/l2/l2_app.h"

#include <algorithm>

#include "apps/l2/l2_gpu.h"
#include "gpu/table_updates.h"
#include "apps/l2/l2_loader.h"
#include "core/byte_order.h"
#include "core/flow_hash.h"

namespace tandem::l2 {

L2Setup load_l2_setup(const std::string& path) {
  L2Setup s;
  s.table = std::make_unique<MacTable>(std::max<size_t>(count_l2_entries(path), 1024));
  const L2LoadStats st = load_l2_table(path, *s.table, &s.entries);
  s.max_port = st.max_port;
  s.source = path;
  s.warning = st.duplicates.warning("MAC entries");
  return s;
}

L2Setup random_l2_setup(size_t n, uint32_t ports, uint64_t seed) {
  L2Setup s;
  s.table = std::make_unique<MacTable>(std::max<size_t>(n, 1024));
  s.entries.reserve(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  while (s.entries.size() < n) {
    x += 0x9E3779B97F4A7C15ull;
    const uint64_t mac = mix64(x) & kMacMask & ~kMacGroupBit;  // unicast
    const uint32_t port = static_cast<uint32_t>(mix64(x ^ 0x5bd1e995) % ports);
    const MacTable::Status st = s.table->insert(mac, port);
    if (st == MacTable::Status::kFull) throw std::runtime_error("random MAC table: full at " + std::to_string(s.entries.size()));
    if (st == MacTable::Status::kInserted) s.entries.emplace_back(mac, port);
  }
  s.max_port = ports ? ports - 1 : 0;
  s.source = "random " + std::to_string(n) + " MACs";
  return s;
}

L2Traits::L2Traits(const L2Setup& s, MacTable* w) : setup(&s), writable(w), current(s.table.get()) {}
L2Traits::~L2Traits() = default;
// Before any control exists (it holds a reference to `current`).
L2Traits::L2Traits(L2Traits&& o) noexcept
    : setup(o.setup), writable(o.writable), current(o.current.load()), ref(std::move(o.ref)), gpu(std::move(o.gpu)),
      gpu_updates(std::move(o.gpu_updates)), persistent_runner(o.persistent_runner) {}

TableControl* L2Traits::table_control() {
  if (!control && writable) {
    gpu::persistent_refuses_control(persistent_runner);
    control = std::make_unique<MacControl>(*writable, current);
    connect_device_copy();
  }
  return control.get();
}

void L2Traits::connect_device_copy() {
  if (control && gpu) control->set_device_copy(gpu_updates, gpu->device_slots());
}

DropReason L2Traits::classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off, uint32_t* flow) const {
  return l2_classify(frame, len, key, l3_off, flow);
}

uint32_t L2Traits::apply(uint8_t*, uint32_t, uint16_t, uint32_t result) const { return l2_verdict(result); }

void L2Traits::prefetch(Key mac) const {
  const MacTable& t = live();
  prefetch_read(mac_bucket(t.slots(), mac_hash1(mac) & t.bucket_mask()));
  prefetch_read(mac_bucket(t.slots(), mac_hash2(mac) & t.bucket_mask()));
}

void L2Traits::lookup_batch(const Key* keys, uint32_t* results, size_t n) const {
  // Both buckets of every key were prefetched while the burst was classified: probe them in order.
  // The copy read here may be newer than the one prefetched from; it is read whole all the same.
  const MacTable& t = live();
  for (size_t i = 0; i < n; ++i) {
    const uint64_t mac = keys[i];
    const uint32_t port = mac_lookup_buckets(mac_bucket(t.slots(), mac_hash1(mac) & t.bucket_mask()),
                                             mac_bucket(t.slots(), mac_hash2(mac) & t.bucket_mask()), mac);
    results[i] = mac_is_group(mac) ? kFlood : mac_forward_decision(mac, port);
  }
}

std::unique_ptr<gpu::OffloadRunner> L2Traits::make_gpu_runner(const gpu::OffloadOptions& opts) {
  gpu::persistent_refused_with_control(opts.mode, control != nullptr);
  if (!gpu) {
    // With a control, no batch may change the table while it is copied to the device.
    const auto make = [this](const MacTable& t, uint64_t version) {
      gpu = L2GpuTable::create(t);
      gpu_updates = std::make_shared<gpu::DeviceTableUpdates>(version);
      connect_device_copy();
    };
    if (control) control->with_table(make);
    else make(live(), 0);
  }
  return gpu::runner_for_updates(gpu->make_runner(opts), gpu_updates, &persistent_runner);
}

void L2Traits::build_reference() {
  ref = std::make_unique<std::unordered_map<uint64_t, uint32_t>>();
  for (const auto& [mac, port] : setup->entries) (*ref)[mac] = port;
}

uint32_t L2Traits::reference_verdict(const uint8_t* frame, uint32_t, uint16_t) const {
  const uint64_t mac = load_be48(frame);
  if (mac & kMacGroupBit) return l2_verdict(kFlood);
  const auto it = ref->find(mac);
  return l2_verdict(it == ref->end() ? kFlood : it->second);
}

}  // namespace tandem::l2
