// How work reaches the GPU: an OffloadRunner moves a batch of fixed-size items (4-byte addresses,
// 5-tuples, ...) to the GPU, runs an app's per-item operation on them and brings the results back,
// in one of four modes. The seeds disagree about GPUs mostly because of this step (G-Opt: ~20 us
// per round trip through CUDA calls; APUNet: persistent threads, no launches; the GPU-router
// report: headers only, mapped memory, streams), so each mode is built and measured.
//
// Host-only header: no CUDA types. Apps create runners from their .cu files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tandem::gpu {

enum class GpuMode {
  kAsync,       // pinned buffers; copy in, kernel, copy out on the slot's stream
  kGraph,       // the same three steps replayed as one CUDA graph (one per batch-size bucket)
  kMapped,      // the kernel reads and writes host-mapped pinned memory: no copies
  kPersistent,  // a resident kernel polls a host-mapped doorbell: no launches, no copies
};

const char* gpu_mode_name(GpuMode m);
// "async", "graph", "mapped", "persistent"; throws std::invalid_argument otherwise.
GpuMode parse_gpu_mode(const std::string& s);

// A batch pipeline with `slots()` independent buffers: while one slot's batch is on the GPU the
// caller fills the next. Not thread-safe: one thread (the GPU master) drives a runner.
class OffloadRunner {
 public:
  virtual ~OffloadRunner() = default;
  virtual GpuMode mode() const = 0;
  virtual size_t capacity() const = 0;  // items per batch
  virtual int slots() const = 0;
  virtual size_t in_item_bytes() const = 0;
  virtual size_t out_item_bytes() const = 0;
  // Host buffers of the slot, `capacity()` items each, valid for the runner's lifetime. Fill
  // in(slot) before submit; read out(slot) after wait.
  virtual void* in(int slot) = 0;
  virtual void* out(int slot) = 0;
  // Starts the batch of the first n items of in(slot). Throws GpuError on a CUDA failure.
  virtual void submit(int slot, size_t n) = 0;
  // Blocks until the slot's batch has finished and out(slot) holds its results. Throws GpuError.
  virtual void wait(int slot) = 0;
  // Non-blocking: true once the slot's batch has finished (then wait() returns at once). Throws
  // GpuError when the batch failed.
  virtual bool ready(int slot) = 0;

  // After a failure: make sure that nothing submitted earlier can still write the slots' buffers
  // (the persistent kernel is stopped and waited for). The runner is unusable afterwards.
  virtual void quiesce() noexcept {}

  // One synchronous round trip on slot 0.
  void run(size_t n) {
    submit(0, n);
    wait(0);
  }
};

struct OffloadOptions {
  GpuMode mode = GpuMode::kAsync;
  size_t capacity = 8192;  // items per batch
  int slots = 2;           // the persistent mode has one slot
  int persistent_blocks = 0;  // 0: one per multiprocessor
  // Fault injection for tests and `tandem run --inject-gpu-fault`: with the k-th submit (1-based;
  // 0 = never) a kernel that traps is launched beside the batch, a real device fault that breaks
  // the CUDA context, as a failing GPU would. The error surfaces in wait() or ready().
  uint64_t fault_at_batch = 0;
};

// Runs n items from host array `in` to host array `out` through `runner` in batches of its
// capacity, its slots double-buffering (while one batch is on the GPU the next is copied in).
// `in`/`out` hold in_item_bytes() / out_item_bytes() per item, any alignment. Throws GpuError.
void run_all(OffloadRunner& runner, const void* in, void* out, size_t n);

// What every app's GPU table has in common: it makes runners whose per-item operation is its
// lookup, and its synchronous calls on host arrays (lookup(), classify()) go through one of them
// with run_all().
class GpuTable {
 public:
  virtual ~GpuTable() = default;
  GpuTable(const GpuTable&) = delete;
  GpuTable& operator=(const GpuTable&) = delete;

  // A runner for the GPU engine and the benchmarks. It reads the table's device copy, so the table
  // must outlive it (and its sync() says when runners must be made again).
  virtual std::unique_ptr<OffloadRunner> make_runner(const OffloadOptions& opts) const = 0;

 protected:
  GpuTable() = default;

  // n items from host array `in` to `out` (run_all) through a runner that the first call makes
  // (the default options, `capacity` items per batch) and later calls reuse.
  void run_host_arrays(size_t capacity, const void* in, void* out, size_t n) {
    if (!host_runner_) {
      OffloadOptions o;
      o.capacity = capacity;
      host_runner_ = make_runner(o);
    }
    run_all(*host_runner_, in, out, n);
  }
  // The device arrays moved: the kept runner reads the old ones, so the next call makes another.
  void drop_host_runner() { host_runner_.reset(); }

 private:
  std::unique_ptr<OffloadRunner> host_runner_;
};

// A runner whose operation copies each 4-byte item unchanged: the floor of involving the GPU
// (G-Opt Fig. 2/3), with no app work.
std::unique_ptr<OffloadRunner> make_echo_runner(const OffloadOptions& opts);

}  // namespace tandem::gpu
