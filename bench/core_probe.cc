#include "bench/core_probe.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/machine_info.h"

namespace tandem::bench {

namespace {

constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull, kAdd = 0x632BE59BD9B4E019ull;
constexpr uint64_t kBlock = uint64_t{1} << 18;  // iterations between looks at the stop word
constexpr int kPorts = 8;                       // independent chains of the ports loop
constexpr size_t kStreamWords = size_t{8} << 20;  // 64 MiB a thread
constexpr size_t kStreamChunk = size_t{1} << 15;   // words between looks at the stop word (256 KiB)
constexpr int kPhases = 3;

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

// kStreamChunk words from w summed, four lanes at a time.
uint64_t stream_chunk(const uint64_t* w) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (size_t i = 0; i < kStreamChunk; i += 4) {
    a += w[i];
    b += w[i + 1];
    c += w[i + 2];
    d += w[i + 3];
  }
  return a + b + c + d;
}

struct Rates {
  double rate[kPhases] = {0, 0, 0};  // G operations or GB a second
  uint64_t sink = 0;
};

void run_thread(int cpu, uint64_t seed, Phases& ph, Rates& r) {
  pin_this_thread(cpu);
  uint64_t x = seed, v[kPorts];
  for (int k = 0; k < kPorts; ++k) v[k] = seed + k;
  // Touched here, on the thread's CPU, so that its pages are local to it.
  std::vector<uint64_t> buf(kStreamWords, seed);
  size_t at = 0;
  for (int phase = 1; phase <= kPhases; ++phase) {
    ph.ready.fetch_add(1);
    while (ph.go.load(std::memory_order_acquire) < phase) cpu_relax();
    const auto t0 = std::chrono::steady_clock::now();
    uint64_t ops = 0;
    while (ph.stop.load(std::memory_order_relaxed) < phase) {
      if (phase == 1) {
        x = chain_block(x);
        ops += kBlock;
      } else if (phase == 2) {
        x ^= ports_block(v);
        ops += kBlock * kPorts;
      } else {
        x += stream_chunk(buf.data() + at);
        at = (at + kStreamChunk) % kStreamWords;
        ops += kStreamChunk * sizeof(uint64_t);
      }
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.rate[phase - 1] = s > 0 ? ops / s / 1e9 : 0;
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
  try {
    for (int t = 0; t < threads; ++t) {
      const int cpu = cpus.empty() ? t : cpus[t % cpus.size()];
      pool.emplace_back(run_thread, cpu, 0x1234 + t, std::ref(ph), std::ref(rates[t]));
    }
  } catch (...) {
    // A thread that could not start: let the others run through every phase at once, and end.
    ph.go.store(kPhases, std::memory_order_release);
    ph.stop.store(kPhases, std::memory_order_relaxed);
    for (auto& t : pool) t.join();
    throw;
  }
  for (int phase = 1; phase <= kPhases; ++phase) {
    while (ph.ready.load() < threads * phase) std::this_thread::yield();
    ph.go.store(phase, std::memory_order_release);
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    ph.stop.store(phase, std::memory_order_relaxed);
  }
  for (auto& t : pool) t.join();
  double sum[kPhases] = {0, 0, 0}, low[kPhases] = {1e300, 1e300, 1e300};
  for (const Rates& r : rates) {
    for (int k = 0; k < kPhases; ++k) {
      sum[k] += r.rate[k];
      low[k] = std::min(low[k], r.rate[k]);
    }
  }
  p.chain_gops = sum[0] / threads;
  p.ports_gops = sum[1] / threads;
  p.stream_gbps = sum[2] / threads;
  p.chain_min_gops = low[0];
  p.ports_min_gops = low[1];
  p.stream_min_gbps = low[2];
  return p;
}

}  // namespace tandem::bench
