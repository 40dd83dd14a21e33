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
#include "sched/live_receive.h"
#include "sched/ring_fallback.h"

namespace tandem {

namespace {

using sched_detail::IdleWait;
using sched_detail::RxBudget;
using sched_detail::SharedCount;

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

// Where a receive thread's frames come from: its queue of a PacketStore (replayed `repeat` times
// or up to its share of a count, paced or not), or a live port that it receives from until the
// shared count, the run's duration or a stop.
struct ProducerInput {
  const PacketStore* store = nullptr;
  const std::vector<uint32_t>* order = nullptr;  // the store's frames this queue takes (null: all)
  uint64_t budget = 0;                            // the store's frames it may take
  double rate = 0;
  PacketSource* live = nullptr;
  SharedCount* live_count = nullptr;
  uint64_t deadline_ns = 0;  // live: receive nothing more after this (0: no limit)
  PacketSink* sink = nullptr;  // forwarded frames (a store's first pass, or all that a live port brings)
  WorkerProgress* progress = nullptr;
  // Set when another receive thread failed: this one stops receiving too (a live run has no end
  // of its own) and finishes what it holds.
  const std::atomic<int>* abort = nullptr;
};

// One receive thread: its queue, its slots of the ring, its counters.
class Producer {
 public:
  Producer(const ForwardApp& app, gpu::ResidentRing& ring, gpu::ResidentRunner* runner, const ResidentConfig& cfg,
           uint32_t t, const ProducerInput& in, uint64_t start_ns, WorkersResult& r, int rcu_reader)
      : app_(app), ring_(ring), runner_(runner), cfg_(cfg), t_(t), in_(in), clock_(in.rate, start_ns), r_(r),
        pending_(ring.per_producer()), live_budget_(in.live_count), idle_(cfg.rcu, rcu_reader), rcu_reader_(rcu_reader) {
    if (in_.store) {
      frames_per_loop_ = in_.order ? in_.order->size() : in_.store->size();
      frames_left_ = cfg.packets ? in_.budget : (cfg.repeat == 0 ? UINT64_MAX : frames_per_loop_ * cfg.repeat);
      frames_left_ = std::min(frames_left_, in_.budget);
      if (frames_per_loop_ == 0) frames_left_ = 0;
      sink_left_ = frames_per_loop_;  // the first pass
    } else {
      // The frames arrive in cells, of the port's own buffers or of a pool for one burst, and are
      // copied into the slot as a NIC's DMA would put them there.
      live_pool_ = in_.live->own_cells();
      if (!live_pool_) {
        own_pool_ = std::make_unique<PacketPool>(PacketBatch::kCapacity, ring.options().cell_size);
        live_pool_ = own_pool_.get();
      }
      sink_left_ = UINT64_MAX;
      // External frames: they stay in the port's cells until their batch is finished.
      if (ring.external_frames()) {
        if (live_pool_ != in_.live->own_cells() || live_pool_->region() != ring.frame_region(t).base) {
          throw std::invalid_argument("run: external frames need the port's own cells as the ring's frame region");
        }
        hold_cap_ = in_.live->own_cells_to_hold();
        if (hold_cap_ < live_burst()) throw std::invalid_argument("run: the port has no cells to hold in flight");
        held_cells_.resize(size_t{ring.per_producer()} * ring.batch());
        held_in_slot_.resize(ring.per_producer());
      }
    }
    if (in_.sink) {
      sink_pool_ = std::make_unique<PacketPool>(PacketBatch::kCapacity, ring.options().cell_size);
      out_wire_.resize(size_t{ring.per_producer()} * ring.batch());
      out_ts_.resize(out_wire_.size());
    }
  }

  Producer(const Producer&) = delete;
  Producer& operator=(const Producer&) = delete;
  // Cells still held (a run that ended on an error): back to the port, the GPU being stopped.
  ~Producer() {
    for (size_t k = 0; k < held_in_slot_.size(); ++k) {
      if (held_in_slot_[k]) live_pool_->free_bulk(&held_cells_[k * ring_.batch()], held_in_slot_[k]);
    }
  }

