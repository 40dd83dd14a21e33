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

// A clock for the stamps the data path reads on every burst (a burst's arrival and its verdicts'
// time): the time-stamp counter scaled to nanoseconds, where the kernel keeps time by the TSC
// itself (clocksource "tsc": the counter runs at a constant rate and in step across cores). A read
// costs about half of the steady clock's, which a KVM guest reaches through the vDSO. The rate is
// measured against the steady clock over a few milliseconds, once a process, by init_stamp_clock()
// (call it before the data path starts; the first stamp_ns() would otherwise do it). Elsewhere it
// is the steady clock. Intervals only: its origin is not the steady clock's.
struct StampScale {
  bool tsc = false;
  uint64_t ns_per_tick_q32 = 0;  // nanoseconds per tick, in 32.32 fixed point
};
// The scale for a kernel whose current clocksource is named `clocksource` (calibrated on this
// machine's counter when that is "tsc" on x86).
StampScale stamp_scale_for(const char* clocksource);
// The scale for this machine's current clocksource.
StampScale calibrate_stamp_clock();
// Inline, so that each stamp costs a guard byte's load, not a call.
inline const StampScale& stamp_scale() {
  static const StampScale scale = calibrate_stamp_clock();
  return scale;
}
inline void init_stamp_clock() { (void)stamp_scale(); }
inline bool stamp_clock_uses_tsc() { return stamp_scale().tsc; }

inline uint64_t stamp_ns() {
#if defined(__x86_64__) && !defined(__CUDA_ARCH__)
  const StampScale& s = stamp_scale();
  if (s.tsc) return static_cast<uint64_t>((static_cast<unsigned __int128>(__builtin_ia32_rdtsc()) * s.ns_per_tick_q32) >> 32);
#endif
  return now_ns();
}

// Inside a spin loop: tells the core it is spinning (x86 PAUSE), so the sibling hyperthread gets
// the pipeline and leaving the loop does not flush it.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace tandem
