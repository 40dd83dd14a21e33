#include "sched/hetero.h"

#include <algorithm>
#include <functional>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "core/clock.h"
#include "core/flow_hash.h"
#include "core/machine_info.h"
#include "gpu/gpu_runtime.h"
#include "core/parse.h"
#include "sched/controller.h"
#include "sched/dispatcher.h"
#include "sched/gpu_ring_placement.h"
#include "sched/shard_map.h"

namespace tandem {

using namespace sched_detail;

namespace {

// Receive queues as a NIC's RSS makes them (io/rss.h: frames that do not parse go to queue 0),
// with each frame's shard and its flow, numbered densely per queue. For an app with per-key state
// (ForwardApp::state_keys: IPsec's SAs), a frame that uses a key goes by its key instead of its
// flow, as a NIC hashing ESP by SPI and other traffic by address pair would send it: each key has
// one queue and one shard, and each queue lists its keys by shard for the hand-over.
std::vector<QueueInput> split_queues(const ForwardApp& app, const PacketStore& input, int queues,
                                     const std::vector<size_t>& phases, std::vector<std::vector<uint32_t>>& order) {
  const uint32_t keys = app.state_keys();
  const auto queue_of_key = [&](uint32_t key) { return queues > 1 ? key % uint32_t(queues) : 0u; };
  std::vector<uint32_t> hash(input.size(), 0), key(input.size(), ForwardApp::kNoStateKey);
  for (size_t i = 0; i < input.size(); ++i) {
    const uint8_t* frame = input.bytes.data() + input.offset[i];
    ParsedPacket p;
    if (parse_packet(frame, input.caplen[i], &p) == DropReason::kNone) hash[i] = flow_hash(p.tuple);
    if (keys) {
      const uint32_t k = app.state_key(frame, input.caplen[i]);
      if (k < keys) key[i] = k;
    }
  }
  order.assign(queues, {});
  for (size_t i = 0; i < input.size(); ++i) {
    const uint32_t q = key[i] != ForwardApp::kNoStateKey ? queue_of_key(key[i]) : queues > 1 ? hash[i] % uint32_t(queues) : 0;
    order[q].push_back(uint32_t(i));
  }
  std::vector<QueueInput> q(queues);
  for (int t = 0; t < queues; ++t) {
    QueueInput& in = q[t];
    in.order = queues > 1 ? &order[t] : nullptr;
    in.share = input.size() ? double(order[t].size()) / double(input.size()) : 0;
    // The order kept is per flow, and per key for frames that use one: the ESP frames of many SAs
    // between two gateways share an outer 5-tuple, but only each SA's own frames keep their order
    // (as a NIC hashing by SPI keeps it).
    std::unordered_map<uint64_t, uint32_t> flows;
    in.shard.reserve(order[t].size());
    in.flow.reserve(order[t].size());
    for (const uint32_t f : order[t]) {
      const bool keyed = key[f] != ForwardApp::kNoStateKey;
      in.shard.push_back(static_cast<uint16_t>(sched::shard_of(keyed ? key[f] : hash[f])));
      const uint64_t id = keyed ? uint64_t{1} << 32 | key[f] : hash[f];
      in.flow.push_back(flows.try_emplace(id, static_cast<uint32_t>(flows.size())).first->second);
    }
    in.flows = static_cast<uint32_t>(flows.size());
  }
  if (!phases.empty()) {
    for (int t = 0; t < queues; ++t) {
      QueueInput& in = q[t];
      const std::vector<uint32_t>& o = order[t];
      for (size_t b : phases) in.phase_begin.push_back(size_t(std::lower_bound(o.begin(), o.end(), uint32_t(b)) - o.begin()));
      in.phase_begin.push_back(o.size());
    }
  }
  if (keys) {
    for (auto& in : q) in.keys.assign(kShards, {});
    for (uint32_t k = 0; k < keys; ++k) q[queue_of_key(k)].keys[sched::shard_of(k)].push_back(k);
  }
  return q;
}

struct Device {
  DeviceSpec spec;
  std::unique_ptr<gpu::ResidentRing> ring;
  std::unique_ptr<gpu::ResidentRunner> runner;
  CpuRingRunner* cpu = nullptr;
};

// The scheduler thread's view of a tick: counter deltas, turned into an Observation.
class Observer {
 public:
  Observer(std::vector<Device>& devs, std::vector<std::unique_ptr<DispatcherStats>>& stats, const HeteroConfig& cfg,
           uint64_t start_ns)
      : devs_(devs), stats_(stats), offered_(cfg.rate, 1.0, start_ns), start_ns_(start_ns),
        prev_(devs.size()), last_ns_(start_ns), lane_queue_(cfg.lane_queue) {}

