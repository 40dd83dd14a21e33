// CPUs and GPUs together (Koromilas et al.; ARCHITECTURE.md, "The scheduler"): one run spread
// over several devices at once, each a resident ring (gpu/resident.h) with its consumer: a GPU's
// resident runner, a CPU worker group (sched/cpu_ring_runner.h) or a simulated device.
//
//   input ──RSS──► D dispatchers (the NIC's queues; pinned)
//                   per frame: its flow's shard (1,024 flow-hash shards) → that shard's device →
//                   that device's open slot; a batch is published at the device's batch target
//                   (or when its oldest frame has waited hold_ns); each dispatcher finishes its
//                   batches per device in publish order, and is the transmit side.
//   scheduler thread, every tick: an Observation of every device → the controller → new shares
//                   and batch targets → shards reassigned (sched/shard_map.h) → a new plan epoch.
//
// A shard moves without reordering any flow: a dispatcher sends a moved shard's next frame to its
// new device only once every batch on the old device holding frames of that shard has finished;
// until then the frame waits in the new device's lane queue behind nothing of its own shard, so no
// later frame of its flow overtakes it while other shards' frames go on (lane_queue; without one,
// it waits at the head of the dispatcher's queue, as in a NIC queue). A frame whose device's ring
// is full waits in the same lane queue, so that one slow device does not stop the others. Every frame is stamped with its flow's next sequence number on receipt and
// checked when it leaves (sched/flow_order.h): the run reports reordered and lost packets.
// Shards are moved per dispatcher, with no barrier between dispatchers: a flow has one dispatcher.
//
// Per-key state shared by many flows (ForwardApp::state_keys: IPsec's per-SA sequence numbers and
// replay windows) goes by key rather than by flow: a frame's queue and shard come from its key
// (its SA), so each key has one dispatcher and is on one device at a time. When a shard has moved,
// its keys' state moves with it (gpu::ResidentRunner::release_state, then adopt_state: a GPU's copy
// back to the app's table, the table's to the new GPU), so each SA's frames take their sequence
// numbers and pass its window in arrival order, whichever devices they visit (a CPU group of
// several threads may run two of a dispatcher's batches at once: numbers stay unique, not ordered).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "apps/forward_app.h"
#include "gpu/resident.h"
#include "io/packet_source.h"
#include "io/packet_store.h"
#include "sched/cpu_ring_runner.h"
#include "sched/observation.h"
#include "sched/rate_schedule.h"
#include "sched/workers.h"

