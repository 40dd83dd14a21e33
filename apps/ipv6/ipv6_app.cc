#include "apps/ipv6/ipv6_app.h"

#include <stdexcept>

#include "apps/ipv6/ipv6_gpu.h"

namespace tandem::ipv6 {

void build_table(const Fib6& fib, Lpm6& table) {
  for (const auto& r : fib.routes) {
    const auto st = table.add(r.prefix.data(), r.len, r.next_hop);
    if (st != Lpm6::Status::kOk) {
      throw std::runtime_error(fib.path + ": cannot add " + format_ipv6(r.prefix.data()) + "/" + std::to_string(r.len) +
                               ": " + Lpm6::status_name(st));
    }
  }
}

Ipv6Traits::Ipv6Traits(const Lpm6& t, const Fib6& f) : table(&t), fib(&f) {}
Ipv6Traits::~Ipv6Traits() = default;
Ipv6Traits::Ipv6Traits(Ipv6Traits&&) noexcept = default;

DropReason Ipv6Traits::classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off, uint32_t* flow) const {
  return ipv6_classify(frame, len, key->data(), l3_off, flow);
}

uint32_t Ipv6Traits::apply(uint8_t* frame, uint32_t, uint16_t l3_off, uint32_t result) const {
  return ipv6_apply_route(frame, l3_off, result);
}

std::unique_ptr<gpu::OffloadRunner> Ipv6Traits::make_gpu_runner(const gpu::OffloadOptions& opts) {
  if (!gpu) gpu = Ipv6GpuTable::create(*table);
  return gpu->make_runner(opts);
}

void Ipv6Traits::build_reference() {
  ref = std::make_unique<RefTrie6>();
  for (const auto& r : fib->routes) ref->insert(r.prefix.data(), r.len, r.next_hop);
}

uint32_t Ipv6Traits::reference_verdict(const uint8_t* frame, uint32_t, uint16_t l3_off) const {
  const uint32_t nh = ref->lookup(frame + l3_off + 24);
  return nh == kNoRoute ? Verdict::drop(DropReason::kNoRoute) : Verdict::port(nh);
}

}  // namespace tandem::ipv6
