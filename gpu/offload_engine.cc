#include "gpu/offload_engine.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "core/clock.h"
#include "core/machine_info.h"
#include "gpu/gpu_runtime.h"

namespace tandem::gpu {

OffloadEngine::OffloadEngine(std::unique_ptr<OffloadRunner> runner, CpuFallback cpu,
                             const EngineConfig& cfg, int workers)
    : runner_(std::move(runner)), cpu_(std::move(cpu)), cfg_(cfg) {
  if (workers < 1) throw std::invalid_argument("offload engine: at least one worker");
  if (!cpu_) throw std::invalid_argument("offload engine: a CPU fallback is required");
  if (runner_) {
    cfg_.max_batch = std::min(cfg_.max_batch, runner_->capacity());
    cfg_.in_item_bytes = runner_->in_item_bytes();
    cfg_.out_item_bytes = runner_->out_item_bytes();
    for (int s = runner_->slots() - 1; s >= 0; --s) free_slots_.push_back(s);
  } else {
    cpu_only_ = true;
  }
  if (cfg_.max_batch == 0 || cfg_.queue_depth == 0) throw std::invalid_argument("offload engine: empty batch or queue");
  cpu_in_.resize(cfg_.max_batch * cfg_.in_item_bytes);
  cpu_out_.resize(cfg_.max_batch * cfg_.out_item_bytes);
  for (int w = 0; w < workers; ++w) {
    auto q = std::make_unique<Queue>();
    q->slots.resize(cfg_.queue_depth);
    queues_.push_back(std::move(q));
  }
  open_.reqs.reserve(cfg_.max_batch);
  thread_ = std::thread([this] { master(); });
}

OffloadEngine::~OffloadEngine() {
  stop_.store(true, std::memory_order_release);
  thread_.join();
}

bool OffloadEngine::try_submit(int w, OffloadRequest* req) {
  if (req->n > cfg_.max_batch) throw std::invalid_argument("offload engine: request larger than a batch");
  Queue& q = *queues_[w];
  const size_t tail = q.tail.load(std::memory_order_relaxed);
  if (tail - q.head.load(std::memory_order_acquire) == q.slots.size()) {
    q.refused.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  req->finished.store(false, std::memory_order_relaxed);
  q.slots[tail % q.slots.size()] = req;
  q.tail.store(tail + 1, std::memory_order_release);
  return true;
}

bool OffloadEngine::try_submit(int w, const void* items, size_t n, void* results, EngineTicket* t) {
  t->req.in = items;
  t->req.out = results;
  t->req.n = n;
  return try_submit(w, &t->req);
}

void OffloadEngine::submit(int w, OffloadRequest* req) {
  while (!try_submit(w, req)) std::this_thread::yield();
}

EngineStats OffloadEngine::stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  EngineStats s = stats_;
  for (const auto& q : queues_) s.backpressure += q->refused.load(std::memory_order_relaxed);
  return s;
}

uint8_t* OffloadEngine::staging() {
  return open_.slot >= 0 ? static_cast<uint8_t*>(runner_->in(open_.slot)) : cpu_in_.data();
}

void OffloadEngine::open_batch() {
  open_.slot = -1;
  if (!on_gpu()) return;
  // Every slot in flight: the oldest batch must come back before another can be gathered.
  while (free_slots_.empty() && on_gpu()) complete_oldest(true);
  if (!on_gpu()) return;
  open_.slot = free_slots_.back();
  free_slots_.pop_back();
}

void OffloadEngine::master() {
  if (cfg_.master_core >= 0) pin_this_thread(cfg_.master_core);
  for (;;) {
    // Once asked to stop, drain: every request accepted before the stop is answered.
    const bool stopping = stop_.load(std::memory_order_acquire);
    bool took = false;
    for (auto& qp : queues_) {
      Queue& q = *qp;
      size_t head = q.head.load(std::memory_order_relaxed);
      // What the queue holds now, no more: the master comes back to the batch's deadline and to
      // the batches in flight between queues, however fast the workers keep submitting.
      const size_t tail = q.tail.load(std::memory_order_acquire);
      for (; head != tail; ++head) {
        OffloadRequest* req = q.slots[head % q.slots.size()];
        if (open_.items + req->n > cfg_.max_batch) flush();
        if (open_.items == 0) {
          open_batch();
          first_arrival_ns_ = now_ns();
        }
        std::memcpy(staging() + open_.items * cfg_.in_item_bytes, req->in, req->n * cfg_.in_item_bytes);
        open_.reqs.emplace_back(req, open_.items);
        open_.items += req->n;
        q.head.store(head + 1, std::memory_order_release);
        took = true;
        if (open_.items == cfg_.max_batch) flush();
      }
      if (open_.items && ((cfg_.flush_when_idle && in_flight_.empty()) ||
                          now_ns() - first_arrival_ns_ >= cfg_.max_wait_ns)) {
        flush();
      }
      while (!in_flight_.empty() && complete_oldest(false)) {
      }
    }
    if (open_.items && stopping) flush();
    if (!in_flight_.empty()) complete_oldest(stopping && !took && open_.items == 0);
    if (stopping && !took && open_.items == 0 && in_flight_.empty()) return;
    // With batches in flight or one open the master keeps polling; otherwise it leaves the core.
    if (!took && in_flight_.empty() && open_.items == 0) std::this_thread::yield();
  }
}

void OffloadEngine::flush() {
  if (open_.reqs.empty()) return;
  Batch b = std::move(open_);
  open_ = Batch{};
  open_.reqs.reserve(cfg_.max_batch);
  if (b.slot >= 0) {
    try {
      runner_->submit(b.slot, b.items);
      in_flight_.push_back(std::move(b));
      std::lock_guard<std::mutex> lock(stats_mu_);
      stats_.max_in_flight = std::max<uint64_t>(stats_.max_in_flight, in_flight_.size());
      return;
    } catch (const std::exception& e) {
      in_flight_.push_back(std::move(b));
      fail_over(e);  // answers it with the rest
      return;
    }
  }
  cpu_(cpu_in_.data(), cpu_out_.data(), b.items);
  complete(b, cpu_out_.data(), false);
}

bool OffloadEngine::complete_oldest(bool block) {
  Batch& b = in_flight_.front();
  try {
    if (block) {
      runner_->wait(b.slot);
    } else if (!runner_->ready(b.slot)) {
      return false;
    }
  } catch (const std::exception& e) {
    fail_over(e);
    return false;
  }
  complete(b, static_cast<const uint8_t*>(runner_->out(b.slot)), true);
  free_slots_.push_back(b.slot);
  in_flight_.erase(in_flight_.begin());
  return true;
}

void OffloadEngine::fail_over(const std::exception& e) {
  std::fprintf(stderr, "offload engine: GPU failed, continuing on the CPU: %s\n", e.what());
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.gpu_error = e.what();
  }
  cpu_only_.store(true, std::memory_order_release);
  // Nothing submitted earlier may still write the slots (a persistent kernel slow rather than dead).
  runner_->quiesce();
  // Every batch in flight is recomputed from its input, which is still in the runner's host
  // buffer (the host owns it; the GPU only ever read it).
  for (Batch& b : in_flight_) {
    std::memcpy(cpu_in_.data(), runner_->in(b.slot), b.items * cfg_.in_item_bytes);
    cpu_(cpu_in_.data(), cpu_out_.data(), b.items);
    complete(b, cpu_out_.data(), false);
  }
  in_flight_.clear();
  // The batch being gathered moves to the CPU staging buffer.
  if (open_.slot >= 0) {
    std::memcpy(cpu_in_.data(), runner_->in(open_.slot), open_.items * cfg_.in_item_bytes);
    open_.slot = -1;
  }
}

void OffloadEngine::complete(Batch& b, const uint8_t* results, bool gpu) {
  for (const auto& [req, off] : b.reqs) {
    std::memcpy(req->out, results + off * cfg_.out_item_bytes, req->n * cfg_.out_item_bytes);
    req->finished.store(true, std::memory_order_release);
  }
  std::lock_guard<std::mutex> lock(stats_mu_);
  stats_.requests += b.reqs.size();
  stats_.items += b.items;
  ++stats_.batches;
  ++(gpu ? stats_.gpu_batches : stats_.cpu_batches);
}

}  // namespace tandem::gpu
