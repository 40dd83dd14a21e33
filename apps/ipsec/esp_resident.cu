// The ipsec app on the resident path (apps/ipsec/esp_resident.h): the run's device copy of the
// SAs and their state, the live updates it takes (SaDeviceCopy), and the runner. The kernel's
// core is esp_resident_core.cuh.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <openssl/crypto.h>

#include "apps/ipsec/esp_resident.h"
#include "apps/ipsec/esp_resident_core.cuh"
#include "apps/ipsec/sa_control.h"
#include "core/clock.h"

namespace tandem::ipsec {

namespace {

using resident::DevSa;
using resident::EspIndex;
using resident::FrameState;
using resident::kPairKey;
using resident::kTurnStride;
using resident::PairEntry;
using resident::RankedSa;
using resident::SpiEntry;

// Ring blocks kept for each slot without an SA when the run starts (an SA added while running
// takes its window's blocks from them, or from those of windows removed in earlier batches):
// windows up to 4,032 packets each, or fewer larger ones.
constexpr uint64_t kBlocksPerFreeSlot = 64;

// Room in the windows' rings (one device array and its host copy): first fit, freed ranges merged.
class BlockPool {
 public:
  explicit BlockPool(uint64_t n) {
    if (n) free_[0] = n;
  }
  // The first of n free blocks, or kNone.
  static constexpr uint64_t kNone = UINT64_MAX;
  uint64_t take(uint64_t n) {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < n) continue;
      const uint64_t at = it->first, left = it->second - n;
      free_.erase(it);
      if (left) free_[at + n] = left;
      return at;
    }
    return kNone;
  }
  void give(uint64_t at, uint64_t n) {
    auto next = free_.lower_bound(at);
    if (next != free_.end() && at + n == next->first) {
      n += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      const auto prev = std::prev(next);
      if (prev->first + prev->second == at) {
        prev->second += n;
        return;
      }
    }
    free_[at] = n;
  }

 private:
  std::map<uint64_t, uint64_t> free_;  // first block -> count
};

template <class T>
T* device_pointer(T* host) {
  T* d = nullptr;
  TANDEM_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d), host, 0));
  return d;
}