namespace tandem {

namespace sched {
class Controller;
}

struct DeviceSpec {
  std::string id;                 // "cpu0", "gpu0", "sim0"
  sched::DeviceKind kind = sched::DeviceKind::kCpu;
  int threads = 1;                // CPU and sim groups
  std::vector<int> cores;         // CPU and sim groups: pin their threads
  SimCost cost;                   // sim groups: the modelled service time per batch
  int gpu = 0;                    // GPU devices: the CUDA device (two devices may share one: each gets half its SMs)
  uint64_t fault_at_batch = 0;    // GPU devices: trap at this batch (tests, --inject-gpu-fault; 0: never)
};

struct HeteroConfig {
  int dispatchers = 1;
  std::vector<DeviceSpec> devices;
  gpu::ResidentOptions gpu_ring;  // GPU devices: mode, layout, frames per slot (the largest batch), slots, blocks
                                  // (its gpu and fault_at_batch are each device's own, from its DeviceSpec)
  uint32_t cpu_batch = 256;       // CPU and sim devices: frames per slot (the largest batch)
  uint32_t cpu_slots = 8;         // CPU and sim devices: slots per dispatcher
  uint32_t cell_size = 2048;
  std::vector<RateSegment> rate;  // the offered load over all queues; empty: as fast as possible
  // Phases of the input, for a load whose traffic changes (DPI payloads turning match-heavy):
  // input_phases[p] is the first input index of phase p (ascending from 0; the next one's first
  // ends it), segment_phase[k] the phase that rate segment k plays. While a segment lasts, each
  // dispatcher loops over its queue's frames of that phase. Empty: the whole input, always. Needs
  // `rate` and repeat 0 (the schedule ends the run), and no sink.
  std::vector<size_t> input_phases;
  std::vector<uint32_t> segment_phase;
  uint64_t repeat = 1;            // passes over the input
  uint64_t packets = 0;           // > 0: this many packets in all, looping the input
  uint64_t hold_ns = 20000;       // paced: publish a partial batch once its oldest packet is this old
  uint32_t burst = 64;            // frames a dispatcher takes from its queue per round
  // Frames a dispatcher may hold per device while that device's ring is full (or a shard moving to
  // it waits for its old device), so that frames for the other devices go on past them; a full
  // lane queue stops the dispatcher. 0: none, a frame whose device cannot take it stops the
  // dispatcher at once, as the head of a NIC queue does.
  uint32_t lane_queue = 8192;
  std::vector<int> dispatcher_cores;
  bool verify = false;
  PacketSink* sink = nullptr;     // forwarded frames of the first pass (one dispatcher only)
  size_t ports = 16;
  const std::atomic<int>* stop = nullptr;
  sched::Controller* controller = nullptr;  // null: the initial shares hold for the whole run
  std::vector<double> initial_share;        // per device; empty: equal
  double tick_ms = 10;
  // Called on the scheduler thread with each tick's observation before the controller sees it
  // (the energy sampler adds the devices' watts).
  std::function<void(sched::Observation&)> observe;
  // Tests only: move shards at once, without waiting for their frames in flight (what the drain
  // prevents), so that a test can show the order check catching the reordering.
  bool test_skip_drain = false;
};

struct DeviceReport {
  std::string id;
  sched::DeviceKind kind = sched::DeviceKind::kCpu;
  std::string describe;
  uint64_t packets = 0, bytes = 0, batches = 0;
  double busy_seconds = 0;        // CPU and sim: their threads' time on batches, summed; GPU: 0 (not known)
  double mean_batch = 0;
  uint32_t ring_hwm = 0;          // most slots in flight on one dispatcher
  uint32_t ring_slots = 0;        // slots per dispatcher
  uint64_t full_waits = 0;        // frames that found all of a dispatcher's slots of this device in flight
  uint64_t queue_hwm = 0;         // most frames one dispatcher held in its lane queue for it
  bool failed = false;
  std::string error;
  // Its capacity as the run measured it, packets per second: the median over ticks of what it
  // carried per busy second (CPU and sim groups busy at least 20% of a tick) or carried with its
  // queue full (any device). 0: never measured (it never saturated).
  double capacity_pps = 0;
};

struct SwitchRecord {
  double t_ms = 0;                // decision, from the start of the run
  double settle_ms = -1;          // until every dispatcher had every moved shard on its new device (-1: not by the end)
  double moved = 0;               // fraction of the shards' weight moved
  std::string reason;
  std::vector<double> share;
};

struct TimelinePoint {
  double t_s = 0, offered_mpps = 0, achieved_mpps = 0, backlog = 0;
  std::vector<double> share, mpps, watts;
  std::vector<uint32_t> batch;
};

struct HeteroResult {
  WorkersResult run;
  std::vector<DeviceReport> devices;
  uint64_t stamped = 0;           // packets given a sequence number (all but those dropped on receipt)
  uint64_t reordered = 0;
  uint64_t lost = 0;
  uint64_t rx_backlog_hwm = 0;    // packets arrived and not yet taken, the most one queue held (paced runs)
  std::vector<SwitchRecord> switches;
  std::vector<TimelinePoint> timeline;
  double rx_seconds = 0, finish_seconds = 0;
};

// Runs the input over the devices. Throws std::invalid_argument for a configuration it cannot run,
// gpu::GpuError when a GPU device cannot be made.
HeteroResult run_hetero(const ForwardApp& app, const PacketStore& input, const HeteroConfig& cfg);

}  // namespace tandem
