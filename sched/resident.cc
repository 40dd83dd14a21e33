#include "sched/resident.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>

#include "core/clock.h"
#include "core/machine_info.h"
#include "core/numa.h"
#include "gpu/gpu_runtime.h"
#include "io/rss.h"
#include "sched/arrival_clock.h"
#include "sched/gpu_ring_placement.h"
#include "sched/ring_fallback.h"

namespace tandem {

namespace {

constexpr uint64_t kWireOverhead = 24;  // preamble, FCS, gap: as the workers count wire bytes
constexpr uint32_t kMaxFrame = 0xFFFF;  // as the workers: longer frames are dropped on receipt

bool stop_asked(const ResidentConfig& cfg) { return cfg.stop != nullptr && cfg.stop->load(std::memory_order_relaxed) != 0; }

uint32_t load_acquire(const volatile uint32_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

// What a receive thread remembers of a batch it published, until it finishes it.
struct Pending {
  uint32_t n = 0;
  uint64_t rx_bytes = 0;
  uint64_t wire_bytes = 0;
  uint64_t first_arrival = 0;
  uint64_t spacing = 0;
};

// One receive thread: its queue of the input, its slots of the ring, its counters.
class Producer {
 public:
  Producer(const ForwardApp& app, gpu::ResidentRing& ring, gpu::ResidentRunner* runner, const ResidentConfig& cfg,
           uint32_t t, const PacketStore& input, const std::vector<uint32_t>* order, uint64_t budget, double rate,
           uint64_t start_ns, WorkersResult& r)
      : app_(app), ring_(ring), runner_(runner), cfg_(cfg), t_(t), input_(input), order_(order), clock_(rate, start_ns), r_(r), pending_(ring.per_producer()) {
    frames_per_loop_ = order_ ? order_->size() : input_.size();
    frames_left_ = cfg.packets ? budget : (cfg.repeat == 0 ? UINT64_MAX : frames_per_loop_ * cfg.repeat);
    frames_left_ = std::min(frames_left_, budget);
    if (frames_per_loop_ == 0) frames_left_ = 0;
    if (cfg_.sink) {
      sink_pool_ = std::make_unique<PacketPool>(PacketBatch::kCapacity, ring.options().cell_size);
      source_.resize(size_t{ring.per_producer()} * ring.batch());
    }
  }

  void run() {
    uint64_t head = 0, tail = 0;
    bool drained = frames_left_ == 0;
    uint32_t filling = 0;  // frames in the tail slot so far
    size_t used = 0;       // its bytes
    if (cfg_.rcu) cfg_.rcu->online(rcu_reader);
    while (!drained || filling || head != tail) {
      // Between batches this thread holds nothing of the app's tables (it reads them only to
      // process a batch on the CPU).
      if (cfg_.rcu) cfg_.rcu->quiescent(rcu_reader);
      bool progress = false;
      while (head != tail && try_finish(head)) {
        ++head;
        progress = true;
      }
      if (!drained && stop_asked(cfg_)) {
        drained = true;
        r_.stopped = true;
      }
      if (tail - head < ring_.per_producer()) {
        const uint32_t s = ring_.slot_of(t_, tail);
        bool publish = false;
        if (!drained) {
          const uint32_t want = ring_.batch() - filling;
          const uint32_t avail = clock_.available(want);
          if (avail) {
            const uint64_t t0 = now_ns();
            const uint32_t got = receive(s, tail, avail, &filling, &used);
            rx_ns_ += now_ns() - t0;
            progress = progress || got;
            if (frames_left_ == 0) drained = true;
            // A batch leaves full; a partial one when no more frames fit, or once its oldest
            // paced packet has waited long enough.
            publish = filling == ring_.batch() || got < avail;
          }
          if (filling && clock_.paced() && now_ns() >= pending_[tail % ring_.per_producer()].first_arrival + cfg_.rx_hold_ns) {
            publish = true;
          }
        }
        if (drained && filling) publish = true;
        if (publish && filling) {
          ring_.fill(s)->count = filling;
          ring_.fill(s)->used = static_cast<uint32_t>(used);
          pending_[tail % ring_.per_producer()].n = filling;
          ++tail;
          if (runner_ && !cfg_.cpu) __atomic_store_n(&ring_.index(t_)->published, tail, __ATOMIC_RELEASE);
          filling = 0;
          used = 0;
          progress = true;
        }
      }
      if (!progress) cpu_relax();
    }
  }

  int rcu_reader = 0;  // this receive thread's reader of cfg.rcu

  uint64_t rx_ns() const { return rx_ns_; }
  uint64_t finish_ns() const { return finish_ns_; }
  uint64_t cpu_ns() const { return cpu_ns_; }
  uint64_t batches() const { return batches_; }
  uint64_t cpu_batches() const { return cpu_batches_; }

 private:
  // Copies up to `want` frames of the queue into slot s after its `*filling` frames.
  uint32_t receive(uint32_t s, uint64_t j, uint32_t want, uint32_t* filling, size_t* used) {
    Pending& p = pending_[j % ring_.per_producer()];
    const bool cells = ring_.options().layout == gpu::FrameLayout::kCells;
    const uint32_t cell = ring_.options().cell_size;
    const uint32_t max_len = std::min(ring_.max_frame(), kMaxFrame);
    const uint32_t room = ring_.options().frame_room;  // packed: what the frame may grow by
    uint8_t* const bytes = ring_.bytes(s);
    uint32_t* const offsets = ring_.offsets(s);
    uint32_t* const lengths = ring_.lengths(s);
    uint32_t got = 0;
    uint32_t i = *filling;
    size_t u = *used;
    while (got < want && frames_left_ > 0) {
      if (order_) {
        if (next_ + PacketStore::kPrefetchMeta < frames_per_loop_) input_.prefetch_meta((*order_)[next_ + PacketStore::kPrefetchMeta]);
        if (next_ + PacketStore::kPrefetchBytes < frames_per_loop_) input_.prefetch_bytes((*order_)[next_ + PacketStore::kPrefetchBytes]);
      }
      const size_t f = order_ ? (*order_)[next_] : next_;
      const uint32_t wire = input_.wire_len[f];
      const uint32_t len = std::min(input_.caplen[f], max_len);
      size_t off;
      if (cells) {
        off = size_t{i} * cell;
      } else {
        off = (u + 15) / 16 * 16;
        if (off + len + room > ring_.slot_bytes()) break;  // the batch is full of bytes
      }
      if (++next_ == frames_per_loop_) next_ = 0;
      --frames_left_;
      ++got;
      if (wire > kMaxFrame) {  // dropped on receipt, as the workers do
        r_.counters.received(len);
        r_.counters.drop(DropReason::kOversize);
        r_.wire_bytes += wire + kWireOverhead;
        continue;
      }
      std::memcpy(bytes + off, input_.frame(f), len);
      offsets[i] = static_cast<uint32_t>(off);
      lengths[i] = len;
      if (!source_.empty()) source_[(j % ring_.per_producer()) * ring_.batch() + i] = static_cast<uint32_t>(f);
      if (i == 0) p = Pending{};
      p.rx_bytes += len;
      p.wire_bytes += wire + kWireOverhead;
      ++i;
      u = off + len + room;
    }
    // The arrival clock counts every frame taken from the queue, kept or dropped.
    uint64_t spacing = 0;
    const uint64_t first = clock_.take(got, &spacing);
    if (*filling == 0 && i > 0) {
      p.first_arrival = first;
      p.spacing = spacing;
    }
    *filling = i;
    *used = u;
    return got;
  }

  // Finishes the j-th batch if it is done (on the GPU, or now on the CPU); false when it is not.
  bool try_finish(uint64_t j) {
    const uint32_t s = ring_.slot_of(t_, j);
    const uint32_t g = ring_.gen_of(j);
    const Pending& p = pending_[j % ring_.per_producer()];
    const bool gpu = runner_ && !cfg_.cpu;
    bool on_gpu = gpu && load_acquire(&ring_.status(s)->done) == g;
    if (!on_gpu) {
      if (gpu && !runner_->failed()) return false;
      const uint64_t t0 = now_ns();
      process_on_cpu(s, g, p.n, gpu);
      cpu_ns_ += now_ns() - t0;
      ++cpu_batches_;
    }
    const uint64_t t0 = now_ns();
    const bool out = on_gpu && ring_.options().mode == gpu::GpuMode::kAsync;
    uint8_t* const frames = out ? ring_.out_bytes(s) : ring_.bytes(s);
    finish(s, j, p, frames);
    finish_ns_ += now_ns() - t0;
    ++batches_;
    return true;
  }

  // The batch on the CPU: with the app's frame core, frame by frame. After a GPU failure, the
  // frames of a batch the GPU had claimed but not finished may be half-rewritten: they are
  // dropped, never sent.
  void process_on_cpu(uint32_t s, uint32_t g, uint32_t n, bool after_gpu) {
    const bool claimed = after_gpu && ring_.options().mode == gpu::GpuMode::kPersistent &&
                         load_acquire(&ring_.status(s)->claimed) == g;
    process_slot_on_cpu(app_, ring_, s, n, claimed);
  }

  void finish(uint32_t s, uint64_t j, const Pending& p, uint8_t* frames) {
    const uint32_t n = p.n;
    const uint32_t* const offsets = ring_.offsets(s);
    const uint32_t* const lengths = ring_.out_lengths(s);  // lengths(s) unless frames change length
    const uint32_t* const verdicts = ring_.verdicts(s);
    count_slot(app_, ring_, s, n, frames, p.rx_bytes, p.wire_bytes, cfg_.verify, r_);
    const uint64_t t = clock_.now();
    if (p.spacing == 0) {
      r_.latency.record(t - p.first_arrival, n);
    } else {
      for (uint32_t i = 0; i < n; ++i) r_.latency.record(t - std::min(t, p.first_arrival + i * p.spacing));
    }
    if (cfg_.sink && sunk_ < frames_per_loop_) {
      write_out(frames, offsets, lengths, verdicts, &source_[(j % ring_.per_producer()) * ring_.batch()], n);
    }
  }

  // The first pass's frames to the output, through a small pool (the sink takes packet cells), with
  // their capture timestamps and wire lengths.
  void write_out(const uint8_t* frames, const uint32_t* offsets, const uint32_t* lengths, const uint32_t* verdicts,
                 const uint32_t* source, uint32_t n) {
    for (uint32_t base = 0; base < n && sunk_ < frames_per_loop_; base += PacketBatch::kCapacity) {
      PacketBatch b;
      const uint64_t left = frames_per_loop_ - sunk_;
      b.size = static_cast<uint32_t>(std::min<uint64_t>({PacketBatch::kCapacity, n - base, left}));
      for (uint32_t i = 0; i < b.size; ++i) {
        b.cell[i] = i;
        b.len[i] = static_cast<uint16_t>(lengths[base + i]);
        // A frame whose length the app changed goes out whole (as the workers' paths send it).
        b.wire_len[i] = ring_.lengths_change() ? lengths[base + i] : input_.wire_len[source[base + i]];
        b.ts_ns[i] = input_.ts_ns[source[base + i]];
        b.verdict[i] = verdicts[base + i];
        std::memcpy(sink_pool_->data(i), frames + offsets[base + i], lengths[base + i]);
      }
      cfg_.sink->tx_burst(*sink_pool_, b, r_.counters);
      sunk_ += b.size;
    }
  }

  const ForwardApp& app_;
  gpu::ResidentRing& ring_;
  gpu::ResidentRunner* runner_;
  const ResidentConfig& cfg_;
  uint32_t t_;
  const PacketStore& input_;
  const std::vector<uint32_t>* order_;
  ArrivalClock clock_;
  WorkersResult& r_;
  std::vector<Pending> pending_;
  size_t frames_per_loop_ = 0;
  uint64_t frames_left_ = 0;
  size_t next_ = 0;
  uint64_t sunk_ = 0;
  std::unique_ptr<PacketPool> sink_pool_;
  std::vector<uint32_t> source_;  // with an output: each slot's frames' indices in the input
  uint64_t rx_ns_ = 0, finish_ns_ = 0, cpu_ns_ = 0;
  uint64_t batches_ = 0, cpu_batches_ = 0;
};

// One GPU of the run: its ring, its runner, the receive threads that feed it.
struct GpuSide {
  int gpu = -1;
  int node = -1;  // NUMA node its ring and receive threads are kept on (-1: not placed)
  uint32_t producers = 0;
  std::unique_ptr<gpu::ResidentRing> ring;
  std::unique_ptr<gpu::ResidentRunner> runner;
};

}  // namespace

ResidentResult run_resident(const ForwardApp& app, const PacketStore& input, const ResidentConfig& cfg) {
  if (cfg.producers < 1 || cfg.producers > 32) throw std::invalid_argument("run: 1..32 receive threads");
  if (cfg.sink && cfg.producers > 1) throw std::invalid_argument("run: writing an output capture needs one receive thread");
  const std::vector<int> gpus = cfg.cpu ? std::vector<int>{-1} : cfg.gpus.empty() ? std::vector<int>{0} : cfg.gpus;
  const int ng = static_cast<int>(gpus.size());
  if (ng > cfg.producers) {
    throw std::invalid_argument("run: " + std::to_string(ng) + " GPUs need at least as many receive threads (--workers), " +
                                std::to_string(cfg.producers) + " given");
  }
  for (const int g : gpus) {
    if (!cfg.cpu && g < 0) throw std::invalid_argument("run: GPU " + std::to_string(g) + " is not a GPU number");
  }
  if (ng > 1 && app.frame_growth() != 0) {
    throw std::invalid_argument(std::string("run: the ") + app.name() +
                                " app keeps per-SA state on its GPU; several GPUs would each need their own SAs");
  }
  // Receive thread t feeds GPU t % ng, as PacketShader ties each NIC queue to one GPU: a flow has
  // one queue, so it has one GPU, and nothing moves between them.
  std::vector<GpuSide> sides(ng);
  ResidentResult res;
  for (int g = 0; g < ng; ++g) {
    GpuSide& side = sides[g];
    side.gpu = gpus[g];
    side.producers = static_cast<uint32_t>((cfg.producers - g + ng - 1) / ng);
    gpu::ResidentOptions ro = cfg.ring;
    ro.producers = side.producers;
    ro.frame_room = app.frame_growth();
    ro.want_l3 = cfg.verify;
    ro.ports = static_cast<uint32_t>(std::min<size_t>(cfg.ports, gpu::kSummaryPorts));
    ro.gpu = std::max(0, side.gpu);
    if (g > 0) ro.fault_at_batch = 0;  // an injected fault breaks the first GPU only
    if (!cfg.cpu) ro.blocks = shared_gpu_blocks(side.gpu, static_cast<int>(std::count(gpus.begin(), gpus.end(), side.gpu)), ro.blocks);
    side.ring = std::make_unique<gpu::ResidentRing>(ro);
    if (!cfg.cpu) {
      side.node = place_ring_near_gpu(*side.ring, side.gpu, "run: GPU " + std::to_string(side.gpu));
      side.runner = app.make_resident_runner(*side.ring, ro);
      const std::string d = side.runner->describe();
      if (ng == 1) {
        res.describe = d;
      } else {
        res.describe += (g ? "; " : "") + std::string("GPU ") + std::to_string(side.gpu) + " (" +
                        std::to_string(side.producers) + " receive thread" + (side.producers > 1 ? "s" : "") +
                        (side.node >= 0 ? ", NUMA node " + std::to_string(side.node) : "") + "): " + d;
      }
    } else {
      res.describe = "CPU (the receive threads process their batches)";
    }
  }
  const int n = cfg.producers;
  const auto queues = rss_split(input, n);
  const std::vector<uint64_t> budget = queue_budgets(input, queues, cfg.packets);
  std::vector<WorkersResult> part(n);
  std::vector<std::unique_ptr<Producer>> producers(n);
  std::vector<std::exception_ptr> error(n);
  std::atomic<int> ready{0};
  std::atomic<uint64_t> start_ns{0};
  init_stamp_clock();  // calibrated before any producer starts its clock
  for (GpuSide& side : sides) {
    if (side.runner) side.runner->start();
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) {
    threads.emplace_back([&, t] {
      try {
        WorkersResult& r = part[t];
        r.counters = Counters(cfg.ports);
        GpuSide& side = sides[t % ng];
        if (!cfg.cores.empty()) {
          pin_this_thread(cfg.cores[t % cfg.cores.size()]);
        } else if (side.node >= 0) {
          run_on_node(side.node);  // the thread that writes a GPU's ring runs beside it
        }
        const std::vector<uint32_t>* order = n > 1 ? &queues[t] : nullptr;
        const size_t share = order ? order->size() : input.size();
        if (ready.fetch_add(1) + 1 == n) start_ns.store(now_ns());
        while (start_ns.load() == 0) std::this_thread::yield();
        const double rate = input.size() ? cfg.rate_pps * double(share) / input.size() : 0;
        producers[t] = std::make_unique<Producer>(app, *side.ring, side.runner.get(), cfg, static_cast<uint32_t>(t / ng),
                                                  input, order, budget[t], rate, start_ns.load(), r);
        producers[t]->rcu_reader = t;
        producers[t]->run();
        if (cfg.rcu) cfg.rcu->offline(t);
      } catch (...) {
        if (cfg.rcu) cfg.rcu->offline(t);
        error[t] = std::current_exception();
        uint64_t none = 0;
        start_ns.compare_exchange_strong(none, now_ns());
      }
    });
  }
  for (auto& th : threads) th.join();
  const uint64_t end_ns = now_ns();
  for (GpuSide& side : sides) {
    if (!side.runner) continue;
    side.runner->stop();
    if (side.runner->failed()) {
      res.gpu_failed = true;
      res.gpu_error += (res.gpu_error.empty() ? "" : "; ") + (ng > 1 ? "GPU " + std::to_string(side.gpu) + ": " : "") +
                       side.runner->error();
    }
  }
  for (auto& e : error) {
    if (e) std::rethrow_exception(e);
  }
  WorkersResult& total = res.run;
  total.counters = Counters(cfg.ports);
  for (int t = 0; t < n; ++t) {
    const WorkersResult& r = part[t];
    total.add(r);  // a thread's part: counters, latencies, bytes, verification (no times of its own)
    const Producer& p = *producers[t];
    res.rx_seconds += p.rx_ns() / 1e9;
    total.rx_seconds += p.rx_ns() / 1e9;
    res.finish_seconds += p.finish_ns() / 1e9;
    res.cpu_seconds += p.cpu_ns() / 1e9;
    res.batches += p.batches();
    res.cpu_batches += p.cpu_batches();
    if (!cfg.cpu) {
      if (res.gpus.size() != size_t(ng)) {
        res.gpus.resize(ng);
        for (int g = 0; g < ng; ++g) {
          res.gpus[g].gpu = sides[g].gpu;
          res.gpus[g].numa_node = sides[g].node;
          res.gpus[g].receive_threads = sides[g].producers;
          res.gpus[g].failed = sides[g].runner->failed();
        }
      }
      ResidentGpuReport& gr = res.gpus[t % ng];
      gr.packets += r.counters.rx_packets;
      gr.batches += p.batches() - p.cpu_batches();
    }
  }
  total.seconds = (end_ns - start_ns.load()) / 1e9;
  total.expected = cfg.packets ? cfg.packets : input.size() * cfg.repeat;
  return res;
}

}  // namespace tandem
