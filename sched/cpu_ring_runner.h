// A CPU worker group as a scheduler device (sched/hetero.h): the consumer side of a resident ring
// (gpu/resident.h) run by CPU threads instead of a GPU. The dispatchers fill and publish its slots
// exactly as they do a GPU's; its threads claim published batches, run the app's batched
// (latency-hiding) CPU path on the frames where they lie, and write each batch's verdicts and
// summary before its done word, as the GPU does. So a dispatcher treats every device alike, and a
// shard moves between a CPU group and a GPU by changing only which ring its frames go to.
//
// The frames of a CPU ring sit in packet-pool cells: frame i of slot s at
// bytes(s) + i x cell_size + PacketPool::kHeadroom (cpu_frame_offset), so that a PacketPool view
// of the ring gives the app's CPU paths their usual cells.
//
// A simulated device (`sim`) is a CPU group that also holds each batch for a modelled service time
// a + b x bytes + c x frames: CI's stand-in for a slower or faster accelerator, with real verdicts.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "apps/forward_app.h"
#include "core/packet_pool.h"
#include "gpu/resident.h"

namespace tandem {

struct SimCost {
  double a_ns = 0;            // per batch
  double ns_per_byte = 0;
  double ns_per_frame = 0;
};

struct CpuRunnerOptions {
  int threads = 1;
  std::vector<int> cores;     // pin thread k to cores[k % size] (empty: not pinned)
  bool sim = false;
  SimCost cost;
};

// Where a CPU ring's frame i of a slot starts, from the slot's start.
inline uint32_t cpu_frame_offset(uint32_t i, uint32_t cell_size) { return i * cell_size + PacketPool::kHeadroom; }

class CpuRingRunner final : public gpu::ResidentRunner {
 public:
  // `ring` must use the cells layout with frames at cpu_frame_offset; it outlives the runner.
  CpuRingRunner(const ForwardApp& app, gpu::ResidentRing& ring, CpuRunnerOptions o);
  ~CpuRingRunner() override;
  void start() override;
  void stop() override;
  uint64_t batches() const override { return batches_.load(std::memory_order_relaxed); }
  std::string describe() const override;
  // Nanoseconds the threads spent on batches (claim to done), summed: busy time for the scheduler.
  uint64_t busy_ns() const { return busy_ns_.load(std::memory_order_relaxed); }
  int threads() const { return o_.threads; }

 private:
  void run(int k);
  bool try_claim(uint32_t t, uint64_t* j);
  void process(uint32_t s, uint32_t g, PacketBatch& b, Counters& scratch);

  const ForwardApp& app_;
  gpu::ResidentRing& ring_;
  CpuRunnerOptions o_;
  PacketPool view_;
  std::unique_ptr<std::atomic<uint64_t>[]> claimed_;  // per producer: batches claimed so far
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> batches_{0};
  std::atomic<uint64_t> busy_ns_{0};
  std::vector<std::thread> threads_;
};

}  // namespace tandem
