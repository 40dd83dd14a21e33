// The ipsec app's core for the resident path (apps/ipsec/esp_resident.h): a whole-batch core
// (gpu/resident_runner.cuh) over esp_frame.h, esp_hd.h and replay_core.h, the code the CPU paths
// and the checks run.
#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>

#include "apps/ipsec/esp_hd.h"
#include "apps/ipsec/esp_resident.h"
#include "apps/ipsec/replay_core.h"
#include "gpu/resident_runner.cuh"

namespace tandem::ipsec {

namespace {

// Per SA, what the GPU needs besides its keys and tunnel.
struct DevSa {
  uint8_t esn;
  uint8_t has_selector;
  uint8_t sel_family;
  uint8_t sel_src_len, sel_dst_len;
  uint8_t pad[3];
  uint32_t window;  // inbound: packets; 0: no replay check
  uint32_t block0;  // its ring's first block in the array of every window's blocks
  uint32_t blocks;  // ring blocks (a power of two)
  uint32_t pad2;
  uint8_t sel_src[16], sel_dst[16];
};

struct SpiEntry {
  uint32_t spi, sa;
};

// A host-pair selector (family, source, destination) and the first outbound SA in file order with it.
constexpr int kPairKey = 33;
struct PairEntry {
  uint8_t key[kPairKey];
  uint8_t pad[3];
  uint32_t sa;
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

struct EspResidentCore {
  using WholeBatch = gpu::resident::WholeBatch;  // a whole-batch core (gpu/resident_kernels.cuh)

  // The tables (device copies made by gpu::DeviceCore).
  const EspSaKeys* keys = nullptr;
  const EspTunnel* tunnels = nullptr;
  const crypto::AesTables* tables = nullptr;
  const DevSa* sas = nullptr;
  const SpiEntry* spis = nullptr;      // inbound SAs, sorted by SPI
  const PairEntry* pairs = nullptr;    // host-pair selectors, sorted by key
  const uint32_t* prefixed = nullptr;  // outbound SAs with shorter prefixes, in file order
  uint64_t n_sas = 0, n_spis = 0, n_pairs = 0, n_prefixed = 0;
  // The per-SA state in device memory, and its copy in host memory (mapped).
  uint64_t* next_seq = nullptr;
  uint64_t* top = nullptr;
  uint64_t* blocks = nullptr;
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
    f(keys, n_sas);
    f(tunnels, n_sas);
    f(tables, 1);
    f(sas, n_sas);
    f(spis, n_spis);
    f(pairs, n_pairs);
    f(prefixed, n_prefixed);
  }

