#include "apps/ipv4/ipv4_app.h"

#include "apps/ipv4/ipv4_cpu.h"
#include "apps/ipv4/ipv4_frame_core.h"
#include "apps/ipv4/ipv4_gpu.h"
#include "core/byte_order.h"

namespace tandem::ipv4 {

Ipv4Traits::Ipv4Traits(const Dir24_8& t, const Fib& f) : table(&t), fib(&f) {}
Ipv4Traits::~Ipv4Traits() = default;
Ipv4Traits::Ipv4Traits(Ipv4Traits&&) noexcept = default;

DropReason Ipv4Traits::classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off, uint32_t* flow) const {
  ParsedPacket pp;
  const DropReason r = ipv4_classify_frame(frame, len, &pp, key);
  if (r == DropReason::kNone) {
    *l3_off = pp.l3_off;
    *flow = flow_hash(pp.tuple);
  }
  return r;
}

void Ipv4Traits::lookup_batch(const Key* keys, uint32_t* results, size_t n) const {
  lookup_batched(*table, keys, results, n);
}

uint32_t Ipv4Traits::apply(uint8_t* frame, uint32_t, uint16_t l3_off, uint32_t result) const {
  return ipv4_apply_route(frame + l3_off, result);
}

std::unique_ptr<gpu::OffloadRunner> Ipv4Traits::make_gpu_runner(const gpu::OffloadOptions& opts) {
  if (!gpu) gpu = std::make_unique<Ipv4GpuTable>(*table);
  return gpu->make_runner(opts);
}

void Ipv4Traits::build_reference() {
  ref = std::make_unique<RefTrie>();
  for (const Route& r : fib->routes) ref->insert(r.prefix, r.len, r.next_hop);
}

uint32_t Ipv4Traits::reference_verdict(const uint8_t* frame, uint32_t, uint16_t l3_off) const {
  // apply() rewrote the TTL and checksum, never the destination.
  const uint32_t nh = ref->lookup(load_be32(frame + l3_off + 16));
  return nh == kNoRoute ? Verdict::drop(DropReason::kNoRoute) : Verdict::port(nh);
}

}  // namespace tandem::ipv4
