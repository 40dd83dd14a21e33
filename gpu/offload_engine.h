// The GPU master of G-Opt's section 4.2 / PacketShader: worker threads hand the items their
// packets need (4-byte addresses, 5-tuples, ...) to one master thread per GPU through per-worker
// queues; the master gathers them into batches of up to `max_batch` items, or whatever arrived
// within `max_wait` of the batch's first item, runs each batch through an OffloadRunner, and hands
// every request its results.
//
// With flush_when_idle, a batch also leaves as soon as no other is in flight (batching only while
// the GPU is busy, as NBA's adaptive batching does).
//
// Several batches are in flight at once, one per runner slot: while the GPU works on one, the
// master gathers the next, and copies and kernels of consecutive batches overlap on their streams.
//
// Faults: if the runner throws (a failed CUDA call, a kernel error, a persistent kernel that
// stopped answering), the error is reported once with its cause, every batch not yet answered
// (the failed one, the others in flight, the one being gathered) is recomputed by the CPU
// fallback from the runner's host buffers, and the engine stays on the CPU: no request is lost or
// answered twice.
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

#include "gpu/engine.h"
#include "gpu/offload.h"

namespace tandem::gpu {

class OffloadEngine final : public Engine {
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

  // Engine: the ticket's request is submitted as is (its items copied at gathering, its results
  // copied to `results`).
  bool try_submit(int w, const void* items, size_t n, void* results, EngineTicket* t) override;
  bool done(const EngineTicket& t) const override { return t.req.done(); }
  const void* results(const EngineTicket& t) const override { return t.req.out; }
  void release(EngineTicket&) override {}

  bool on_gpu() const override { return !cpu_only_.load(std::memory_order_acquire); }
  size_t max_batch() const override { return cfg_.max_batch; }
  EngineStats stats() const override;

 private:
  struct Queue {  // single producer (the worker), single consumer (the master)
    std::vector<OffloadRequest*> slots;
    alignas(64) std::atomic<size_t> head{0};  // next to pop (master)
    alignas(64) std::atomic<size_t> tail{0};  // next to push (worker)
    alignas(64) std::atomic<uint64_t> refused{0};
  };

  // A batch: its requests with their offsets, and the runner slot that holds it (-1: CPU).
  struct Batch {
    int slot = -1;
    size_t items = 0;
    std::vector<std::pair<OffloadRequest*, size_t>> reqs;
  };

  void master();
  uint8_t* staging();              // where the open batch's items go
  void open_batch();               // picks a free slot for the open batch
  void flush();                    // the open batch leaves: submitted to the GPU, or run on the CPU
  void complete(Batch& b, const uint8_t* results, bool gpu);
  bool complete_oldest(bool block);  // answers the oldest batch in flight if done (or waits for it)
  void fail_over(const std::exception& e);

  std::unique_ptr<OffloadRunner> runner_;
  CpuFallback cpu_;
  EngineConfig cfg_;
  std::vector<std::unique_ptr<Queue>> queues_;
  std::vector<uint8_t> cpu_in_, cpu_out_;  // staging when there is no usable runner
  Batch open_;                              // the batch being gathered
  std::vector<Batch> in_flight_;            // oldest first
  std::vector<int> free_slots_;
  uint64_t first_arrival_ns_ = 0;
  std::atomic<bool> cpu_only_{false};
  std::atomic<bool> stop_{false};
  mutable std::mutex stats_mu_;
  EngineStats stats_;
  std::thread thread_;
};

}  // namespace tandem::gpu
