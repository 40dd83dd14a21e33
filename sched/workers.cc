#include "sched/workers.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/machine_info.h"
#include "io/rss.h"
#include "sched/arrival_clock.h"
#include "sched/live_receive.h"

namespace tandem {

namespace {

using sched_detail::IdleWait;
using sched_detail::RxBudget;
using sched_detail::SharedCount;

// Ethernet preamble + start delimiter (8), FCS (4) and inter-frame gap (12): what a frame costs on
// the wire beyond its captured bytes, so Gbps figures compare with link rates.
constexpr uint64_t kWireOverhead = 24;

// The longest frame PacketBatch::len (16 bits) holds.
constexpr uint32_t kMaxFrame = 0xFFFF;

// A worker that fails sets this for the run's other workers (WorkersConfig::abort), so that a
// live run, which has no end of its own, ends and reports the failure.
bool stop_asked(const WorkersConfig& cfg) {
  return (cfg.stop != nullptr && cfg.stop->load(std::memory_order_relaxed) != 0) ||
         (cfg.abort != nullptr && cfg.abort->load(std::memory_order_relaxed) != 0);
}

// Why a worker stops receiving before its input ends: a signal, or the run's time is up.
bool time_to_stop(const WorkersConfig& cfg, uint64_t deadline_ns, WorkersResult& r) {
  if (stop_asked(cfg)) {
    r.stopped = true;
    return true;
  }
  return deadline_ns && now_ns() >= deadline_ns;
}

// Takes the frames longer than kMaxFrame out of a burst just received, as received and dropped
// (kOversize): the source could only give their first bytes, which the app must not forward as if
// they were the frame. The others keep their order. Returns how many were taken out.
uint32_t drop_oversize(PacketPool& pool, PacketBatch& b, Counters& c) {
  uint32_t i = 0;
  while (i < b.size && b.wire_len[i] <= kMaxFrame) ++i;
  if (TANDEM_LIKELY(i == b.size)) return 0;
  const uint32_t received = b.size;
  uint32_t kept = i;
  for (; i < b.size; ++i) {
    if (b.wire_len[i] > kMaxFrame) {
      c.received(b.len[i]);
      c.drop(DropReason::kOversize);
      pool.free_bulk(&b.cell[i], 1);
      continue;
    }
    b.cell[kept] = b.cell[i];
    b.len[kept] = b.len[i];
    b.wire_len[kept] = b.wire_len[i];
    b.ts_ns[kept] = b.ts_ns[i];
    b.verdict[kept] = b.verdict[i];
    ++kept;
  }
  b.size = kept;
  return received - kept;
}

// Everything that happens to a burst after its verdicts are final: latency, verification,
// output (first pass only), wire bytes, freeing the cells.
class BurstFinisher {
 public:
  BurstFinisher(PacketPool& pool, const ForwardApp* ref, PacketSink* sink, uint64_t first_pass, WorkersResult& r)
      : pool_(pool), ref_(ref), sink_(sink), first_pass_(first_pass), r_(r) {}

  // The verdicts are ready at `t`: packet i arrived at first_arrival + i * spacing, on the same
  // clock (ArrivalClock::now()).
  void verdicts_ready(const PacketBatch& b, uint64_t first_arrival, uint64_t spacing, uint64_t t) {
    if (spacing == 0) {
      r_.latency.record(t - first_arrival, b.size);
      latency_sum_ += (t - first_arrival) * b.size;
    } else {
      for (uint32_t i = 0; i < b.size; ++i) r_.latency.record(t - (first_arrival + i * spacing));
      latency_sum_ += (t - first_arrival) * b.size - spacing * (uint64_t{b.size} * (b.size - 1) / 2);
    }
    latency_packets_ += b.size;
  }

