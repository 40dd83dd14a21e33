#include "sched/cpu_ring_runner.h"

#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "core/clock.h"
#include "core/machine_info.h"

namespace tandem {

namespace {

uint64_t load_acquire(const volatile uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

// Idle threads poll this many empty rounds, then yield: a group with no shards must not take the
// cores of the threads that have work (and CI runs everything on two cores).
constexpr uint64_t kSpinsBeforeYield = 256;
constexpr uint64_t kYieldsBeforeSleep = kSpinsBeforeYield + 20000;  // a few ms of yielding
constexpr int kIdleSleepUs = 50;

}  // namespace

CpuRingRunner::CpuRingRunner(const ForwardApp& app, gpu::ResidentRing& ring, CpuRunnerOptions o)
    : app_(app),
      ring_(ring),
      o_(std::move(o)),
      view_(PacketPool::View{}, ring.bytes(0), ring.slots() * ring.batch(), ring.options().cell_size),
      claimed_(new std::atomic<uint64_t>[ring.producers()]) {
  if (ring.options().layout != gpu::FrameLayout::kCells || ring.external_frames()) {
    throw std::invalid_argument("a CPU device's ring holds its frames in its own cells");
  }
  if (o_.threads < 1) throw std::invalid_argument("a CPU device needs at least one thread");
  for (uint32_t t = 0; t < ring.producers(); ++t) claimed_[t].store(0);
}

CpuRingRunner::~CpuRingRunner() { stop(); }

void CpuRingRunner::start() {
  stopping_.store(false);
  for (int k = 0; k < o_.threads; ++k) threads_.emplace_back([this, k] { run(k); });
}

void CpuRingRunner::stop() {
  stopping_.store(true, std::memory_order_release);
  for (auto& t : threads_) t.join();
  threads_.clear();
}

std::string CpuRingRunner::describe() const {
  std::string s = std::to_string(o_.threads) + " CPU thread" + (o_.threads > 1 ? "s" : "") + " (batched path)";
  if (!o_.cores.empty()) {
    s += ", cores";
    for (size_t k = 0; k < o_.cores.size() && k < size_t(o_.threads); ++k) s += (k ? "," : " ") + std::to_string(o_.cores[k]);
  }
  if (o_.sim) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "; simulated service time %.0f ns + %.3f ns/B + %.1f ns/frame per batch",
                  o_.cost.a_ns, o_.cost.ns_per_byte, o_.cost.ns_per_frame);
    s += buf;
  }
  return s;
}

bool CpuRingRunner::try_claim(uint32_t t, uint64_t* j) {
  uint64_t c = claimed_[t].load(std::memory_order_relaxed);
  if (c >= load_acquire(&ring_.index(t)->published)) return false;
  if (!claimed_[t].compare_exchange_strong(c, c + 1, std::memory_order_acq_rel)) return false;
  *j = c;
  return true;
}

void CpuRingRunner::run(int k) {
  if (!o_.cores.empty()) pin_this_thread(o_.cores[k % o_.cores.size()]);
  PacketBatch b;
  Counters scratch(app_.ports());  // the dispatcher counts from the summaries, as after the GPU
  const uint32_t producers = ring_.producers();
  uint64_t idle = 0;  // empty rounds in a row
  for (;;) {
    bool any = false;
    for (uint32_t p = 0; p < producers && !failed(); ++p) {
      const uint32_t t = (k + p) % producers;
      uint64_t j;
      if (!try_claim(t, &j)) continue;
      const uint64_t t0 = now_ns();
      const uint32_t s = ring_.slot_of(t, j), g = ring_.gen_of(j);
      // Claimed before any frame is touched: after a failure the dispatcher drops the frames of a
      // batch caught half-done (counted as gpu_fault, the reason for a device that failed mid-batch) and processes the others itself, as after a GPU fault.
      __atomic_store_n(&ring_.status(s)->claimed, g, __ATOMIC_RELEASE);
      try {
        process(s, g, b, scratch);
      } catch (const std::exception& e) {
        set_failed(std::string("CPU group: ") + e.what());
        return;
      }
      busy_ns_.fetch_add(now_ns() - t0, std::memory_order_relaxed);
      batches_.fetch_add(1, std::memory_order_relaxed);
      any = true;
    }
    if (any) {
      idle = 0;
      continue;
    }
    // The dispatchers stop only once every batch they published is done: nothing is left here.
    if (stopping_.load(std::memory_order_acquire) || failed()) return;
    if (++idle < kSpinsBeforeYield) {
      cpu_relax();
    } else if (idle < kYieldsBeforeSleep) {
      std::this_thread::yield();
    } else {
      // Idle for a while (a group with no share): sleep briefly rather than spin in sched_yield,
      // which keeps a core and the memory system busy beside the dispatchers. The first batch
      // after it waits this long, plus the timer's slack.
      std::this_thread::sleep_for(std::chrono::microseconds(kIdleSleepUs));
    }
  }
}

void CpuRingRunner::process(uint32_t s, uint32_t g, PacketBatch& b, Counters& scratch) {
  const uint64_t t0 = now_ns();
  const uint32_t n = ring_.fill(s)->count;
  const uint32_t* const lengths = ring_.lengths(s);
  uint32_t* const out_lengths = ring_.out_lengths(s);
  uint32_t* const verdicts = ring_.verdicts(s);
  uint16_t* const l3 = ring_.l3(s);
  const bool want_l3 = ring_.options().want_l3;
  gpu::BatchSummary& sum = *ring_.summary(s);
  gpu::summary_clear(sum);
  const uint32_t first_cell = s * ring_.batch();
  uint64_t bytes = 0;
  for (uint32_t base = 0; base < n; base += PacketBatch::kCapacity) {
    b.size = std::min<uint32_t>(PacketBatch::kCapacity, n - base);
    for (uint32_t i = 0; i < b.size; ++i) {
      b.cell[i] = first_cell + base + i;
      b.len[i] = static_cast<uint16_t>(lengths[base + i]);
      b.wire_len[i] = lengths[base + i];
      b.ts_ns[i] = 0;
      b.l3_off[i] = 0;
      b.verdict[i] = Verdict::kUnset;
    }
    app_.forward_batched(view_, b, scratch);
    for (uint32_t i = 0; i < b.size; ++i) {
      verdicts[base + i] = b.verdict[i];
      if (want_l3) l3[base + i] = b.l3_off[i];
      if (ring_.lengths_change()) out_lengths[base + i] = b.len[i];
      gpu::summary_add(sum, b.verdict[i], b.len[i], ring_.summary_ports());
      bytes += lengths[base + i];
    }
  }
  if (o_.sim) {
    const auto deadline = t0 + static_cast<uint64_t>(o_.cost.a_ns + o_.cost.ns_per_byte * double(bytes) +
                                                     o_.cost.ns_per_frame * n);
    for (uint64_t t = now_ns(); t < deadline && !stopping_.load(std::memory_order_relaxed); t = now_ns()) {
      // Long holds sleep, so that a slow simulated device does not take a core from real work.
      if (deadline - t > 50000) {
        std::this_thread::sleep_for(std::chrono::nanoseconds(deadline - t - 20000));
      } else {
        cpu_relax();
      }
    }
  }
  __atomic_store_n(&ring_.status(s)->done, g, __ATOMIC_RELEASE);
}

}  // namespace tandem
