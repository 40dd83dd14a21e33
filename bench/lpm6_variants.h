// Hand-written latency-hiding versions of the IPv6 lookup (apps/ipv6/lpm6_core.h) for `tandem
// bench gopt`, beside the naive and G-Opt versions made from bench/variants/gopt/lpm6_batch.c: the
// same walk (tbl24, then one tbl8 group per further address byte while the entry is extended),
// with every table access prefetched one step ahead.
#pragma once

#include <algorithm>
#include <cstdint>

#include "apps/ipv6/lpm6_core.h"

namespace tandem::bench {

// Group prefetching (G-Opt paper sec. 3.1): per group of g lookups, prefetch every tbl24 entry,
// then go level by level over the group's unfinished lookups, prefetching each one's next slot.
inline void lpm6_group(const uint32_t* tbl24, const uint32_t* tbl8, const uint8_t (*addrs)[16], uint32_t* hops,
                       int n, int g_max) {
  const uint32_t* slot[64];
  int byte[64];
  for (int base = 0; base < n; base += g_max) {
    const int g = std::min(g_max, n - base);
    for (int j = 0; j < g; ++j) {
      slot[j] = &tbl24[ipv6::lpm6_tbl24_index(addrs[base + j])];
      byte[j] = ipv6::kTbl24Bytes;
      __builtin_prefetch(slot[j]);
    }
    for (int active = g; active > 0;) {
      active = 0;
      for (int j = 0; j < g; ++j) {
        if (!slot[j]) continue;
        const uint32_t e = *slot[j];
        if (ipv6::Lpm6Entry::ext(e)) {
          slot[j] = &tbl8[ipv6::lpm6_tbl8_index(e, addrs[base + j][byte[j]++])];
          __builtin_prefetch(slot[j]);
          ++active;
        } else {
          hops[base + j] = ipv6::lpm6_result(e);
          slot[j] = nullptr;
        }
      }
    }
  }
}

// AMAC: a ring of `ring` lookups; each visit does one level of one lookup and prefetches its next
// slot; a finished lookup's place takes the next address at once.
inline void lpm6_amac(const uint32_t* tbl24, const uint32_t* tbl8, const uint8_t (*addrs)[16], uint32_t* hops,
                      int n, int ring) {
  struct Slot {
    const uint32_t* slot;  // nullptr: empty
    int byte;
    int i;
  };
  Slot s[64];
  int next = 0, active = 0;
  auto start = [&](Slot& x) {
    if (next >= n) {
      x.slot = nullptr;
      return false;
    }
    x = {&tbl24[ipv6::lpm6_tbl24_index(addrs[next])], ipv6::kTbl24Bytes, next};
    __builtin_prefetch(x.slot);
    ++next;
    return true;
  };
  for (int k = 0; k < ring; ++k) active += start(s[k]);
  for (int k = 0; active > 0; k = k + 1 == ring ? 0 : k + 1) {
    Slot& x = s[k];
    if (!x.slot) continue;
    const uint32_t e = *x.slot;
    if (ipv6::Lpm6Entry::ext(e)) {
      x.slot = &tbl8[ipv6::lpm6_tbl8_index(e, addrs[x.i][x.byte++])];
      __builtin_prefetch(x.slot);
      continue;
    }
    hops[x.i] = ipv6::lpm6_result(e);
    if (!start(x)) --active;
  }
}

}  // namespace tandem::bench