  // `removed`: frames of the burst taken out before the app saw it (oversize), which count towards
  // the first pass as if they had come first in the burst.
  void finish(PacketBatch& b, uint32_t removed) {
    seen_ += removed;
    if (ref_) {
      const uint64_t t0 = now_ns();
      verify(b);
      verify_ns_ += now_ns() - t0;
    }
    uint32_t taken = 0;  // the first frames went to a sink that took their cells if forwarded
    if (sink_ && seen_ < first_pass_) {
      const uint32_t head = static_cast<uint32_t>(std::min<uint64_t>(b.size, first_pass_ - seen_));
      if (head == b.size) {
        sink_->tx_burst(pool_, b, r_.counters);
      } else {
        PacketBatch part = b;
        part.size = head;
        sink_->tx_burst(pool_, part, r_.counters);
      }
      if (sink_->takes_cells(pool_)) taken = head;
    }
    for (uint32_t i = 0; i < b.size; ++i) r_.wire_bytes += b.wire_len[i] + kWireOverhead;
    seen_ += b.size;
    if (taken == 0) {
      pool_.free_bulk(b.cell.data(), b.size);
    } else {
      uint32_t left[PacketBatch::kCapacity], n = 0;
      for (uint32_t i = 0; i < b.size; ++i) {
        if (i >= taken || Verdict::is_drop(b.verdict[i])) left[n++] = b.cell[i];
      }
      pool_.free_bulk(left, n);
    }
    b.clear();
    if (progress_) publish();
  }
  void set_progress(WorkerProgress* p) { progress_ = p; }
  uint64_t verify_ns() const { return verify_ns_; }

 private:
  // Every packet that reached the lookup (forwarded, or dropped for lack of a route) must carry
  // the app's reference decision for its key.
  void publish() {
    const Counters& c = r_.counters;
    progress_->received.store(c.rx_packets, std::memory_order_relaxed);
    progress_->forwarded.store(c.tx_packets, std::memory_order_relaxed);
    progress_->dropped.store(c.dropped(), std::memory_order_relaxed);
    progress_->wire_bytes.store(r_.wire_bytes, std::memory_order_relaxed);
    progress_->latency_ns.store(latency_sum_, std::memory_order_relaxed);
    progress_->latency_packets.store(latency_packets_, std::memory_order_relaxed);
  }

  void verify(const PacketBatch& b) {
    for (uint32_t i = 0; i < b.size; ++i) {
      uint32_t want = 0;
      if (!ref_->reference_verdict(pool_.data(b.cell[i]), b.len[i], b.l3_off[i], b.verdict[i], &want)) continue;
      ++r_.verify_checked;
      r_.verify_mismatches += want != b.verdict[i];
    }
  }