  sched::Observation observe(const Plan& plan, const std::vector<double>& share, uint64_t now) {
    sched::Observation o;
    const double dt = double(now - last_ns_) / 1e9;
    o.t_s = double(now - start_ns_) / 1e9;
    o.tick_s = dt;
    uint64_t taken = 0;
    for (auto& s : stats_) taken += s->taken.load(std::memory_order_relaxed);
    uint64_t frames = 0, bytes = 0, queued = 0;
    for (size_t d = 0; d < devs_.size(); ++d) {
      Sample x;
      for (auto& s : stats_) {
        const LaneStats& l = s->lane[d];
        x.frames += l.frames.load(std::memory_order_relaxed);
        x.bytes += l.bytes.load(std::memory_order_relaxed);
        x.batches += l.batches.load(std::memory_order_relaxed);
        x.service_ns += l.service_ns.load(std::memory_order_relaxed);
        x.full_waits += l.full_waits.load(std::memory_order_relaxed);
        x.queued += l.queued.load(std::memory_order_relaxed);
      }
      if (devs_[d].cpu) x.busy_ns = devs_[d].cpu->busy_ns();
      const Sample& p = prev_[d];
      sched::DeviceObs ob;
      ob.id = devs_[d].spec.id;
      ob.kind = devs_[d].spec.kind;
      ob.share = share[d];
      ob.pps = dt > 0 ? double(x.frames - p.frames) / dt : 0;
      ob.bps = dt > 0 ? double(x.bytes - p.bytes) * 8 / dt : 0;
      const uint64_t nb = x.batches - p.batches;
      ob.p50_ns = ob.p99_ns = nb ? double(x.service_ns - p.service_ns) / double(nb) : 0;
      ob.busy = devs_[d].cpu && dt > 0 ? double(x.busy_ns - p.busy_ns) / (dt * 1e9 * devs_[d].cpu->threads()) : -1;
      ob.batch = plan.batch[d] ? plan.batch[d] : devs_[d].ring->batch();
      // Frames found its ring full, and with lane queues some still wait for it at the tick's end:
      // a ring filled for a moment by frames let go at once (a moved shard's, which waited for
      // its old device) says nothing of the device's capacity.
      ob.saturated = x.full_waits != p.full_waits && (lane_queue_ == 0 || x.queued > 0);
      queued += x.queued;
      ob.failed = devs_[d].runner->failed();
      frames += x.frames - p.frames;
      bytes += x.bytes - p.bytes;
      prev_[d] = x;
      o.dev.push_back(ob);
    }
    const double arrived = offered_.paced() ? offered_.arrived_by(now) : 0;
    o.achieved_pps = dt > 0 ? double(frames) / dt : 0;
    // Unpaced, the queues always hold more than is carried: offer a quarter more than was carried.
    o.offered_pps = offered_.paced() ? (dt > 0 ? (arrived - last_arrived_) / dt : 0) : o.achieved_pps * 1.25 + 1;
    // Frames taken but waiting in lane queues are still waiting for a device, as those in the NIC queues.
    o.backlog = offered_.paced() ? std::max(0.0, arrived - double(taken)) + double(queued) : 0;
    o.mean_frame_bytes = frames ? double(bytes) / double(frames) : mean_bytes_;
    mean_bytes_ = o.mean_frame_bytes;
    last_arrived_ = arrived;
    last_ns_ = now;
    return o;
  }

