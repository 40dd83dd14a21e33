#include "bench/core_probe.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "core/clock.h"
#include "core/machine_info.h"

namespace tandem::bench {

namespace {

constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull, kAdd = 0x632BE59BD9B4E019ull;
constexpr uint64_t kBlock = uint64_t{1} << 18;  // iterations between looks at the stop word
constexpr int kPorts = 8;                       // independent chains of the ports loop

// The barrier keeps each step in a register and the loop as written (no closed form, no vectors).
uint64_t chain_block(uint64_t x) {
  for (uint64_t i = 0; i < kBlock; ++i) {
    x = x * kMul + kAdd;
    asm volatile("" : "+r"(x));
  }
  return x;
}

uint64_t ports_block(uint64_t* v) {
  uint64_t a = v[0], b = v[1], c = v[2], d = v[3], e = v[4], f = v[5], g = v[6], h = v[7];
  for (uint64_t i = 0; i < kBlock; ++i) {
    a = a * kMul + kAdd;
    b = b * kMul + kAdd;
    c = c * kMul + kAdd;
    d = d * kMul + kAdd;
    e = e * kMul + kAdd;
    f = f * kMul + kAdd;
    g = g * kMul + kAdd;
    h = h * kMul + kAdd;
    asm volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f), "+r"(g), "+r"(h));
  }
  v[0] = a, v[1] = b, v[2] = c, v[3] = d, v[4] = e, v[5] = f, v[6] = g, v[7] = h;
  return a ^ b ^ c ^ d ^ e ^ f ^ g ^ h;
}

struct Phases {
  std::atomic<int> ready{0}, go{0}, stop{0};
};

struct Rates {
  double gops[2] = {0, 0};
  uint64_t sink = 0;
};

void run_thread(int cpu, uint64_t seed, Phases& ph, Rates& r) {
  pin_this_thread(cpu);
  uint64_t x = seed, v[kPorts];
  for (int k = 0; k < kPorts; ++k) v[k] = seed + k;
  for (int phase = 1; phase <= 2; ++phase) {
    ph.ready.fetch_add(1);
    while (ph.go.load(std::memory_order_acquire) < phase) cpu_relax();
    const auto t0 = std::chrono::steady_clock::now();
    uint64_t ops = 0;
    while (ph.stop.load(std::memory_order_relaxed) < phase) {
      if (phase == 1) {
        x = chain_block(x);
        ops += kBlock;
      } else {
        x ^= ports_block(v);
        ops += kBlock * kPorts;
      }
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.gops[phase - 1] = s > 0 ? ops / s / 1e9 : 0;
  }
  r.sink = x;
}

}  // namespace

CoreProbe probe_cores(const std::vector<int>& cpus, int threads, double seconds) {
  CoreProbe p;
  p.threads = threads;
  if (threads <= 0) return p;
  Phases ph;
  std::vector<Rates> rates(threads);
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    const int cpu = cpus.empty() ? t : cpus[t % cpus.size()];
    pool.emplace_back(run_thread, cpu, 0x1234 + t, std::ref(ph), std::ref(rates[t]));
  }
  for (int phase = 1; phase <= 2; ++phase) {
    while (ph.ready.load() < threads * phase) std::this_thread::yield();
    ph.go.store(phase, std::memory_order_release);
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    ph.stop.store(phase, std::memory_order_relaxed);
  }
  for (auto& t : pool) t.join();
  double chain = 0, ports = 0;
  p.chain_min_gops = p.ports_min_gops = 1e300;
  for (const Rates& r : rates) {
    chain += r.gops[0];
    ports += r.gops[1];
    p.chain_min_gops = std::min(p.chain_min_gops, r.gops[0]);
    p.ports_min_gops = std::min(p.ports_min_gops, r.gops[1]);
  }
  p.chain_gops = chain / threads;
  p.ports_gops = ports / threads;
  return p;
}

}  // namespace tandem::bench
