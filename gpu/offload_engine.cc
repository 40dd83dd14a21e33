#include "gpu/offload_engine.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "gpu/gpu_runtime.h"

namespace tandem::gpu {

namespace {
uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch()).count());
}
}  // namespace

OffloadEngine::OffloadEngine(std::unique_ptr<OffloadRunner> runner, CpuFallback cpu,
                             const EngineConfig& cfg, int workers)
    : runner_(std::move(runner)), cpu_(std::move(cpu)), cfg_(cfg) {
  if (workers < 1) throw std::invalid_argument("offload engine: at least one worker");
  if (!cpu_) throw std::invalid_argument("offload engine: a CPU fallback is required");
  if (runner_) {
    cfg_.max_batch = std::min(cfg_.max_batch, runner_->capacity());
    cfg_.in_item_bytes = runner_->in_item_bytes();
    cfg_.out_item_bytes = runner_->out_item_bytes();
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
  pending_.reserve(cfg_.max_batch);
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

void OffloadEngine::submit(int w, OffloadRequest* req) {
  while (!try_submit(w, req)) std::this_thread::yield();
}

EngineStats OffloadEngine::stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  EngineStats s = stats_;
  for (const auto& q : queues_) s.backpressure += q->refused.load(std::memory_order_relaxed);
  return s;
}

void OffloadEngine::master() {
  for (;;) {
    // Once asked to stop, drain: every request accepted before the stop is answered.
    const bool stopping = stop_.load(std::memory_order_acquire);
    bool took = false;
    for (auto& qp : queues_) {
      Queue& q = *qp;
      size_t head = q.head.load(std::memory_order_relaxed);
      while (head != q.tail.load(std::memory_order_acquire)) {
        OffloadRequest* req = q.slots[head % q.slots.size()];
        if (pending_items_ + req->n > cfg_.max_batch) flush();
        if (pending_items_ == 0) first_arrival_ns_ = now_ns();
        uint8_t* dst = on_gpu() ? static_cast<uint8_t*>(runner_->in(0)) : cpu_in_.data();
        std::memcpy(dst + pending_items_ * cfg_.in_item_bytes, req->in, req->n * cfg_.in_item_bytes);
        pending_.emplace_back(req, pending_items_);
        pending_items_ += req->n;
        q.head.store(++head, std::memory_order_release);
        took = true;
        if (pending_items_ == cfg_.max_batch) flush();
      }
    }
    if (pending_items_ && (stopping || now_ns() - first_arrival_ns_ >= cfg_.max_wait_ns)) flush();
    if (stopping && !took && pending_items_ == 0) return;
    if (!took) std::this_thread::yield();
  }
}

void OffloadEngine::flush() {
  if (pending_.empty()) return;
  const size_t n = pending_items_;
  const uint8_t* results = nullptr;
  bool gpu = false;
  if (on_gpu()) {
    try {
      runner_->run(n);
      results = static_cast<const uint8_t*>(runner_->out(0));
      gpu = true;
    } catch (const std::exception& e) {
      // Report once, then recompute this batch (its items are still in the runner's input
      // buffer, which the host owns) and every later one on the CPU.
      std::fprintf(stderr, "offload engine: GPU failed, continuing on the CPU: %s\n", e.what());
      {
        std::lock_guard<std::mutex> lock(stats_mu_);
        stats_.gpu_error = e.what();
      }
      std::memcpy(cpu_in_.data(), runner_->in(0), n * cfg_.in_item_bytes);
      cpu_only_.store(true, std::memory_order_release);
    }
  }
  if (!gpu) {
    cpu_(cpu_in_.data(), cpu_out_.data(), n);
    results = cpu_out_.data();
  }
  for (const auto& [req, off] : pending_) {
    std::memcpy(req->out, results + off * cfg_.out_item_bytes, req->n * cfg_.out_item_bytes);
    req->finished.store(true, std::memory_order_release);
  }
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.requests += pending_.size();
    stats_.items += n;
    ++stats_.batches;
    ++(gpu ? stats_.gpu_batches : stats_.cpu_batches);
  }
  pending_.clear();
  pending_items_ = 0;
}

}  // namespace tandem::gpu
