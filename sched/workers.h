// Any forwarding app's data path (apps/forward_app.h) with N worker threads (G-Opt section 4.2,
// PacketShader): each worker owns a receive queue (its RSS share of the input, io/rss.h), a packet
// pool and counters. A worker receives a burst, parses and classifies it, and then either looks the
// keys up itself (CPU paths) or hands them to the GPU offload engine (gpu/offload_engine.h,
// gpu/staged_engine.h) and goes on receiving; it finishes its bursts (rewrite, verdicts, transmit)
// in the order it received them, as their results come back. Per-packet latency runs from a
// packet's arrival to its verdict.
//
// Oversize frames: a frame longer than 65,535 bytes on the wire does not fit the data path's 16-bit
// lengths; it is dropped (DropReason::kOversize) as soon as it is received, before the app sees it.
//
// Stopping early: WorkersConfig::stop (e.g. core/stop_signal.h's flag, set by SIGINT) makes every
// worker receive nothing more, finish the bursts it has in flight (at the GPU too) and return;
// the counters then balance over what was received.
//
// Offered load: with a rate, packets arrive on a schedule (open loop), each worker's queue at the
// rate times its RSS share, as a NIC would spread them. A packet's
// arrival time is its scheduled time, not the moment the worker got to it, so a worker that falls
// behind shows the queueing delay in its latencies instead of hiding it (coordinated omission).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "apps/forward_app.h"
#include "core/counters.h"
#include "core/rcu.h"
#include "core/stage_times.h"
#include "core/latency_histogram.h"
#include "gpu/offload_engine.h"
#include "gpu/staged_engine.h"
#include "io/packet_source.h"
#include "io/packet_store.h"

namespace tandem {

enum class LookupPath { kScalar, kBatched, kGpu };

// A worker's figures so far, which it publishes after every burst for a thread that watches the
// run (the stats line, the metrics endpoint): one writer each, relaxed stores, its own cache line.
struct alignas(kCacheLine) WorkerProgress {
  std::atomic<uint64_t> received{0};
  std::atomic<uint64_t> forwarded{0};
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> wire_bytes{0};
  std::atomic<uint64_t> latency_ns{0};  // the sum over the packets below
  std::atomic<uint64_t> latency_packets{0};
};

struct WorkersConfig {
  int workers = 1;
  LookupPath path = LookupPath::kBatched;
  gpu::Engine* engine = nullptr;         // kGpu: the engine (a gathering one built for `workers` workers)
  uint32_t burst = 256;                  // frames per receive burst (1..256)
  double rate_pps = 0;                   // offered load over all workers; 0: as fast as possible
  uint64_t repeat = 1;                   // passes over the input
  uint64_t packets = 0;                  // > 0: this many packets in all, looping the input (overrides repeat)
  uint32_t cell_size = 2048;             // packet pool cell size (the largest frame + headroom)
  size_t ports = 16;                     // per-port counters (the largest next hop + 1)
  uint32_t max_bursts_in_flight = 64;    // kGpu: bursts a worker may have at the engine
  uint64_t rx_hold_ns = 0;               // kGpu: hold a partial burst until its oldest packet is this old
  std::vector<int> cores;                // pin worker w to cores[w % size] (empty: not pinned)
  bool verify = false;                   // check every lookup decision against the app's reference
                                         // (ForwardApp::build_reference() must have run)
  PacketSink* sink = nullptr;            // write forwarded frames (first pass; one worker only)
  std::vector<PacketSink*> sinks;        // or: worker w sends every pass's frames to sinks[w] (a live port)
  const std::atomic<int>* stop = nullptr;  // non-zero: receive no more, finish what is in flight
  uint64_t duration_ns = 0;              // > 0: receive nothing more after this long, finish, return
  WorkerProgress* progress = nullptr;    // an array of `workers` entries each worker keeps current
  const std::atomic<int>* abort = nullptr;  // set by run_workers: another worker failed
  Rcu* rcu = nullptr;                    // worker w is reader w, quiescent between bursts; on the GPU
                                         // path reader `workers` is the engine's CPU fallback (set
                                         // before attach_gpu_engine)
                                         // (live table updates, apps/table_control.h)
  StageTiming stage_times = StageTiming::kOff;  // CPU paths: time every burst's stages, or its
                                         // receive alone (WorkersResult::stages; on the CPU paths
                                         // WorkersResult::rx_seconds is measured only then)
};

struct WorkersResult {
  Counters counters;
  LatencyHistogram latency;  // per packet, arrival to verdict
  uint64_t wire_bytes = 0;   // captured bytes + 24 per frame (preamble, FCS, gap)
  uint64_t verify_checked = 0;
  uint64_t verify_mismatches = 0;
  double seconds = 0;        // wall time of the run, start to the last worker's end (all included)
  double verify_seconds = 0; // of which the workers spent verifying, summed over the workers
  double rx_seconds = 0;     // of which the workers spent receiving (the source's copy into cells), summed
                             // (CPU paths: with WorkersConfig::stage_times only)
  StageTimes stages;         // CPU paths with WorkersConfig::stage_times: the workers' stages, summed
  uint64_t expected = 0;     // packets the workers were to receive
  bool stopped = false;      // WorkersConfig::stop ended the run before all of them were received
  // Per worker: packets received, and seconds from the common start to that worker's end (after
  // add(), summed over the windows). A run lasts as long as its slowest worker; these show how far
  // the others were ahead. Empty where the parts merged had different worker counts.
  std::vector<uint64_t> worker_packets;
  std::vector<double> worker_seconds;

