#include "bench/variants/l2_variants.h"

#include "apps/l2/cuckoo_core.h"
#include "core/compiler.h"

namespace tandem::l2 {

void mac_lookup_scalar(const MacTable& t, const uint64_t* macs, uint32_t* ports, size_t n) {
  for (size_t i = 0; i < n; ++i) ports[i] = t.lookup(macs[i]);
}

namespace {

template <uint32_t G>
void lookup_groups(const uint64_t* slots, uint64_t mask, const uint64_t* macs, uint32_t* ports,
                   size_t n) {
  size_t i = 0;
  for (; i + G <= n; i += G) {
    const uint64_t* b1[G];
    const uint64_t* b2[G];
    for (uint32_t k = 0; k < G; ++k) {
      b1[k] = mac_bucket(slots, mac_hash1(macs[i + k]) & mask);
      b2[k] = mac_bucket(slots, mac_hash2(macs[i + k]) & mask);
      prefetch_read(b1[k]);
      prefetch_read(b2[k]);
    }
    for (uint32_t k = 0; k < G; ++k) ports[i + k] = mac_lookup_buckets(b1[k], b2[k], macs[i + k]);
  }
  for (; i < n; ++i) ports[i] = mac_lookup(slots, mask, macs[i]);
}

}  // namespace

void mac_lookup_groups(const MacTable& t, const uint64_t* macs, uint32_t* ports, size_t n, uint32_t group) {
  const uint64_t* s = t.slots();
  const uint64_t m = t.bucket_mask();
  if (group <= 4) return lookup_groups<4>(s, m, macs, ports, n);
  if (group <= 8) return lookup_groups<8>(s, m, macs, ports, n);
  if (group <= 16) return lookup_groups<16>(s, m, macs, ports, n);
  if (group <= 32) return lookup_groups<32>(s, m, macs, ports, n);
  return lookup_groups<64>(s, m, macs, ports, n);
}

}  // namespace tandem::l2