  __device__ uint32_t find_spi(uint32_t spi) const {
    uint64_t lo = 0, hi = n_spis;
    while (lo < hi) {
      const uint64_t mid = (lo + hi) / 2;
      if (spis[mid].spi < spi) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo < n_spis && spis[lo].spi == spi ? spis[lo].sa : kNoSa;
  }

  __device__ bool holds(const DevSa& s, const FiveTuple& t) const {
    return s.sel_family == t.ip_version && prefix_holds(s.sel_src, s.sel_src_len, t.src) &&
           prefix_holds(s.sel_dst, s.sel_dst_len, t.dst);
  }

  // SaTable::select: the host pair's SA, unless a prefixed SA earlier in the file holds the packet.
  __device__ uint32_t select(const FiveTuple& t) const {
    uint32_t best = kNoSa;
    if (n_pairs) {
      uint8_t key[kPairKey];
      pair_key(t.ip_version, t.src, t.dst, key);
      uint64_t lo = 0, hi = n_pairs;
      while (lo < hi) {
        const uint64_t mid = (lo + hi) / 2;
        if (compare_key(pairs[mid].key, key) < 0) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      if (lo < n_pairs && compare_key(pairs[lo].key, key) == 0) best = pairs[lo].sa;
    }
    for (uint64_t k = 0; k < n_prefixed; ++k) {
      const uint32_t i = prefixed[k];
      if (i > best) break;
      if (holds(sas[i], t)) return i;
    }
    return best;
  }

  // Step 1, every frame: parse; outbound, the SA; inbound, the SA by SPI, the layout and the full
  // sequence number (inferred from the window as the ordered step last left it).
  __device__ FrameState classify(const uint8_t* frame, uint32_t len) const {
    FrameState s{};
    s.len = len;
    s.sa = kNoSa;
    s.kind = kDecided;
    ParsedPacket pp;
    DropReason r = parse_frame(frame, len, &pp);
    if (r == DropReason::kNone && pp.tuple.proto == kProtoEsp) {
      EspInbound in;
      r = esp_inbound_sa(frame, pp, [this](uint32_t spi) { return find_spi(spi); }, kNoSa, &in, &s.sa);
      EspLayout l;
      if (r == DropReason::kNone) r = esp_in_layout(in, tunnels[s.sa].shape, &l);
      if (r == DropReason::kNone) {
        const DevSa& a = sas[s.sa];
        s.seq = a.window ? replay_infer(__ldcg(top + s.sa), a.window, a.esn, in.seq_low) : in.seq_low;
        s.kind = kInbound;
      }
    } else if (r == DropReason::kNone) {
      s.sa = select(pp.tuple);
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
    __shared__ GroupTemp sort_temp;
    FrameState* const st = frames + size_t{blockIdx.x} * batch;
    const SaOrder o{order_sa + size_t{blockIdx.x} * batch, order_frame + size_t{blockIdx.x} * batch};
    for (uint32_t i = threadIdx.x; i < b.n; i += blockDim.x) st[i] = classify(b.work + b.offsets[i], b.lengths[i]);
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
    ordered(1, b.ticket, [&] { accept(st, m, o); });
    for (uint32_t i = threadIdx.x; i < b.n; i += blockDim.x) {
      const uint32_t v = st[i].verdict;
      b.verdicts[i] = v;
      b.new_lengths[i] = static_cast<uint16_t>(Verdict::is_drop(v) ? b.lengths[i] : st[i].len);
    }
  }
};

// The tables and the device state of a run; a base of the runner, so that they exist before the
// runner's constructor copies the tables to the GPU.
struct EspResidentState {
  EspResidentState(SaTable& t, const gpu::ResidentRing& ring, const gpu::ResidentOptions& o) : table(t) {
    // The state lives on the ring's GPU: select it before the first allocation (the runner base,
    // which selects it too, is made after this one).
    gpu::set_device(ring.options().gpu);
    gpu_index = ring.options().gpu;
    copies = std::make_unique<gpu::Stream>();
    const uint32_t n = static_cast<uint32_t>(t.size());
    held.assign(n, 1);
    std::vector<uint64_t> next(n, 0), top(n, 0), bits;
    std::map<std::vector<uint8_t>, uint32_t> by_pair;  // the first SA in file order per pair
    for (uint32_t i = 0; i < n; ++i) {
      const Sa& sa = t.sa(i);
      keys.push_back(esp_sa_keys(sa));
      tunnels.push_back(t.tunnel(i));
      DevSa d{};
      d.esn = sa.esn;
      d.has_selector = sa.has_selector;
      d.sel_family = sa.sel_src.addr.family;
      d.sel_src_len = sa.sel_src.len;
      d.sel_dst_len = sa.sel_dst.len;
      std::memcpy(d.sel_src, sa.sel_src.addr.bytes.data(), 16);
      std::memcpy(d.sel_dst, sa.sel_dst.addr.bytes.data(), 16);
      if (sa.dir == SaDir::kIn) {
        spis.push_back({sa.spi, i});
        if (const ReplayWindow* w = t.window(i)) {
          d.window = w->size();
          d.block0 = static_cast<uint32_t>(bits.size());
          d.blocks = static_cast<uint32_t>(w->blocks().size());
          bits.insert(bits.end(), w->blocks().begin(), w->blocks().end());
          top[i] = w->top();
        }
      } else {
        next[i] = t.peek_seq(i);
        const uint32_t host = sa.sel_src.addr.family == 4 ? 32 : 128;
        if (sa.sel_src.len == host && sa.sel_dst.len == host) {
          std::vector<uint8_t> key(kPairKey);
          pair_key(d.sel_family, d.sel_src, d.sel_dst, key.data());
          by_pair.emplace(std::move(key), i);
        } else {
          prefixed.push_back(i);
        }
      }
      sas.push_back(d);
    }
    std::sort(spis.begin(), spis.end(), [](const SpiEntry& a, const SpiEntry& b) { return a.spi < b.spi; });
    for (const auto& [key, sa] : by_pair) {  // std::map's order is compare_key's
      PairEntry e{};
      std::memcpy(e.key, key.data(), kPairKey);
      e.sa = sa;
      pairs.push_back(e);
    }
    if (bits.empty()) bits.push_back(0);
    d_next.upload(next);
    d_top.upload(top);
    d_blocks.upload(bits);
    host_next.resize(n ? n : 1, cudaHostAllocMapped);
    host_top.resize(n ? n : 1, cudaHostAllocMapped);
    host_blocks.resize(bits.size(), cudaHostAllocMapped);
    std::copy(next.begin(), next.end(), host_next.get());
    std::copy(top.begin(), top.end(), host_top.get());
    std::copy(bits.begin(), bits.end(), host_blocks.get());
    // Indexed by block: the dispatcher's block 0 has an unused share.
    const size_t per_batch = (size_t(gpu::ResidentRunnerImpl<EspResidentCore>::worker_blocks(o)) + 1) * ring.batch();
    frames.resize(per_batch);
    order_sa.resize(per_batch);
    order_frame.resize(per_batch);
    turns.resize(2 * kTurnStride);
    TANDEM_CUDA_CHECK(cudaMemset(turns.get(), 0, 2 * kTurnStride * sizeof(unsigned long long)));

    core.keys = keys.data();
    core.tunnels = tunnels.data();
    core.tables = &crypto::aes_tables();
    core.sas = sas.data();
    core.spis = spis.data();
    core.pairs = pairs.data();
    core.prefixed = prefixed.data();
    core.n_sas = n;
    core.n_spis = spis.size();
    core.n_pairs = pairs.size();
    core.n_prefixed = prefixed.size();
    core.next_seq = d_next.get();
    core.top = d_top.get();
    core.blocks = d_blocks.get();
    core.host_next = device_pointer(host_next.get());
    core.host_top = device_pointer(host_top.get());
    core.host_blocks = device_pointer(host_blocks.get());
    core.frames = frames.get();
    core.order_sa = order_sa.get();
    core.order_frame = order_frame.get();
    while ((uint64_t{1} << core.sa_bits) <= n) ++core.sa_bits;  // keys 0 .. n (n: no SA)
    core.batch = ring.batch();
    core.turns = turns.get();
  }

  // The state of the SAs this GPU holds, as it last wrote it, back into the SaTable; afterwards it
  // holds none (the run ended, or the CPU finishes it).
  void to_host() {
    std::lock_guard<std::mutex> hold(handover);
    for (uint32_t i = 0; i < table.size(); ++i) give_back(i);
    closed = true;
  }

  // The scheduler's hand-over (gpu::ResidentRunner::release_state, adopt_state) of SAs no frame in
  // flight here uses. Once everything was given back for good, nothing is adopted: the CPU
  // finishes a failed GPU's batches on the SaTable.
  void release(const uint32_t* keys, size_t n) {
    std::lock_guard<std::mutex> hold(handover);
    for (size_t k = 0; k < n; ++k) {
      if (keys[k] < table.size()) give_back(keys[k]);
    }
  }
  bool adopt(const uint32_t* keys, size_t n) {
    std::lock_guard<std::mutex> hold(handover);
    if (closed) return true;  // the CPU finishes this GPU's batches on the SaTable
    bool ok = cudaSetDevice(gpu_index) == cudaSuccess;  // the calling thread's current device may be another
    for (size_t k = 0; k < n && ok; ++k) {
      const uint32_t i = keys[k];
      if (i >= table.size() || held[i]) continue;
      if (table.sa(i).dir == SaDir::kOut) {
        host_next[i] = table.peek_seq(i);
        ok = copy_up(d_next.get() + i, host_next.get() + i, 1);
      } else if (const ReplayWindow* w = table.window(i)) {
        host_top[i] = w->top();
        std::copy(w->blocks().begin(), w->blocks().end(), host_blocks.get() + sas[i].block0);
        ok = copy_up(d_top.get() + i, host_top.get() + i, 1) &&
             copy_up(d_blocks.get() + sas[i].block0, host_blocks.get() + sas[i].block0, sas[i].blocks);
      }
    }
    // The kernel reads the state through L2 (__ldcg) when a later batch brings the SA's frames,
    // which the scheduler publishes only after this returns true.
    ok = ok && cudaStreamSynchronize(copies->get()) == cudaSuccess;
    if (!ok) return false;  // nothing held: the state stays the SaTable's
    for (size_t k = 0; k < n; ++k) {
      if (keys[k] < table.size()) held[keys[k]] = 1;
    }
    return true;
  }

  static uint64_t* device_pointer(uint64_t* host) {
    uint64_t* d = nullptr;
    TANDEM_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d), host, 0));
    return d;
  }

