// The monotonic clock and the spin-wait hint the data path's threads use.
#pragma once

#include <chrono>
#include <cstdint>

namespace tandem {

// Nanoseconds of the steady clock (arbitrary origin): for intervals and deadlines.
inline uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch()).count());
}

// Inside a spin loop: tells the core it is spinning (x86 PAUSE), so the sibling hyperthread gets
// the pipeline and leaving the loop does not flush it.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace tandem