// The tables and the device state of a run; a base of the runner, so that they exist before the
// runner's constructor copies the core to the GPU. Every slot of the SaTable (its capacity) has its
// place on the device from the start: an SA added while running is written into its slot's place,
// which no index names until then; the index is rebuilt whole per batch of updates into the one of
// two buffers no GPU batch reads.
template <bool kLive>
struct EspResidentState : SaDeviceCopy {
  using EspResidentCore = resident::EspResidentCore<kLive>;
  EspResidentState(SaTable& t, gpu::ResidentRing& ring, SaControl* control)
      : table(t), control(control), exited(ring.exited_word()) {
    // The state lives on the ring's GPU: select it before the first allocation (the runner base,
    // which selects it too, is made after this one).
    gpu::set_device(ring.options().gpu);
    gpu_index = ring.options().gpu;
    copies = std::make_unique<gpu::Stream>();
    const uint32_t cap = static_cast<uint32_t>(std::max<size_t>(t.capacity(), 1));
    held.assign(cap, 0);
    ring_at.assign(cap, BlockPool::kNone);
    info.assign(cap, DevSa{});
    d_keys.resize(cap);
    d_tunnels.resize(cap);
    d_sas.resize(cap);
    d_next.resize(cap);
    d_top.resize(cap);
    host_next.resize(cap, cudaHostAllocMapped);
    host_top.resize(cap, cudaHostAllocMapped);
    TANDEM_CUDA_CHECK(cudaMemsetAsync(d_keys.get(), 0, cap * sizeof(EspSaKeys), copies->get()));
    TANDEM_CUDA_CHECK(cudaMemsetAsync(d_sas.get(), 0, cap * sizeof(DevSa), copies->get()));
    for (auto& x : index) {
      x.spis.resize(cap);
      x.pairs.resize(cap);
      x.prefixed.resize(cap);
      x.pair_ranks.resize(cap);
      x.root.resize(1);
    }
    d_root.resize(1);
    // The grid the runner launches: its worker blocks (from the ring's options, as the runner's) and the dispatcher.
    const int blocks = gpu::ResidentRunnerImpl<EspResidentCore>::worker_blocks(ring.options()) + 1;
    reading.resize(size_t(blocks) * resident::kReadingStride);
    seen.assign(reading.size(), 0);
    TANDEM_CUDA_CHECK(cudaMemsetAsync(reading.get(), 0, reading.size() * sizeof(unsigned long long), copies->get()));

    const size_t per_batch = size_t(blocks) * ring.batch();  // indexed by block: the dispatcher's share is unused
    frames.resize(per_batch);
    order_sa.resize(per_batch);
    order_frame.resize(per_batch);
    turns.resize(2 * kTurnStride);
    TANDEM_CUDA_CHECK(cudaMemsetAsync(turns.get(), 0, 2 * kTurnStride * sizeof(unsigned long long), copies->get()));

    core.keys = d_keys.get();
    core.tunnels = d_tunnels.get();
    core.tables = &crypto::aes_tables();
    core.sas = d_sas.get();
    core.n_sas = cap;
    core.root = d_root.get();
    core.reading = reading.get();

    core.next_seq = d_next.get();
    core.top = d_top.get();
    core.host_next = device_pointer(host_next.get());
    core.host_top = device_pointer(host_top.get());
    core.frames = frames.get();
    core.order_sa = order_sa.get();
    core.order_frame = order_frame.get();
    while ((uint64_t{1} << core.sa_bits) <= cap) ++core.sa_bits;  // keys 0 .. cap (cap: no SA)
    core.batch = ring.batch();
    core.turns = turns.get();
    // The SAs there are now, and the first index: under the control's lock, so that no batch of
    // updates falls between the copy and its connection.
    const auto start = [&](const std::vector<uint32_t>& linked) {
      // The windows' pool: the blocks of the windows there are, and kBlocksPerFreeSlot for each
      // slot without an SA. Sized here, with no batch of updates running.
      uint64_t pool_blocks = uint64_t{cap - linked.size()} * kBlocksPerFreeSlot;
      for (const uint32_t i : linked) {
        if (const ReplayWindow* w = t.window(i)) pool_blocks += w->blocks().size();
      }
      if (pool_blocks > UINT32_MAX) throw gpu::GpuError("resident path: too many replay window blocks for one GPU");
      pool = BlockPool(pool_blocks);
      pool_size = pool_blocks;
      d_blocks.resize(std::max<uint64_t>(pool_blocks, 1));
      host_blocks.resize(d_blocks.size(), cudaHostAllocMapped);
      std::fill(host_blocks.get(), host_blocks.get() + host_blocks.size(), 0);
      TANDEM_CUDA_CHECK(cudaMemsetAsync(d_blocks.get(), 0, d_blocks.size() * sizeof(uint64_t), copies->get()));
      core.blocks = d_blocks.get();
      core.host_blocks = device_pointer(host_blocks.get());
      for (const uint32_t i : linked) write_slot(i, take_ring(i));
      TANDEM_CUDA_CHECK(cudaStreamSynchronize(copies->get()));
      for (const uint32_t i : linked) held[i] = 1;
      build_index(linked, 0);
      const auto p = reinterpret_cast<unsigned long long>(index[0].root.get());
      copy_up(d_root.get(), &p, 1);
      TANDEM_CUDA_CHECK(cudaStreamSynchronize(copies->get()));
      core.fixed = index[0].host;  // without a control, the one index (EspResidentCore<false>)
    };
    // Last: once connected, the control calls into this.
    if (control) {
      control->connect_device(this, start);
    } else {
      std::vector<uint32_t> all;
      for (uint32_t i = 0; i < t.size(); ++i) {
        if (t.occupied(i)) all.push_back(i);
      }
      start(all);
    }
  }
  ~EspResidentState() override {
    if (control) control->connect_device(nullptr, nullptr);  // waits for a batch of updates in progress
  }

  // Blocks for slot i's window (an inbound SA with one), or kNone.
  uint64_t take_ring(uint32_t i) {
    const Sa& sa = table.sa(i);
    if (sa.dir != SaDir::kIn || sa.replay_window == 0) return BlockPool::kNone;
    return pool.take(replay_blocks(sa.replay_window));
  }