  void run() {
    uint64_t head = 0, tail = 0;
    bool drained = input_done();
    uint32_t filling = 0;  // frames in the tail slot so far
    size_t used = 0;       // its bytes
    if (cfg_.rcu) cfg_.rcu->online(rcu_reader_);
    while (!drained || filling || head != tail) {
      // Between batches this thread holds nothing of the app's tables (it reads them only to
      // process a batch on the CPU).
      if (cfg_.rcu) cfg_.rcu->quiescent(rcu_reader_);
      bool progress = false;
      while (head != tail && try_finish(head)) {
        ++head;
        progress = true;
      }
      if (!drained && (stop_asked(cfg_) || (in_.abort && in_.abort->load(std::memory_order_relaxed)))) {
        drained = true;
        r_.stopped = true;
      }
      if (!drained && in_.deadline_ns && now_ns() >= in_.deadline_ns) drained = true;
      if (tail - head < ring_.per_producer()) {
        const uint32_t s = ring_.slot_of(t_, tail);
        bool publish = false;
        if (!drained) {
          const uint32_t want = ring_.batch() - filling;
          const uint32_t avail = clock_.available(want);
          if (avail) {
            const uint64_t t0 = now_ns();
            bool full = false;
            const uint32_t got = in_.live ? receive_live(s, tail, avail, &filling, &used, &full)
                                          : receive(s, tail, avail, &filling, &used);
            rx_ns_ += now_ns() - t0;
            progress = progress || got;
            if (input_done()) drained = true;
            // A batch leaves full; a partial one when no more frames fit, when a live queue has
            // no more for now, or (below) once its oldest paced or live packet has waited long
            // enough.
            publish = filling == ring_.batch() || full || (in_.live ? got < live_burst() : got < avail);
            if (in_.live) {
              if (got) {
                idle_.got();
              } else if (!filling && head == tail) {
                idle_.empty(*in_.live);  // nothing received, nothing in flight: wait for packets
              }
            }
          }
          // Arrivals are on the arrival clock's time (the stamp clock when unpaced).
          if (filling && (clock_.paced() || in_.live) &&
              clock_.now() >= pending_[tail % ring_.per_producer()].first_arrival + cfg_.rx_hold_ns) {
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

  uint64_t rx_ns() const { return rx_ns_; }
  uint64_t finish_ns() const { return finish_ns_; }
  uint64_t cpu_ns() const { return cpu_ns_; }
  uint64_t batches() const { return batches_; }
  uint64_t cpu_batches() const { return cpu_batches_; }

 private:
  bool input_done() const { return in_.live ? live_budget_.done() : frames_left_ == 0; }
  uint32_t live_burst() const { return std::clamp<uint32_t>(cfg_.burst, 1, PacketBatch::kCapacity); }

  // Puts frame `len` bytes at `frame` into slot s as its i-th frame at byte `*used` (packed) or
  // in cell i; false when the slot has no room for its bytes (packed).
  bool place(uint32_t s, uint64_t j, uint32_t i, size_t* used, const uint8_t* frame, uint32_t len, uint32_t wire,
             uint64_t ts) {
    const bool cells = ring_.options().layout == gpu::FrameLayout::kCells;
    const uint32_t room = ring_.options().frame_room;  // packed: what the frame may grow by
    const size_t off = cells ? size_t{i} * ring_.options().cell_size : (*used + 15) / 16 * 16;
    if (!cells && off + len + room > ring_.slot_bytes()) return false;
    std::memcpy(ring_.bytes(s) + off, frame, len);
    ring_.offsets(s)[i] = static_cast<uint32_t>(off);
    note(s, j, i, len, wire, ts);
    *used = off + len + room;
    return true;
  }

  // External frames: names the frame in the port's cell `cell` as slot s's i-th frame, which holds
  // the cell until the batch is finished.
  void hold(uint32_t s, uint64_t j, uint32_t i, uint32_t cell, uint32_t len, uint32_t wire, uint64_t ts) {
    ring_.offsets(s)[i] = static_cast<uint32_t>(live_pool_->data(cell) - live_pool_->region());
    held_cells_[(j % ring_.per_producer()) * ring_.batch() + i] = cell;
    held_in_slot_[j % ring_.per_producer()] = i + 1;
    ++held_;
    note(s, j, i, len, wire, ts);
  }

  // Slot s's i-th frame: its length, and what its batch and the output need to know of it.
  void note(uint32_t s, uint64_t j, uint32_t i, uint32_t len, uint32_t wire, uint64_t ts) {
    ring_.lengths(s)[i] = len;
    if (!out_wire_.empty()) {
      const size_t k = (j % ring_.per_producer()) * ring_.batch() + i;
      out_wire_[k] = wire;
      out_ts_[k] = ts;
    }
    Pending& p = pending_[j % ring_.per_producer()];
    if (i == 0) p = Pending{};
    p.rx_bytes += len;
    p.wire_bytes += wire + kWireOverhead;
  }

  // A frame longer than any slot takes is received and dropped, as the workers drop it.
  void drop_oversize(uint32_t len, uint32_t wire) {
    r_.counters.received(len);
    r_.counters.drop(DropReason::kOversize);
    r_.wire_bytes += wire + kWireOverhead;
  }

  // The arrival clock counts every frame taken from the queue, kept or dropped; a batch's first
  // frame sets its arrival.
  void stamp(uint64_t j, uint32_t got, uint32_t filling_before, uint32_t filling) {
    uint64_t spacing = 0;
    const uint64_t first = clock_.take(got, &spacing);
    if (filling_before == 0 && filling > 0) {
      Pending& p = pending_[j % ring_.per_producer()];
      p.first_arrival = first;
      p.spacing = spacing;
    }
  }

  // Packed slots: how many more frames of the largest size a slot surely takes after `used` bytes.
  uint32_t frames_that_fit(size_t used) const {
    if (ring_.options().layout != gpu::FrameLayout::kPacked) return UINT32_MAX;
    const size_t per = size_t{std::min(ring_.max_frame(), kMaxFrame)} + ring_.options().frame_room + 15;
    const size_t at = (used + 15) / 16 * 16;
    return static_cast<uint32_t>(std::min<size_t>(UINT32_MAX, at < ring_.slot_bytes() ? (ring_.slot_bytes() - at) / per : 0));
  }

  // Copies up to `want` frames of the store's queue into slot s after its `*filling` frames.
  uint32_t receive(uint32_t s, uint64_t j, uint32_t want, uint32_t* filling, size_t* used) {
    const PacketStore& input = *in_.store;
    const uint32_t max_len = std::min(ring_.max_frame(), kMaxFrame);
    uint32_t got = 0;
    uint32_t i = *filling;
    while (got < want && frames_left_ > 0) {
      if (in_.order) {
        if (next_ + PacketStore::kPrefetchMeta < frames_per_loop_) input.prefetch_meta((*in_.order)[next_ + PacketStore::kPrefetchMeta]);
        if (next_ + PacketStore::kPrefetchBytes < frames_per_loop_) input.prefetch_bytes((*in_.order)[next_ + PacketStore::kPrefetchBytes]);
      }
      const size_t f = in_.order ? (*in_.order)[next_] : next_;
      const uint32_t wire = input.wire_len[f];
      const uint32_t len = std::min(input.caplen[f], max_len);
      if (wire <= kMaxFrame && !place(s, j, i, used, input.frame(f), len, wire, input.ts_ns[f])) break;  // full of bytes
      if (++next_ == frames_per_loop_) next_ = 0;
      --frames_left_;
      ++got;
      if (wire > kMaxFrame) {
        drop_oversize(len, wire);
        continue;
      }
      ++i;
    }
    stamp(j, got, *filling, i);
    *filling = i;
    return got;
  }

  // Receives one burst from the live port (no more frames than surely fit slot s, none once the
  // count is taken) and copies its frames into the slot after its `*filling` frames, or with
  // external frames names them where they arrived. `*full`: the slot has no room for another
  // burst, or the port no cells to spare for one.
  uint32_t receive_live(uint32_t s, uint64_t j, uint32_t want, uint32_t* filling, size_t* used, bool* full) {
    const uint32_t max_len = std::min(ring_.max_frame(), kMaxFrame);
    uint32_t fit = std::min(want, frames_that_fit(*used));
    if (external()) fit = std::min(fit, hold_cap_ - std::min(hold_cap_, held_));
    const uint32_t claim = live_budget_.claim(std::min(fit, live_burst()));
    if (claim == 0) {
      *full = fit == 0;
      return 0;
    }
    PacketBatch& b = live_batch_;
    in_.live->set_burst(claim);
    const uint32_t got = in_.live->rx_burst(*live_pool_, b);
    live_budget_.received(claim, got);
    uint32_t i = *filling;
    uint32_t dropped = 0;  // external frames: the cells of frames dropped on receipt, moved to the front
    for (uint32_t k = 0; k < b.size; ++k) {
      const uint32_t len = b.len[k], wire = b.wire_len[k];
      // A frame cut short (its wire length beyond what arrived) or too long for a slot's cell.
      if (wire > kMaxFrame || len > max_len) {
        drop_oversize(len, wire);
        if (external()) b.cell[dropped++] = b.cell[k];
        continue;
      }
      if (external()) {
        hold(s, j, i, b.cell[k], len, wire, b.ts_ns[k]);
      } else {
        place(s, j, i, used, live_pool_->data(b.cell[k]), len, wire, b.ts_ns[k]);  // fits: `fit` frames of max_len do
      }
      ++i;
    }
    live_pool_->free_bulk(b.cell.data(), external() ? dropped : b.size);
    b.clear();
    stamp(j, got, *filling, i);
    *filling = i;
    *full = frames_that_fit(*used) < live_burst() || (external() && held_ + live_burst() > hold_cap_);
    return got;
  }

  bool external() const { return !held_cells_.empty(); }

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
    uint8_t* const frames = out ? ring_.out_bytes(s) : ring_.frames(s);
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
      latency_sum_ += (t - p.first_arrival) * n;
    } else {
      for (uint32_t i = 0; i < n; ++i) {
        const uint64_t d = t - std::min(t, p.first_arrival + i * p.spacing);
        r_.latency.record(d);
        latency_sum_ += d;
      }
    }
    latency_packets_ += n;
    if (external()) {
      send_held(lengths, verdicts, j % ring_.per_producer(), n);
    } else if (in_.sink && sink_left_ > 0) {
      write_out(frames, offsets, lengths, verdicts, (j % ring_.per_producer()) * ring_.batch(), n);
    }
    if (in_.progress) {
      const Counters& c = r_.counters;
      in_.progress->received.store(c.rx_packets, std::memory_order_relaxed);
      in_.progress->forwarded.store(c.tx_packets, std::memory_order_relaxed);
      in_.progress->dropped.store(c.dropped(), std::memory_order_relaxed);
      in_.progress->wire_bytes.store(r_.wire_bytes, std::memory_order_relaxed);
      in_.progress->latency_ns.store(latency_sum_, std::memory_order_relaxed);
      in_.progress->latency_packets.store(latency_packets_, std::memory_order_relaxed);
    }
  }

  // Forwarded frames to the sink (a store's first pass, or every frame from a live port), through
  // a small pool (a sink takes packet cells), with their wire lengths and capture timestamps; the
  // slot's frames from index `first` of out_wire_ and out_ts_.
  void write_out(const uint8_t* frames, const uint32_t* offsets, const uint32_t* lengths, const uint32_t* verdicts,
                 size_t first, uint32_t n) {
    for (uint32_t base = 0; base < n && sink_left_ > 0; base += PacketBatch::kCapacity) {
      PacketBatch b;
      b.size = static_cast<uint32_t>(std::min<uint64_t>({PacketBatch::kCapacity, n - base, sink_left_}));
      for (uint32_t i = 0; i < b.size; ++i) {
        b.cell[i] = i;
        b.len[i] = static_cast<uint16_t>(lengths[base + i]);
        // A frame whose length the app changed goes out whole (as the workers' paths send it).
        b.wire_len[i] = ring_.lengths_change() ? lengths[base + i] : out_wire_[first + base + i];
        b.ts_ns[i] = out_ts_[first + base + i];
        b.verdict[i] = verdicts[base + i];
        if (!Verdict::is_drop(b.verdict[i])) std::memcpy(sink_pool_->data(i), frames + offsets[base + i], lengths[base + i]);
      }
      in_.sink->tx_burst(*sink_pool_, b, r_.counters);
      sink_left_ -= b.size;
    }
  }

  // External frames: slot position k's n frames leave in the cells they arrived in (the sink
  // takes those it sends where it can; the others, and drops, go back to the port).
  void send_held(const uint32_t* lengths, const uint32_t* verdicts, size_t k, uint32_t n) {
    uint32_t* const cells = &held_cells_[k * ring_.batch()];
    const bool taken = in_.sink && in_.sink->takes_cells(*live_pool_);
    for (uint32_t base = 0; base < n; base += PacketBatch::kCapacity) {
      PacketBatch& b = live_batch_;
      b.size = std::min<uint32_t>(PacketBatch::kCapacity, n - base);
      uint32_t back = 0;  // cells the sink does not take, gathered at the front of `to_free`
      uint32_t to_free[PacketBatch::kCapacity];
      for (uint32_t i = 0; i < b.size; ++i) {
        const size_t f = k * ring_.batch() + base + i;
        b.cell[i] = cells[base + i];
        b.len[i] = static_cast<uint16_t>(lengths[base + i]);
        b.wire_len[i] = ring_.lengths_change() || out_wire_.empty() ? lengths[base + i] : out_wire_[f];
        b.ts_ns[i] = out_ts_.empty() ? 0 : out_ts_[f];
        b.verdict[i] = verdicts[base + i];
        if (!taken || Verdict::is_drop(b.verdict[i])) to_free[back++] = b.cell[i];
      }
      if (in_.sink) in_.sink->tx_burst(*live_pool_, b, r_.counters);
      live_pool_->free_bulk(to_free, back);
      b.clear();
    }
    held_ -= n;
    held_in_slot_[k] = 0;
  }

  const ForwardApp& app_;
  gpu::ResidentRing& ring_;
  gpu::ResidentRunner* runner_;
  const ResidentConfig& cfg_;
  uint32_t t_;
  ProducerInput in_;
  ArrivalClock clock_;
  WorkersResult& r_;
  std::vector<Pending> pending_;
  // A store's queue: frames a pass, frames still to take, the next one.
  size_t frames_per_loop_ = 0;
  uint64_t frames_left_ = 0;
  size_t next_ = 0;
  // A live port's queue: its share of the count, the cells its bursts arrive in.
  RxBudget live_budget_;
  IdleWait idle_;
  int rcu_reader_;
  PacketPool* live_pool_ = nullptr;
  std::unique_ptr<PacketPool> own_pool_;
  PacketBatch live_batch_;
  // External frames: the cells each slot position holds, how many, in all, and the most allowed.
  std::vector<uint32_t> held_cells_;
  std::vector<uint32_t> held_in_slot_;
  uint32_t held_ = 0, hold_cap_ = 0;
  uint64_t sink_left_ = 0;  // frames the sink still takes
  std::unique_ptr<PacketPool> sink_pool_;
  std::vector<uint32_t> out_wire_;  // with a sink: each slot frame's wire length and timestamp
  std::vector<uint64_t> out_ts_;
  uint64_t latency_sum_ = 0, latency_packets_ = 0;
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

// The GPU sides of a run and its receive threads; `input_of(t, start_ns)` gives thread t's queue.
// With external frames (cfg.ring.external_frames), thread t's frames stay in frames[t]'s cells.
template <class InputOf>
ResidentResult run_producers(const ForwardApp& app, const ResidentConfig& cfg, InputOf input_of,
                             const std::vector<PacketPool*>& frames = {}) {
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
    if (ro.external_frames) {
      if (frames.size() != size_t(cfg.producers)) throw std::invalid_argument("run: external frames need a region per receive thread");
      for (int t = g; t < cfg.producers; t += ng) {
        side.ring->set_frame_region(static_cast<uint32_t>(t / ng), frames[t]->region(), frames[t]->region_bytes());
      }
    }
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
  std::vector<WorkersResult> part(n);
  std::vector<std::unique_ptr<Producer>> producers(n);
  std::vector<std::exception_ptr> error(n);
  std::atomic<int> ready{0};
  std::atomic<uint64_t> start_ns{0};
  std::atomic<int> abort{0};
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
        if (ready.fetch_add(1) + 1 == n) start_ns.store(now_ns());
        while (start_ns.load() == 0) std::this_thread::yield();
        ProducerInput in = input_of(t, start_ns.load());
        in.abort = &abort;
        producers[t] = std::make_unique<Producer>(app, *side.ring, side.runner.get(), cfg, static_cast<uint32_t>(t / ng),
                                                  in, start_ns.load(), r, t);
        producers[t]->run();
        if (cfg.rcu) cfg.rcu->offline(t);
      } catch (...) {
        if (cfg.rcu) cfg.rcu->offline(t);
        error[t] = std::current_exception();
        abort.store(1);
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
  return res;
}

}  // namespace

ResidentResult run_resident(const ForwardApp& app, const PacketStore& input, const ResidentConfig& cfg) {
  if (cfg.producers < 1 || cfg.producers > 32) throw std::invalid_argument("run: 1..32 receive threads");  // before the split
  const int n = cfg.producers;
  const auto queues = rss_split(input, n);
  const std::vector<uint64_t> budget = queue_budgets(input, queues, cfg.packets);
  ResidentResult res = run_producers(app, cfg, [&](int t, uint64_t) {
    ProducerInput in;
    in.store = &input;
    in.order = n > 1 ? &queues[t] : nullptr;
    in.budget = budget[t];
    const size_t share = in.order ? in.order->size() : input.size();
    in.rate = input.size() ? cfg.rate_pps * double(share) / input.size() : 0;
    in.sink = cfg.sink;
    in.progress = cfg.progress ? &cfg.progress[t] : nullptr;
    return in;
  });
  res.run.expected = cfg.packets ? cfg.packets : input.size() * cfg.repeat;
  return res;
}

ResidentResult run_resident_live(const ForwardApp& app, const std::vector<std::unique_ptr<PacketSource>>& sources,
                                 const std::vector<std::unique_ptr<PacketSink>>& sinks, const ResidentConfig& cfg) {
  if (sources.size() != size_t(cfg.producers)) throw std::invalid_argument("run: one live source per receive thread");
  if (!sinks.empty() && sinks.size() != size_t(cfg.producers)) throw std::invalid_argument("run: one sink per receive thread");
  SharedCount count(cfg.packets);
  const uint64_t duration = cfg.duration_ns;
  // The frames stay where the ports' drivers put them where every port offers its own cells (DPDK
  // mbufs), with room for a frame as large as a slot's and some to hold in flight.
  ResidentConfig rc = cfg;
  std::vector<PacketPool*> frames;
  const uint32_t burst = std::clamp<uint32_t>(cfg.burst, 1, PacketBatch::kCapacity);
  bool external = cfg.zero_copy && (cfg.cpu || cfg.ring.mode == gpu::GpuMode::kPersistent) &&
                  cfg.ring.layout == gpu::FrameLayout::kCells;
  for (const auto& src : sources) {
    PacketPool* own = src->own_cells();
    external = external && own && src->own_cells_to_hold() >= burst && own->max_frame() >= cfg.ring.cell_size - PacketPool::kHeadroom &&
               own->region_bytes() <= UINT32_MAX;
    frames.push_back(own);
  }
  if (external) {
    rc.ring.external_frames = true;
  } else {
    frames.clear();
  }
  ResidentResult res = run_producers(app, rc, [&](int t, uint64_t start_ns) {
    ProducerInput in;
    in.live = sources[t].get();
    in.live->set_burst(burst);
    in.live_count = &count;
    in.deadline_ns = duration ? start_ns + duration : 0;
    in.sink = sinks.empty() ? cfg.sink : sinks[t].get();
    in.progress = cfg.progress ? &cfg.progress[t] : nullptr;
    return in;
  }, frames);
  if (external) res.describe += "; frames in the ports' buffers" + std::string(cfg.cpu ? "" : ", registered with the GPU");
  res.zero_copy = external;
  res.run.expected = res.run.counters.rx_packets;  // live traffic: what came is what was expected
  return res;
}

}  // namespace tandem
