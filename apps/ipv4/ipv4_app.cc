#include "apps/ipv4/ipv4_app.h"

#include "apps/ipv4/ipv4_cpu.h"
#include "apps/ipv4/ipv4_frame_core.h"
#include "apps/ipv4/ipv4_gpu.h"
#include "core/byte_order.h"
#include "core/usage_error.h"
#include "gpu/table_updates.h"

namespace tandem::ipv4 {

template <class Table>
Ipv4Traits<Table>::Ipv4Traits(const Table& t, const Fib& f, Table* w) : table(&t), writable(w), current(&t), fib(&f) {}
template <class Table>
Ipv4Traits<Table>::~Ipv4Traits() = default;
// Before any control exists (it holds a reference to `current`).
template <class Table>
Ipv4Traits<Table>::Ipv4Traits(Ipv4Traits&& o) noexcept
    : table(o.table), writable(o.writable), current(o.current.load()), fib(o.fib), ref(std::move(o.ref)),
      gpu(std::move(o.gpu)), gpu_updates(std::move(o.gpu_updates)), persistent_runner(o.persistent_runner) {}

template <class Table>
TableControl* Ipv4Traits<Table>::table_control() {
  if constexpr (std::is_same_v<Table, Dir24_8>) {
    if (!control && writable) {
      gpu::persistent_refuses_control(persistent_runner);
      control = std::make_unique<RouteControl>(*writable, *fib, current);
      connect_device_copy();
    }
    return control.get();
  } else {
    return nullptr;
  }
}

template <class Table>
void Ipv4Traits<Table>::connect_device_copy() {
  if constexpr (std::is_same_v<Table, Dir24_8>) {
    if (!control || !gpu) return;
    const Ipv4GpuTable::DeviceArrays d = gpu->device_arrays();
    control->set_device_copy(gpu_updates, const_cast<uint32_t*>(d.tbl24), const_cast<uint32_t*>(d.tbl8));
  }
}

template <class Table>
DropReason Ipv4Traits<Table>::classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off,
                                       uint32_t* flow) const {
  return ipv4_classify(frame, len, key, l3_off, flow);
}

template <class Table>
uint32_t Ipv4Traits<Table>::apply(uint8_t* frame, uint32_t, uint16_t l3_off, uint32_t result) const {
  return ipv4_apply_route(frame + l3_off, result);
}

template <class Table>
void Ipv4Traits<Table>::lookup_batch(const Key* keys, uint32_t* results, size_t n) const {
  if constexpr (std::is_same_v<Table, Dir24_8>) {
    lookup_batched(live(), keys, results, n);
  } else {
    live().lookup_batch(keys, results, n);
  }
}

template <class Table>
std::unique_ptr<gpu::OffloadRunner> Ipv4Traits<Table>::make_gpu_runner(const gpu::OffloadOptions& opts) {
  if constexpr (std::is_same_v<Table, Dir24_8>) {
    gpu::persistent_refused_with_control(opts.mode, control != nullptr);
    if (!gpu) {
      // With a control, no batch may change the table while it is copied to the device.
      const auto make = [this](const Dir24_8& t, uint64_t version) {
        gpu = Ipv4GpuTable::create(t);
        gpu_updates = std::make_shared<gpu::DeviceTableUpdates>(version);
        connect_device_copy();
      };
      if (control) control->with_table(make);
      else make(live(), 0);
    }
    return gpu::runner_for_updates(gpu->make_runner(opts), gpu_updates, &persistent_runner);
  } else {
    throw UsageError(no_gpu_path("poptrie") + ": use --device cpu or --table dir24-8");
  }
}

template <class Table>
void Ipv4Traits<Table>::build_reference() {
  ref = std::make_unique<RefTrie>();
  for (const Route& r : fib->routes) ref->insert(r.prefix, r.len, r.next_hop);
}

template <class Table>
uint32_t Ipv4Traits<Table>::reference_verdict(const uint8_t* frame, uint32_t, uint16_t l3_off) const {
  // apply() rewrote the TTL and checksum, never the destination.
  const uint32_t nh = ref->lookup(load_be32(frame + l3_off + 16));
  return nh == kNoRoute ? Verdict::drop(DropReason::kNoRoute) : Verdict::port(nh);
}

template struct Ipv4Traits<Dir24_8>;
template struct Ipv4Traits<Poptrie>;

std::string no_gpu_path(const std::string& table_name) {
  return table_name == "poptrie" ? "--table poptrie has no GPU path (the GPU kernel reads DIR-24-8)" : "";
}

}  // namespace tandem::ipv4