  // SA i's state in the host copy, into the SaTable, if this GPU holds it.
  void give_back(uint32_t i) {
    if (!held[i]) return;
    held[i] = 0;
    if (table.sa(i).dir == SaDir::kOut) {
      table.set_next_seq(i, host_next[i]);
    } else if (sas[i].window) {
      table.restore_window(i, host_top[i], host_blocks.get() + sas[i].block0);
    }
  }

  // From pinned host memory, on a stream of its own beside the persistent kernel's.
  bool copy_up(uint64_t* device, const uint64_t* host, size_t n) {
    return cudaMemcpyAsync(device, host, n * sizeof(uint64_t), cudaMemcpyHostToDevice, copies->get()) == cudaSuccess;
  }

  SaTable& table;
  int gpu_index = 0;
  std::mutex handover;
  std::vector<uint8_t> held;  // per SA: the GPU holds its state (from the start, all of them)
  bool closed = false;        // everything given back for good (the run ended or the GPU failed)
  std::unique_ptr<gpu::Stream> copies;  // made on the ring's GPU
  std::vector<EspSaKeys> keys;
  std::vector<EspTunnel> tunnels;
  std::vector<DevSa> sas;
  std::vector<SpiEntry> spis;
  std::vector<PairEntry> pairs;
  std::vector<uint32_t> prefixed;
  gpu::DeviceBuffer<uint64_t> d_next, d_top, d_blocks;
  gpu::PinnedBuffer<uint64_t> host_next, host_top, host_blocks;
  gpu::DeviceBuffer<FrameState> frames;
  gpu::DeviceBuffer<uint32_t> order_sa;
  gpu::DeviceBuffer<uint16_t> order_frame;
  gpu::DeviceBuffer<unsigned long long> turns;
  EspResidentCore core;
};

class EspResidentRunner final : private EspResidentState, public gpu::ResidentRunnerImpl<EspResidentCore> {
 public:
  EspResidentRunner(SaTable& t, gpu::ResidentRing& ring, const gpu::ResidentOptions& o)
      : EspResidentState(t, ring, o), gpu::ResidentRunnerImpl<EspResidentCore>(core, ring, o) {}
  ~EspResidentRunner() override { stop(); }

  std::string describe() const override {
    return gpu::ResidentRunnerImpl<EspResidentCore>::describe() + ", ESP state on the GPU";
  }
  void release_state(const uint32_t* keys, size_t n) override { release(keys, n); }
  bool adopt_state(const uint32_t* keys, size_t n) override { return adopt(keys, n); }

 private:
  void before_cpu_fallback() override { to_host(); }
  void after_clean_stop() override { to_host(); }
};

const EspResidentFactory::Registrar registered{&EspResidentFactory::make<EspResidentRunner>};

}  // namespace
}  // namespace tandem::ipsec
