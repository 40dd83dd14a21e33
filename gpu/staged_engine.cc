#include "gpu/staged_engine.h"

#include <cstring>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "core/clock.h"
#include "core/machine_info.h"

namespace tandem::gpu {

StagedEngine::StagedEngine(std::unique_ptr<OffloadRunner> runner, CpuFallback cpu, const EngineConfig& cfg)
    : runner_(std::move(runner)), cpu_(std::move(cpu)), cfg_(cfg) {
  if (!runner_) throw std::invalid_argument("staged engine: needs a runner");
  if (!cpu_) throw std::invalid_argument("staged engine: a CPU fallback is required");
  cfg_.max_batch = std::min(cfg_.max_batch, runner_->capacity());
  if (cfg_.max_batch == 0 || cfg_.max_batch >= kClosed) throw std::invalid_argument("staged engine: bad batch size");
  cfg_.in_item_bytes = runner_->in_item_bytes();
  cfg_.out_item_bytes = runner_->out_item_bytes();
  for (int s = 0; s < runner_->slots(); ++s) slot_.push_back(std::make_unique<Slot>());
  for (int s = runner_->slots() - 1; s >= 0; --s) free_.push_back(s);
  open_next();
  thread_ = std::thread([this] { master(); });
}

StagedEngine::~StagedEngine() {
  stop_.store(true, std::memory_order_release);
  thread_.join();
}

bool StagedEngine::try_reserve(size_t n, StagedTicket* t) {
  if (n == 0 || n > cfg_.max_batch) throw std::invalid_argument("staged engine: reserve 1..max_batch items");
  const uint64_t cap = cfg_.max_batch;
  // A closed batch is replaced by the next within microseconds; only a missing open slot (every
  // slot in flight or still being read) makes the caller go away and come back.
  for (int tries = 0; tries < 4096; ++tries) {
    const int s = open_.load(std::memory_order_acquire);
    if (s < 0) break;
    Slot& sl = *slot_[s];
    // Look before adding: a closed or full batch is left alone, so its counter never runs away.
    if ((sl.resv.load(std::memory_order_acquire) & kCountMask) >= cap) {
      cpu_relax();
      continue;
    }
    const uint64_t v = sl.resv.fetch_add(n, std::memory_order_acq_rel);
    const uint64_t start = v & kCountMask;
    if (start + n <= cap) {
      if (start == 0) sl.first_ns.store(now_ns(), std::memory_order_release);
      t->slot = s;
      t->gen = static_cast<uint32_t>(v >> 32);
      t->offset = start;
      t->n = n;
      t->in = static_cast<uint8_t*>(runner_->in(s)) + start * cfg_.in_item_bytes;
      t->out = static_cast<const uint8_t*>(runner_->out(s)) + start * cfg_.out_item_bytes;
      return true;
    }
    // This reservation crossed the end: the batch ends where it would have started.
    if (start < cap) sl.boundary.store(start, std::memory_order_release);
  }
  backpressure_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

bool StagedEngine::try_submit(int, const void* items, size_t n, void*, EngineTicket* t) {
  if (!try_reserve(n, &t->staged)) return false;
  std::memcpy(t->staged.in, items, n * cfg_.in_item_bytes);
  commit(t->staged);
  return true;
}

StagedTicket StagedEngine::reserve(size_t n) {
  StagedTicket t;
  while (!try_reserve(n, &t)) std::this_thread::yield();
  return t;
}

void StagedEngine::commit(const StagedTicket& t) {
  slot_[t.slot]->committed.fetch_add(t.n, std::memory_order_release);
}

bool StagedEngine::done(const StagedTicket& t) const {
  return slot_[t.slot]->done_gen.load(std::memory_order_acquire) == t.gen;
}

void StagedEngine::release(const StagedTicket& t) {
  slot_[t.slot]->released.fetch_add(t.n, std::memory_order_release);
}

EngineStats StagedEngine::stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  EngineStats s = stats_;
  s.backpressure = backpressure_.load(std::memory_order_relaxed);
  return s;
}

bool StagedEngine::open_next() {
  if (free_.empty()) {
    open_.store(-1, std::memory_order_release);
    return false;
  }
  const int s = free_.back();
  free_.pop_back();
  Slot& sl = *slot_[s];
  ++sl.gen;
  sl.committed.store(0, std::memory_order_relaxed);
  sl.released.store(0, std::memory_order_relaxed);
  sl.boundary.store(cfg_.max_batch, std::memory_order_relaxed);
  sl.first_ns.store(0, std::memory_order_relaxed);
  sl.resv.store(uint64_t{sl.gen} << 32, std::memory_order_release);  // publishes the resets too
  open_.store(s, std::memory_order_release);
  return true;
}

void StagedEngine::close_and_submit(int s, bool stopping) {
  (void)stopping;
  Slot& sl = *slot_[s];
  const uint64_t old = sl.resv.exchange((uint64_t{sl.gen} << 32) | kClosed, std::memory_order_acq_rel);
  const uint64_t reserved = old & kCountMask;
  open_next();  // the workers go on filling the next slot while this one is finished
  // Wait for every successful reservation to be written. A reservation that crossed the end may
  // not have recorded where it started yet: re-read the boundary while waiting.
  size_t size = 0;
  for (;;) {
    size = std::min<uint64_t>({reserved, sl.boundary.load(std::memory_order_acquire), cfg_.max_batch});
    if (sl.committed.load(std::memory_order_acquire) >= size) break;
    cpu_relax();
  }
  sl.size = size;
  if (on_gpu()) {
    try {
      runner_->submit(s, size);
      in_flight_.push_back(s);
      std::lock_guard<std::mutex> lock(stats_mu_);
      stats_.max_in_flight = std::max<uint64_t>(stats_.max_in_flight, in_flight_.size());
      return;
    } catch (const std::exception& e) {
      in_flight_.push_back(s);
      fail_over(e);
      return;
    }
  }
  answer_on_cpu(s);
}

void StagedEngine::answer_on_cpu(int s) {
  Slot& sl = *slot_[s];
  cpu_(runner_->in(s), runner_->out(s), sl.size);
  sl.done_gen.store(sl.gen, std::memory_order_release);
  unreleased_.push_back(s);
  std::lock_guard<std::mutex> lock(stats_mu_);
  stats_.items += sl.size;
  ++stats_.batches;
  ++stats_.cpu_batches;
}

void StagedEngine::fail_over(const std::exception& e) {
  std::fprintf(stderr, "offload engine: GPU failed, continuing on the CPU: %s\n", e.what());
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.gpu_error = e.what();
  }
  cpu_only_.store(true, std::memory_order_release);
  // The slots are answered and reused in place: nothing on the GPU may write them later (a
  // persistent kernel that was slow rather than dead would).
  runner_->quiesce();
  for (int s : in_flight_) answer_on_cpu(s);  // inputs are still in host memory
  in_flight_.clear();
}

