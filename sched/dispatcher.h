// The receive side of a scheduled run (sched/hetero.h): one dispatcher per receive queue, with a
// lane per device. Internal to sched/.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "apps/forward_app.h"
#include "gpu/resident.h"
#include "io/packet_source.h"
#include "io/packet_store.h"
#include "sched/flow_order.h"
#include "sched/hetero.h"
#include "sched/rate_schedule.h"
#include "sched/shard_map.h"

namespace tandem::sched_detail {

inline constexpr uint32_t kShards = sched::kShards;
inline constexpr uint32_t kMaxDevices = 16;
inline constexpr uint64_t kFirstEpoch = 1;  // the plan published before the dispatchers start
inline constexpr uint32_t kPlans = 8;  // plans kept; a dispatcher copies one within a tick of its epoch

// Which device each shard goes to and each device's batch target. Written by the scheduler thread
// into plans[epoch % kPlans] before epoch is raised; read by the dispatchers.
struct Plan {
  std::array<uint8_t, kShards> device{};
  std::array<uint32_t, kMaxDevices> batch{};
};

struct PlanBoard {
  std::array<Plan, kPlans> plans;
  std::atomic<uint64_t> epoch{0};
  std::atomic<bool> abort{false};  // a dispatcher failed: the others stop receiving
};

// What a dispatcher publishes for the scheduler: single writer, relaxed loads elsewhere.
struct LaneStats {
  std::atomic<uint64_t> frames{0}, bytes{0}, batches{0}, service_ns{0}, full_waits{0};
  std::atomic<uint32_t> hwm{0};
  std::atomic<uint64_t> queued{0};      // frames waiting in the dispatcher for this device's ring, now
  std::atomic<uint64_t> queued_hwm{0};  // the most that waited
};
struct DispatcherStats {
  std::atomic<uint64_t> taken{0};
  std::atomic<uint64_t> seen_epoch{0};        // the plan it copied last (UINT64_MAX: finished); the
                                              // scheduler reuses a plan buffer only once all have moved on
  std::atomic<uint64_t> settled_epoch{0};     // every shard of this plan is on its device (UINT64_MAX: finished)
  std::atomic<uint64_t> settled_ns{0};        // when
  std::array<std::atomic<uint64_t>, kShards> shard_frames{};  // frames taken per shard
  std::array<LaneStats, kMaxDevices> lane;
};

struct DeviceRing {
  gpu::ResidentRing* ring = nullptr;
  gpu::ResidentRunner* runner = nullptr;
  bool cpu = false;  // a CPU or sim group: frames at cpu_frame_offset in cells
};

// One receive queue's input: its frames in order, and per frame its shard and its flow (dense per
// queue).
struct QueueInput {
  const std::vector<uint32_t>* order = nullptr;  // null: the whole store
  std::vector<uint16_t> shard;
  std::vector<uint32_t> flow;
  uint32_t flows = 0;
  // Per shard, the state keys of this queue in it (ForwardApp::state_keys; empty: none).
  std::vector<std::vector<uint32_t>> keys;
  uint64_t budget = 0;
  double share = 1;  // of the offered load
  // HeteroConfig::input_phases in this queue: phase p is positions [phase_begin[p], phase_begin[p + 1]).
  std::vector<size_t> phase_begin;
};

class Dispatcher {
 public:
  Dispatcher(const ForwardApp& app, const PacketStore& input, const HeteroConfig& cfg, std::vector<DeviceRing> devs,
             uint32_t t, const QueueInput& q, PlanBoard& board, DispatcherStats& stats, uint64_t start_ns,
             WorkersResult& r);
  void run();
  const FlowOrderChecker& order() const { return order_; }
  uint64_t rx_ns() const { return rx_ns_; }
  uint64_t finish_ns() const { return finish_ns_; }
  uint64_t backlog_hwm() const { return backlog_hwm_; }

