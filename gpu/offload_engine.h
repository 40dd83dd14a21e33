// The GPU master of G-Opt's section 4.2 / PacketShader: worker threads hand the items their
// packets need (4-byte addresses, 5-tuples, ...) to one master thread per GPU through per-worker
// queues; the master gathers them into batches of up to `max_batch` items, or whatever arrived
// within `max_wait` of the batch's first item, runs each batch through an OffloadRunner, and hands
// every request its results.
//
// Faults: if the runner throws (a failed CUDA call, a kernel error, a persistent kernel that
// stopped answering), the error is reported once with its cause, that batch is recomputed by the
// CPU fallback, and the engine stays on the CPU: no request is lost or answered twice.
// Back-pressure: a full worker queue refuses the request (counted); the worker retries.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpu/offload.h"

namespace tandem::gpu {

// One worker's request: `n` items at `in`, results to `out`. The worker owns it and must keep it
// (and both arrays) alive until done() is true.
struct OffloadRequest {
  const void* in = nullptr;
  void* out = nullptr;
  size_t n = 0;
  std::atomic<bool> finished{false};
  bool done() const { return finished.load(std::memory_order_acquire); }
};

struct EngineConfig {
  size_t max_batch = 8192;     // items per batch (at most the runner's capacity)
  uint64_t max_wait_ns = 50000;  // flush a partial batch this long after its first item arrived
  size_t queue_depth = 64;     // outstanding requests per worker
  size_t in_item_bytes = 4;    // used when there is no runner (CPU only)
  size_t out_item_bytes = 4;
};

struct EngineStats {
  uint64_t requests = 0;
  uint64_t items = 0;
  uint64_t batches = 0;
  uint64_t gpu_batches = 0;
  uint64_t cpu_batches = 0;
  uint64_t backpressure = 0;  // submissions refused because a worker's queue was full
  std::string gpu_error;      // the first GPU error, empty if none
};

class OffloadEngine {
 public:
  using CpuFallback = std::function<void(const void* in, void* out, size_t n)>;

  // `runner` may be null: the engine then batches for the CPU fallback alone. Starts the master.
  OffloadEngine(std::unique_ptr<OffloadRunner> runner, CpuFallback cpu, const EngineConfig& cfg, int workers);
  // Answers every request already submitted, then stops the master.
  ~OffloadEngine();
  OffloadEngine(const OffloadEngine&) = delete;
  OffloadEngine& operator=(const OffloadEngine&) = delete;

  // Called by worker `w` only (one thread per worker). Returns false, counting back-pressure, when
  // the worker's queue is full; n must be <= max_batch.
  bool try_submit(int w, OffloadRequest* req);
  // try_submit until accepted.
  void submit(int w, OffloadRequest* req);

  bool on_gpu() const { return !cpu_only_.load(std::memory_order_acquire); }
  EngineStats stats() const;

 private:
  struct Queue {  // single producer (the worker), single consumer (the master)
    std::vector<OffloadRequest*> slots;
    alignas(64) std::atomic<size_t> head{0};  // next to pop (master)
    alignas(64) std::atomic<size_t> tail{0};  // next to push (worker)
    alignas(64) std::atomic<uint64_t> refused{0};
  };

  void master();
  void flush();

  std::unique_ptr<OffloadRunner> runner_;
  CpuFallback cpu_;
  EngineConfig cfg_;
  std::vector<std::unique_ptr<Queue>> queues_;
  std::vector<uint8_t> cpu_in_, cpu_out_;  // staging when there is no usable runner
  std::vector<std::pair<OffloadRequest*, size_t>> pending_;  // requests in the open batch, offsets
  size_t pending_items_ = 0;
  uint64_t first_arrival_ns_ = 0;
  std::atomic<bool> cpu_only_{false};
  std::atomic<bool> stop_{false};
  mutable std::mutex stats_mu_;
  EngineStats stats_;
  std::thread thread_;
};

}  // namespace tandem::gpu