 private:
  struct Sample {
    uint64_t frames = 0, bytes = 0, batches = 0, service_ns = 0, full_waits = 0, busy_ns = 0, queued = 0;
  };
  std::vector<Device>& devs_;
  std::vector<std::unique_ptr<DispatcherStats>>& stats_;
  ScheduledArrivalClock offered_;
  uint64_t start_ns_;
  std::vector<Sample> prev_;
  uint64_t last_ns_;
  double last_arrived_ = 0;
  double mean_bytes_ = 0;
  uint32_t lane_queue_;
};

std::vector<double> normalized(std::vector<double> share, size_t n) {
  if (share.size() != n) throw std::invalid_argument("schedule: one share per device");
  double sum = 0;
  for (const double s : share) {
    if (!(s >= 0) || !std::isfinite(s)) throw std::invalid_argument("schedule: shares must be finite and >= 0");
    sum += s;
  }
  if (sum <= 0) throw std::invalid_argument("schedule: the shares must not all be 0");
  for (double& s : share) s /= sum;
  return share;
}

}  // namespace

HeteroResult run_hetero(const ForwardApp& app, const PacketStore& input, const HeteroConfig& cfg) {
  const size_t nd = cfg.devices.size();
  if (nd == 0 || nd > kMaxDevices) throw std::invalid_argument("schedule: 1.." + std::to_string(kMaxDevices) + " devices");
  if (cfg.dispatchers < 1 || cfg.dispatchers > 32) throw std::invalid_argument("schedule: 1..32 receive threads");
  if (cfg.sink && cfg.dispatchers > 1) throw std::invalid_argument("schedule: writing an output capture needs one receive thread");
  if (cfg.gpu_ring.mode != gpu::GpuMode::kPersistent) throw std::invalid_argument("schedule: GPU devices run the persistent kernel");
  if (!cfg.input_phases.empty()) {
    const auto& ph = cfg.input_phases;
    if (cfg.rate.empty() || cfg.repeat != 0 || cfg.packets != 0 || cfg.sink) {
      throw std::invalid_argument("schedule: input phases need a rate schedule that ends the run, and no output");
    }
    if (ph[0] != 0 || std::adjacent_find(ph.begin(), ph.end(), std::greater_equal<size_t>()) != ph.end() ||
        ph.back() >= input.size()) {
      throw std::invalid_argument("schedule: input phases must start at 0 and ascend strictly within the input");
    }
    if (cfg.segment_phase.size() != cfg.rate.size()) throw std::invalid_argument("schedule: one phase per rate segment");
    for (uint32_t p : cfg.segment_phase) {
      if (p >= ph.size()) throw std::invalid_argument("schedule: a segment names a phase the input does not have");
    }
  }
  if (cfg.test_skip_drain && app.state_keys()) {
    throw std::invalid_argument("schedule: skipping the drain would hand per-key state over with frames in flight");
  }
  std::vector<double> share0 = normalized(cfg.initial_share.empty() ? std::vector<double>(nd, 1.0) : cfg.initial_share, nd);
  const uint32_t ports = static_cast<uint32_t>(std::min<size_t>(cfg.ports, gpu::kSummaryPorts));

  std::vector<Device> devs(nd);
  HeteroResult res;
  for (size_t d = 0; d < nd; ++d) {
    Device& dv = devs[d];
    dv.spec = cfg.devices[d];
    gpu::ResidentOptions ro;
    if (dv.spec.kind == sched::DeviceKind::kGpu) {
      ro = cfg.gpu_ring;
      ro.gpu = dv.spec.gpu;
      ro.fault_at_batch = dv.spec.fault_at_batch;
      const int sharing = static_cast<int>(std::count_if(cfg.devices.begin(), cfg.devices.end(), [&](const DeviceSpec& x) {
        return x.kind == sched::DeviceKind::kGpu && x.gpu == dv.spec.gpu;
      }));
      ro.blocks = shared_gpu_blocks(dv.spec.gpu, sharing, ro.blocks);
    } else {
      ro.layout = gpu::FrameLayout::kCells;
      ro.batch = cfg.cpu_batch;
      ro.slots_per_producer = cfg.cpu_slots;
    }
    if (dv.spec.kind != sched::DeviceKind::kGpu) ro.cell_size = cfg.cell_size;  // a GPU ring keeps gpu_ring's
    ro.frame_room = app.frame_growth();
    ro.producers = static_cast<uint32_t>(cfg.dispatchers);
    ro.want_l3 = cfg.verify;
    ro.ports = ports;
    dv.ring = std::make_unique<gpu::ResidentRing>(ro);
    if (dv.spec.kind == sched::DeviceKind::kGpu) {
      place_ring_near_gpu(*dv.ring, dv.spec.gpu, "schedule: " + dv.spec.id);
      dv.runner = app.make_resident_runner(*dv.ring, ro);
    } else {
      CpuRunnerOptions co;
      co.threads = dv.spec.threads;
      co.cores = dv.spec.cores;
      co.sim = dv.spec.kind == sched::DeviceKind::kSim;
      co.cost = dv.spec.cost;
      auto r = std::make_unique<CpuRingRunner>(app, *dv.ring, co);
      dv.cpu = r.get();
      dv.runner = std::move(r);
    }
  }

  std::vector<std::vector<uint32_t>> order;
  const std::vector<QueueInput> queues = split_queues(app, input, cfg.dispatchers, cfg.input_phases, order);
  const std::vector<uint64_t> budget = queue_budgets(input, order, cfg.packets);
  std::vector<QueueInput> qin = queues;
  for (int t = 0; t < cfg.dispatchers; ++t) {
    qin[t].order = cfg.dispatchers > 1 ? &order[t] : nullptr;
    qin[t].budget = budget[t];
  }

  PlanBoard board;
  std::vector<double> share = share0;
  std::vector<uint8_t> assign = sched::initial_shards(share);
  {
    Plan& p = board.plans[kFirstEpoch % kPlans];
    std::copy(assign.begin(), assign.end(), p.device.begin());
    board.epoch.store(kFirstEpoch, std::memory_order_release);
  }
  // Each device keeps the per-key state of the shards it starts with (every copy starts equal).
  if (app.state_keys()) {
    for (size_t d = 0; d < nd; ++d) {
      std::vector<uint32_t> elsewhere;
      for (const QueueInput& in : queues) {
        for (uint32_t sh = 0; sh < kShards; ++sh) {
          if (assign[sh] != d) elsewhere.insert(elsewhere.end(), in.keys[sh].begin(), in.keys[sh].end());
        }
      }
      devs[d].runner->release_state(elsewhere.data(), elsewhere.size());
    }
  }
  std::vector<std::unique_ptr<DispatcherStats>> stats;
  for (int t = 0; t < cfg.dispatchers; ++t) stats.push_back(std::make_unique<DispatcherStats>());

  const int n = cfg.dispatchers;
  std::vector<WorkersResult> part(n);
  std::vector<std::unique_ptr<Dispatcher>> disp(n);
  std::vector<std::exception_ptr> error(n);
  std::atomic<int> ready{0}, finished{0};
  std::atomic<uint64_t> start_ns{0};
  for (auto& dv : devs) dv.runner->start();
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) {
    threads.emplace_back([&, t] {
      try {
        part[t].counters = Counters(cfg.ports);
        if (!cfg.dispatcher_cores.empty()) pin_this_thread(cfg.dispatcher_cores[t % cfg.dispatcher_cores.size()]);
        std::vector<DeviceRing> rings;
        for (auto& dv : devs) rings.push_back({dv.ring.get(), dv.runner.get(), dv.spec.kind != sched::DeviceKind::kGpu});
        if (ready.fetch_add(1) + 1 == n) start_ns.store(now_ns());
        while (start_ns.load() == 0) std::this_thread::yield();
        disp[t] = std::make_unique<Dispatcher>(app, input, cfg, std::move(rings), static_cast<uint32_t>(t), qin[t], board,
                                               *stats[t], start_ns.load(), part[t]);
        disp[t]->run();
      } catch (...) {
        error[t] = std::current_exception();
        board.abort.store(true);  // the others stop receiving and drain
        stats[t]->seen_epoch.store(UINT64_MAX);
        stats[t]->settled_epoch.store(UINT64_MAX);
        uint64_t none = 0;
        start_ns.compare_exchange_strong(none, now_ns());
      }
      finished.fetch_add(1);
    });
  }

