// The offload engine without copies on the master: workers write their items straight into the
// batch being gathered (a runner slot's pinned input buffer) and read their results in place from
// the slot's output buffer. The master only decides when a batch leaves, submits it and watches it
// come back, so the data path scales with the workers instead of one core's memcpy (the gathering
// engine, gpu/offload_engine.h, moves every item twice through its master: measured ~1 G items/s).
//
//   StagedTicket t; engine.try_reserve(n, &t);   // n items of the open batch are now this worker's
//   write n items at t.in; engine.commit(t);
//   ... later: if (engine.done(t)) { read n results at t.out; engine.release(t); }
//
// A batch leaves when it is full, when max_wait has passed since its first reservation, or (with
// flush_when_idle) as soon as no other batch is in flight. A slot is reused only after every
// ticket of its batch has been released. Reservations are one atomic add on the slot's counter;
// the worker whose reservation crosses the end of the slot closes the batch and retries on the
// next one.
//
// Faults: a runner error is reported once; every batch not yet answered is computed by the CPU
// fallback from the slot's input into the slot's output (both host memory), and the engine goes
// on with the CPU doing each batch on the master. Tickets see no difference.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpu/offload.h"
#include "gpu/offload_engine.h"

namespace tandem::gpu {

class StagedEngine final : public Engine {
 public:
  using CpuFallback = OffloadEngine::CpuFallback;

  // `runner` must not be null (with no GPU, use OffloadEngine). Starts the master.
  StagedEngine(std::unique_ptr<OffloadRunner> runner, CpuFallback cpu, const EngineConfig& cfg);
  // Sends what is gathered, waits for every batch to come back and its tickets to be released.
  ~StagedEngine();
  StagedEngine(const StagedEngine&) = delete;
  StagedEngine& operator=(const StagedEngine&) = delete;

  // Any thread; 1 <= n <= max_batch. False (counted as back-pressure) when no batch can take the
  // items now: every slot is in flight or holds results not yet released. A caller holding
  // unreleased tickets must then release what is done before trying again, or the slots it
  // holds never come free.
  bool try_reserve(size_t n, StagedTicket* t);
  // try_reserve until it succeeds: only for callers that hold no unreleased ticket.
  StagedTicket reserve(size_t n);
  void commit(const StagedTicket& t);
  bool done(const StagedTicket& t) const;
  void release(const StagedTicket& t);

  // Engine: a reservation, the items copied into it, committed; results read in place.
  bool try_submit(int w, const void* items, size_t n, void* results, EngineTicket* t) override;
  bool done(const EngineTicket& t) const override { return done(t.staged); }
  const void* results(const EngineTicket& t) const override { return t.staged.out; }
  void release(EngineTicket& t) override { release(t.staged); }

  bool on_gpu() const override { return !cpu_only_.load(std::memory_order_acquire); }
  size_t max_batch() const override { return cfg_.max_batch; }
  EngineStats stats() const override;

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> resv{0};  // (gen << 32) | items reserved; kClosed and above: closed
    alignas(64) std::atomic<uint64_t> committed{0};
    alignas(64) std::atomic<uint64_t> released{0};
    std::atomic<uint64_t> boundary{0};  // start of the reservation that crossed the end (or capacity)
    std::atomic<uint64_t> first_ns{0};  // when the batch's first reservation was made
    alignas(64) std::atomic<uint32_t> done_gen{0};
    uint32_t gen = 0;    // master only
    size_t size = 0;     // master only: items in the closed batch
  };
  static constexpr uint64_t kClosed = uint64_t{1} << 31;
  static constexpr uint64_t kCountMask = (uint64_t{1} << 32) - 1;

  void master();
  bool open_next();
  void close_and_submit(int s, bool stopping);
  void poll_in_flight(bool block);
  void fail_over(const std::exception& e);
  void answer_on_cpu(int s);

  std::unique_ptr<OffloadRunner> runner_;
  CpuFallback cpu_;
  EngineConfig cfg_;
  std::vector<std::unique_ptr<Slot>> slot_;
  alignas(64) std::atomic<int> open_{-1};
  alignas(64) std::atomic<uint64_t> backpressure_{0};
  std::vector<int> in_flight_;       // submitted, oldest first (master only)
  std::vector<int> unreleased_;      // answered, waiting for their tickets' release (master only)
  std::vector<int> free_;            // master only
  std::atomic<bool> cpu_only_{false};
  std::atomic<bool> stop_{false};
  mutable std::mutex stats_mu_;
  EngineStats stats_;
  std::thread thread_;
};

}  // namespace tandem::gpu
