// What a clock read costs on this machine: the steady clock (clock_gettime through the vDSO, or a
// system call when the clock source has no vDSO path) against the time-stamp counter.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <x86intrin.h>

static uint64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main() {
  const int n = 4000000;
  uint64_t sink = 0;
  uint64_t t0 = now_ns();
  for (int i = 0; i < n; ++i) sink += now_ns();
  uint64_t t1 = now_ns();
  std::printf("steady_clock::now  %.1f ns a read\n", double(t1 - t0) / n);
  t0 = now_ns();
  for (int i = 0; i < n; ++i) sink += __rdtsc();
  t1 = now_ns();
  std::printf("rdtsc              %.1f ns a read\n", double(t1 - t0) / n);
  unsigned aux;
  t0 = now_ns();
  for (int i = 0; i < n; ++i) sink += __rdtscp(&aux);
  t1 = now_ns();
  std::printf("rdtscp             %.1f ns a read (%llu)\n", double(t1 - t0) / n, (unsigned long long)(sink & 1));
}
