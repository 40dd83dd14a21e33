#include "bench/variants/ipv4_variants.h"

#include <algorithm>

#include "core/compiler.h"

extern "C" void tandem_dir24_8_lookup_gopt(const uint32_t* tbl24, const uint32_t* tbl8, const uint32_t* ips,
                                           uint32_t* next_hops, int n);

namespace tandem::ipv4 {

void lookup_scalar(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n) {
  const uint32_t* tbl24 = table.tbl24();
  const uint32_t* tbl8 = table.tbl8();
  for (size_t i = 0; i < n; ++i) next_hops[i] = dir24_8_lookup(tbl24, tbl8, ips[i]);
}

namespace {

template <uint32_t G>
void lookup_groups(const uint32_t* tbl24, const uint32_t* tbl8, const uint32_t* ips,
                   uint32_t* next_hops, size_t n) {
  size_t i = 0;
  for (; i + G <= n; i += G) {
    const uint32_t* ip = ips + i;
    // Stage 1: every tbl24 entry of the group is requested before any is used.
    for (uint32_t k = 0; k < G; ++k) prefetch_read(&tbl24[dir24_8_tbl24_index(ip[k])]);
    // Stage 2: load the entries; the few extended ones (prefixes longer than /24) get their tbl8
    // slot prefetched so that stage 3 does not stall on it either.
    uint32_t e[G];
    uint32_t any_ext = 0;
    for (uint32_t k = 0; k < G; ++k) {
      e[k] = tbl24[dir24_8_tbl24_index(ip[k])];
      any_ext |= e[k] & Dir24_8Entry::kExtBit;
    }
    if (TANDEM_UNLIKELY(any_ext)) {
      for (uint32_t k = 0; k < G; ++k) {
        if (Dir24_8Entry::ext(e[k])) prefetch_read(&tbl8[dir24_8_tbl8_index(e[k], ip[k])]);
      }
    }
    // Stage 3: resolve.
    for (uint32_t k = 0; k < G; ++k) next_hops[i + k] = dir24_8_resolve(tbl8, e[k], ip[k]);
  }
  for (; i < n; ++i) next_hops[i] = dir24_8_lookup(tbl24, tbl8, ips[i]);
}

}  // namespace

void lookup_batched_group(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n,
                          uint32_t group) {
  const uint32_t* t24 = table.tbl24();
  const uint32_t* t8 = table.tbl8();
  switch (group) {
    case 1: return lookup_groups<1>(t24, t8, ips, next_hops, n);
    case 2: return lookup_groups<2>(t24, t8, ips, next_hops, n);
    case 4: return lookup_groups<4>(t24, t8, ips, next_hops, n);
    case 8: return lookup_groups<8>(t24, t8, ips, next_hops, n);
    case 16: return lookup_groups<16>(t24, t8, ips, next_hops, n);
    case 32: return lookup_groups<32>(t24, t8, ips, next_hops, n);
    default: return lookup_groups<64>(t24, t8, ips, next_hops, n);
  }
}

void lookup_prefetch_stream_l2(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops,
                               size_t n, uint32_t distance) {
  // lookup_prefetch_stream's loop (apps/ipv4/ipv4_cpu.cc) with locality hint 1 instead of 3.
  const uint32_t* tbl24 = table.tbl24();
  const uint32_t* tbl8 = table.tbl8();
  size_t i = 0;
  const size_t head = n > distance ? n - distance : 0;
  for (; i < head; ++i) {
    __builtin_prefetch(&tbl24[dir24_8_tbl24_index(ips[i + distance])], 0, 1);
    next_hops[i] = dir24_8_lookup(tbl24, tbl8, ips[i]);
  }
  for (; i < n; ++i) next_hops[i] = dir24_8_lookup(tbl24, tbl8, ips[i]);
}

void lookup_gopt(const Dir24_8& table, const uint32_t* ips, uint32_t* next_hops, size_t n) {
  // The generated function takes an int count: hand it at most 2^30 at a time.
  constexpr size_t kChunk = size_t{1} << 30;
  for (size_t off = 0; off < n; off += kChunk) {
    const size_t m = std::min(kChunk, n - off);
    tandem_dir24_8_lookup_gopt(table.tbl24(), table.tbl8(), ips + off, next_hops + off, static_cast<int>(m));
  }
}

}  // namespace tandem::ipv4
