// One engine interface behind the workers (sched/workers.h): a worker hands a burst's items to
// the engine, goes on, and later reads the burst's results; the engine batches items from every
// worker, runs the batches through an OffloadRunner (or the CPU fallback) and answers. Two
// implementations: the gathering engine (gpu/offload_engine.h), whose master copies items into a
// batch and results back, and the staged engine (gpu/staged_engine.h), where workers write items
// straight into the batch and read results in place.
//
//   EngineTicket t;                                   // lives with the burst until release
//   if (!engine.try_submit(w, items, n, results, &t)) ... back-pressure: finish bursts, retry
//   ... later: if (engine.done(t)) { read n results at engine.results(t); engine.release(t); }
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

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
  int master_core = -1;        // pin the master thread to this CPU (-1: not pinned)
  // Send what has been gathered as soon as no batch is in flight, instead of waiting for
  // max_batch or max_wait: batches then grow only while the GPU is busy, so light load sees
  // about one round trip of latency and heavy load still gets large batches.
  bool flush_when_idle = false;
};

struct EngineStats {
  uint64_t requests = 0;
  uint64_t items = 0;
  uint64_t batches = 0;
  uint64_t gpu_batches = 0;
  uint64_t cpu_batches = 0;
  uint64_t backpressure = 0;  // submissions refused because a worker's queue was full
  uint64_t max_in_flight = 0;  // most GPU batches in flight at once
  std::string gpu_error;      // the first GPU error, empty if none
};

struct StagedTicket {
  int slot = -1;
  uint32_t gen = 0;   // which batch of the slot
  size_t offset = 0;  // first item in the batch
  size_t n = 0;
  void* in = nullptr;         // write the items here, then commit
  const void* out = nullptr;  // the results, once done()
};

// A burst handed to an engine: the request or the reservation that carries it.
struct EngineTicket {
  OffloadRequest req;   // the gathering engine
  StagedTicket staged;  // the staged engine
};

class Engine {
 public:
  virtual ~Engine() = default;
  // Worker `w` hands over n items (1 <= n <= max_batch()) at `items`, in_item_bytes each; their
  // results (out_item_bytes each) go to `results` or stay in the engine (results() says where).
  // False when the engine cannot take them now (back-pressure, counted): the caller finishes
  // bursts it has out and tries again. `items` and `results` stay valid until release().
  virtual bool try_submit(int w, const void* items, size_t n, void* results, EngineTicket* t) = 0;
  virtual bool done(const EngineTicket& t) const = 0;
  // Where the ticket's results are, once done().
  virtual const void* results(const EngineTicket& t) const = 0;
  // The caller has read the results: the engine may reuse what held them.
  virtual void release(EngineTicket& t) = 0;

  virtual bool on_gpu() const = 0;
  virtual size_t max_batch() const = 0;
  virtual EngineStats stats() const = 0;
};

}  // namespace tandem::gpu
