#include "sched/dispatcher.h"

#include <algorithm>
#include <cstring>

#include "core/clock.h"
#include "sched/cpu_ring_runner.h"
#include "sched/ring_fallback.h"

namespace tandem::sched_detail {

namespace {

constexpr uint64_t kWireOverhead = 24;  // preamble, FCS, gap: as the workers count wire bytes
constexpr uint32_t kMaxFrame = 0xFFFF;  // as the workers: longer frames are dropped on receipt

uint32_t load_acquire(const volatile uint32_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

void bump(std::atomic<uint64_t>& a, uint64_t n) { a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }

// Where frame i of `len` bytes goes in an open slot whose frames so far end at `used`; SIZE_MAX
// where a packed slot has no room left for it.
inline size_t frame_offset(bool cpu, bool cells, uint32_t cell, uint32_t room, size_t slot_bytes, uint32_t i,
                           uint32_t len, size_t used) {
  if (cpu) return cpu_frame_offset(i, cell);
  if (cells) return size_t{i} * cell;
  const size_t off = (used + 15) / 16 * 16;
  return off + len + room > slot_bytes ? SIZE_MAX : off;
}

}  // namespace

Dispatcher::Dispatcher(const ForwardApp& app, const PacketStore& input, const HeteroConfig& cfg,
                       std::vector<DeviceRing> devs, uint32_t t, const QueueInput& q, PlanBoard& board,
                       DispatcherStats& stats, uint64_t start_ns, WorkersResult& r)
    : app_(app), input_(input), cfg_(cfg), t_(t), q_(q), board_(board), stats_(stats),
      clock_(cfg.rate, q.share, start_ns), r_(r), order_(q.flows) {
  for (const DeviceRing& d : devs) {
    Lane l;
    l.dev = d;
    const uint32_t per = d.ring->per_producer(), batch = d.ring->batch();
    l.target = batch;
    l.pending.resize(per);
    l.tag.resize(size_t{per} * batch);
    l.arrival.resize(size_t{per} * batch);
    if (cfg.sink) l.taken.resize(size_t{per} * batch);
    open_slot(l);
    lanes_.push_back(std::move(l));
  }
  frames_per_loop_ = q.order ? q.order->size() : input.size();
  hi_ = frames_per_loop_;
  frames_left_ = cfg.packets ? q.budget : (cfg.repeat == 0 ? UINT64_MAX : frames_per_loop_ * cfg.repeat);
  frames_left_ = std::min(frames_left_, q.budget);
  if (frames_per_loop_ == 0) frames_left_ = 0;
  if (cfg.sink) sink_pool_ = std::make_unique<PacketPool>(PacketBatch::kCapacity, cfg.cell_size);
}

void Dispatcher::run() {
  // The first plan applied is the first plan published (run_hetero placed the per-key state by it),
  // then the current one, so that a dispatcher that starts late still hands state over for every
  // shard the scheduler has moved since. Its buffer is not reused before every dispatcher has seen
  // a plan.
  apply_plan(kFirstEpoch);
  if (const uint64_t e = board_.epoch.load(std::memory_order_acquire); e != kFirstEpoch) apply_plan(e);
  bool drained = frames_left_ == 0;
  const auto stop_asked = [&] {
    return (cfg_.stop != nullptr && cfg_.stop->load(std::memory_order_relaxed) != 0) ||
           board_.abort.load(std::memory_order_relaxed);
  };
  for (;;) {
    bool progress = false;
    for (uint32_t d = 0; d < lanes_.size(); ++d) {
      while (lanes_[d].head != lanes_[d].tail && try_finish(d)) progress = true;
    }
    const uint64_t e = board_.epoch.load(std::memory_order_acquire);
    if (e != epoch_) apply_plan(e);
    if (!moving_.empty()) settle_moving();
    for (uint32_t d = 0; d < lanes_.size(); ++d) {
      if (!lanes_[d].queue.empty() && drain_queue(d)) progress = true;
    }
    if (!drained && stop_asked()) {
      drained = true;
      r_.stopped = true;
    }
    if (!drained) {
      const uint32_t avail = clock_.available(cfg_.burst);
      if (avail) {
        const uint64_t t0 = now_ns();
        progress = receive(avail) > 0 || progress;
        rx_ns_ += now_ns() - t0;
        if (frames_left_ == 0) drained = true;
      }
      if (clock_.paced()) {
        const uint64_t now = now_ns();
        if (clock_.exhausted(now)) {  // the offered load has ended: the run stops receiving
          drained = true;
          r_.stopped = true;
        }
        const double arrived = clock_.arrived_by(now);
        const double backlog = arrived - double(clock_.taken());
        if (backlog > double(backlog_hwm_)) backlog_hwm_ = static_cast<uint64_t>(backlog);
        // A partial batch leaves once its oldest packet has waited long enough.
        for (uint32_t d = 0; d < lanes_.size(); ++d) {
          if (lanes_[d].filling && now >= lanes_[d].oldest + cfg_.hold_ns) publish(d);
        }
      }
    }
    bool busy = false;
    for (uint32_t d = 0; d < lanes_.size(); ++d) {
      if (drained && lanes_[d].filling) publish(d);
      busy = busy || lanes_[d].filling || lanes_[d].head != lanes_[d].tail || !lanes_[d].queue.empty();
    }
    if (drained && !busy) break;
    if (!progress) cpu_relax();
  }
  if (!moving_.empty()) settle_moving();
  // Finished: the scheduler waits on this queue no more.
  stats_.seen_epoch.store(UINT64_MAX, std::memory_order_release);
  stats_.settled_epoch.store(UINT64_MAX, std::memory_order_release);
}

void Dispatcher::select_phase() {
  const std::vector<uint32_t>& of = cfg_.segment_phase;
  const size_t seg = clock_.segment_of(clock_.taken());
  const uint32_t ph = seg < of.size() ? of[seg] : of.back();
  if (ph == phase_ || ph + 1 >= q_.phase_begin.size()) return;
  // None of the phase's frames came to this queue: it goes on with the phase it has (at the start,
  // the whole queue) rather than switch to another phase's frames for this one.
  if (q_.phase_begin[ph] == q_.phase_begin[ph + 1]) {
    if (phase_ != UINT32_MAX) return;
  } else {
    lo_ = q_.phase_begin[ph];
    hi_ = q_.phase_begin[ph + 1];
  }
  phase_ = ph;
  pos_ = lo_;
}

void Dispatcher::open_slot(Lane& l) const {
  const gpu::ResidentRing& ring = *l.dev.ring;
  l.slot = static_cast<uint32_t>(t_ + (l.tail % ring.per_producer()) * ring.producers());
  l.base = size_t{l.tail % ring.per_producer()} * ring.batch();
}

void Dispatcher::apply_plan(uint64_t e) {
  if (e == 0) return;
  const Plan& p = board_.plans[e % kPlans];
  for (uint32_t d = 0; d < lanes_.size(); ++d) {
    const uint32_t cap = lanes_[d].dev.ring->batch();
    lanes_[d].target = p.batch[d] ? std::min(p.batch[d], cap) : cap;
  }
  const bool first = epoch_ == 0;
  moving_.clear();
  for (uint32_t s = 0; s < kShards; ++s) {
    want_[s] = p.device[s];
    if (first) cur_[s] = want_[s];
    if (cfg_.test_skip_drain && cur_[s] != want_[s]) (void)move_shard(s);
    if (cur_[s] != want_[s] || released_[s]) moving_.push_back(static_cast<uint16_t>(s));
  }
  epoch_ = e;
  stats_.seen_epoch.store(e, std::memory_order_release);
  requeue();
  // The moved shards' frames in open slots leave now, so that their old devices drain.
  if (!moving_.empty()) {
    for (uint32_t d = 0; d < lanes_.size(); ++d) {
      if (lanes_[d].filling) publish(d);
    }
  }
  settle_moving();
}

// Shard s to its planned device, its frames on the old one all finished: the per-key state of its
// keys goes with it (only this queue's frames use them). False while the new device cannot take
// the state yet (its GPU broke and is not yet failed): the shard waits, its state in the app's
// table, until that device takes it, fails, or a new plan names a device that takes it (the old
// one included, which must then take the state back).
bool Dispatcher::move_shard(uint32_t s) {
  if (!q_.keys.empty() && !q_.keys[s].empty()) {
    const std::vector<uint32_t>& k = q_.keys[s];
    if (!released_[s]) {
      lanes_[cur_[s]].dev.runner->release_state(k.data(), k.size());
      released_[s] = true;
    }
    gpu::ResidentRunner& to = *lanes_[want_[s]].dev.runner;
    if (!to.adopt_state(k.data(), k.size()) && !to.failed()) return false;
    released_[s] = false;
  }
  cur_[s] = want_[s];
  last_[s] = 0;  // batch numbers are per device: none of its frames is on the new one yet
  return true;
}

void Dispatcher::settle_moving() {
  size_t k = 0;
  for (const uint16_t s : moving_) {
    if ((cur_[s] != want_[s] || released_[s]) && (lanes_[cur_[s]].head < last_[s] || !move_shard(s))) moving_[k++] = s;
  }
  moving_.resize(k);
  if (moving_.empty() && stats_.settled_epoch.load(std::memory_order_relaxed) != epoch_) {
    stats_.settled_ns.store(now_ns(), std::memory_order_relaxed);
    stats_.settled_epoch.store(epoch_, std::memory_order_release);
  }
}

// Takes up to `want` frames of the queue, in runs of frames bound for one lane's open slot. Each
// run is copied first, with nothing else between the copies (as the resident path's receive
// threads copy), then stamped and recorded from L1: interleaving the bookkeeping with the copies
// halves the rate at which a dispatcher fills its rings.
uint32_t Dispatcher::receive(uint32_t want) {
  uint32_t got = 0;
  // Arrivals: unpaced, now for every frame of the burst; paced, the schedule's, looked up once.
  uint64_t first = now_ns(), spacing = 0;
  if (clock_.paced()) first = clock_.peek(want, &spacing);
  const std::vector<uint32_t>* const ord = q_.order;
  const uint16_t* const shard_of = q_.shard.data();
  const uint32_t* const flow_of = q_.flow.data();
  if (!q_.phase_begin.empty()) select_phase();
  const size_t lo = lo_, hi = hi_;
  while (got < want && frames_left_ > 0) {
    const size_t pos0 = pos_;
    const uint32_t s0 = shard_of[pos0];
    if (input_.wire_len[ord ? (*ord)[pos0] : pos0] > kMaxFrame) {
      drop_oversize(pos0);
      ++got;
      continue;
    }
    // Whether the frame must wait: behind its shard's frames in a lane queue, for its shard's frames
    // on the old device to finish (the old device gets the shard's open slot), or for room in its
    // device's ring. It waits in its device's lane queue, or without one at the head of this queue
    // (none behind it may pass).
    bool wait = queued_[s0] > 0;
    if (!wait && (cur_[s0] != want_[s0] || released_[s0])) {
      Lane& old = lanes_[cur_[s0]];
      if (old.head >= last_[s0]) {
        wait = !move_shard(s0);  // its new device cannot take the shard's state yet
      } else {
        if (old.filling && last_[s0] == old.tail + 1) publish(cur_[s0]);
        wait = true;
      }
    }
    if (!wait && lanes_[cur_[s0]].tail - lanes_[cur_[s0]].head >= lanes_[cur_[s0]].dev.ring->per_producer()) {
      bump(stats_.lane[cur_[s0]].full_waits, 1);
      wait = true;
    }
    if (wait) {
      if (!enqueue(pos0, first + got * spacing)) break;
      ++got;
      continue;
    }
    const uint32_t d = cur_[s0];
    Lane& l = lanes_[d];
    gpu::ResidentRing& ring = *l.dev.ring;
    const gpu::ResidentOptions& o = ring.options();
    const uint32_t per = ring.per_producer();
    const uint32_t i0 = l.filling;
    if (i0 >= l.target) {  // a new plan lowered the batch target below what the slot holds
      publish(d);
      continue;
    }
    const uint64_t limit = std::min<uint64_t>({uint64_t{want - got}, uint64_t{l.target - i0}, frames_left_});
    uint8_t* const bytes = ring.bytes(l.slot);
    uint32_t* const offsets = ring.offsets(l.slot);
    uint32_t* const lengths = ring.lengths(l.slot);
    const bool cpu = l.dev.cpu, cells = o.layout == gpu::FrameLayout::kCells;
    const uint32_t cell = o.cell_size, room = o.frame_room, max_len = std::min(ring.max_frame(), kMaxFrame);
    const size_t slot_bytes = ring.slot_bytes();
    size_t used = l.used, pos = pos0;
    uint32_t n = 0;
    // The copies: frames of shards settled on this lane with none of theirs waiting, until one that
    // is not, an oversize one, or a packed slot full of bytes.
    while (n < limit) {
      const uint32_t s = shard_of[pos];
      if (cur_[s] != d || want_[s] != d || released_[s] || queued_[s]) break;
      if (ord) {
        size_t a = pos + PacketStore::kPrefetchMeta;
        if (a >= hi) a = lo + (a - hi);
        if (a < hi) input_.prefetch_meta((*ord)[a]);
        size_t c = pos + PacketStore::kPrefetchBytes;
        if (c >= hi) c = lo + (c - hi);
        if (c < hi) input_.prefetch_bytes((*ord)[c]);
      }
      const size_t f = ord ? (*ord)[pos] : pos;
      if (input_.wire_len[f] > kMaxFrame) break;
      const uint32_t len = std::min(input_.caplen[f], max_len);
      const uint32_t i = i0 + n;
      const size_t off = frame_offset(cpu, cells, cell, room, slot_bytes, i, len, used);
      if (off == SIZE_MAX) break;
      std::memcpy(bytes + off, input_.frame(f), len);
      offsets[i] = static_cast<uint32_t>(off);
      lengths[i] = len;
      used = off + len + room;
      ++n;
      if (++pos == hi) pos = lo;
    }
    if (n == 0) {  // the batch is full of bytes
      publish(d);
      continue;
    }
    // The same frames' bookkeeping: their flows' sequence numbers, arrivals and shards.
    Pending& p = l.pending[l.tail % per];
    if (i0 == 0) {
      p = Pending{};
      l.oldest = first + got * spacing;
    }
    pos = pos0;
    for (uint32_t m = 0; m < n; ++m) {
      const size_t k = l.base + i0 + m;
      const uint32_t flow = flow_of[pos], s = shard_of[pos];
      const size_t f = ord ? (*ord)[pos] : pos;
      l.tag[k] = uint64_t{flow} << 32 | order_.stamp(flow);
      l.arrival[k] = first + (got + m) * spacing;
      if (!l.taken.empty()) l.taken[k] = next_ + m;
      p.rx_bytes += lengths[i0 + m];
      p.wire_bytes += input_.wire_len[f] + kWireOverhead;
      last_[s] = l.tail + 1;
      auto& sf = stats_.shard_frames[s];
      sf.store(sf.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      if (++pos == hi) pos = lo;
    }
    l.filling = i0 + n;
    l.used = used;
    next_ += n;
    pos_ = pos;
    frames_left_ -= n;
    got += n;
    if (l.filling >= l.target) publish(d);
  }
  clock_.advance(got);
  stats_.taken.store(next_, std::memory_order_relaxed);
  return got;
}

void Dispatcher::drop_oversize(size_t pos) {
  const size_t f = q_.order ? (*q_.order)[pos] : pos;
  r_.counters.received(std::min({input_.caplen[f], lanes_[cur_[q_.shard[pos]]].dev.ring->max_frame(), kMaxFrame}));
  r_.counters.drop(DropReason::kOversize);
  r_.wire_bytes += input_.wire_len[f] + kWireOverhead;
  ++next_;
  if (++pos_ == hi_) pos_ = lo_;
  --frames_left_;
}

bool Dispatcher::enqueue(size_t pos, uint64_t arrival) {
  const uint32_t s = q_.shard[pos];
  const uint32_t d = want_[s];
  Lane& l = lanes_[d];
  if (l.queue.size() >= cfg_.lane_queue) return false;
  const uint32_t flow = q_.flow[pos];
  l.queue.push_back(Queued{uint64_t{flow} << 32 | order_.stamp(flow), arrival, next_, pos, static_cast<uint16_t>(s)});
  ++queued_[s];
  auto& sf = stats_.shard_frames[s];
  sf.store(sf.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  ++next_;
  if (++pos_ == hi_) pos_ = lo_;
  --frames_left_;
  note_queued(d);
  return true;
}

bool Dispatcher::drain_queue(uint32_t d) {
  Lane& l = lanes_[d];
  gpu::ResidentRing& ring = *l.dev.ring;
  const gpu::ResidentOptions& o = ring.options();
  const uint32_t per = ring.per_producer();
  const bool cpu = l.dev.cpu, cells = o.layout == gpu::FrameLayout::kCells;
  const uint32_t cell = o.cell_size, room = o.frame_room, max_len = std::min(ring.max_frame(), kMaxFrame);
  const size_t slot_bytes = ring.slot_bytes();
  bool moved = false;
  while (!l.queue.empty()) {
    const Queued& e = l.queue.front();
    const uint32_t s = e.shard;
    if (cur_[s] != d || released_[s]) {  // the shard moves here: its frames on the old device first
      Lane& old = lanes_[cur_[s]];
      if (old.head < last_[s]) {
        if (old.filling && last_[s] == old.tail + 1) publish(cur_[s]);
        break;
      }
      if (!move_shard(s)) break;
    }
    if (l.tail - l.head >= per) {  // frames wait for the device itself: it is saturated
      bump(stats_.lane[d].full_waits, 1);
      break;
    }
    if (l.filling >= l.target) {
      publish(d);
      continue;
    }
    const size_t f = q_.order ? (*q_.order)[e.pos] : e.pos;
    const uint32_t len = std::min(input_.caplen[f], max_len), i = l.filling;
    const size_t off = frame_offset(cpu, cells, cell, room, slot_bytes, i, len, l.used);
    if (off == SIZE_MAX) {
      publish(d);
      continue;
    }
    uint8_t* const bytes = ring.bytes(l.slot);
    std::memcpy(bytes + off, input_.frame(f), len);
    ring.offsets(l.slot)[i] = static_cast<uint32_t>(off);
    ring.lengths(l.slot)[i] = len;
    Pending& p = l.pending[l.tail % per];
    if (i == 0) {
      p = Pending{};
      l.oldest = e.arrival;
    }
    const size_t k = l.base + i;
    l.tag[k] = e.tag;
    l.arrival[k] = e.arrival;
    if (!l.taken.empty()) l.taken[k] = e.taken;
    p.rx_bytes += len;
    p.wire_bytes += input_.wire_len[f] + kWireOverhead;
    last_[s] = l.tail + 1;
    l.filling = i + 1;
    l.used = off + len + room;
    --queued_[s];
    l.queue.pop_front();
    moved = true;
    if (l.filling >= l.target) publish(d);
  }
  if (moved) note_queued(d);
  return moved;
}

void Dispatcher::requeue() {
  bool stray = false;
  for (uint32_t d = 0; d < lanes_.size() && !stray; ++d) {
    for (const Queued& e : lanes_[d].queue) {
      if (want_[e.shard] != d) {
        stray = true;
        break;
      }
    }
  }
  if (!stray) return;
  // A shard's queued frames are all in one lane, in order: moved together, they stay in order.
  std::vector<std::deque<Queued>> to(lanes_.size());
  for (uint32_t d = 0; d < lanes_.size(); ++d) {
    std::deque<Queued> keep;
    for (const Queued& e : lanes_[d].queue) (want_[e.shard] == d ? keep : to[want_[e.shard]]).push_back(e);
    lanes_[d].queue.swap(keep);
  }
  for (uint32_t d = 0; d < lanes_.size(); ++d) {
    lanes_[d].queue.insert(lanes_[d].queue.end(), to[d].begin(), to[d].end());
    note_queued(d);
  }
}

void Dispatcher::note_queued(uint32_t d) {
  LaneStats& st = stats_.lane[d];
  const uint64_t q = lanes_[d].queue.size();
  st.queued.store(q, std::memory_order_relaxed);
  if (q > st.queued_hwm.load(std::memory_order_relaxed)) st.queued_hwm.store(q, std::memory_order_relaxed);
}

void Dispatcher::publish(uint32_t d) {
  Lane& l = lanes_[d];
  if (l.filling == 0) return;
  gpu::ResidentRing& ring = *l.dev.ring;
  const uint32_t s = ring.slot_of(t_, l.tail);
  ring.fill(s)->count = l.filling;
  ring.fill(s)->used = static_cast<uint32_t>(l.used);
  Pending& p = l.pending[l.tail % ring.per_producer()];
  p.n = l.filling;
  p.publish_ns = now_ns();
  ++l.tail;
  __atomic_store_n(&ring.index(t_)->published, l.tail, __ATOMIC_RELEASE);
  l.filling = 0;
  l.used = 0;
  open_slot(l);
  const auto in_flight = static_cast<uint32_t>(l.tail - l.head);
  if (in_flight > stats_.lane[d].hwm.load(std::memory_order_relaxed)) stats_.lane[d].hwm.store(in_flight, std::memory_order_relaxed);
}

bool Dispatcher::try_finish(uint32_t d) {
  Lane& l = lanes_[d];
  gpu::ResidentRing& ring = *l.dev.ring;
  const uint64_t j = l.head;
  const uint32_t s = ring.slot_of(t_, j);
  const uint32_t g = ring.gen_of(j);
  const Pending& p = l.pending[j % ring.per_producer()];
  if (load_acquire(&ring.status(s)->done) != g) {
    if (!l.dev.runner->failed()) return false;
    process_on_cpu(l, s, g, p.n);
  }
  const uint64_t t0 = now_ns();
  finish(d, s, j, p);
  finish_ns_ += now_ns() - t0;
  ++l.head;
  return true;
}

// A failed device's batch, with the app's frame core (as the resident path's fallback). Frames the
// GPU had claimed may be half-rewritten: they are dropped as gpu_fault, never sent.
void Dispatcher::process_on_cpu(Lane& l, uint32_t s, uint32_t g, uint32_t n) {
  process_slot_on_cpu(app_, *l.dev.ring, s, n, load_acquire(&l.dev.ring->status(s)->claimed) == g);
}

void Dispatcher::finish(uint32_t d, uint32_t s, uint64_t j, const Pending& p) {
  Lane& l = lanes_[d];
  gpu::ResidentRing& ring = *l.dev.ring;
  const uint32_t n = p.n;
  count_slot(app_, ring, s, n, ring.frames(s), p.rx_bytes, p.wire_bytes, cfg_.verify, r_);
  const uint64_t now = now_ns();
  const size_t base = size_t{j % ring.per_producer()} * ring.batch();
  for (uint32_t i = 0; i < n; ++i) {
    r_.latency.record(now - std::min(now, l.arrival[base + i]));
    const uint64_t tag = l.tag[base + i];
    order_.left(static_cast<uint32_t>(tag >> 32), static_cast<uint32_t>(tag));
  }
  if (cfg_.sink && sunk_ < frames_per_loop_) write_out(l, s, j, n);
  LaneStats& st = stats_.lane[d];
  bump(st.frames, n);
  bump(st.bytes, p.rx_bytes);
  bump(st.batches, 1);
  bump(st.service_ns, now - std::min(now, p.publish_ns));
}

// The first pass's frames to the output, in the order they leave, through a small pool (the sink
// takes packet cells), with their capture timestamps and wire lengths.
void Dispatcher::write_out(Lane& l, uint32_t s, uint64_t j, uint32_t n) {
  gpu::ResidentRing& ring = *l.dev.ring;
  const size_t base = size_t{j % ring.per_producer()} * ring.batch();
  const uint32_t* const lengths = ring.out_lengths(s);
  PacketBatch b;
  b.size = 0;
  auto flush = [&] {
    if (b.size) cfg_.sink->tx_burst(*sink_pool_, b, r_.counters);
    b.size = 0;
  };
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t k = l.taken[base + i];
    if (k >= frames_per_loop_) continue;
    const size_t f = q_.order ? (*q_.order)[k] : k;
    const uint32_t m = b.size++;
    b.cell[m] = m;
    b.len[m] = static_cast<uint16_t>(lengths[i]);
    b.wire_len[m] = ring.lengths_change() ? lengths[i] : input_.wire_len[f];
    b.ts_ns[m] = input_.ts_ns[f];
    b.verdict[m] = ring.verdicts(s)[i];
    std::memcpy(sink_pool_->data(m), ring.frames(s) + ring.offsets(s)[i], lengths[i]);
    ++sunk_;
    if (b.full()) flush();
  }
  flush();
}

}  // namespace tandem::sched_detail