  // Slot i's SA and state as the SaTable holds them, to the device and the host copies (on
  // `copies`, done when it returns), its window's ring at `at`.
  void write_slot(uint32_t i, uint64_t at) {
    const Sa& sa = table.sa(i);
    DevSa d{};
    d.esn = sa.esn;
    d.has_selector = sa.has_selector;
    d.sel_family = sa.sel_src.addr.family;
    d.sel_src_len = sa.sel_src.len;
    d.sel_dst_len = sa.sel_dst.len;
    std::memcpy(d.sel_src, sa.sel_src.addr.bytes.data(), 16);
    std::memcpy(d.sel_dst, sa.sel_dst.addr.bytes.data(), 16);
    host_next[i] = 0;
    host_top[i] = 0;
    if (sa.dir == SaDir::kIn) {
      if (const ReplayWindow* w = table.window(i)) {
        if (at == BlockPool::kNone) throw gpu::GpuError("no room for a replay window");
        d.window = w->size();
        d.blocks = static_cast<uint32_t>(w->blocks().size());
        d.block0 = static_cast<uint32_t>(at);
        std::copy(w->blocks().begin(), w->blocks().end(), host_blocks.get() + at);
        host_top[i] = w->top();
        bytes += d.blocks * sizeof(uint64_t);
        copy_up(d_blocks.get() + at, host_blocks.get() + at, d.blocks);
      }
    } else {
      host_next[i] = table.peek_seq(i);
    }
    ring_at[i] = at;
    info[i] = d;
    EspSaKeys k = esp_sa_keys(sa);
    // The key leaves this frame wiped, whether the copies succeed or throw.
    struct Wipe {
      EspSaKeys* k;
      ~Wipe() { OPENSSL_cleanse(k, sizeof *k); }
    } wipe{&k};
    const EspTunnel tunnel = table.tunnel(i);
    copy_up(d_keys.get() + i, &k, 1);
    copy_up(d_tunnels.get() + i, &tunnel, 1);
    copy_up(d_sas.get() + i, &info[i], 1);
    copy_up(d_next.get() + i, host_next.get() + i, 1);
    copy_up(d_top.get() + i, host_top.get() + i, 1);
    // An asynchronous copy from pageable memory may read its source after the call returns (CUDA
    // promises that only of cudaMemcpy): the key and the tunnel stay until the copies are done.
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(copies->get()));
    bytes += sizeof(EspSaKeys) + sizeof(EspTunnel) + sizeof(DevSa) + 2 * sizeof(uint64_t);
  }

  // The index of the SAs in `linked` (slots), into buffer b (queued on `copies`).
  void build_index(const std::vector<uint32_t>& linked, int b) {
    std::vector<SpiEntry> spis;
    std::vector<RankedSa> prefixed;
    std::map<std::vector<uint8_t>, std::pair<uint64_t, uint32_t>> by_pair;  // the first by rank per pair
    for (const uint32_t i : linked) {
      const Sa& sa = table.sa(i);
      if (sa.dir == SaDir::kIn) {
        spis.push_back({sa.spi, i});
        continue;
      }
      const uint64_t rank = table.rank(i);
      const uint32_t host = sa.sel_src.addr.family == 4 ? 32 : 128;
      if (sa.sel_src.len == host && sa.sel_dst.len == host) {
        std::vector<uint8_t> key(kPairKey);
        resident::pair_key(info[i].sel_family, info[i].sel_src, info[i].sel_dst, key.data());
        const auto [it, fresh] = by_pair.emplace(std::move(key), std::make_pair(rank, i));
        if (!fresh && rank < it->second.first) it->second = {rank, i};
      } else {
        prefixed.push_back({rank, i, 0});
      }
    }
    std::sort(spis.begin(), spis.end(), [](const SpiEntry& a, const SpiEntry& b) { return a.spi < b.spi; });
    std::sort(prefixed.begin(), prefixed.end(), [](const RankedSa& a, const RankedSa& b) { return a.rank < b.rank; });
    std::vector<PairEntry> pairs;
    std::vector<uint64_t> pair_ranks;
    for (const auto& [key, first] : by_pair) {  // std::map's order is compare_key's
      PairEntry e{};
      std::memcpy(e.key, key.data(), kPairKey);
      e.sa = first.second;
      pairs.push_back(e);
      pair_ranks.push_back(first.first);
    }
    IndexBuffers& x = index[b];
    x.host.spis = x.spis.get();
    x.host.pairs = x.pairs.get();
    x.host.prefixed = x.prefixed.get();
    x.host.pair_ranks = x.pair_ranks.get();
    x.host.n_spis = static_cast<uint32_t>(spis.size());
    x.host.n_pairs = static_cast<uint32_t>(pairs.size());
    x.host.n_prefixed = static_cast<uint32_t>(prefixed.size());
    copy_up(x.spis.get(), spis.data(), spis.size());
    copy_up(x.pairs.get(), pairs.data(), pairs.size());
    copy_up(x.prefixed.get(), prefixed.data(), prefixed.size());
    copy_up(x.pair_ranks.get(), pair_ranks.data(), pair_ranks.size());
    copy_up(x.root.get(), &x.host, 1);
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(copies->get()));
    bytes += spis.size() * sizeof(SpiEntry) + pairs.size() * sizeof(PairEntry) + prefixed.size() * sizeof(RankedSa) +
             pair_ranks.size() * sizeof(uint64_t) + sizeof(EspIndex);
  }

  // SaDeviceCopy: a batch of updates, before the host publishes it.
  std::string publish(const std::vector<uint32_t>& linked, const std::vector<uint32_t>& added,
                      ResidentCopyStats& stats) override {
    std::unique_lock<std::mutex> hold(handover);
    if (closed) {
      stats.abandoned.store(true);
      return "";
    }
    cudaSetDevice(gpu_index);  // the control thread's current device may be another
    const uint64_t t0 = now_ns();
    bytes = 0;
    std::vector<uint64_t> at(added.size(), BlockPool::kNone);
    const auto give_rings = [&] {
      for (size_t k = 0; k < added.size(); ++k) {
        if (at[k] != BlockPool::kNone) pool.give(at[k], replay_blocks(table.sa(added[k]).replay_window));
        ring_at[added[k]] = BlockPool::kNone;
      }
    };
    for (size_t k = 0; k < added.size(); ++k) {
      const Sa& sa = table.sa(added[k]);
      if (sa.dir != SaDir::kIn || sa.replay_window == 0) continue;
      at[k] = take_ring(added[k]);
      if (at[k] == BlockPool::kNone) {
        give_rings();
        return "not applied: no room on the GPU for inbound SA spi " + std::to_string(sa.spi) + "'s replay window of " +
               std::to_string(sa.replay_window) + " packets (the resident path's pool of " + std::to_string(pool_size) +
               " window blocks: " + std::to_string(kBlocksPerFreeSlot) +
               " for each slot free at the start, and the windows of SAs removed in earlier batches)";
      }
    }
    const int next = 1 - current;
    try {
      for (size_t k = 0; k < added.size(); ++k) write_slot(added[k], at[k]);
      build_index(linked, next);
    } catch (const std::exception& e) {
      give_rings();
      for (const uint32_t i : added) {  // best effort: the slots go back to the SaTable's free ones
        info[i] = DevSa{};
        cudaMemsetAsync(d_keys.get() + i, 0, sizeof(EspSaKeys), copies->get());
      }
      cudaStreamSynchronize(copies->get());
      if (gpu::device_failed()) {
        // The runner falls back to the CPU, which reads the host's copy: the batch applies there.
        stats.abandoned.store(true);
        return "";
      }
      return std::string("not applied: the SAs could not be copied to the GPU (") + e.what() + ")";
    }
    const auto p = reinterpret_cast<unsigned long long>(index[next].root.get());
    if (cudaMemcpyAsync(d_root.get(), &p, sizeof p, cudaMemcpyHostToDevice, copies->get()) != cudaSuccess ||
        cudaStreamSynchronize(copies->get()) != cudaSuccess) {
      // A broken context: the runner fails over to the CPU, which reads the host's copy. Its
      // kernel may still be running on the old index for a while (another GPU's fault breaks
      // this context too): the batch is published once nothing runs there any more.
      give_rings();
      hold.unlock();
      until_stopped();
      stats.abandoned.store(true);
      return "";
    }
    for (const uint32_t i : added) held[i] = 1;
    current = next;
    const uint64_t t1 = now_ns();
    hold.unlock();
    wait_for_blocks(p);
    stats.versions.fetch_add(1, std::memory_order_relaxed);
    stats.bytes.fetch_add(bytes, std::memory_order_relaxed);
    stats.upload_ns.fetch_add(t1 - t0, std::memory_order_relaxed);
    stats.wait_ns.fetch_add(now_ns() - t1, std::memory_order_relaxed);
    return "";
  }

  // Until every worker block reads index p or none (or the kernel ended: it reads nothing).
  void wait_for_blocks(unsigned long long p) {
    const size_t bytes_read = reading.size() * sizeof(unsigned long long);
    for (;;) {
      if (closed || __atomic_load_n(exited, __ATOMIC_ACQUIRE) == 1) return;
      if (cudaMemcpyAsync(seen.data(), reading.get(), bytes_read, cudaMemcpyDeviceToHost, copies->get()) == cudaSuccess &&
          cudaStreamSynchronize(copies->get()) == cudaSuccess) {
        bool clear = true;
        for (size_t b = 0; b < seen.size() && clear; b += resident::kReadingStride) clear = seen[b] == 0 || seen[b] == p;
        if (clear) return;
      }
      // A failed copy (a broken context) leaves the kernel's announcements unknown: waits until
      // the runner has stopped it or failed over (closed), as after a clean stop.
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  // Until the runner's kernel ended or the runner handed everything to the CPU.
  void until_stopped() const {
    while (!closed && __atomic_load_n(exited, __ATOMIC_ACQUIRE) != 1) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }

  void forget(uint32_t i) override {
    std::lock_guard<std::mutex> hold(handover);
    held[i] = 0;  // its state is no one's to give back: the slot takes another SA next
    if (ring_at[i] != BlockPool::kNone) {
      pool.give(ring_at[i], info[i].blocks);
      ring_at[i] = BlockPool::kNone;
    }
    info[i] = DevSa{};
    if (closed) return;
    cudaSetDevice(gpu_index);
    // Best effort on a failed GPU: its memory goes with the context.
    cudaMemsetAsync(d_keys.get() + i, 0, sizeof(EspSaKeys), copies->get());
    cudaMemsetAsync(d_sas.get() + i, 0, sizeof(DevSa), copies->get());
    cudaStreamSynchronize(copies->get());
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
    if (cudaSetDevice(gpu_index) != cudaSuccess) return false;  // the calling thread's current device may be another
    try {
      for (size_t k = 0; k < n; ++k) {
        const uint32_t i = keys[k];
        if (i >= table.size() || held[i] || !table.occupied(i)) continue;
        if (table.sa(i).dir == SaDir::kOut) {
          host_next[i] = table.peek_seq(i);
          copy_up(d_next.get() + i, host_next.get() + i, 1);
        } else if (const ReplayWindow* w = table.window(i); w && ring_at[i] != BlockPool::kNone) {
          host_top[i] = w->top();
          std::copy(w->blocks().begin(), w->blocks().end(), host_blocks.get() + ring_at[i]);
          copy_up(d_top.get() + i, host_top.get() + i, 1);
          copy_up(d_blocks.get() + ring_at[i], host_blocks.get() + ring_at[i], info[i].blocks);
        }
      }
    } catch (const gpu::GpuError&) {
      cudaStreamSynchronize(copies->get());  // nothing queued may read the pinned copies after this
      return false;  // nothing held: the state stays the SaTable's
    }
    // The kernel reads the state through L2 (__ldcg) when a later batch brings the SA's frames,
    // which the scheduler publishes only after this returns true.
    if (cudaStreamSynchronize(copies->get()) != cudaSuccess) return false;
    for (size_t k = 0; k < n; ++k) {
      if (keys[k] < table.size() && table.occupied(keys[k])) held[keys[k]] = 1;
    }
    return true;
  }

  // SA i's state in the host copy, into the SaTable, if this GPU holds it.
  void give_back(uint32_t i) {
    if (!held[i]) return;
    held[i] = 0;
    if (table.sa(i).dir == SaDir::kOut) {
      table.set_next_seq(i, host_next[i]);
    } else if (info[i].window && ring_at[i] != BlockPool::kNone) {
      table.restore_window(i, host_top[i], host_blocks.get() + ring_at[i]);
    }
  }

  // Queued on `copies`, beside the persistent kernel's stream; throws gpu::GpuError if it cannot be.
  template <class T>
  void copy_up(T* device, const T* host, size_t n) {
    if (n == 0) return;
    const cudaError_t e = cudaMemcpyAsync(device, host, n * sizeof(T), cudaMemcpyHostToDevice, copies->get());
    if (e != cudaSuccess) throw gpu::GpuError(std::string("copy to the GPU: ") + cudaGetErrorString(e));
  }

  // The index's buffers: two, the one GPU batches read (current) and the one the next batch of
  // updates is built in.
  struct IndexBuffers {
    gpu::DeviceBuffer<SpiEntry> spis;
    gpu::DeviceBuffer<PairEntry> pairs;
    gpu::DeviceBuffer<RankedSa> prefixed;
    gpu::DeviceBuffer<uint64_t> pair_ranks;
    gpu::DeviceBuffer<EspIndex> root;
    EspIndex host{};
  };

  SaTable& table;
  SaControl* control;
  volatile uint32_t* exited;  // the ring's word the kernel's last block sets as it ends
  int gpu_index = 0;
  std::mutex handover;  // the SAs' state between the GPU and the SaTable, and the slots' places
  std::vector<uint8_t> held;  // per slot: the GPU holds its SA's state
  std::atomic<bool> closed{false};  // everything given back for good (the run ended or the GPU failed)
  std::unique_ptr<gpu::Stream> copies;  // made on the ring's GPU
  std::vector<DevSa> info;              // per slot, as on the device
  std::vector<uint64_t> ring_at;        // per slot: its window's first block in the pool, or kNone
  BlockPool pool{0};
  uint64_t pool_size = 0;
  uint64_t bytes = 0;  // uploaded by the batch of updates being published
  gpu::DeviceBuffer<EspSaKeys> d_keys;
  gpu::DeviceBuffer<EspTunnel> d_tunnels;
  gpu::DeviceBuffer<DevSa> d_sas;
  gpu::DeviceBuffer<uint64_t> d_next, d_top, d_blocks;
  gpu::PinnedBuffer<uint64_t> host_next, host_top, host_blocks;
  IndexBuffers index[2];
  int current = 0;
  gpu::DeviceBuffer<unsigned long long> d_root, reading;  // the kernel's (EspResidentCore::enter)
  std::vector<unsigned long long> seen;                   // the control thread's copy of `reading`
  gpu::DeviceBuffer<FrameState> frames;
  gpu::DeviceBuffer<uint32_t> order_sa;
  gpu::DeviceBuffer<uint16_t> order_frame;
  gpu::DeviceBuffer<unsigned long long> turns;
  EspResidentCore core;
};

template <bool kLive>
class EspResidentRunner final : private EspResidentState<kLive>,
                                public gpu::ResidentRunnerImpl<resident::EspResidentCore<kLive>> {
  using State = EspResidentState<kLive>;
  using Impl = gpu::ResidentRunnerImpl<resident::EspResidentCore<kLive>>;

 public:
  EspResidentRunner(SaTable& t, gpu::ResidentRing& ring, const gpu::ResidentOptions& o, SaControl* control)
      : State(t, ring, control), Impl(State::core, ring, o) {}
  ~EspResidentRunner() override { Impl::stop(); }

  std::string describe() const override {
    return Impl::describe() + ", ESP state on the GPU" + (kLive ? ", taking live SA updates" : "");
  }
  void release_state(const uint32_t* keys, size_t n) override { State::release(keys, n); }
  bool adopt_state(const uint32_t* keys, size_t n) override { return State::adopt(keys, n); }

 private:
  void before_cpu_fallback() override { State::to_host(); }
  void after_clean_stop() override { State::to_host(); }
};

// A run that takes live updates gets the kernel that announces the index each batch reads.
std::unique_ptr<gpu::ResidentRunner> make_runner(SaTable& t, gpu::ResidentRing& ring, const gpu::ResidentOptions& o,
                                                 SaControl* control) {
  if (control) return std::make_unique<EspResidentRunner<true>>(t, ring, o, control);
  return std::make_unique<EspResidentRunner<false>>(t, ring, o, control);
}

const EspResidentFactory::Registrar registered{&make_runner};

}  // namespace
}  // namespace tandem::ipsec