 private:
  struct Pending {
    uint32_t n = 0;
    uint64_t rx_bytes = 0, wire_bytes = 0, publish_ns = 0;
  };
  // A frame taken from the queue and stamped, waiting for its device's ring (HeteroConfig::lane_queue).
  struct Queued {
    uint64_t tag = 0, arrival = 0, taken = 0;
    size_t pos = 0;
    uint16_t shard = 0;
  };
  struct Lane {
    DeviceRing dev;
    uint64_t head = 0, tail = 0;
    uint32_t filling = 0;
    size_t used = 0;
    uint32_t target = 0;
    uint64_t oldest = 0;              // arrival of the open slot's first frame
    std::vector<Pending> pending;     // per slot of this dispatcher
    std::vector<uint64_t> tag;        // per slot frame: flow << 32 | sequence number
    std::vector<uint64_t> arrival;    // per slot frame
    std::vector<uint64_t> taken;      // per slot frame, with an output: its index in the queue's stream
    uint32_t slot = 0;                // the open slot (tail's), and its first frame's index in tag/arrival/taken
    size_t base = 0;
    // Frames bound for this device that wait for room in its ring, in arrival order. Every queued
    // frame of a shard is in its planned device's queue, behind none of the shard's later frames.
    std::deque<Queued> queue;
  };

  void apply_plan(uint64_t epoch);
  bool move_shard(uint32_t s);
  void settle_moving();
  uint32_t receive(uint32_t want);
  void publish(uint32_t d);
  // Frame `pos` of the queue waits for device want_[its shard] (false: that queue is full).
  bool enqueue(size_t pos, uint64_t arrival);
  // Moves lane d's queued frames into its ring while there is room and their shards are settled on it.
  bool drain_queue(uint32_t d);
  // After a new plan: each queued frame to the queue of its shard's planned device, in order.
  void requeue();
  void note_queued(uint32_t d);
  // Frame `pos` of the queue is longer than any device takes: dropped on receipt, as the workers do.
  void drop_oversize(size_t pos);
  void open_slot(Lane& l) const;
  // With input phases: the phase of the segment the next packet arrives in; moves pos_ into it.
  void select_phase();
  bool try_finish(uint32_t d);
  void process_on_cpu(Lane& l, uint32_t s, uint32_t g, uint32_t n);
  void finish(uint32_t d, uint32_t s, uint64_t j, const Pending& p);
  void write_out(Lane& l, uint32_t s, uint64_t j, uint32_t n);

  const ForwardApp& app_;
  const PacketStore& input_;
  const HeteroConfig& cfg_;
  std::vector<Lane> lanes_;
  uint32_t t_;
  const QueueInput& q_;
  PlanBoard& board_;
  DispatcherStats& stats_;
  ScheduledArrivalClock clock_;
  WorkersResult& r_;
  FlowOrderChecker order_;
  uint64_t epoch_ = 0;
  std::array<uint8_t, kShards> want_{};     // the plan's device per shard
  std::array<uint8_t, kShards> cur_{};      // the device holding the shard's frames in flight
  std::array<uint64_t, kShards> last_{};    // 1 + the batch number (on cur_) of the shard's latest frame; 0: none there
  std::array<bool, kShards> released_{};    // its old device gave its keys' state back, its new one has not taken it
  std::array<uint32_t, kShards> queued_{};  // frames of the shard in a lane's queue
  std::vector<uint16_t> moving_;
  size_t frames_per_loop_ = 0;
  uint64_t frames_left_ = 0;
  uint64_t next_ = 0;                       // frames taken from the queue so far
  size_t pos_ = 0;                          // the next position in the queue (lo_ <= pos_ < hi_)
  size_t lo_ = 0, hi_ = 0;                  // the positions looped over: the queue, or the current phase's
  uint32_t phase_ = UINT32_MAX;
  uint64_t sunk_ = 0;
  std::unique_ptr<PacketPool> sink_pool_;
  uint64_t rx_ns_ = 0, finish_ns_ = 0, backlog_hwm_ = 0;
};

}  // namespace tandem::sched_detail
