// The GPU side of a resident ring (gpu/resident.h) for an app's frame core (apps/frame_core.h).
// Registered for every app by TANDEM_REGISTER_FRAME_CORE (gpu/frame_runner.cuh).
//
// kPersistent: one resident kernel. Block 0 is the dispatcher: one lane per producer polls that
// producer's published index in host memory (one read across PCIe per producer per round) and
// turns each new batch into an entry of a work queue in device memory; the other blocks take
// entries from the queue (polling in L2, not across PCIe) and run whole batches:
//   1. copy the batch's frames from host memory into a scratch area in device memory (uncached
//      loads: the host rewrites the slot for every batch, and no cached copy of the previous
//      batch may be used; four lanes per 64 bytes, so that PCIe carries 64-byte reads),
//   2. run forward_frame() on the scratch copy, counting verdicts in shared memory,
//   3. mark the slot claimed, then write back only the 16-byte words the app changed (a router
//      changes two of a 64-byte frame's four),
//   4. the verdicts, L3 offsets and the batch's summary, then, after a system fence, the slot's
//      done word.
// A batch's frames can be half-rewritten in host memory only if the GPU fails between 3 and the
// done word; the CPU fallback drops the frames of such a batch with kGpuFault, and redoes whole
// any batch not yet claimed. Each step is a round trip across PCIe at least (1-2 us): the count
// and the first offsets are read together, and one fence orders everything before `done`.
//
// A whole-batch core (resident::WholeBatchCore: ipsec, whose frames depend on per-SA state) gets
// the batch after step 1 whole, all threads of the block, and returns each frame's verdict and new
// length; every 16-byte word of each frame's old and new extent is written back. Persistent mode
// only.
//
// kAsync (DMA): a housekeeping thread copies each published batch's used bytes and arrays to
// device memory on one of `streams` streams, launches the frame kernel, and copies the frames into
// the slot's out_bytes() and the verdicts and summary back; when the stream's event completes it
// marks the slot done. The frames in bytes() are never written, so a failed batch is redone whole.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "apps/frame_core.h"
#include "gpu/cuda_util.cuh"
#include "gpu/device_core.cuh"
#include "gpu/offload_runner.cuh"
#include "gpu/resident.h"
#include "gpu/resident_kernels.cuh"

