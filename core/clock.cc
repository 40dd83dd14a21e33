#include "core/clock.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

namespace tandem {

namespace {

#if defined(__x86_64__)
// The steady clock and the counter read as close together as this thread can: of up to 64 tries
// (fewer once two reads come within 200 ns: a thread preempted between them gives a wide pair),
// the pair whose steady reads around the counter's are closest, the counter set against their
// midpoint.
void read_pair(uint64_t* ns, uint64_t* ticks) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 64 && (i < 8 || best > 200); ++i) {
    const uint64_t a = now_ns();
    const uint64_t c = __builtin_ia32_rdtsc();
    const uint64_t b = now_ns();
    if (b - a < best) {
      best = b - a;
      *ns = a + (b - a) / 2;
      *ticks = c;
    }
  }
}
#endif

std::string current_clocksource() {
  char name[64] = {};
  if (FILE* f = std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r")) {
    if (!std::fgets(name, sizeof name, f)) name[0] = '\0';
    std::fclose(f);
  }
  name[std::strcspn(name, "\n")] = '\0';
  return name;
}

}  // namespace

StampScale stamp_scale_for(const char* clocksource) {
  StampScale s;
#if defined(__x86_64__)
  if (std::strcmp(clocksource, "tsc") != 0) return s;
  uint64_t ns0 = 0, c0 = 0, ns1 = 0, c1 = 0;
  read_pair(&ns0, &c0);
  // 5 ms against pairs read within a few tens of nanoseconds: the rate to about 10 ppm.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  read_pair(&ns1, &c1);
  if (c1 <= c0 || ns1 <= ns0) return s;
  const double ns_per_tick = static_cast<double>(ns1 - ns0) / static_cast<double>(c1 - c0);
  if (!(ns_per_tick > 0.01 && ns_per_tick < 100)) return s;  // 10 MHz to 100 GHz, or not a clock
  s.tsc = true;
  s.ns_per_tick_q32 = static_cast<uint64_t>(std::llround(std::ldexp(ns_per_tick, 32)));
#else
  (void)clocksource;
#endif
  return s;
}

StampScale calibrate_stamp_clock() { return stamp_scale_for(current_clocksource().c_str()); }

}  // namespace tandem