  // The scheduler: every tick an observation, the controller's decision, a new plan.
  while (start_ns.load() == 0) std::this_thread::yield();
  const uint64_t t0 = start_ns.load();
  Observer observer(devs, stats, cfg, t0);
  const auto tick = std::chrono::nanoseconds(static_cast<uint64_t>(std::max(0.5, cfg.tick_ms) * 1e6));
  std::vector<double> weight(sched::kShards, 0.0);
  std::vector<uint64_t> shard_prev(sched::kShards, 0);
  uint64_t epoch = kFirstEpoch;
  std::vector<uint64_t> switch_ns;  // per switch: its decision time
  std::vector<std::vector<double>> capacity(nd);  // per device: per-tick capacity samples (bounded)
  constexpr size_t kMaxTimeline = 200000;
  int pending = -1;  // the switch not yet settled
  uint64_t switch_epoch = 0;
  // A switch has settled once every dispatcher has every shard of its plan on its new device.
  auto check_settled = [&] {
    if (pending < 0) return;
    uint64_t settled = 0;
    for (auto& st : stats) {
      if (st->settled_epoch.load(std::memory_order_acquire) < switch_epoch) return;
      settled = std::max(settled, st->settled_ns.load(std::memory_order_relaxed));
    }
    res.switches[pending].settle_ms = double(settled - std::min(settled, switch_ns[pending])) / 1e6;
    pending = -1;
  };
  // A controller or observer that throws stops the scheduling, not the run: the dispatchers finish
  // on the last plan, and the error is raised once they have.
  std::exception_ptr sched_error;
  try {
    while (finished.load() < n) {
      std::this_thread::sleep_for(tick);
      check_settled();
      if (finished.load() == n) break;
      const uint64_t now = now_ns();
      const Plan& cur = board.plans[epoch % kPlans];
      sched::Observation o = observer.observe(cur, share, now);
      for (uint32_t s = 0; s < sched::kShards; ++s) {
        uint64_t f = 0;
        for (auto& st : stats) f += st->shard_frames[s].load(std::memory_order_relaxed);
        weight[s] = 0.8 * weight[s] + 0.2 * double(f - shard_prev[s]);
        shard_prev[s] = f;
      }
      for (size_t d = 0; d < nd; ++d) {
        const sched::DeviceObs& x = o.dev[d];
        const double sample = x.busy >= 0.2 ? x.pps / std::min(x.busy, 1.0) : x.saturated ? x.pps : 0;
        if (sample > 0 && capacity[d].size() < 100000) capacity[d].push_back(sample);
      }
      if (cfg.observe) cfg.observe(o);
      TimelinePoint tp;
      tp.t_s = o.t_s;
      tp.offered_mpps = o.offered_pps / 1e6;
      tp.achieved_mpps = o.achieved_pps / 1e6;
      tp.backlog = o.backlog;
      for (const auto& dv : o.dev) {
        tp.share.push_back(dv.share);
        tp.mpps.push_back(dv.pps / 1e6);
        tp.batch.push_back(dv.batch);
        tp.watts.push_back(dv.watts);
      }
      if (res.timeline.size() < kMaxTimeline) res.timeline.push_back(std::move(tp));
      sched::Decision dec = cfg.controller ? cfg.controller->decide(o) : sched::Decision{};
      // A failed device's shards move whatever the controller says: its batches would otherwise all
      // be finished by the dispatchers, one frame at a time.
      for (size_t d = 0; d < nd && !dec.change; ++d) {
        if (o.dev[d].failed && share[d] > 0) {
          dec.change = true;
          dec.share = share;
          dec.reason = o.dev[d].id + " failed: its shards move to the other devices";
        }
      }
      if (!dec.change) continue;
      // A decision the scheduler cannot carry out (wrong size, no positive share, NaN) is ignored:
      // the run goes on with the plan it has.
      std::vector<double> want;
      try {
        want = normalized(dec.share, nd);
      } catch (const std::invalid_argument&) {
        continue;
      }
      for (size_t d = 0; d < nd; ++d) {
        if (o.dev[d].failed) want[d] = 0;
      }
      double left = 0;
      for (const double w : want) left += w;
      if (left <= 0) {  // only failed devices had shares: the others share them evenly
        for (size_t d = 0; d < nd; ++d) want[d] = o.dev[d].failed ? 0 : 1;
        for (const double w : want) left += w;
        if (left <= 0) continue;  // every device failed: the dispatchers finish on the CPU
      }
      for (double& w : want) w /= left;
      const std::vector<uint8_t> next = sched::assign_shards(assign, weight, want);
      double moved = 0, total = 0;
      for (uint32_t s = 0; s < sched::kShards; ++s) {
        total += weight[s];
        if (next[s] != assign[s]) moved += weight[s];
      }
      const uint64_t e = epoch + 1;
      // A plan buffer is reused only once every queue has copied a plan at most kPlans older: a
      // queue that fell behind must not read a buffer being rewritten. Otherwise decide again next tick.
      uint64_t min_seen = UINT64_MAX;
      for (auto& st : stats) min_seen = std::min(min_seen, st->seen_epoch.load(std::memory_order_acquire));
      if (min_seen != UINT64_MAX && min_seen + kPlans < e) continue;
      Plan& p = board.plans[e % kPlans];
      p = cur;
      std::copy(next.begin(), next.end(), p.device.begin());
      for (size_t d = 0; d < nd && d < dec.batch.size(); ++d) {
        if (dec.batch[d]) p.batch[d] = std::min(dec.batch[d], devs[d].ring->batch());
      }
      board.epoch.store(e, std::memory_order_release);
      epoch = e;
      assign = next;
      share = want;
      SwitchRecord sw;
      sw.t_ms = double(now - t0) / 1e6;
      sw.moved = total > 0 ? moved / total : 0;
      sw.reason = dec.reason;
      sw.share = want;
      if (pending >= 0) res.switches[pending].settle_ms = -2;  // superseded before it settled
      pending = static_cast<int>(res.switches.size());
      res.switches.push_back(sw);
      switch_ns.push_back(now);
      switch_epoch = e;
    }
  } catch (...) {
    sched_error = std::current_exception();
  }
  for (auto& th : threads) th.join();
  const uint64_t end_ns = now_ns();
  check_settled();
  for (auto& dv : devs) dv.runner->stop();
  for (auto& e : error) {
    if (e) std::rethrow_exception(e);
  }
  if (sched_error) std::rethrow_exception(sched_error);