  // Adds a later run over more of the input (a capture forwarded a window at a time).
  void add(const WorkersResult& o);
};

// Each receive queue's share of `packets` (0: no limit, UINT64_MAX each), in proportion to its
// size; `queues` as io/rss.h splits the input (one queue: the whole input).
std::vector<uint64_t> queue_budgets(const PacketStore& input, const std::vector<std::vector<uint32_t>>& queues,
                                    uint64_t packets);

// Runs the input through the workers and returns the merged counters and latencies.
WorkersResult run_workers(const ForwardApp& app, const PacketStore& input, const WorkersConfig& cfg);

// Live ports (a network interface's queues): worker w receives from sources[w] and sends what it
// forwards through sinks[w] (sinks empty: through cfg.sink, or nowhere). Runs until cfg.packets
// packets have been received in all (0: no count), cfg.duration_ns has passed, or cfg.stop is
// set; cfg.repeat and cfg.rate_pps do not apply (the traffic comes as it comes).
WorkersResult run_workers_live(const ForwardApp& app, const std::vector<std::unique_ptr<PacketSource>>& sources,
                               const std::vector<std::unique_ptr<PacketSink>>& sinks, const WorkersConfig& cfg);

// Bursts a worker may have at the engine: enough to fill two GPU batches between the workers,
// and no more, since every burst in flight holds packets that must stay in the caches.
inline uint32_t bursts_in_flight(uint32_t batch, uint32_t burst, int workers) {
  const uint64_t per_batch = (uint64_t{batch} + uint64_t{burst} * workers - 1) / (uint64_t{burst} * workers);
  return static_cast<uint32_t>(std::clamp<uint64_t>(2 * per_batch, 8, 256));
}

// The GPU engine of a run, owned here; attach_gpu_engine points a WorkersConfig at it. Destroying
// it waits for its last batch (after run_workers has returned, there is none).
struct GpuEngine {
  std::unique_ptr<gpu::Engine> engine;
  gpu::EngineStats stats() const { return engine ? engine->stats() : gpu::EngineStats{}; }
  bool on_gpu() const { return engine && engine->on_gpu(); }
};

// Builds a staged (or, with staged = false, a gathering) engine on `runner` with the app's CPU
// lookup as its fallback, its queues as deep as wc.max_bursts_in_flight, and sets `wc` to the GPU
// path on it.
GpuEngine attach_gpu_engine(WorkersConfig& wc, const ForwardApp& app, std::unique_ptr<gpu::OffloadRunner> runner,
                            gpu::EngineConfig ec, bool staged);

}  // namespace tandem