void StagedEngine::poll_in_flight(bool block) {
  while (!in_flight_.empty()) {
    const int s = in_flight_.front();
    try {
      if (block) {
        runner_->wait(s);
      } else if (!runner_->ready(s)) {
        return;
      }
    } catch (const std::exception& e) {
      fail_over(e);
      return;
    }
    Slot& sl = *slot_[s];
    sl.done_gen.store(sl.gen, std::memory_order_release);
    in_flight_.erase(in_flight_.begin());
    unreleased_.push_back(s);
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.items += sl.size;
    ++stats_.batches;
    ++stats_.gpu_batches;
  }
}

void StagedEngine::master() {
  if (cfg_.master_core >= 0) pin_this_thread(cfg_.master_core);
  for (;;) {
    const bool stopping = stop_.load(std::memory_order_acquire);
    bool busy = false;
    const int s = open_.load(std::memory_order_relaxed);
    if (s >= 0) {
      Slot& sl = *slot_[s];
      const uint64_t reserved = sl.resv.load(std::memory_order_acquire) & kCountMask;
      if (reserved > 0) {
        const uint64_t first = sl.first_ns.load(std::memory_order_acquire);
        const bool full = reserved >= cfg_.max_batch;
        const bool timed = first != 0 && now_ns() - first >= cfg_.max_wait_ns;
        const bool idle = cfg_.flush_when_idle && in_flight_.empty();
        if (full || timed || idle || stopping) {
          close_and_submit(s, stopping);
          busy = true;
        }
      }
    }
    poll_in_flight(false);
    // Slots whose every ticket has been released are free again.
    for (size_t i = 0; i < unreleased_.size();) {
      Slot& sl = *slot_[unreleased_[i]];
      if (sl.released.load(std::memory_order_acquire) >= sl.size) {
        free_.push_back(unreleased_[i]);
        unreleased_.erase(unreleased_.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
    if (open_.load(std::memory_order_relaxed) < 0 && !free_.empty()) open_next();
    if (stopping && in_flight_.empty() && unreleased_.empty()) {
      const int o = open_.load(std::memory_order_relaxed);
      if (o < 0 || (slot_[o]->resv.load(std::memory_order_acquire) & kCountMask) == 0) return;
    }
    if (!busy && in_flight_.empty() && unreleased_.empty()) std::this_thread::yield();
  }
}

}  // namespace tandem::gpu