  WorkersResult& total = res.run;
  total.counters = Counters(cfg.ports);
  for (int t = 0; t < n; ++t) {
    const WorkersResult& r = part[t];
    total.add(r);  // a thread's part: counters, latencies, bytes, verification (no times of its own)
    const Dispatcher& dp = *disp[t];
    res.rx_seconds += dp.rx_ns() / 1e9;
    total.rx_seconds += dp.rx_ns() / 1e9;
    res.finish_seconds += dp.finish_ns() / 1e9;
    res.stamped += dp.order().stamped();
    res.reordered += dp.order().reordered();
    res.lost += dp.order().lost();
    res.rx_backlog_hwm = std::max(res.rx_backlog_hwm, dp.backlog_hwm());
  }
  for (size_t d = 0; d < nd; ++d) {
    DeviceReport rep;
    rep.id = devs[d].spec.id;
    rep.kind = devs[d].spec.kind;
    rep.describe = devs[d].runner->describe();
    rep.ring_slots = devs[d].ring->per_producer();
    for (auto& st : stats) {
      const LaneStats& l = st->lane[d];
      rep.packets += l.frames.load();
      rep.bytes += l.bytes.load();
      rep.batches += l.batches.load();
      rep.full_waits += l.full_waits.load();
      rep.ring_hwm = std::max(rep.ring_hwm, l.hwm.load());
      rep.queue_hwm = std::max(rep.queue_hwm, l.queued_hwm.load());
    }
    rep.mean_batch = rep.batches ? double(rep.packets) / double(rep.batches) : 0;
    rep.busy_seconds = devs[d].cpu ? devs[d].cpu->busy_ns() / 1e9 : 0;
    if (!capacity[d].empty()) {
      std::nth_element(capacity[d].begin(), capacity[d].begin() + capacity[d].size() / 2, capacity[d].end());
      rep.capacity_pps = capacity[d][capacity[d].size() / 2];
    }
    rep.failed = devs[d].runner->failed();
    if (rep.failed) rep.error = devs[d].runner->error();
    res.devices.push_back(std::move(rep));
  }
  total.seconds = (end_ns - t0) / 1e9;
  total.expected = cfg.packets ? cfg.packets : input.size() * cfg.repeat;
  return res;
}

}  // namespace tandem