  PacketPool& pool_;
  const ForwardApp* ref_;
  PacketSink* sink_;
  uint64_t first_pass_;
  WorkersResult& r_;
  uint64_t seen_ = 0;
  uint64_t verify_ns_ = 0;
  WorkerProgress* progress_ = nullptr;
  uint64_t latency_sum_ = 0;
  uint64_t latency_packets_ = 0;
};

// A burst at the GPU engine: its packets, its items and results (the app's data blocks) and the
// ticket that carries them; `waiting` marks a burst that is classified but that the engine could not
// take yet.
struct BurstInFlight {
  PacketBatch batch;
  KeyBatch keys;
  gpu::EngineTicket ticket;
  bool waiting = false;
  uint32_t oversize = 0;  // frames taken out on receipt (drop_oversize)
  uint64_t first_arrival = 0;
  uint64_t spacing = 0;
};

// One worker on a CPU path: receive, forward, finish, one burst at a time. `Src` is ReplaySource
// (its calls inlined: the peak-rate loop) or any PacketSource. kTiming: the stages of every burst
// (or its receive alone) are timed into r.stages (core/stage_times.h); kOff: the loop reads no
// clock of its own.
template <StageTiming kTiming, class Src>
void cpu_worker(const ForwardApp& app, int w, Src& src, RxBudget budget, double rate, const WorkersConfig& cfg,
                uint64_t start_ns, WorkersResult& r, BurstFinisher& fin, PacketPool& pool) {
  ArrivalClock clock(rate, start_ns);
  const uint64_t deadline = cfg.duration_ns ? start_ns + cfg.duration_ns : 0;
  PacketBatch b;
  IdleWait idle(cfg.rcu, w);
  constexpr bool kTimed = kTiming == StageTiming::kAll;
  constexpr bool kRxTimed = kTiming != StageTiming::kOff;
  StageTimes& st = r.stages;
  uint64_t loop0 = kRxTimed ? stage_ticks() : 0;
  while (!budget.done()) {
    if (cfg.rcu) cfg.rcu->quiescent(w);  // between bursts: no table pointer held
    uint32_t n;
    while ((n = clock.available(cfg.burst)) == 0 && !stop_asked(cfg)) cpu_relax();
    if (time_to_stop(cfg, deadline, r)) break;
    const uint32_t claimed = budget.claim(n);
    if (claimed == 0) {  // live: the count is claimed by other queues for now
      cpu_relax();
      continue;
    }
    src.set_burst(claimed);
    uint64_t t = 0;
    if constexpr (kRxTimed) t = stage_ticks();
    const uint32_t got = src.rx_burst(pool, b);
    if constexpr (kRxTimed) {
      // A live port's time before its first frame (the traffic has not started) is not the
      // pipeline's: the stages are timed from the first frame on.
      if (st.packets == 0 && got == 0) {
        loop0 = stage_ticks();
      } else {
        st.lap(Stage::kReceive, t);
        st.empty_receives += got == 0;
      }
    }
    budget.received(claimed, got);
    if (got == 0) {
      if (pool.available() < PacketBatch::kCapacity) throw std::logic_error("worker: packet pool ran dry");
      if (!src.live()) break;
      idle.empty(src);
      continue;
    }
    idle.got();
    uint64_t spacing = 0;
    const uint64_t first = clock.take(b.size, &spacing);
    const uint32_t oversize = drop_oversize(pool, b, r.counters);
    if (cfg.path == LookupPath::kScalar) {
      if constexpr (kTimed) t = stage_ticks();
      app.forward_scalar(pool, b, r.counters);
      if constexpr (kTimed) st.lap(Stage::kApp, t);
    } else if constexpr (kTimed) {
      app.forward_batched_staged(pool, b, r.counters, st);
    } else {
      app.forward_batched(pool, b, r.counters);
    }
    if constexpr (kRxTimed) {
      st.packets += b.size;
      ++st.bursts;
    }
    if constexpr (kTimed) t = stage_ticks();
    fin.verdicts_ready(b, first, spacing, clock.now());
    if constexpr (kTimed) t = st.lap(Stage::kLatency, t);
    fin.finish(b, oversize);
    if constexpr (kTimed) st.lap(Stage::kTransmit, t);
  }
  if constexpr (kRxTimed) {
    st.total_ticks = stage_ticks() - loop0;
    uint64_t staged = 0;
    for (int i = 0; i < kStageCount; ++i) staged += st.ticks[i];
    st.ticks[static_cast<int>(Stage::kLoop)] = st.total_ticks > staged ? st.total_ticks - staged : 0;
  }
}

// One worker on the GPU path: bursts go to the engine and are finished in order as they return;
// up to max_bursts_in_flight are out at once, so the worker keeps receiving while the GPU works.
template <class Src>
void gpu_worker(const ForwardApp& app, int w, Src& src, RxBudget budget, double rate, const WorkersConfig& cfg,
                uint64_t start_ns, WorkersResult& r, BurstFinisher& fin, PacketPool& pool) {
  ArrivalClock clock(rate, start_ns);
  const uint64_t deadline = cfg.duration_ns ? start_ns + cfg.duration_ns : 0;
  IdleWait idle(nullptr, w);
  gpu::Engine& engine = *cfg.engine;
  const uint32_t depth = cfg.max_bursts_in_flight;
  std::vector<BurstInFlight> ring(depth);
  for (BurstInFlight& s : ring) s.keys.reset(app.item_bytes(), app.result_bytes());
  const auto submit = [&](BurstInFlight& s) {
    return engine.try_submit(w, s.keys.data(), s.keys.count, s.keys.results(), &s.ticket);
  };
  uint64_t head = 0, tail = 0;
  bool drained = budget.done();
  try {
    while (!drained || head != tail) {
      bool progress = false;
      // Finished bursts first, then at most one new burst: under steady arrivals there is always a
      // packet to receive, and a loop that received while it could would leave the finished bursts
      // waiting until the ring filled (measured: p99 in the milliseconds at half load).
      // A burst the engine could not take yet goes first (at most one waits: no new burst is
      // received meanwhile). Failing that, finishing bursts frees the room it waits for.
      if (tail != head && ring[(tail - 1) % depth].waiting && submit(ring[(tail - 1) % depth])) {
        ring[(tail - 1) % depth].waiting = false;
        progress = true;
      }
      while (head != tail) {
        BurstInFlight& s = ring[head % depth];
        const void* result = nullptr;
        if (s.keys.count) {
          if (s.waiting || !engine.done(s.ticket)) break;
          result = engine.results(s.ticket);
        }
        app.apply(pool, s.batch, s.keys, result, r.counters);
        if (s.keys.count) engine.release(s.ticket);
        fin.verdicts_ready(s.batch, s.first_arrival, s.spacing, clock.now());
        fin.finish(s.batch, s.oversize);
        ++head;
        progress = true;
      }
      if (!drained && time_to_stop(cfg, deadline, r)) drained = true;  // the bursts in flight are still finished below
      uint32_t n;
      const bool waiting = tail != head && ring[(tail - 1) % depth].waiting;
      if (!drained && !waiting && tail - head < depth && (n = clock.available(cfg.burst)) > 0 &&
          (n == cfg.burst || !clock.paced() || now_ns() >= clock.next_arrival() + cfg.rx_hold_ns)) {
        BurstInFlight& s = ring[tail % depth];
        const uint32_t claimed = budget.claim(n);
        uint32_t got = 0;
        if (claimed) {
          src.set_burst(claimed);
          const uint64_t rx0 = now_ns();
          got = src.rx_burst(pool, s.batch);
          r.rx_seconds += (now_ns() - rx0) / 1e9;
          budget.received(claimed, got);
        }
        if (got == 0) {
          if (pool.available() < cfg.burst) throw std::logic_error("worker: packet pool ran dry");
          if (!src.live()) {
            drained = true;
          } else if (head == tail) {
            idle.empty(src);  // nothing in flight either: wait for packets
          }
        } else {
          idle.got();
          drained = budget.done();
          s.first_arrival = clock.take(s.batch.size, &s.spacing);
          s.oversize = drop_oversize(pool, s.batch, r.counters);
          app.classify(pool, s.batch, s.keys, r.counters);
          // Every packet already dropped: nothing to look up. Else to the engine, now or at the
          // next round.
          s.waiting = s.keys.count && !submit(s);
          ++tail;
          progress = true;
        }
      }
      if (!progress) cpu_relax();
    }
  } catch (...) {
    // Whatever is at the engine still points into this worker's ring or holds room in a batch:
    // wait for it and give it back before the ring goes away.
    for (; head != tail; ++head) {
      BurstInFlight& s = ring[head % depth];
      if (!s.keys.count || s.waiting) continue;
      while (!engine.done(s.ticket)) cpu_relax();
      engine.release(s.ticket);
    }
    throw;
  }
}

}  // namespace

std::vector<uint64_t> queue_budgets(const PacketStore& input, const std::vector<std::vector<uint32_t>>& queues,
                                    uint64_t packets) {
  const int n = static_cast<int>(queues.size());
  // Each queue's share of a packet count: in proportion to its size, the remainder to the first
  // non-empty queues. Without a count, no limit (the passes over the input end the run).
  std::vector<uint64_t> budget(n, UINT64_MAX);
  if (!packets) return budget;
  uint64_t given = 0;
  for (int w = 0; w < n; ++w) {
    const size_t qs = n > 1 ? queues[w].size() : input.size();
    budget[w] = input.size() ? static_cast<uint64_t>(static_cast<long double>(packets) * qs / input.size()) : 0;
    given += budget[w];
  }
  for (int w = 0; w < n && given < packets; ++w) {
    if ((n > 1 ? queues[w].size() : input.size()) > 0) {
      ++budget[w];
      ++given;
    }
  }
  return budget;
}

GpuEngine attach_gpu_engine(WorkersConfig& wc, const ForwardApp& app, std::unique_ptr<gpu::OffloadRunner> runner,
                            gpu::EngineConfig ec, bool staged) {
  if (runner && (runner->in_item_bytes() != app.item_bytes() || runner->out_item_bytes() != app.result_bytes())) {
    throw std::invalid_argument(std::string("run: the GPU runner's items do not fit the ") + app.name() + " app's");
  }
  // The engine's fallback: the app's own CPU lookup over items, as the GPU kernel computes them.
  // With live updates it reads the host table as a worker does, so it is RCU reader `workers`,
  // online only while it looks up.
  Rcu* rcu = wc.rcu;
  const int reader = wc.workers;
  const gpu::OffloadEngine::CpuFallback fallback = [&app, rcu, reader](const void* in, void* out, size_t n) {
    if (rcu) rcu->online(reader);
    app.lookup_items(in, out, n);
    if (rcu) rcu->offline(reader);
  };
  ec.queue_depth = wc.max_bursts_in_flight;
  GpuEngine e;
  if (staged) {
    e.engine = std::make_unique<gpu::StagedEngine>(std::move(runner), fallback, ec);
  } else {
    ec.in_item_bytes = app.item_bytes();
    ec.out_item_bytes = app.result_bytes();
    e.engine = std::make_unique<gpu::OffloadEngine>(std::move(runner), fallback, ec, wc.workers);
  }
  wc.engine = e.engine.get();
  wc.path = LookupPath::kGpu;
  return e;
}

namespace {

void check_config(const WorkersConfig& cfg) {
  if (cfg.workers < 1) throw std::invalid_argument("run: at least one worker");
  if (cfg.burst < 1 || cfg.burst > PacketBatch::kCapacity) throw std::invalid_argument("run: burst must be 1..256");
  if (cfg.path == LookupPath::kGpu && !cfg.engine) throw std::invalid_argument("run: the GPU path needs an engine");
  if (cfg.rcu && cfg.rcu->readers() < cfg.workers + (cfg.path == LookupPath::kGpu ? 1 : 0)) {
    throw std::invalid_argument("run: live table updates need one RCU reader per worker, and one more for the GPU "
                                "engine's CPU fallback");
  }
  if (cfg.path == LookupPath::kGpu &&
      cfg.burst > cfg.engine->max_batch()) {
    throw std::invalid_argument("run: a burst (" + std::to_string(cfg.burst) +
                                " packets) must fit in a GPU batch (" +
                                std::to_string(cfg.engine->max_batch()) + ")");
  }
}

// What one worker receives from and sends to, made on its own thread (after pinning, so that its
// memory is local): `setup(w, pool)` returns it.
struct WorkerIo {
  ReplaySource* replay = nullptr;  // the peak-rate source, or
  PacketSource* source = nullptr;  // any other
  RxBudget budget{uint64_t{0}};
  double share = 1;                // the worker's share of the offered load
  PacketSink* sink = nullptr;
  uint64_t first_pass = UINT64_MAX;  // frames of the first pass (what the sink gets)
};

// Starts the workers, runs them to the end and merges their results.
template <class Setup>
WorkersResult run_threads(const ForwardApp& app, const WorkersConfig& cfg, Setup setup) {
  const int n = cfg.workers;
  const uint32_t depth = cfg.path == LookupPath::kGpu ? std::max<uint32_t>(cfg.max_bursts_in_flight, 1) : 1;
  std::vector<WorkersResult> part(n);
  std::vector<uint64_t> verify_ns(n, 0), end_ns_of(n, 0);
  std::vector<std::exception_ptr> error(n);
  std::atomic<int> ready{0};
  std::atomic<uint64_t> start_ns{0};
  std::atomic<int> abort{0};
  std::vector<std::thread> threads;
  init_stamp_clock();  // calibrated before any worker starts its clock
  const uint64_t ticks0 = stage_ticks(), ns0 = now_ns();  // the tick rate, over the whole run
  for (int w = 0; w < n; ++w) {
    threads.emplace_back([&, w] {
      try {
        WorkersResult& r = part[w];
        r.counters = Counters(cfg.ports);
        if (!cfg.cores.empty()) pin_this_thread(cfg.cores[w % cfg.cores.size()]);
        WorkerIo io = setup(w);
        // Cells for every burst in flight plus one being received: a pool no larger than that
        // keeps the packets the worker touches twice (classify, then apply) in its caches. On
        // the CPU paths, a source with buffers of its own has the frames processed where they
        // arrived (the GPU path holds more bursts than a port's buffers are meant to cover).
        std::optional<PacketPool> own_pool;
        PacketPool* own = io.source && cfg.path != LookupPath::kGpu ? io.source->own_cells() : nullptr;
        PacketPool& pool = own ? *own : own_pool.emplace((depth + 1) * cfg.burst + PacketBatch::kCapacity, cfg.cell_size);
        PacketSource& src = io.replay ? *io.replay : *io.source;
        src.set_burst(cfg.burst);
        WorkersConfig wc = cfg;
        wc.max_bursts_in_flight = depth;
        wc.abort = &abort;
        BurstFinisher fin(pool, cfg.verify ? &app : nullptr, io.sink, io.first_pass, r);
        if (cfg.progress) fin.set_progress(&cfg.progress[w]);
        // Every worker starts on the same clock, once all pools are built.
        if (ready.fetch_add(1) + 1 == n) start_ns.store(now_ns());
        while (start_ns.load() == 0) std::this_thread::yield();
        // The offered load reaches each queue in proportion to its share of the traffic.
        const double rate = cfg.rate_pps * io.share;
        const uint64_t t0 = start_ns.load();
        if (cfg.path == LookupPath::kGpu) {
          if (io.replay) {
            gpu_worker(app, w, *io.replay, io.budget, rate, wc, t0, r, fin, pool);
          } else {
            gpu_worker(app, w, *io.source, io.budget, rate, wc, t0, r, fin, pool);
          }
        } else {
          if (cfg.rcu) cfg.rcu->online(w);
          const auto run = [&]<StageTiming kTiming>() {
            if (io.replay) {
              cpu_worker<kTiming>(app, w, *io.replay, io.budget, rate, wc, t0, r, fin, pool);
            } else {
              cpu_worker<kTiming>(app, w, *io.source, io.budget, rate, wc, t0, r, fin, pool);
            }
          };
          switch (cfg.stage_times) {
            case StageTiming::kAll: run.template operator()<StageTiming::kAll>(); break;
            case StageTiming::kReceive: run.template operator()<StageTiming::kReceive>(); break;
            default: run.template operator()<StageTiming::kOff>(); break;
          }
          if (cfg.rcu) cfg.rcu->offline(w);
        }
        verify_ns[w] = fin.verify_ns();
        end_ns_of[w] = now_ns();
      } catch (...) {
        if (cfg.rcu) cfg.rcu->offline(w);
        error[w] = std::current_exception();
        abort.store(1);
        uint64_t none = 0;  // a worker that failed before the start must not hold the others back
        start_ns.compare_exchange_strong(none, now_ns());
      }
    });
  }
  for (auto& t : threads) t.join();
  const uint64_t end_ns = now_ns(), ticks1 = stage_ticks();
  for (auto& e : error) {
    if (e) std::rethrow_exception(e);
  }
  WorkersResult total;
  total.counters = Counters(cfg.ports);
  for (const WorkersResult& r : part) {
    total.counters.merge(r.counters);
    total.latency.merge(r.latency);
    total.wire_bytes += r.wire_bytes;
    total.verify_checked += r.verify_checked;
    total.verify_mismatches += r.verify_mismatches;
    total.rx_seconds += r.rx_seconds;
    total.stages.add(r.stages);
    total.stopped |= r.stopped;
  }
  if (cfg.stage_times != StageTiming::kOff && cfg.path != LookupPath::kGpu) {
    total.stages.tick_ns = ticks1 > ticks0 ? double(end_ns - ns0) / double(ticks1 - ticks0) : 0;
    total.rx_seconds = total.stages.of(Stage::kReceive) * total.stages.tick_ns / 1e9;
  }
  // What a stopwatch shows. Verification is part of it: workers share cores, so time one spends
  // verifying is not time the others would have had anyway, and no share of it can be taken off.
  total.seconds = (end_ns - start_ns.load()) / 1e9;
  for (const uint64_t ns : verify_ns) total.verify_seconds += ns / 1e9;
  for (int w = 0; w < n; ++w) {
    total.worker_packets.push_back(part[w].counters.rx_packets);
    total.worker_seconds.push_back(end_ns_of[w] > start_ns.load() ? (end_ns_of[w] - start_ns.load()) / 1e9 : 0);
  }
  return total;
}

}  // namespace

WorkersResult run_workers(const ForwardApp& app, const PacketStore& input, const WorkersConfig& cfg) {
  check_config(cfg);
  if (cfg.sink && cfg.workers > 1) throw std::invalid_argument("run: writing an output capture needs one worker");
  if (!cfg.sinks.empty() && cfg.sinks.size() != size_t(cfg.workers)) throw std::invalid_argument("run: one sink per worker");
  const int n = cfg.workers;
  const auto queues = rss_split(input, n);
  const std::vector<uint64_t> budget = queue_budgets(input, queues, cfg.packets);
  // With several queues, each worker replays a copy of its own queue, laid out in order and made
  // on its own thread (local memory): read through the RSS order in the shared input, every frame
  // and each of its lengths is a cache miss at random, and with many workers those misses, not
  // the work, set the rate (as a NIC's DMA into each queue's ring would not). The copies together
  // are the input's size once more. Declared before the sources, which read them.
  std::vector<PacketStore> queue_copy(n);
  std::vector<std::unique_ptr<ReplaySource>> sources(n);
  WorkersResult total = run_threads(app, cfg, [&](int w) {
    if (n > 1) queue_copy[w] = input.select(queues[w]);
    sources[w] = std::make_unique<ReplaySource>(n > 1 ? queue_copy[w] : input, cfg.packets ? 0 : cfg.repeat);
    WorkerIo io;
    io.replay = sources[w].get();
    io.budget = RxBudget(budget[w]);
    io.share = input.size() ? double(io.replay->frames_per_loop()) / input.size() : 0;
    io.sink = cfg.sinks.empty() ? cfg.sink : cfg.sinks[w];
    io.first_pass = cfg.sinks.empty() ? io.replay->frames_per_loop() : UINT64_MAX;
    return io;
  });
  // A run cut short by --duration received what it received; otherwise the passes or the count.
  total.expected = cfg.duration_ns && !total.stopped ? total.counters.rx_packets
                   : cfg.packets                     ? cfg.packets
                                                     : input.size() * cfg.repeat;
  return total;
}

WorkersResult run_workers_live(const ForwardApp& app, const std::vector<std::unique_ptr<PacketSource>>& sources,
                               const std::vector<std::unique_ptr<PacketSink>>& sinks, const WorkersConfig& cfg) {
  check_config(cfg);
  if (sources.size() != size_t(cfg.workers)) throw std::invalid_argument("run: one live source per worker");
  if (!sinks.empty() && sinks.size() != size_t(cfg.workers)) throw std::invalid_argument("run: one sink per worker");
  if (cfg.sink && cfg.workers > 1) throw std::invalid_argument("run: writing an output capture needs one worker");
  SharedCount count(cfg.packets);
  WorkersResult total = run_threads(app, cfg, [&](int w) {
    WorkerIo io;
    io.source = sources[w].get();
    io.budget = RxBudget(&count);
    io.sink = sinks.empty() ? cfg.sink : sinks[w].get();
    return io;
  });
  total.expected = total.counters.rx_packets;  // live traffic: what came is what was expected
  return total;
}

void WorkersResult::add(const WorkersResult& o) {
  const bool was_empty = worker_packets.empty() && counters.rx_packets == 0 && expected == 0;  // a result made to add into
  counters.merge(o.counters);
  latency.merge(o.latency);
  wire_bytes += o.wire_bytes;
  verify_checked += o.verify_checked;
  verify_mismatches += o.verify_mismatches;
  seconds += o.seconds;
  verify_seconds += o.verify_seconds;
  rx_seconds += o.rx_seconds;
  const double tick_ns = stages.tick_ns ? stages.tick_ns : o.stages.tick_ns;
  stages.add(o.stages);
  stages.tick_ns = tick_ns;
  expected += o.expected;
  stopped = stopped || o.stopped;
  if (worker_packets.size() == o.worker_packets.size()) {
    for (size_t w = 0; w < worker_packets.size(); ++w) {
      worker_packets[w] += o.worker_packets[w];
      worker_seconds[w] += o.worker_seconds[w];
    }
  } else if (was_empty) {
    worker_packets = o.worker_packets;
    worker_seconds = o.worker_seconds;
  } else {
    worker_packets.clear();
    worker_seconds.clear();
  }
}

}  // namespace tandem
