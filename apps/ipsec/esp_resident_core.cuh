// The ipsec app's core for the resident path (apps/ipsec/esp_resident.h): a whole-batch core
// (gpu/resident_runner.cuh) over esp_frame.h, esp_hd.h and replay_core.h, the code the CPU paths
// and the checks run. Device code; included by esp_resident.cu only.
#pragma once

#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cuda/atomic>

#include "apps/ipsec/esp_hd.h"
#include "apps/ipsec/replay_core.h"
#include "apps/ipsec/sa_table.h"
#include "gpu/resident_runner.cuh"

namespace tandem::ipsec::resident {

// Per slot, what the GPU needs of its SA besides its keys and tunnel. Written when the slot takes
// an SA, before any index names it.
struct DevSa {
  uint8_t esn;
  uint8_t has_selector;
  uint8_t sel_family;
  uint8_t sel_src_len, sel_dst_len;
  uint8_t pad[3];
  uint32_t window;  // inbound: packets; 0: no replay check
  uint32_t block0;  // its ring's first block in the pool of every window's blocks
  uint32_t blocks;  // ring blocks (a power of two)
  uint32_t pad2;
  uint8_t sel_src[16], sel_dst[16];
};

struct SpiEntry {
  uint32_t spi, sa;
};

// An outbound SA and its place in the SPD order (SaTable::rank).
struct RankedSa {
  uint64_t rank;
  uint32_t sa;
  uint32_t pad;
};

// A host-pair selector (family, source, destination) and the first outbound SA in the SPD order with it.
constexpr int kPairKey = 33;
struct PairEntry {
  uint8_t key[kPairKey];
  uint8_t pad[3];
  uint32_t sa;
};

// One version of the index from selectors and SPIs to slots, in device memory: what a batch looks
// SAs up in. Live updates (SaControl) publish a new one between the batches that read it.
struct EspIndex {
  const SpiEntry* spis;      // inbound SAs, sorted by SPI
  const PairEntry* pairs;    // host-pair selectors, sorted by key
  const RankedSa* prefixed;  // outbound SAs with shorter prefixes, in the SPD order
  const uint64_t* pair_ranks;  // pairs[k]'s SA's place in the SPD order (read only with prefixed SAs)
  uint32_t n_spis, n_pairs, n_prefixed, pad;
};

TANDEM_HD_INLINE int compare_key(const uint8_t* a, const uint8_t* b) {
  for (int i = 0; i < kPairKey; ++i) {
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return 0;
}

TANDEM_HD_INLINE void pair_key(uint8_t family, const uint8_t* src, const uint8_t* dst, uint8_t* key) {
  key[0] = family;
  for (int i = 0; i < 16; ++i) key[1 + i] = src[i], key[17 + i] = dst[i];
}

enum FrameKind : uint8_t { kDecided, kOutbound, kInbound };

// One frame between the steps of a batch (device memory; each worker block has its own).
struct FrameState {
  uint64_t seq;      // a run's first frame: the SA's next number before the batch, until numbered
  uint32_t sa;
  uint32_t verdict;  // final once kDecided; for an inbound frame, its verdict if its number is new
  uint32_t len;      // its length if forwarded
  uint16_t rank;     // among the batch's frames of its SA, in frame order
  uint16_t count;    // the batch's frames of its SA
  uint16_t taken;    // a run's first outbound frame: how many numbers the SA had left for the run
  uint8_t kind;
  uint8_t icv_ok;
};

// The frames of a batch sorted by SA, stably (frame order within an SA): the runs the ordered
// steps hand to one thread each.
struct SaOrder {
  uint32_t* sa;     // sorted SAs of the frames with one (outbound or inbound)
  uint16_t* frame;  // their frames
};

// An SA's ring of replay blocks in device memory, as replay_core.h's Blocks: the block last used
// is held in registers. The blocks stored are remembered (`touched`, bit b % 64 for block b), so
// that the host's copy can be brought up to date after the window's top (see accept()).
struct DeviceBlocks {
  uint64_t* blocks;
  uint64_t mask;
  mutable uint64_t cached = ~uint64_t{0};
  mutable uint64_t value = 0;
  mutable bool dirty = false;
  mutable uint64_t touched = 0;

  TANDEM_HD uint64_t count() const { return mask + 1; }
  TANDEM_HD uint64_t get(uint64_t b) const {
    const uint64_t j = b & mask;
    if (j != cached) {
      flush();
      cached = j;
#if defined(__CUDA_ARCH__)
      value = __ldcg(blocks + j);
#else
      value = blocks[j];
#endif
    }
    return value;
  }
  TANDEM_HD void set(uint64_t b, uint64_t bits) {
    const uint64_t j = b & mask;
    if (j != cached) {
      flush();
      cached = j;
    }
    value = bits;
    dirty = true;
  }
  TANDEM_HD void flush() const {
    if (!dirty) return;
    blocks[cached] = value;
    touched |= uint64_t{1} << (cached & 63);
    dirty = false;
  }
};

constexpr uint32_t kTurnStride = 32;  // the two turn counters on separate 256-byte lines
constexpr uint32_t kReadingStride = 16;  // a block's announcement on a 128-byte line of its own

// kLive: with live updates (SaControl), the index a batch reads is the current one when the batch
// starts, announced (enter/leave); without, `fixed` is the one index, a kernel parameter like the
// rest, and a run pays nothing for updates it does not take.
template <bool kLive>
struct EspResidentCore {
  using WholeBatch = gpu::resident::WholeBatch;  // a whole-batch core (gpu/resident_kernels.cuh)

  // Per slot (n_sas of them: the SaTable's capacity), in device memory: keys, tunnel, the rest of
  // the SA. The AES tables are a device copy made by gpu::DeviceCore.
  const EspSaKeys* keys = nullptr;
  const EspTunnel* tunnels = nullptr;
  const crypto::AesTables* tables = nullptr;
  const DevSa* sas = nullptr;
  uint64_t n_sas = 0;
  // The current index, with live updates (SaControl): a word in device memory holding the device
  // address of an EspIndex, which the control thread replaces (a copy). Each worker block
  // announces the index it reads in `reading` (device memory, a word every kReadingStride per
  // block, 0 while it reads none) before it reads it, so that the control thread, which polls
  // them, knows when an index it replaced, and the slots only it named, are no longer read
  // (hazard pointers). Without live updates `fixed` is the one index.
  unsigned long long* root = nullptr;
  unsigned long long* reading = nullptr;
  EspIndex fixed{};
  // The per-SA state in device memory, and its copy in host memory (mapped).
  uint64_t* next_seq = nullptr;
  uint64_t* top = nullptr;
  uint64_t* blocks = nullptr;  // the windows' rings (DevSa::block0), a pool shared by every slot
  uint64_t* host_next = nullptr;
  uint64_t* host_top = nullptr;
  uint64_t* host_blocks = nullptr;
  FrameState* frames = nullptr;  // `batch` per worker block, by block index
  uint32_t* order_sa = nullptr;   // SaOrder, `batch` per worker block
  uint16_t* order_frame = nullptr;
  uint32_t batch = 0;
  uint32_t sa_bits = 1;  // bits of the sort keys: SA indices and the key of frames without one
  unsigned long long* turns = nullptr;  // the next ticket of each ordered step

  template <class F>
  void for_each_array(F&& f) {
    f(tables, 1);
  }

  // Thread 0: announces the current index, then returns it once it is still the current one (an
  // index the host replaced after the announcement is read by nobody once the host has seen this
  // block announce the new one or none). The acquire loads also drop the SM's L1 lines, so that
  // slots that took new SAs are read as the host wrote them. Device scope: the control thread's
  // copies reach the device through its L2, as these loads and stores do.
  __device__ EspIndex enter() const {
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> current(*root);
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> mine(reading[blockIdx.x * kReadingStride]);
    unsigned long long p = current.load(cuda::std::memory_order_acquire);
    for (;;) {
      mine.store(p, cuda::std::memory_order_relaxed);
      cuda::atomic_thread_fence(cuda::std::memory_order_seq_cst, cuda::thread_scope_device);
      const unsigned long long again = current.load(cuda::std::memory_order_acquire);
      if (again == p) break;
      p = again;
    }
    return *reinterpret_cast<const EspIndex*>(p);
  }
  // Thread 0, after every thread of the block is done with the batch's SAs.
  __device__ void leave() const {
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(reading[blockIdx.x * kReadingStride])
        .store(0, cuda::std::memory_order_release);
  }

  __device__ uint32_t find_spi(const EspIndex& x, uint32_t spi) const {
    uint64_t lo = 0, hi = x.n_spis;
    while (lo < hi) {
      const uint64_t mid = (lo + hi) / 2;
      if (x.spis[mid].spi < spi) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo < x.n_spis && x.spis[lo].spi == spi ? x.spis[lo].sa : kNoSa;
  }

  __device__ bool holds(const DevSa& s, const FiveTuple& t) const {
    return s.sel_family == t.ip_version && prefix_holds(s.sel_src, s.sel_src_len, t.src) &&
           prefix_holds(s.sel_dst, s.sel_dst_len, t.dst);
  }

  // SaTable::select: the host pair's SA, unless a prefixed SA earlier in the SPD order holds the packet.
  __device__ uint32_t select(const EspIndex& x, const FiveTuple& t) const {
    uint32_t best = kNoSa;
    uint64_t best_rank = UINT64_MAX;
    if (x.n_pairs) {
      uint8_t key[kPairKey];
      pair_key(t.ip_version, t.src, t.dst, key);
      uint64_t lo = 0, hi = x.n_pairs;
      while (lo < hi) {
        const uint64_t mid = (lo + hi) / 2;
        if (compare_key(x.pairs[mid].key, key) < 0) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      if (lo < x.n_pairs && compare_key(x.pairs[lo].key, key) == 0) {
        best = x.pairs[lo].sa;
        if (x.n_prefixed) best_rank = x.pair_ranks[lo];
      }
    }
    for (uint64_t k = 0; k < x.n_prefixed; ++k) {
      const RankedSa r = x.prefixed[k];
      if (r.rank > best_rank) break;
      if (holds(sas[r.sa], t)) return r.sa;
    }
    return best;
  }

  // Step 1, every frame: parse; outbound, the SA; inbound, the SA by SPI, the layout and the full
  // sequence number (inferred from the window as the ordered step last left it).
  __device__ FrameState classify(const EspIndex& x, const uint8_t* frame, uint32_t len) const {
    FrameState s{};
    s.len = len;
    s.sa = kNoSa;
    s.kind = kDecided;
    ParsedPacket pp;
    DropReason r = parse_frame(frame, len, &pp);
    if (r == DropReason::kNone && pp.tuple.proto == kProtoEsp) {
      EspInbound in;
      r = esp_inbound_sa(frame, pp, [&](uint32_t spi) { return find_spi(x, spi); }, kNoSa, &in, &s.sa);
      EspLayout l;
      if (r == DropReason::kNone) r = esp_in_layout(in, tunnels[s.sa].shape, &l);
      if (r == DropReason::kNone) {
        const DevSa& a = sas[s.sa];
        s.seq = a.window ? replay_infer(__ldcg(top + s.sa), a.window, a.esn, in.seq_low) : in.seq_low;
        s.kind = kInbound;
      }
    } else if (r == DropReason::kNone) {
      s.sa = select(x, pp.tuple);
      if (s.sa == kNoSa) {
        s.verdict = Verdict::port(kPortBypass);
        return s;
      }
      s.kind = kOutbound;
    }
    if (r != DropReason::kNone) s.verdict = Verdict::drop(r);
    return s;
  }

  static constexpr int kSortItems = gpu::resident::kMaxPersistentBatch / gpu::resident::kThreads;
  using Sort = cub::BlockRadixSort<uint32_t, gpu::resident::kThreads, kSortItems, uint16_t>;
  union GroupTemp {  // the count, then the sort, one after the other
    typename cub::BlockReduce<uint32_t, gpu::resident::kThreads>::TempStorage reduce;
    typename Sort::TempStorage sort;
  };

  // Sorts the frames that have an SA by SA (stable: frame order within an SA), and gives each its
  // rank and the count of its SA's frames in the batch. Returns how many frames have an SA.
  __device__ uint32_t group(FrameState* st, uint32_t n, const SaOrder& o, GroupTemp& temp) const {
    const uint32_t none = static_cast<uint32_t>(n_sas);  // sorts after every SA
    uint32_t keys[kSortItems];
    uint16_t frames_of[kSortItems];
    uint32_t mine = 0;
    for (int j = 0; j < kSortItems; ++j) {
      const uint32_t i = threadIdx.x * kSortItems + j;
      const bool has = i < n && st[i].kind != kDecided;
      keys[j] = has ? st[i].sa : none;
      frames_of[j] = static_cast<uint16_t>(i);
      mine += has;
    }
    __shared__ uint32_t m_shared;
    const uint32_t total = cub::BlockReduce<uint32_t, gpu::resident::kThreads>(temp.reduce).Sum(mine);
    if (threadIdx.x == 0) m_shared = total;
    __syncthreads();
    const uint32_t m = m_shared;
    Sort(temp.sort).Sort(keys, frames_of, 0, sa_bits);
    for (int j = 0; j < kSortItems; ++j) {
      const uint32_t p = threadIdx.x * kSortItems + j;
      if (p < m) {
        o.sa[p] = keys[j];
        o.frame[p] = frames_of[j];
      }
    }
    __syncthreads();
    for (uint32_t p = threadIdx.x; p < m; p += blockDim.x) {
      const uint32_t sa = o.sa[p];
      uint32_t lo = 0, hi = p;  // the SA's first position
      while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (o.sa[mid] < sa) lo = mid + 1; else hi = mid;
      }
      uint32_t end = p + 1, top_ = m;  // one past its last
      while (end < top_) {
        const uint32_t mid = (end + top_) / 2;
        if (o.sa[mid] <= sa) end = mid + 1; else top_ = mid;
      }
      FrameState& f = st[o.frame[p]];
      f.rank = static_cast<uint16_t>(p - lo);
      f.count = static_cast<uint16_t>(end - lo);
    }
    __syncthreads();
    return m;
  }

  // Step 2, ordered: each SA's outbound run takes its numbers, as SaTable::next_seq hands them out
  // (none once the SA's numbers are used up). One load and store per SA, all SAs at once.
  __device__ void take_numbers(FrameState* st, uint32_t m, const SaOrder& o) const {
    for (uint32_t p = threadIdx.x; p < m; p += blockDim.x) {
      FrameState& f = st[o.frame[p]];
      if (f.kind != kOutbound || f.rank != 0) continue;
      const uint64_t limit = sas[f.sa].esn ? UINT64_MAX : UINT32_MAX;
      const uint64_t base = __ldcg(next_seq + f.sa);
      const uint64_t left = base == 0 || base > limit ? 0 : limit - base + 1;
      const uint64_t taken = left < f.count ? left : f.count;
      next_seq[f.sa] = base + taken;
      host_next[f.sa] = base + taken;
      f.seq = base;
      f.taken = static_cast<uint16_t>(taken);
    }
  }

  // After step 2: each outbound frame's number from its run's first frame.
  __device__ void number(FrameState* st, uint32_t m, const SaOrder& o) const {
    for (uint32_t p = threadIdx.x; p < m; p += blockDim.x) {
      FrameState& f = st[o.frame[p]];
      if (f.kind != kOutbound) continue;
      const FrameState& first = st[o.frame[p - f.rank]];
      if (f.rank >= first.taken) {
        f.kind = kDecided;
        f.verdict = Verdict::drop(kSeqOverflow);
      } else if (f.rank != 0) {  // the first frame holds its number already
        f.seq = first.seq + f.rank;
      }
    }
  }

  // Step 3, every frame: outbound, encapsulate and seal; inbound, verify the ICV, decrypt,
  // decapsulate and check the inner packet (its verdict stands if step 4 finds its number new).
  __device__ void crypto(FrameState& s, uint8_t* frame, uint32_t len, uint32_t cap) const {
    if (s.kind == kDecided) return;
    ParsedPacket pp;
    EspLayout l;
    DropReason r = parse_frame(frame, len, &pp);
    if (s.kind == kOutbound) {
      if (r == DropReason::kNone) r = esp_encapsulate(frame, cap, pp, tunnels[s.sa], s.seq, &l);
      if (r == DropReason::kNone) {
        esp_hd_seal(keys[s.sa], tables, frame, l, s.seq);
        s.len = l.frame_len;
        s.verdict = Verdict::port(kPortTunnel);
      } else {
        s.verdict = Verdict::drop(r);
      }
      s.kind = kDecided;
      return;
    }
    EspInbound in;
    if (r == DropReason::kNone) r = esp_inbound(frame, pp, &in);
    if (r == DropReason::kNone) r = esp_in_layout(in, tunnels[s.sa].shape, &l);
    if (r == DropReason::kNone) r = esp_hd_open(keys[s.sa], tables, frame, l, s.seq);
    s.icv_ok = r == DropReason::kNone;
    uint32_t inner = 0;
    if (r == DropReason::kNone) r = esp_decapsulate(frame, l, &inner);
    if (r == DropReason::kNone) {
      ParsedPacket ip;
      if (parse_frame(frame, inner, &ip) != DropReason::kNone) {
        r = kBadInner;
      } else if (sas[s.sa].has_selector && !holds(sas[s.sa], ip.tuple)) {
        r = kSelectorMismatch;
      }
    }
    s.verdict = r == DropReason::kNone ? Verdict::port(kPortDecrypted) : Verdict::drop(r);
    s.len = inner;
  }

  // Step 4, ordered: the inbound frames against their windows, each SA's run in frame order by
  // one thread, as IpsecApp::process checks and updates them: a number seen or too old is dropped
  // whatever its ICV; a new one with a wrong ICV is kBadIcv and leaves the window as it was.
  __device__ void accept(FrameState* st, uint32_t m, const SaOrder& o) const {
    for (uint32_t p = threadIdx.x; p < m; p += blockDim.x) {
      const FrameState& first = st[o.frame[p]];
      if (first.kind != kInbound || first.rank != 0) continue;
      const uint32_t sa = first.sa;
      const DevSa& a = sas[sa];
      DeviceBlocks ring{blocks + a.block0, uint64_t{a.blocks} - 1};
      uint64_t t = a.window ? __ldcg(top + sa) : 0;
      for (uint32_t q = p; q < p + first.count; ++q) {
        FrameState& f = st[o.frame[q]];
        if (f.kind != kInbound) continue;
        f.kind = kDecided;
        if (!a.window) {
          if (f.seq == 0 && !a.esn) f.verdict = Verdict::drop(kTooOld);
          continue;
        }
        const ReplayCheck c = replay_check(t, a.window, ring, f.seq);
        if (c != ReplayCheck::kOk) {
          f.verdict = Verdict::drop(c == ReplayCheck::kReplayed ? kReplayed : kTooOld);
        } else if (f.icv_ok) {
          replay_update(&t, ring, f.seq);
        } else {
          f.verdict = Verdict::drop(kBadIcv);
        }
      }
      if (a.window) {
        ring.flush();
        top[sa] = t;
        // The host's copy (what the CPU takes back if the GPU fails): the new top before the
        // blocks. A GPU that dies between the two leaves a top ahead of its blocks, whose stale
        // bits can only make a number look seen (a drop); blocks ahead of their top would make
        // numbers the window still covers look new, and a replay pass.
        host_top[sa] = t;
        __threadfence_system();
        for (uint64_t b = 0; b < a.blocks; ++b) {
          if (ring.touched >> (b & 63) & 1) host_blocks[a.block0 + b] = __ldcg(blocks + a.block0 + b);
        }
      }
    }
  }

  // Runs f on every thread once every earlier batch has run its own, then passes the turn on.
  template <class F>
  __device__ void ordered(int step, uint64_t ticket, F&& f) const {
    volatile unsigned long long* turn = turns + step * kTurnStride;
    if (threadIdx.x == 0) {
      while (*turn != ticket) __nanosleep(32);
      __threadfence();
    }
    __syncthreads();
    f();
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      *turn = ticket + 1;
    }
  }

  __device__ void process_batch(const gpu::resident::WholeBatch& b) const {
    if constexpr (kLive) {
      __shared__ EspIndex current;
      if (threadIdx.x == 0) current = enter();
      __syncthreads();
      process_batch(b, current);
    } else {
      process_batch(b, fixed);
    }
  }

  __device__ void process_batch(const gpu::resident::WholeBatch& b, const EspIndex& index) const {
    __shared__ GroupTemp sort_temp;
    FrameState* const st = frames + size_t{blockIdx.x} * batch;
    const SaOrder o{order_sa + size_t{blockIdx.x} * batch, order_frame + size_t{blockIdx.x} * batch};
    for (uint32_t i = threadIdx.x; i < b.n; i += blockDim.x) st[i] = classify(index, b.work + b.offsets[i], b.lengths[i]);
    __syncthreads();
    const uint32_t m = group(st, b.n, o, sort_temp);
    b.claim();  // the state changes from here on
    ordered(0, b.ticket, [&] { take_numbers(st, m, o); });
    number(st, m, o);
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < b.n; i += blockDim.x) {
      FrameState s = st[i];
      crypto(s, b.work + b.offsets[i], b.lengths[i], b.max_frame);
      st[i] = s;
    }
    __syncthreads();
    ordered(1, b.ticket, [&] { accept(st, m, o); });  // ends with __syncthreads(): every thread is done with the SAs
    if (kLive && threadIdx.x == 0) {
      // The batch's writes to host memory (the state's copy) before the host can see it done
      // with its SAs: a slot the host reuses then gets no late write for its previous SA.
      __threadfence_system();
      leave();
    }
    for (uint32_t i = threadIdx.x; i < b.n; i += blockDim.x) {
      const uint32_t v = st[i].verdict;
      b.verdicts[i] = v;
      b.new_lengths[i] = static_cast<uint16_t>(Verdict::is_drop(v) ? b.lengths[i] : st[i].len);
    }
  }
};

}  // namespace tandem::ipsec::resident
