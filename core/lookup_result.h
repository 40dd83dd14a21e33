// The result every routing table's lookup gives when no prefix matches, on the CPU and the GPU.
#pragma once

#include <cstdint>

namespace tandem {

// All ones: no next hop can take it (next hops fit in 24 bits, apps/ipv4/dir24_8_core.h), so one
// value serves every table (IPv4, IPv6, NDN) and code that prints or counts lookup results
// (apps/key_lookup.h, the benches) need not know which table answered.
inline constexpr uint32_t kNoRoute = 0xFFFFFFFFu;

}  // namespace tandem
