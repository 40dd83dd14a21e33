#include "sched/workers.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/machine_info.h"
#include "io/rss.h"
#include "sched/arrival_clock.h"

namespace tandem {

namespace {

// Ethernet preamble + start delimiter (8), FCS (4) and inter-frame gap (12): what a frame costs on
// the wire beyond its captured bytes, so Gbps figures compare with link rates.
constexpr uint64_t kWireOverhead = 24;

// The longest frame PacketBatch::len (16 bits) holds.
constexpr uint32_t kMaxFrame = 0xFFFF;

bool stop_asked(const WorkersConfig& cfg) {
  return cfg.stop != nullptr && cfg.stop->load(std::memory_order_relaxed) != 0;
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

  // The verdicts are ready now: packet i arrived at first_arrival + i * spacing.
  void verdicts_ready(const PacketBatch& b, uint64_t first_arrival, uint64_t spacing) {
    const uint64_t t = now_ns();
    if (spacing == 0) {
      r_.latency.record(t - first_arrival, b.size);
    } else {
      for (uint32_t i = 0; i < b.size; ++i) r_.latency.record(t - (first_arrival + i * spacing));
    }
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
    if (sink_ && seen_ < first_pass_) {
      PacketBatch head = b;
      head.size = static_cast<uint32_t>(std::min<uint64_t>(b.size, first_pass_ - seen_));
      sink_->tx_burst(pool_, head);
    }
    for (uint32_t i = 0; i < b.size; ++i) r_.wire_bytes += b.wire_len[i] + kWireOverhead;
    seen_ += b.size;
    pool_.free_bulk(b.cell.data(), b.size);
    b.clear();
  }
  uint64_t verify_ns() const { return verify_ns_; }

 private:
  // Every packet that reached the lookup (forwarded, or dropped for lack of a route) must carry
  // the app's reference decision for its key.
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

// One worker on a CPU path: receive, forward, finish, one burst at a time.
void cpu_worker(const ForwardApp& app, ReplaySource& src, uint64_t budget, double rate, const WorkersConfig& cfg,
                uint64_t start_ns, WorkersResult& r, BurstFinisher& fin, PacketPool& pool) {
  ArrivalClock clock(rate, start_ns);
  PacketBatch b;
  uint64_t served = 0;
  while (served < budget) {
    uint32_t n;
    while ((n = clock.available(cfg.burst)) == 0 && !stop_asked(cfg)) cpu_relax();
    if (stop_asked(cfg)) {
      r.stopped = true;
      break;
    }
    src.set_burst(static_cast<uint32_t>(std::min<uint64_t>(n, budget - served)));
    const uint64_t rx0 = now_ns();
    const uint32_t got = src.rx_burst(pool, b);
    r.rx_seconds += (now_ns() - rx0) / 1e9;
    if (got == 0) {
      if (pool.available() < PacketBatch::kCapacity) throw std::logic_error("worker: packet pool ran dry");
      break;
    }
    uint64_t spacing = 0;
    const uint64_t first = clock.take(b.size, &spacing);
    served += b.size;
    const uint32_t oversize = drop_oversize(pool, b, r.counters);
    if (cfg.path == LookupPath::kScalar) {
      app.forward_scalar(pool, b, r.counters);
    } else {
      app.forward_batched(pool, b, r.counters);
    }
    fin.verdicts_ready(b, first, spacing);
    fin.finish(b, oversize);
  }
}

// One worker on the GPU path: bursts go to the engine and are finished in order as they return;
// up to max_bursts_in_flight are out at once, so the worker keeps receiving while the GPU works.
void gpu_worker(const ForwardApp& app, int w, ReplaySource& src, uint64_t budget, double rate, const WorkersConfig& cfg, uint64_t start_ns,
                WorkersResult& r, BurstFinisher& fin, PacketPool& pool) {
  ArrivalClock clock(rate, start_ns);
  gpu::Engine& engine = *cfg.engine;
  const uint32_t depth = cfg.max_bursts_in_flight;
  std::vector<BurstInFlight> ring(depth);
  for (BurstInFlight& s : ring) s.keys.reset(app.item_bytes(), app.result_bytes());
  const auto submit = [&](BurstInFlight& s) {
    return engine.try_submit(w, s.keys.data(), s.keys.count, s.keys.results(), &s.ticket);
  };
  uint64_t head = 0, tail = 0, served = 0;
  bool drained = budget == 0;
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
        fin.verdicts_ready(s.batch, s.first_arrival, s.spacing);
        fin.finish(s.batch, s.oversize);
        ++head;
        progress = true;
      }
      if (!drained && stop_asked(cfg)) {
        drained = true;  // the bursts in flight are still finished below
        r.stopped = true;
      }
      uint32_t n;
      const bool waiting = tail != head && ring[(tail - 1) % depth].waiting;
      if (!drained && !waiting && tail - head < depth && (n = clock.available(cfg.burst)) > 0 &&
          (n == cfg.burst || !clock.paced() || now_ns() >= clock.next_arrival() + cfg.rx_hold_ns)) {
        BurstInFlight& s = ring[tail % depth];
        src.set_burst(static_cast<uint32_t>(std::min<uint64_t>(n, budget - served)));
        const uint64_t rx0 = now_ns();
        const uint32_t got = src.rx_burst(pool, s.batch);
        r.rx_seconds += (now_ns() - rx0) / 1e9;
        if (got == 0) {
          if (pool.available() < cfg.burst) throw std::logic_error("worker: packet pool ran dry");
          drained = true;
        } else {
          served += s.batch.size;
          drained = served >= budget;
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
  const gpu::OffloadEngine::CpuFallback fallback = [&app](const void* in, void* out, size_t n) {
    app.lookup_items(in, out, n);
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

WorkersResult run_workers(const ForwardApp& app, const PacketStore& input, const WorkersConfig& cfg) {
  if (cfg.workers < 1) throw std::invalid_argument("run: at least one worker");
  if (cfg.burst < 1 || cfg.burst > PacketBatch::kCapacity) throw std::invalid_argument("run: burst must be 1..256");
  if (cfg.path == LookupPath::kGpu && !cfg.engine) throw std::invalid_argument("run: the GPU path needs an engine");
  if (cfg.path == LookupPath::kGpu &&
      cfg.burst > cfg.engine->max_batch()) {
    throw std::invalid_argument("run: a burst (" + std::to_string(cfg.burst) +
                                " packets) must fit in a GPU batch (" +
                                std::to_string(cfg.engine->max_batch()) + ")");
  }
  if (cfg.sink && cfg.workers > 1) throw std::invalid_argument("run: writing an output capture needs one worker");
  const int n = cfg.workers;
  const auto queues = rss_split(input, n);
  const uint32_t depth = cfg.path == LookupPath::kGpu ? std::max<uint32_t>(cfg.max_bursts_in_flight, 1) : 1;
  const uint64_t expected = cfg.packets ? cfg.packets : input.size() * cfg.repeat;
  const std::vector<uint64_t> budget = queue_budgets(input, queues, cfg.packets);
  std::vector<WorkersResult> part(n);
  std::vector<uint64_t> verify_ns(n, 0);
  std::vector<std::exception_ptr> error(n);
  std::atomic<int> ready{0};
  std::atomic<uint64_t> start_ns{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < n; ++w) {
    threads.emplace_back([&, w] {
      try {
        WorkersResult& r = part[w];
        r.counters = Counters(cfg.ports);
        if (!cfg.cores.empty()) pin_this_thread(cfg.cores[w % cfg.cores.size()]);
        // Cells for every burst in flight plus one being received: a pool no larger than that
        // keeps the packets the worker touches twice (classify, then apply) in its caches.
        PacketPool pool((depth + 1) * cfg.burst + PacketBatch::kCapacity, cfg.cell_size);
        ReplaySource src(input, cfg.packets ? 0 : cfg.repeat, n > 1 ? &queues[w] : nullptr);
        src.set_burst(cfg.burst);
        WorkersConfig wc = cfg;
        wc.max_bursts_in_flight = depth;
        BurstFinisher fin(pool, cfg.verify ? &app : nullptr, cfg.sink, src.frames_per_loop(), r);
        // Every worker starts on the same clock, once all pools are built.
        if (ready.fetch_add(1) + 1 == n) start_ns.store(now_ns());
        while (start_ns.load() == 0) std::this_thread::yield();
        // The offered load reaches each queue in proportion to its share of the traffic.
        const double share = input.size() ? double(src.frames_per_loop()) / input.size() : 0;
        const double rate = cfg.rate_pps * share;
        if (cfg.path == LookupPath::kGpu) {
          gpu_worker(app, w, src, budget[w], rate, wc, start_ns.load(), r, fin, pool);
        } else {
          cpu_worker(app, src, budget[w], rate, wc, start_ns.load(), r, fin, pool);
        }
        verify_ns[w] = fin.verify_ns();
      } catch (...) {
        error[w] = std::current_exception();
        uint64_t none = 0;  // a worker that failed before the start must not hold the others back
        start_ns.compare_exchange_strong(none, now_ns());
      }
    });
  }
  for (auto& t : threads) t.join();
  const uint64_t end_ns = now_ns();
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
    total.stopped |= r.stopped;
  }
  // What a stopwatch shows. Verification is part of it: workers share cores, so time one spends
  // verifying is not time the others would have had anyway, and no share of it can be taken off.
  total.seconds = (end_ns - start_ns.load()) / 1e9;
  for (const uint64_t ns : verify_ns) total.verify_seconds += ns / 1e9;
  total.expected = expected;
  return total;
}

void WorkersResult::add(const WorkersResult& o) {
  counters.merge(o.counters);
  latency.merge(o.latency);
  wire_bytes += o.wire_bytes;
  verify_checked += o.verify_checked;
  verify_mismatches += o.verify_mismatches;
  seconds += o.seconds;
  verify_seconds += o.verify_seconds;
  rx_seconds += o.rx_seconds;
  expected += o.expected;
  stopped = stopped || o.stopped;
}

}  // namespace tandem
