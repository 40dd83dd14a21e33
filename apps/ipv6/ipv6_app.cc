#include "apps/ipv6/ipv6_app.h"

#include <cstring>
#include <stdexcept>

#include "apps/ipv6/ipv6_gpu.h"
#include "core/parse.h"

namespace tandem::ipv6 {

namespace {

bool unspecified_or_loopback(const uint8_t* a) {
  for (int i = 0; i < 15; ++i) {
    if (a[i]) return false;
  }
  return a[15] <= 1;
}
bool multicast(const uint8_t* a) { return a[0] == 0xFF; }
bool link_local(const uint8_t* a) { return a[0] == 0xFE && (a[1] & 0xC0) == 0x80; }

}  // namespace

void build_table(const Fib6& fib, Lpm6& table) {
  for (const auto& r : fib.routes) {
    const auto st = table.add(r.prefix.data(), r.len, r.next_hop);
    if (st != Lpm6::Status::kOk) {
      throw std::runtime_error(fib.path + ": cannot add " + format_ipv6(r.prefix.data()) + "/" + std::to_string(r.len) +
                               ": " + Lpm6::status_name(st));
    }
  }
}

DropReason ipv6_classify_frame(const uint8_t* frame, uint32_t len, ParsedPacket* pp) {
  const DropReason r = parse_packet(frame, len, pp);
  if (r != DropReason::kNone) return r;
  if (pp->ip_version != 6) return DropReason::kNotHandled;
  const uint8_t* ip = frame + pp->l3_off;
  const uint8_t* src = ip + 8;
  const uint8_t* dst = ip + 24;
  if (multicast(dst)) return DropReason::kNotHandled;
  if (unspecified_or_loopback(src) || unspecified_or_loopback(dst) || multicast(src) || link_local(src) ||
      link_local(dst)) {
    return DropReason::kMartian;
  }
  if (pp->ttl <= 1) return DropReason::kTtlExceeded;
  return DropReason::kNone;
}

Ipv6Traits::Ipv6Traits(const Lpm6& t, const Fib6& f) : table(&t), fib(&f) {}
Ipv6Traits::~Ipv6Traits() = default;
Ipv6Traits::Ipv6Traits(Ipv6Traits&&) noexcept = default;

DropReason Ipv6Traits::classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off, uint32_t* flow) const {
  ParsedPacket pp;
  const DropReason r = ipv6_classify_frame(frame, len, &pp);
  if (r == DropReason::kNone) {
    std::memcpy(key->data(), frame + pp.l3_off + 24, 16);
    *l3_off = pp.l3_off;
    *flow = flow_hash(pp.tuple);
  }
  return r;
}

uint32_t Ipv6Traits::apply(uint8_t* frame, uint32_t, uint16_t l3_off, uint32_t result) const {
  if (result == kNoRoute) return Verdict::drop(DropReason::kNoRoute);
  --frame[l3_off + 7];  // hop limit (> 1, checked by classify)
  return Verdict::port(result);
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
