// The resident GPU data path (`tandem run --device gpu --gpu-path resident`): no worker touches a
// packet. Receive threads stand in for a NIC's queues: each copies its RSS share of the input (or,
// on live ports, what its ports bring) into the slots of a GPU-registered ring (gpu/resident.h) as
// a NIC's DMA would, and publishes each batch with one store. The GPU runs the app's whole
// per-packet logic on the frames where they lie
// (a persistent kernel on mapped memory) or on a copy (the DMA variant), and writes each batch's
// verdicts and counters back. The receive thread that published a batch also finishes it, in its
// own order (so no flow is reordered): it adds the batch's counters and latencies, and frees the
// slot. Per packet, the CPU does only what a NIC would do in hardware (the copy into the slot);
// per batch, a handful of stores and loads.
//
// Same guarantees as the workers' paths (sched/workers.h): every packet is counted (received =
// forwarded + dropped), --verify checks every decision against the app's reference, SIGINT stops
// receiving and drains, and a GPU failure is finished on the CPU: batches the GPU had not begun
// are processed by the receive threads with the app's frame core; frames the GPU was writing back
// when it failed are dropped as gpu_fault (counted), never sent half-rewritten.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "apps/forward_app.h"
#include "core/rcu.h"
#include "gpu/resident.h"
#include "io/packet_source.h"
#include "io/packet_store.h"
#include "sched/workers.h"

namespace tandem {

struct ResidentConfig {
  int producers = 1;          // receive threads; each also finishes its own batches
  gpu::ResidentOptions ring;  // mode, layout, batch, slots per producer, ... (producers and want_l3 are set from here)
  bool cpu = false;           // no GPU: the receive threads process their own batches on the CPU
  // The GPUs (CUDA numbers; empty: GPU 0). Receive thread t feeds gpus[t % size], each GPU its own
  // ring and copy of the tables; on a host with several NUMA nodes, a GPU's ring and (without
  // `cores`) its receive threads are kept on the GPU's node. `ring.fault_at_batch` breaks the
  // first GPU only.
  std::vector<int> gpus;
  double rate_pps = 0;        // offered load over all queues; 0: as fast as possible
  uint64_t repeat = 1;        // passes over the input
  uint64_t packets = 0;       // > 0: this many packets in all, looping the input
  uint64_t rx_hold_ns = 20000;  // paced or live: publish a partial batch once its oldest packet is this old
  std::vector<int> cores;     // pin receive thread t to cores[t % size]
  bool verify = false;        // ForwardApp::build_reference() must have run
  PacketSink* sink = nullptr; // write forwarded frames (first pass; one receive thread only)
  size_t ports = 16;
  const std::atomic<int>* stop = nullptr;
  // Live table updates: receive thread t is reader t (its quiescent states between batches), for
  // the batches it processes on the CPU (cpu mode, or after a GPU failure).
  Rcu* rcu = nullptr;
  WorkerProgress* progress = nullptr;  // an array of `producers` entries each receive thread keeps current
  // Live ports (run_resident_live): frames a receive call takes at most, and how long the run
  // receives (0: until `packets` or `stop`). A partial batch leaves when its port has no more
  // frames for now, or once its oldest frame is rx_hold_ns old.
  uint32_t burst = 32;
  uint64_t duration_ns = 0;
  // Live ports that offer their own cells (DPDK mbufs: PacketSource::own_cells): the frames stay
  // in them, registered with the GPU, instead of being copied into the ring and out again (the
  // ring's persistent mode and cells layout). false: copied.
  bool zero_copy = true;
};

// One GPU's part of a run.
struct ResidentGpuReport {
  int gpu = 0;
  int numa_node = -1;         // where its ring and receive threads were kept (-1: not placed)
  uint32_t receive_threads = 0;
  uint64_t packets = 0;       // received by its receive threads
  uint64_t batches = 0;       // finished on the GPU
  bool failed = false;        // its threads finished on the CPU
};

struct ResidentResult {
  WorkersResult run;
  double rx_seconds = 0;      // receive threads' time copying frames into slots (the NIC's work), summed
  double finish_seconds = 0;  // their time finishing batches (counters, latency, verification, output), summed
  double cpu_seconds = 0;     // of which processing batches on the CPU (cpu mode, or after a GPU failure)
  uint64_t batches = 0;
  uint64_t cpu_batches = 0;   // batches processed by the receive threads
  bool gpu_failed = false;
  std::string gpu_error;
  std::string describe;       // the GPU side, in words
  bool zero_copy = false;     // live ports: the frames stayed in the ports' buffers (ResidentConfig::zero_copy)
  std::vector<ResidentGpuReport> gpus;  // per GPU (empty on the CPU)
};

// Runs the input through the resident path. Throws gpu::GpuError when the GPU side cannot be made.
ResidentResult run_resident(const ForwardApp& app, const PacketStore& input, const ResidentConfig& cfg);

// Live ports: receive thread t receives from sources[t] (a burst at a time, copying each frame
// into its ring's slot as a NIC's DMA would) and sends what it forwards through sinks[t] (sinks
// empty: through cfg.sink, or nowhere). Runs until cfg.packets packets have been received in all
// (0: no count), cfg.duration_ns has passed, or cfg.stop is set; cfg.repeat and cfg.rate_pps do
// not apply.
ResidentResult run_resident_live(const ForwardApp& app, const std::vector<std::unique_ptr<PacketSource>>& sources,
                                 const std::vector<std::unique_ptr<PacketSink>>& sinks, const ResidentConfig& cfg);

}  // namespace tandem