namespace tandem::gpu {



// The runner of a core. A whole-batch core's state outside the tables is its runner's: such a
// runner derives from this class, calls stop() in its own destructor, and hears of the two moments
// its host copy of that state must be brought up to date (before_cpu_fallback, after_clean_stop).
template <class Core>
class ResidentRunnerImpl : public ResidentRunner {
 public:
  ResidentRunnerImpl(const Core& host, ResidentRing& ring, const ResidentOptions& o)
      : select_(ring.options().gpu), dev_(host), ring_(ring), o_(ring.options()) {
    (void)o;
    if (o_.mode != GpuMode::kPersistent && o_.mode != GpuMode::kAsync) {
      throw GpuError(std::string("resident path: mode ") + gpu_mode_name(o_.mode) + " is not offered (persistent, async)");
    }
    if (resident::WholeBatchCore<Core> && o_.mode != GpuMode::kPersistent) {
      throw GpuError("resident path: this app runs in the persistent mode only (its batches are ordered on the GPU)");
    }
    if (ring_.producers() > static_cast<uint32_t>(resident::kMaxProducers)) {
      throw GpuError("resident path: at most 32 receive threads per GPU");
    }
    if (o_.mode == GpuMode::kPersistent && ring_.batch() > resident::kMaxPersistentBatch) {
      throw GpuError("resident path: persistent batches hold at most 2,048 frames");
    }
    TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, o_.gpu));
    TANDEM_CUDA_CHECK(cudaHostRegister(ring_.region(), ring_.region_bytes(), cudaHostRegisterMapped | cudaHostRegisterPortable));
    registration_.region = ring_.region();
    uint8_t* base = nullptr;
    TANDEM_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&base), ring_.region(), 0));
    const ResidentRing::Layout l = ring_.layout();
    dr_.bytes = base + l.bytes;
    dr_.out = base + l.out;
    dr_.offsets = reinterpret_cast<uint32_t*>(base + l.offsets);
    dr_.lengths = reinterpret_cast<uint32_t*>(base + l.lengths);
    dr_.out_lengths = reinterpret_cast<uint32_t*>(base + l.out_lengths);
    dr_.max_frame = ring_.max_frame();
    dr_.verdicts = reinterpret_cast<uint32_t*>(base + l.verdicts);
    dr_.l3 = reinterpret_cast<uint16_t*>(base + l.l3);
    dr_.summary = reinterpret_cast<BatchSummary*>(base + l.summary);
    dr_.fill = reinterpret_cast<ResidentRing::SlotFill*>(base + l.fill);
    dr_.status = reinterpret_cast<ResidentRing::SlotStatus*>(base + l.status);
    dr_.index = reinterpret_cast<ResidentRing::ProducerIndex*>(base + l.index);
    dr_.stop = reinterpret_cast<volatile uint32_t*>(base + l.stop);
    dr_.exited = reinterpret_cast<volatile uint32_t*>(base + l.exited);
    dr_.producers = ring_.producers();
    dr_.per_producer = ring_.per_producer();
    dr_.batch = ring_.batch();
    dr_.summary_ports = ring_.summary_ports();
    dr_.slot_bytes = ring_.slot_bytes();
    dr_.want_l3 = o_.want_l3;
    dr_.external = ring_.external_frames();
    dr_.cell = o_.cell_size;
    if (dr_.external) {
      for (uint32_t t = 0; t < ring_.producers(); ++t) dr_.region[t] = frames_.add(ring_.frame_region(t), t);
    }
    if (o_.mode == GpuMode::kPersistent) {
      int per_sm = 0;
      TANDEM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, resident::persistent_kernel<Core>,
                                                                      resident::kThreads, 0));
      blocks_ = worker_blocks(o_);
      if (blocks_ + 1 > per_sm * sm_count_) {
        throw GpuError("resident path: " + std::to_string(blocks_ + 1) + " resident blocks do not fit on the GPU (" +
                       std::to_string(per_sm * sm_count_) + " do)");
      }
      capacity_ = ring_.slots();
      queue_.resize(1);
      entries_.resize(capacity_);
      tags_.resize(capacity_);
      scratch_.resize(size_t(blocks_) * 2 * ring_.slot_bytes());
      TANDEM_CUDA_CHECK(cudaMemset(queue_.get(), 0, sizeof(resident::WorkQueue)));
      TANDEM_CUDA_CHECK(cudaMemset(tags_.get(), 0, capacity_ * sizeof(uint64_t)));
    } else {
      for (int i = 0; i < std::max(1, o_.streams); ++i) {
        auto& s = *dma_.emplace_back(std::make_unique<DmaSlot>());
        s.bytes.resize(ring_.slot_bytes());
        s.offsets.resize(ring_.batch());
        s.lengths.resize(ring_.batch());
        s.verdicts.resize(ring_.batch());
        s.l3.resize(ring_.batch());
        s.summary.resize(1);
      }
    }
    TANDEM_CUDA_CHECK(cudaDeviceSynchronize());
  }

  // The persistent kernel's worker blocks for options `o`: o.blocks, or by default one per
  // multiprocessor, the dispatcher's block beside them. A whole-batch core's blocks each hold a
  // batch through its compute-heavy part (crypto), so it gets every block that fits instead.
  static int worker_blocks(const ResidentOptions& o) {
    if (o.blocks > 0) return o.blocks;
    int sm = 0, per_sm = 0;
    TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, o.gpu));
    TANDEM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, resident::persistent_kernel<Core>,
                                                                    resident::kThreads, 0));
    const int fit = std::max(1, per_sm * sm - 1);
    return resident::WholeBatchCore<Core> ? fit : std::min(sm, fit);
  }

  ~ResidentRunnerImpl() override {
    stop();
    // The members' buffers and stream are freed after this body, on the current device: this one's.
    cudaSetDevice(o_.gpu);
  }

  void start() override {
    TANDEM_CUDA_CHECK(cudaSetDevice(o_.gpu));
    *ring_.stop_word() = 0;
    *ring_.exited_word() = 0;
    if (o_.mode == GpuMode::kPersistent) {
      resident::persistent_kernel<Core><<<blocks_ + 1, resident::kThreads, 0, stream_.get()>>>(
          dev_.core(), dr_, queue_.get(), entries_.get(), tags_.get(), capacity_, scratch_.get(), o_.fault_at_batch);
      TANDEM_CUDA_CHECK_LAUNCH();
    }
    running_.store(true);
    thread_ = std::thread([this] {
      cudaSetDevice(o_.gpu);  // the device's context is made (and checked) by now
      o_.mode == GpuMode::kPersistent ? watch() : dma_loop();
    });
  }

  void stop() override {
    if (!thread_.joinable()) return;
    stopping_.store(true, std::memory_order_release);
    thread_.join();
  }

  uint64_t batches() const override { return batches_.load(std::memory_order_relaxed); }

  std::string describe() const override {
    if (o_.mode == GpuMode::kPersistent) {
      return "persistent kernel, " + std::to_string(blocks_) + " worker blocks + 1 dispatcher";
    }
    return "DMA, " + std::to_string(dma_.size()) + " batches in flight";
  }

 protected:
  // The GPU failed and nothing on it runs any more; the receive threads are about to finish on the
  // CPU.
  virtual void before_cpu_fallback() {}
  // The kernel ended after a stop, every batch done.
  virtual void after_clean_stop() {}
  int worker_blocks() const { return blocks_; }

 private:
  struct DmaSlot {
    Stream stream;
    Event done;
    DeviceBuffer<uint8_t> bytes;
    DeviceBuffer<uint32_t> offsets, lengths, verdicts;
    DeviceBuffer<uint16_t> l3;
    DeviceBuffer<BatchSummary> summary;
    uint32_t slot = 0, gen = 0;
    bool busy = false;
  };

  // After a failure: wait until nothing on the GPU runs (the context is broken, so nothing will
  // write the ring again), then let the producers finish on the CPU.
  void fail(const std::string& why, bool quiesce = true) {
    if (quiesce) {
      cudaDeviceSynchronize();
      if (o_.mode == GpuMode::kPersistent) {
        wait_for_quiet_ring();
      } else {
        // The DMA variant: copies a GPU that CUDA calls failed may still have queued (see
        // wait_for_quiet_ring) land within a batch's time; give them that before the CPU writes.
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    std::fprintf(stderr, "resident path: GPU failed (%s); the receive threads finish on the CPU\n", why.c_str());
    before_cpu_fallback();
    set_failed(why);
  }

  // A broken context does not always mean a stopped GPU: when another GPU of the process faults,
  // CUDA reports this one's work failed too while its kernel may still be running (the device
  // suite's fault-isolation probe shows it). The stop word ends a running kernel after the batches
  // it has taken, and its last block then sets the exited word: from then on nothing on this GPU
  // writes the ring, and the receive threads may take its batches. A kernel that really died never
  // sets it; its ring is taken as quiet once no claimed or done word has changed for 200 ms.
  void wait_for_quiet_ring() {
    *ring_.stop_word() = 1;
    const uint32_t n = ring_.slots();
    std::vector<uint64_t> last(n, 0), now(n, 0);
    const auto snapshot = [&](std::vector<uint64_t>& v) {
      for (uint32_t s = 0; s < n; ++s) {
        v[s] = (uint64_t{__atomic_load_n(&ring_.status(s)->claimed, __ATOMIC_ACQUIRE)} << 32) |
               __atomic_load_n(&ring_.status(s)->done, __ATOMIC_ACQUIRE);
      }
    };
    using Clock = std::chrono::steady_clock;
    snapshot(last);
    const Clock::time_point start = Clock::now();
    Clock::time_point changed = start;
    for (;;) {
      if (__atomic_load_n(ring_.exited_word(), __ATOMIC_ACQUIRE) == 1) return;  // the kernel ended
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      snapshot(now);
      const Clock::time_point t = Clock::now();  // after the snapshot: a preempted thread waits longer, never less
      if (now != last) {
        changed = t;
        last.swap(now);
      } else if (t - changed >= std::chrono::milliseconds(200)) {
        return;
      }
      if (t - start > std::chrono::seconds(5)) {
        std::fprintf(stderr, "resident path: GPU %d's ring still changing 5 s after its failure; the receive threads "
                             "take its batches anyway\n", o_.gpu);
        return;
      }
    }
  }

  // The persistent kernel runs until the host's stop word; this thread notices a failure.
  void watch() {
    for (;;) {
      const cudaError_t e = cudaStreamQuery(stream_.get());
      if (e != cudaErrorNotReady) {
        if (e != cudaSuccess) {
          fail(std::string("persistent kernel: ") + cudaGetErrorString(e));
        } else if (!stopping_.load()) {
          fail("persistent kernel ended before it was stopped");
        }
        return;
      }
      if (stopping_.load(std::memory_order_acquire)) {
        *ring_.stop_word() = 1;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        cudaError_t s;
        while ((s = cudaStreamQuery(stream_.get())) == cudaErrorNotReady) {
          if (std::chrono::steady_clock::now() > deadline) {
            // Every batch was done before the stop: nothing is left for the CPU.
            fail("persistent kernel did not stop within 5 s", false);
            return;
          }
          std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
        if (s != cudaSuccess) fail(std::string("persistent kernel: ") + cudaGetErrorString(s));
        unsigned long long n = 0;
        if (!failed()) {
          cudaMemcpy(&n, &queue_.get()->dispatched, sizeof n, cudaMemcpyDeviceToHost);
          batches_.store(n);
          after_clean_stop();
        }
        return;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  // The DMA variant: batches in each producer's order, round robin over the producers.
  void dma_loop() {
    const uint32_t producers = ring_.producers();
    std::vector<uint64_t> seen(producers, 0);
    std::deque<DmaSlot*> flight;
    size_t next_stream = 0;
    uint64_t submitted = 0;
    try {
      for (;;) {
        bool progress = false;
        while (!flight.empty()) {
          DmaSlot& d = *flight.front();
          const cudaError_t e = cudaEventQuery(d.done.get());
          if (e == cudaErrorNotReady) break;
          TANDEM_CUDA_CHECK(e);
          __atomic_store_n(&ring_.status(d.slot)->done, d.gen, __ATOMIC_RELEASE);
          d.busy = false;
          flight.pop_front();
          batches_.fetch_add(1, std::memory_order_relaxed);
          progress = true;
        }
        for (uint32_t t = 0; t < producers; ++t) {
          const uint64_t published = __atomic_load_n(&ring_.index(t)->published, __ATOMIC_ACQUIRE);
          while (seen[t] < published) {
            DmaSlot& d = *dma_[next_stream];
            if (d.busy) break;
            const uint64_t j = seen[t]++;
            submit(d, ring_.slot_of(t, j), ring_.gen_of(j), ++submitted);
            flight.push_back(&d);
            next_stream = (next_stream + 1) % dma_.size();
            progress = true;
          }
        }
        if (!progress) {
          if (stopping_.load(std::memory_order_acquire) && flight.empty()) return;
          std::this_thread::yield();
        }
      }
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }

  void submit(DmaSlot& d, uint32_t slot, uint32_t gen, uint64_t number) {
    d.busy = true;
    d.slot = slot;
    d.gen = gen;
    const ResidentRing::SlotFill f = *ring_.fill(slot);
    const uint32_t n = std::min(f.count, ring_.batch());
    cudaStream_t st = d.stream.get();
    if (o_.fault_at_batch != 0 && number == o_.fault_at_batch) {
      detail::offload_trap_kernel<<<1, 1, 0, st>>>();
      TANDEM_CUDA_CHECK_LAUNCH();
    }
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(d.offsets.get(), ring_.offsets(slot), n * 4, cudaMemcpyHostToDevice, st));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(d.lengths.get(), ring_.lengths(slot), n * 4, cudaMemcpyHostToDevice, st));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(d.bytes.get(), ring_.bytes(slot), f.used, cudaMemcpyHostToDevice, st));
    TANDEM_CUDA_CHECK(cudaMemsetAsync(d.summary.get(), 0, sizeof(BatchSummary), st));
    if constexpr (!resident::WholeBatchCore<Core>) {
      if (n) {
        resident::dma_kernel<Core><<<detail::launch_blocks(n, sm_count_), resident::kThreads, 0, st>>>(
            dev_.core(), d.bytes.get(), d.offsets.get(), d.lengths.get(), d.verdicts.get(), d.l3.get(), d.summary.get(), n,
            dr_.summary_ports);
        TANDEM_CUDA_CHECK_LAUNCH();
      }
    }
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(ring_.out_bytes(slot), d.bytes.get(), f.used, cudaMemcpyDeviceToHost, st));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(ring_.verdicts(slot), d.verdicts.get(), n * 4, cudaMemcpyDeviceToHost, st));
    if (o_.want_l3) {
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(ring_.l3(slot), d.l3.get(), n * 2, cudaMemcpyDeviceToHost, st));
    }
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(ring_.summary(slot), d.summary.get(), sizeof(BatchSummary), cudaMemcpyDeviceToHost, st));
    d.done.record(st);
  }

  // Makes the ring's GPU current before any member allocates on it.
  struct SelectDevice {
    explicit SelectDevice(int gpu) { set_device(gpu); }
  };
  SelectDevice select_;
  // The ring's registration, undone last (after the buffers and stream below), also when the
  // constructor throws after making it.
  struct Registration {
    void* region = nullptr;
    ~Registration() {
      if (region) cudaHostUnregister(region);
    }
  };
  Registration registration_;
  // The producers' frame regions (external frames), registered as the ring is and undone with it.
  struct FrameRegistrations {
    std::vector<void*> regions;
    uint8_t* add(const ResidentRing::FrameRegion& f, uint32_t producer) {
      if (!f.base || !f.size) throw GpuError("resident path: receive thread " + std::to_string(producer) + " named no frame region");
      const cudaError_t e = cudaHostRegister(f.base, f.size, cudaHostRegisterMapped | cudaHostRegisterPortable);
      if (e == cudaSuccess) {
        regions.push_back(f.base);
      } else if (e == cudaErrorHostMemoryAlreadyRegistered) {
        (void)cudaGetLastError();  // registered already (another ring's producer on these buffers): usable as it is
      } else {
        TANDEM_CUDA_CHECK(e);
      }
      uint8_t* d = nullptr;
      TANDEM_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d), f.base, 0));
      return d;
    }
    ~FrameRegistrations() {
      for (void* r : regions) cudaHostUnregister(r);
    }
  };
  FrameRegistrations frames_;
  DeviceCore<Core> dev_;
  ResidentRing& ring_;
  ResidentOptions o_;
  resident::DeviceRing dr_{};
  int sm_count_ = 0;
  // kPersistent
  int blocks_ = 0;
  uint32_t capacity_ = 0;
  Stream stream_;
  DeviceBuffer<resident::WorkQueue> queue_;
  DeviceBuffer<uint64_t> entries_;
  DeviceBuffer<uint64_t> tags_;
  DeviceBuffer<uint8_t> scratch_;
  // kAsync
  std::vector<std::unique_ptr<DmaSlot>> dma_;
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> batches_{0};
};

}  // namespace tandem::gpu
